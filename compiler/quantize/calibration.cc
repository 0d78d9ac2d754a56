#include "compiler/quantize/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kiln::quantize {

absl::StatusOr<CalibrationMethod> ParseCalibrationMethod(absl::string_view name) {
  if (name == "minmax") return CalibrationMethod::kMinMax;
  if (name == "percentile") return CalibrationMethod::kPercentile;
  if (name == "entropy") return CalibrationMethod::kEntropy;
  return absl::InvalidArgumentError(
      absl::StrCat("calibration method '", name, "': expected minmax, percentile or entropy"));
}

absl::Status CheckPercentile(double percentile) {
  if (std::isfinite(percentile) && percentile > 0 && percentile <= 100) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("percentile: ", percentile, " is not in (0, 100]"));
}

const char* CalibrationMethodName(CalibrationMethod method) {
  switch (method) {
    case CalibrationMethod::kMinMax:
      return "minmax";
    case CalibrationMethod::kPercentile:
      return "percentile";
    case CalibrationMethod::kEntropy:
      return "entropy";
  }
  return "?";
}

void RangeObserver::ObserveRange(const float* values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = values[i];
    if (!std::isfinite(v)) continue;
    if (!seen_) {
      min_ = max_ = v;
      seen_ = true;
    }
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
  }
}

void RangeObserver::ObserveHistogram(const float* values, int64_t n) {
  if (histogram_.empty()) histogram_.assign(kBins, 0.0);
  const float amax = std::max(std::fabs(min_), std::fabs(max_));
  if (!(amax > 0)) return;
  const float per_bin = kBins / amax;
  for (int64_t i = 0; i < n; ++i) {
    // Zero is exact in every range (ParamsForRange), so it costs nothing and is not counted:
    // after a ReLU half the values are 0, and that spike would dominate the entropy's choice.
    if (values[i] == 0 || !std::isfinite(values[i])) continue;
    const int bin = std::min(kBins - 1, static_cast<int>(std::fabs(values[i]) * per_bin));
    histogram_[bin] += 1;
  }
}

float RangeObserver::PercentileThreshold(double percentile) const {
  const float amax = std::max(std::fabs(min_), std::fabs(max_));
  double total = 0;
  for (double h : histogram_) total += h;
  if (total == 0) return amax;
  const double want = total * percentile / 100.0;
  double seen = 0;
  for (int b = 0; b < static_cast<int>(histogram_.size()); ++b) {
    seen += histogram_[b];
    if (seen >= want) return amax * (b + 1) / kBins;
  }
  return amax;
}

// KL(P || Q) where P is the histogram clipped at `bins` (the clipped mass added to its last bin)
// and Q is the histogram below `bins` merged into `levels` quantization levels and spread back
// over the bins that were not empty: Q misses the clipped mass, so clipping costs what it loses
// and rounding costs what merging loses. The threshold whose Q loses least.
float RangeObserver::EntropyThreshold() const {
  const float amax = std::max(std::fabs(min_), std::fabs(max_));
  // Non-negative tensors (after a ReLU) use all 256 levels on [0, t]; others 128 per side.
  const int levels = min_ >= 0 ? 255 : 128;
  double best_kl = std::numeric_limits<double>::infinity();
  int best_bins = kBins;
  std::vector<double> p, q;
  for (int bins = levels; bins <= kBins; bins += 16) {
    p.assign(histogram_.begin(), histogram_.begin() + bins);
    for (int b = bins; b < kBins; ++b) p[bins - 1] += histogram_[b];
    double p_total = 0;
    for (double v : p) p_total += v;
    if (p_total == 0) continue;
    q.assign(bins, 0.0);
    for (int l = 0; l < levels; ++l) {
      const int start = static_cast<int>(static_cast<int64_t>(l) * bins / levels);
      const int end = static_cast<int>(static_cast<int64_t>(l + 1) * bins / levels);
      double mass = 0;
      int nonzero = 0;
      for (int b = start; b < end; ++b) {
        mass += histogram_[b];
        nonzero += histogram_[b] > 0;
      }
      for (int b = start; b < end; ++b)
        if (histogram_[b] > 0) q[b] = mass / nonzero;
    }
    double q_total = 0;
    for (double v : q) q_total += v;
    if (q_total == 0) continue;
    double kl = 0;
    for (int b = 0; b < bins; ++b) {
      if (p[b] == 0) continue;
      const double pb = p[b] / p_total;
      const double qb = std::max(q[b] / q_total, 1e-12);
      kl += pb * std::log(pb / qb);
    }
    if (kl < best_kl) {
      best_kl = kl;
      best_bins = bins;
    }
  }
  return amax * best_bins / kBins;
}

std::pair<float, float> RangeObserver::Choose(CalibrationMethod method, double percentile) const {
  if (!seen_) return {0.0f, 0.0f};
  if (method == CalibrationMethod::kMinMax || histogram_.empty()) return {min_, max_};
  const float t = method == CalibrationMethod::kPercentile ? PercentileThreshold(percentile)
                                                           : EntropyThreshold();
  return {std::max(min_, -t), std::min(max_, t)};
}

void SqnrAccumulator::Add(const float* ref, const float* got, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double r = ref[i], d = double{ref[i]} - double{got[i]};
    signal += r * r;
    noise += d * d;
  }
}

double SqnrAccumulator::Db() const {
  if (noise == 0) return std::numeric_limits<double>::infinity();
  if (signal == 0) return -std::numeric_limits<double>::infinity();
  return 10 * std::log10(signal / noise);
}

}  // namespace kiln::quantize
