#include "runtime/time_evaluator.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace kiln::runtime {

absl::StatusOr<std::vector<double>> TimeFunction(const std::function<absl::Status()>& fn,
                                                 const TimeEvaluatorOptions& options) {
  if (options.warmup < 0 || options.number < 1 || options.repeat < 1 || options.min_repeat_ms < 0 ||
      options.cooldown_ms < 0) {
    return absl::InvalidArgumentError(
        "time evaluator: need warmup >= 0, number >= 1, repeat >= 1, min_repeat_ms >= 0, "
        "cooldown_ms >= 0");
  }
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < options.warmup; ++i) {
    absl::Status s = fn();
    if (!s.ok()) return s;
  }
  std::vector<double> seconds;
  int64_t number = options.number;
  for (int r = 0; r < options.repeat; ++r) {
    if (r > 0 && options.cooldown_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(options.cooldown_ms));
    }
    while (true) {
      Clock::time_point start = Clock::now();
      for (int64_t i = 0; i < number; ++i) {
        absl::Status s = fn();
        if (!s.ok()) return s;
      }
      double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      if (elapsed * 1e3 >= options.min_repeat_ms || number >= (int64_t{1} << 40)) {
        seconds.push_back(elapsed / static_cast<double>(number));
        if (options.number_used != nullptr) *options.number_used = number;
        break;
      }
      // Aim past the minimum with some margin, growing at least 2x (at most 100x) per retry.
      double target = options.min_repeat_ms * 1.2e-3;
      double scale = elapsed > 0 ? target / elapsed : 100.0;
      number = static_cast<int64_t>(static_cast<double>(number) * std::clamp(scale, 2.0, 100.0));
    }
  }
  return seconds;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace kiln::runtime
