// Small analyses the Relax passes share.
#ifndef KILN_COMPILER_RELAX_TRANSFORM_UTILS_H_
#define KILN_COMPILER_RELAX_TRANSFORM_UTILS_H_

#include <unordered_map>

#include "compiler/ir/relax_expr.h"

namespace kiln::ir::relax {

// How often each variable is used (not defined) in `e`.
std::unordered_map<const VarNode*, int> CountVarUses(const Expr& e);

}  // namespace kiln::ir::relax

#endif  // KILN_COMPILER_RELAX_TRANSFORM_UTILS_H_
