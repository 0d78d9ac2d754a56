// A tune checked against the model it tuned: the whole model compiled without the tuning records
// and with them, each run whole on random inputs in fresh child processes, the two alternating.
// The tuner's estimate is a sum of kernels timed alone with warm caches; this is what a user of
// the compiled model gets, reported beside it.
#ifndef KILN_COMPILER_TUNE_MODEL_CHECK_H_
#define KILN_COMPILER_TUNE_MODEL_CHECK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"
#include "compiler/tune/database.h"

namespace kiln::tune {

struct ModelCheckOptions {
  std::string target = "llvm";
  std::string function = "main";
  int threads = 1;
  int rounds = 3;          // untuned and tuned alternate this many times, each in a fresh child
  int repeat = 5;          // measurements per child; the child reports their median
  int min_repeat_ms = 50;  // each measurement grows its calls to last at least this long
  double timeout_s = 300;  // per child
};

struct ModelTimes {
  double untuned_seconds = 0;  // median over rounds of the untuned model's seconds per call
  double tuned_seconds = 0;    // the same with the database's records applied
  int tuned_kernels = 0;       // kernels the records replaced
};

// Compiles `mod` for options.target twice (without `db`'s records, then with them) and times
// both. Fails with the build's error, or a child's (a crash, a timeout), naming which model.
absl::StatusOr<ModelTimes> MeasureModel(const ir::IRModule& mod,
                                        std::shared_ptr<const TuningDatabase> db,
                                        const ModelCheckOptions& options);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_MODEL_CHECK_H_
