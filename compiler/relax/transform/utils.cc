#include "compiler/relax/transform/utils.h"

#include "compiler/ir/relax_functor.h"

namespace kiln::ir::relax {

std::unordered_map<const VarNode*, int> CountVarUses(const Expr& e) {
  struct Counter : ExprVisitor {
    std::unordered_map<const VarNode*, int> uses;
    void VisitExpr(const Expr& x) override {
      if (const auto* v = x.as<VarNode>()) ++uses[v];
      DefaultVisitExpr(x);
    }
  } counter;
  counter.VisitExpr(e);
  return std::move(counter.uses);
}

}  // namespace kiln::ir::relax
