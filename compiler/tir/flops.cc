#include "compiler/tir/flops.h"

#include "compiler/ir/tir_functor.h"

namespace kiln::tir {
namespace {

using namespace ir;  // NOLINT: a walk over TIR

class FlopCounter : public StmtExprVisitor {
 public:
  double flops = 0;
  bool symbolic = false;

  void VisitStmt(const Stmt& s) override {
    if (const auto* f = s.as<ForNode>()) {
      const int64_t* extent = AsConstInt(f->extent);
      if (extent == nullptr) symbolic = true;
      const double saved = iterations_;
      iterations_ *= extent != nullptr ? static_cast<double>(*extent) : 1.0;
      DefaultVisitStmt(s);
      iterations_ = saved;
      return;
    }
    if (const auto* st = s.as<BufferStoreNode>()) {
      double ops = 0;
      PostOrderVisit(st->value, [&](const PrimExpr& e) {
        // An int8 dot product of four pairs counts as their four multiplies and adds, so that
        // int8 and float kernels compare in one column.
        if (const auto* c = e.as<CallNode>(); c != nullptr && c->op == "dot4_u8i8") {
          ops += 8.0 * e->dtype.lanes();
          return;
        }
        if (!e->dtype.is_float()) return;
        const double lanes = e->dtype.lanes();
        switch (e->kind()) {
          case NodeKind::kAdd:
          case NodeKind::kSub:
          case NodeKind::kMul:
          case NodeKind::kDiv:
          case NodeKind::kMin:
          case NodeKind::kMax:
            ops += lanes;
            break;
          case NodeKind::kCall:
            ops += lanes * (e.as<CallNode>()->op == "fma" ? 2 : 1);
            break;
          default:
            break;
        }
      });
      flops += ops * iterations_;
    }
    DefaultVisitStmt(s);
  }

 private:
  double iterations_ = 1;
};

}  // namespace

double EstimateFlops(const PrimFunc& f) {
  FlopCounter counter;
  counter.VisitStmt(f->body);
  return counter.symbolic ? 0 : counter.flops;
}

}  // namespace kiln::tir
