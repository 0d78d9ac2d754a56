// What a device is, as the runtime sees it: the attributes an agent registers (read from the
// machine it runs on), the CPU features Kiln's generated code may depend on, and whether this
// machine can run code that needs some of them. Links no LLVM: the compiler maps these names to
// LLVM's, the agent only compares them.
#ifndef KILN_RUNTIME_DEVICE_INFO_H_
#define KILN_RUNTIME_DEVICE_INFO_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "proto/kiln/v1/jobs.pb.h"

namespace kiln::runtime {

// A CPU feature under the name Linux gives it (/proc/cpuinfo's flags on x86-64, the hwcap names
// on aarch64) and LLVM's name for the same feature.
struct CpuFeature {
  const char* arch;  // "x86_64", "aarch64"
  const char* name;  // "avx2", "asimddp"
  const char* llvm;  // "avx2", "dotprod"
};

// The features generated code may depend on; the rest of a CPU's flags are noise to Kiln.
absl::Span<const CpuFeature> KnownCpuFeatures();

// This machine: triple, CPU model and features, cores, memory, host name, and whether the CPU is
// emulated (an aarch64 build under qemu-user reads an x86-64 /proc/cpuinfo, so its features come
// from the kernel's hwcaps, and it says so).
v1::DeviceAttributes LocalDeviceAttributes();

// OK when code for `triple` that uses `features` (Linux names) runs on a machine with
// `attributes`; otherwise FailedPrecondition naming what differs.
absl::Status CheckCodeRunsOn(const std::string& triple, const std::vector<std::string>& features,
                             const v1::DeviceAttributes& attributes);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_DEVICE_INFO_H_
