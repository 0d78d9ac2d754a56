// Timing a function the way TVM's time evaluator does: `warmup` untimed calls, then `repeat`
// measurements of `number` back-to-back calls each. When a measurement is shorter than
// `min_repeat_ms`, `number` grows and that measurement is taken again. Returns every repeat's
// mean seconds per call, in order (take the median or min; the spread is the noise).
#ifndef KILN_RUNTIME_TIME_EVALUATOR_H_
#define KILN_RUNTIME_TIME_EVALUATOR_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::runtime {

struct TimeEvaluatorOptions {
  int warmup = 1;
  int number = 1;
  int repeat = 3;
  int min_repeat_ms = 0;
  int cooldown_ms = 0;  // sleep between repeats (thermal headroom on small boards)
  // When set, receives the calls per repeat that the last repeat used (number, as grown).
  int64_t* number_used = nullptr;
};

// Fails with the function's own error, or InvalidArgument for nonsensical options.
absl::StatusOr<std::vector<double>> TimeFunction(const std::function<absl::Status()>& fn,
                                                 const TimeEvaluatorOptions& options);

// The median of `values`: the middle one, or the mean of the two middle ones; 0 for none.
double Median(std::vector<double> values);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_TIME_EVALUATOR_H_
