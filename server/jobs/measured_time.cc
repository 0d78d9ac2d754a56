#include "server/jobs/measured_time.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace kiln::server {

double PeakFlopsBound(const v1::DeviceAttributes& device) {
  auto has = [&](const char* feature) {
    return std::find(device.cpu_features().begin(), device.cpu_features().end(), feature) !=
           device.cpu_features().end();
  };
  const double lanes = has("avx512f") ? 16 : has("sve") ? 64 : has("avx") || has("avx2") ? 8 : 4;
  constexpr double kFmaUnits = 2, kOperationsPerFma = 2, kHertz = 6e9;
  return std::max(1, device.cores()) * lanes * kFmaUnits * kOperationsPerFma * kHertz;
}

absl::Status CheckReportedSeconds(double seconds, double flops,
                                  const v1::DeviceAttributes& device) {
  if (!std::isfinite(seconds) || seconds <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a reported time of ", seconds, " s is not a positive number of seconds"));
  }
  const double floor = flops > 0 ? flops / PeakFlopsBound(device) : 0;
  if (seconds < floor) {
    return absl::InvalidArgumentError(absl::StrCat("a reported time of ", seconds, " s for ", flops,
                                                   " floating-point operations is faster "
                                                   "than the device's peak allows (at least ",
                                                   floor, " s)"));
  }
  return absl::OkStatus();
}

}  // namespace kiln::server
