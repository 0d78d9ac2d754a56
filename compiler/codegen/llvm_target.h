// Looks up LLVM code generation targets. This is the only place in Kiln that initializes LLVM's
// target registry; the header stays free of LLVM types so that callers do not pay for LLVM's
// headers.
#ifndef KILN_COMPILER_CODEGEN_LLVM_TARGET_H_
#define KILN_COMPILER_CODEGEN_LLVM_TARGET_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::codegen {

struct LlvmTargetInfo {
  std::string triple;       // normalized, e.g. "x86_64-unknown-linux-gnu"
  std::string cpu;          // resolved CPU name, e.g. "znver3"
  std::string features;     // subtarget features, e.g. "+avx2,+fma"
  std::string data_layout;  // LLVM data layout string
  int pointer_bits = 0;
};

// Resolves `triple` and `cpu` to a target machine description. An empty cpu means "generic"; the
// cpu "native" means this host's CPU with its detected features. Returns InvalidArgument for an
// unknown triple or a CPU the target does not know.
absl::StatusOr<LlvmTargetInfo> LookupLlvmTarget(absl::string_view triple, absl::string_view cpu);

// A TVM-style target string: "llvm" (the host, its CPU and features), or
// "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72".
absl::StatusOr<LlvmTargetInfo> ParseTarget(absl::string_view target);

// The triple of the machine this process runs on.
std::string HostTriple();

// The LLVM version this binary links, e.g. "16.0.6".
std::string LlvmVersion();

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_LLVM_TARGET_H_
