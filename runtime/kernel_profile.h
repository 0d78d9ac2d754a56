// Per-kernel profiles: where a function's time goes, kernel by kernel. A profile job with
// ProfileOptions.per_kernel (on an agent) and `kiln bench --per-kernel` (in process) both call
// ProfileKernels, so the two report the same thing.
#ifndef KILN_RUNTIME_KERNEL_PROFILE_H_
#define KILN_RUNTIME_KERNEL_PROFILE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "proto/kiln/v1/jobs.pb.h"
#include "runtime/format/artifact.pb.h"
#include "runtime/vm/vm.h"

namespace kiln::runtime {

// Calls `function` `repeat` times with every kernel call timed, and fills `out`'s kernels (each
// with its operators and FLOPs from `manifest`, slowest first) and instrumented_median_seconds.
absl::Status ProfileKernels(const vm::VirtualMachine& vm, const std::string& function,
                            const std::vector<Value>& args,
                            const kiln::v1::ArtifactManifest& manifest, int repeat,
                            kiln::v1::ProfileResult* out);

// The per-kernel table as `kiln bench --per-kernel` prints it.
std::string FormatKernelProfile(const kiln::v1::ProfileResult& profile);
// A kernel of the int8 operators (relax.qnn.*): its arithmetic is int8, its rate int8 operations.
bool IsInt8Kernel(const kiln::v1::KernelProfile& kernel);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_KERNEL_PROFILE_H_
