// Measuring one tuning candidate, wherever it runs: the tuner's local runner (compiler/tune) and
// a device agent's task child both call MeasureKernel, so a candidate is checked and timed the
// same way on this machine and on a board. Links the runtime only.
#ifndef KILN_RUNTIME_KERNEL_MEASURE_H_
#define KILN_RUNTIME_KERNEL_MEASURE_H_

#include "absl/status/statusor.h"
#include "proto/kiln/v1/agent.pb.h"

namespace kiln::runtime {

// Loads the reference and the candidate library, calls both on the same arguments (float32
// tensors uniform in [-1, 1) from a fixed seed, other tensors zero), and refuses a candidate whose
// float32 outputs differ beyond the tolerance (DataLoss, naming the buffer and element); then
// times the candidate: the median seconds per call.
absl::StatusOr<double> MeasureKernel(const v1::KernelMeasure& measure);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_KERNEL_MEASURE_H_
