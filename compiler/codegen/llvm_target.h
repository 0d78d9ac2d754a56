// Looks up LLVM code generation targets. This is the only place in Kiln that initializes LLVM's
// target registry; the header stays free of LLVM types so that callers do not pay for LLVM's
// headers.
#ifndef KILN_COMPILER_CODEGEN_LLVM_TARGET_H_
#define KILN_COMPILER_CODEGEN_LLVM_TARGET_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/target/cpu_target.h"

namespace kiln::codegen {

struct LlvmTargetInfo {
  std::string triple;    // normalized, e.g. "x86_64-unknown-linux-gnu"
  std::string cpu;       // resolved CPU name, e.g. "znver3"
  std::string features;  // subtarget features, e.g. "+avx2,+fma"
  // The features of runtime::KnownCpuFeatures() the code may use, in their Linux names
  // ("avx2", "asimd"): what a device must have to run it (the artifact manifest lists them).
  std::vector<std::string> device_features;
  std::string data_layout;  // LLVM data layout string
  int pointer_bits = 0;
  bool host = false;  // the CPU is this machine's ("llvm", -mcpu=native)
};

// Resolves `triple`, `cpu` and extra `features` ("+dotprod,+i8mm") to a target machine
// description. An empty cpu means "generic"; the cpu "native" means this host's CPU with its
// detected features. Returns InvalidArgument for an unknown triple, a CPU the target does not
// know, or a feature it does not have.
absl::StatusOr<LlvmTargetInfo> LookupLlvmTarget(absl::string_view triple, absl::string_view cpu,
                                                absl::string_view features = "");

// The description the compiler's target-dependent decisions read (compiler/target): vector
// width and registers from the resolved features, FMA timing and caches from the CPU's name, and
// for the host its own caches and cores.
target::CpuTarget DescribeTarget(const LlvmTargetInfo& info);

// A TVM-style target string: "llvm" (the host, its CPU and features), or
// "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=+dotprod".
absl::StatusOr<LlvmTargetInfo> ParseTarget(absl::string_view target);

// The triple of the machine this process runs on.
std::string HostTriple();

// The LLVM version this binary links, e.g. "16.0.6".
std::string LlvmVersion();

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_LLVM_TARGET_H_
