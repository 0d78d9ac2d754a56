// What kilnd believes of what an agent reports: a tuning candidate's time, a profile's times, an
// inference's outputs. The agent runs the
// candidate and says how long it took; kilnd cannot check that, but it can refuse what cannot be
// true: a time that is not finite and positive, or faster than the device could do the
// kernel's work at a peak no CPU reaches. Such a record would be applied to every tenant's
// compiles and never beaten (issue 47, finding 4).
#ifndef KILN_SERVER_JOBS_MEASURED_TIME_H_
#define KILN_SERVER_JOBS_MEASURED_TIME_H_

#include <vector>

#include "absl/status/status.h"
#include "proto/kiln/v1/agent.pb.h"
#include "proto/kiln/v1/jobs.pb.h"

namespace kiln::server {

// Floating-point operations per second no device of these attributes exceeds: every core, the
// widest vectors its CPU features name (AVX-512: 16 float lanes, AVX: 8, SVE: up to 64, else
// 4), two FMA units of two operations per lane, at 6 GHz.
double PeakFlopsBound(const v1::DeviceAttributes& device);

// OK where `seconds` per call of a kernel doing `flops` operations (0: unknown) could have been
// measured on `device`; InvalidArgument naming the time and the bound otherwise.
absl::Status CheckReportedSeconds(double seconds, double flops, const v1::DeviceAttributes& device);

// OK where an agent's answer to a profile or inference task could be true and is within bounds:
// every time finite and positive; every output's data exactly its shape times its dtype's size
// (known dtypes); the outputs within `max_output_bytes` in all; and, where `expected` (the
// artifact's signature: dtypes and shapes, -1 for a symbolic dimension) is given, as many
// outputs of those dtypes and shapes. InvalidArgument saying what is wrong otherwise.
absl::Status CheckTaskResult(const v1::TaskResult& result, int64_t max_output_bytes,
                             const std::vector<v1::TensorValue>& expected = {});

}  // namespace kiln::server

#endif  // KILN_SERVER_JOBS_MEASURED_TIME_H_
