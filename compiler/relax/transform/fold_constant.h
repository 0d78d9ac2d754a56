// FoldConstant: a kernel call whose inputs are all constants runs at compile time, and its
// result becomes a constant (weights transposed, reshaped or scaled ahead of time; batch_norm
// parameters combined). It compiles the kernels concerned for the host (compiler/backend/
// toolchain.h) and runs them with the runtime, so it is a target of its own, apart from the Relax
// passes that only rewrite IR. Works on legalized code (call_tir); chains fold over successive
// rounds.
#ifndef KILN_COMPILER_RELAX_TRANSFORM_FOLD_CONSTANT_H_
#define KILN_COMPILER_RELAX_TRANSFORM_FOLD_CONSTANT_H_

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"
#include "compiler/pass/pass.h"

namespace kiln::ir::relax {

absl::StatusOr<IRModule> FoldConstant(const IRModule& mod);

// As a pass object: requires LegalizeOps.
pass::PassPtr FoldConstantPass();

}  // namespace kiln::ir::relax

#endif  // KILN_COMPILER_RELAX_TRANSFORM_FOLD_CONSTANT_H_
