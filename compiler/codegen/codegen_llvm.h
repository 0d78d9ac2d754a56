// TIR -> LLVM IR -> object code -> shared library, in the kernel C ABI of
// runtime/kernel_abi.h (docs/KERNEL_ABI.md).
//
// Every PrimFunc of the module becomes an exported kernel named after it. Its prologue checks
// every argument (count, kind, rank, dtype, each dimension against constants or the symbolic
// variables it binds, compact strides, non-null data) and reports a message through the
// context instead of touching memory it was not given. The input must be lowered (no blocks:
// tir::LowerTir). Linking the object is the toolchain's (compiler/backend/toolchain.h). The
// header stays free of LLVM types.
#ifndef KILN_COMPILER_CODEGEN_CODEGEN_LLVM_H_
#define KILN_COMPILER_CODEGEN_CODEGEN_LLVM_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/ir/module.h"

namespace kiln::codegen {

// The textual LLVM IR of the lowered module before optimization (for tests and --dump-after).
absl::StatusOr<std::string> EmitLlvmIr(const ir::IRModule& lowered, const LlvmTargetInfo& target);

// An ELF relocatable object, optimized at O3 with LLVM's new pass manager.
absl::StatusOr<std::string> CompileToObject(const ir::IRModule& lowered,
                                            const LlvmTargetInfo& target);

// The same as up to `parts` objects compiled at once, each on its own thread and LLVM context
// with a share of the kernels (one object holds the ABI version); linked together they are the
// library CompileToObject's object makes.
// With `quick`, LLVM's O1 pipeline instead of O3: for kernels run once at compile time
// (FoldConstant), where compiling is the cost.
absl::StatusOr<std::vector<std::string>> CompileToObjects(const ir::IRModule& lowered,
                                                          const LlvmTargetInfo& target, int parts,
                                                          bool quick = false);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_CODEGEN_LLVM_H_
