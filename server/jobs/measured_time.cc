#include "server/jobs/measured_time.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/tensor.h"

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

absl::Status CheckTaskResult(const v1::TaskResult& result, int64_t max_output_bytes,
                             const std::vector<v1::TensorValue>& expected) {
  const auto& outputs = result.inference().outputs();
  if (!expected.empty() && result.has_inference()) {
    if (outputs.size() != static_cast<int>(expected.size())) {
      return absl::InvalidArgumentError(absl::StrCat(outputs.size(),
                                                     " outputs, the artifact's "
                                                     "signature says ",
                                                     expected.size()));
    }
    for (int i = 0; i < outputs.size(); ++i) {
      const v1::TensorValue& got = outputs[i];
      const v1::TensorValue& want = expected[static_cast<size_t>(i)];
      bool same = got.dtype() == want.dtype() && got.shape_size() == want.shape_size();
      for (int d = 0; same && d < want.shape_size(); ++d) {
        same = want.shape(d) < 0 || want.shape(d) == got.shape(d);
      }
      if (!same) {
        return absl::InvalidArgumentError(
            absl::StrCat("output '", got.name(), "' is ", got.dtype(), "[",
                         absl::StrJoin(got.shape(), ", "), "], the artifact's signature says ",
                         want.dtype(), "[", absl::StrJoin(want.shape(), ", "), "]"));
      }
    }
  }
  if (result.has_profile()) {
    const v1::ProfileResult& p = result.profile();
    for (double s : p.seconds_per_call()) {
      if (!std::isfinite(s) || s <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("a profile time of ", s, " s is not a positive number of seconds"));
      }
    }
    for (double s : {p.median_seconds(), p.mean_seconds(), p.min_seconds(), p.max_seconds()}) {
      if (!std::isfinite(s) || s < 0) {
        return absl::InvalidArgumentError(absl::StrCat("a profile statistic of ", s, " s"));
      }
    }
  }
  int64_t total = 0;
  for (const v1::TensorValue& t : result.inference().outputs()) {
    total += static_cast<int64_t>(t.data().size());
    if (total > max_output_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("outputs of more than ", max_output_bytes,
                                                     " bytes (the server's --max-output-mb)"));
    }
    absl::StatusOr<DLDataType> dtype = runtime::ParseDataType(t.dtype());
    if (!dtype.ok()) continue;  // a dtype the runtime does not know: its size is unknown
    const int64_t size = static_cast<int64_t>(runtime::DataTypeBytes(*dtype));
    int64_t elements = 1;
    for (int64_t d : t.shape()) {
      if (d < 0 || (d > 0 && elements > max_output_bytes / d)) {
        return absl::InvalidArgumentError(
            absl::StrCat("output '", t.name(), "' has an impossible shape"));
      }
      elements *= d;
    }
    if (elements * size != static_cast<int64_t>(t.data().size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("output '", t.name(), "' holds ", t.data().size(),
                       " bytes, its shape and dtype ", elements * size));
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::server
