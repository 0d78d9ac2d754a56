// LegalizeOps: lowers every high-level operator call to a TIR kernel. A binding
//   lv = R.add(x, y)
// becomes
//   lv = R.call_tir(cls.add, (x, y), out_sinfo=R.Tensor((n, 64), "float32"))
// with `add` a PrimFunc written by the operator's legalization (op_registry.h) and added to the
// module. Identical kernels (same op, attributes and shapes) are added once and shared.
#ifndef KILN_COMPILER_RELAX_TRANSFORM_LEGALIZE_OPS_H_
#define KILN_COMPILER_RELAX_TRANSFORM_LEGALIZE_OPS_H_

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"

namespace kiln::ir::relax {

// Fails, naming the function, binding and operator, when an operator has no legalization or
// an argument's shape or dtype is unknown. The result is normalized.
absl::StatusOr<IRModule> LegalizeOps(const IRModule& mod);

}  // namespace kiln::ir::relax

#endif  // KILN_COMPILER_RELAX_TRANSFORM_LEGALIZE_OPS_H_
