// Vectorizable float32 exp, tanh, erf and sigmoid, emitted as straight-line LLVM IR.
//
// llvm.exp on a vector becomes one libm call per lane, and there is no LLVM intrinsic for tanh
// or erf at all; these expansions keep a vectorized loop vectorized. Each is accurate to about
// 1e-6 relative (checked in fast_math_test.cc) and handles inf, -inf and NaN.
#ifndef KILN_COMPILER_CODEGEN_FAST_MATH_H_
#define KILN_COMPILER_CODEGEN_FAST_MATH_H_

#include "absl/strings/string_view.h"

namespace llvm {
class IRBuilderBase;
class Value;
}  // namespace llvm

namespace kiln::codegen {

// True when `op` has an expansion here ("exp", "tanh", "erf", "sigmoid").
bool HasFastMath(absl::string_view op);

// `x` is a float or a vector of floats (32-bit). Returns nullptr for an op without expansion.
llvm::Value* EmitFastMath(llvm::IRBuilderBase& b, absl::string_view op, llvm::Value* x);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_FAST_MATH_H_
