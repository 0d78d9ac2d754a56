// FoldConstant: a kernel call whose inputs are all constants runs at compile time, and its
// result becomes a constant (weights transposed, reshaped or scaled ahead of time; batch_norm
// parameters combined). It compiles the kernels concerned for the host and runs them, so it sits
// in the back end rather than among the Relax passes. Works on legalized code (call_tir); chains
// fold over successive rounds.
#ifndef KILN_COMPILER_BACKEND_FOLD_CONSTANT_H_
#define KILN_COMPILER_BACKEND_FOLD_CONSTANT_H_

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"

namespace kiln::backend {

absl::StatusOr<ir::IRModule> FoldConstant(const ir::IRModule& mod);

}  // namespace kiln::backend

#endif  // KILN_COMPILER_BACKEND_FOLD_CONSTANT_H_
