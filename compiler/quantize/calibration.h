// Calibration: the range of values a float activation takes on sample inputs, and the range its
// uint8 quantization should cover. Min-max covers everything seen; percentile clips the rare
// largest magnitudes; entropy picks the clipping threshold whose quantized histogram loses the
// least information (the KL divergence between the observed and the quantized distributions).
#ifndef KILN_COMPILER_QUANTIZE_CALIBRATION_H_
#define KILN_COMPILER_QUANTIZE_CALIBRATION_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::quantize {

enum class CalibrationMethod { kMinMax, kPercentile, kEntropy };

absl::StatusOr<CalibrationMethod> ParseCalibrationMethod(absl::string_view name);
const char* CalibrationMethodName(CalibrationMethod method);
// The |x| percentile kPercentile keeps must lie in (0, 100]: InvalidArgument otherwise.
absl::Status CheckPercentile(double percentile);

// One tensor's values over all calibration inputs, in two passes: ObserveRange over every input,
// then (for percentile and entropy) ObserveHistogram over every input again.
class RangeObserver {
 public:
  static constexpr int kBins = 2048;

  void ObserveRange(const float* values, int64_t n);
  bool NeedsHistogram(CalibrationMethod method) const {
    return method != CalibrationMethod::kMinMax;
  }
  // A histogram of |x| ≠ 0 over [0, max(|min|, |max|)] seen by ObserveRange.
  void ObserveHistogram(const float* values, int64_t n);

  // The [lo, hi] to quantize: min-max, or clipped to a threshold on |x| (percentile: the
  // magnitude below which `percentile` % of the values lie).
  std::pair<float, float> Choose(CalibrationMethod method, double percentile = 99.99) const;

  float min() const { return min_; }
  float max() const { return max_; }

 private:
  float EntropyThreshold() const;
  float PercentileThreshold(double percentile) const;

  float min_ = 0, max_ = 0;
  bool seen_ = false;
  std::vector<double> histogram_;
};

// Signal to quantization noise, in dB: 10 log10(Σ ref² / Σ (ref − got)²); +inf when equal.
struct SqnrAccumulator {
  double signal = 0, noise = 0;
  void Add(const float* ref, const float* got, int64_t n);
  double Db() const;
};

}  // namespace kiln::quantize

#endif  // KILN_COMPILER_QUANTIZE_CALIBRATION_H_
