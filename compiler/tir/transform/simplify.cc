// Simplify: integer expressions simplified with the analyzer, knowing each loop's range.
#include "compiler/arith/analyzer.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/tir/transform/transform.h"

namespace kiln::tir {
namespace {

using namespace ir;  // NOLINT: passes build TIR nodes

class Simplifier : public StmtExprMutator {
 public:
  PrimExpr VisitExpr(const PrimExpr& e) override {
    PrimExpr visited = StmtExprMutator::VisitExpr(e);
    // Integer arithmetic only: floating-point reassociation would change results.
    if (!visited || !visited->dtype.is_integral() || visited->dtype.lanes() != 1) return visited;
    if (visited.as<IntImmNode>() || visited.as<VarNode>()) return visited;
    PrimExpr simplified = analyzer_.Simplify(visited);
    return ExprDeepEqual(simplified, visited) ? visited : simplified;
  }
  Stmt VisitStmt(const Stmt& s) override {
    if (const auto* f = s.as<ForNode>()) {
      const auto* min = f->min.as<IntImmNode>();
      const auto* extent = f->extent.as<IntImmNode>();
      if (min != nullptr && extent != nullptr && extent->value > 0) {
        analyzer_.Bind(f->loop_var, min->value, min->value + extent->value - 1);
      }
    }
    return StmtExprMutator::VisitStmt(s);
  }

 private:
  arith::Analyzer analyzer_;
};

}  // namespace

PrimFunc Simplify(const PrimFunc& f) { return WithBody(f, Simplifier().VisitStmt(f->body)); }

}  // namespace kiln::tir
