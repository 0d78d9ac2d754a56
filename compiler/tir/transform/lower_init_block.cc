// LowerInitBlock: a reduction block's init runs when every reduce iter var is at its start.
#include "compiler/ir/tir_functor.h"
#include "compiler/tir/transform/transform.h"

namespace kiln::tir {
namespace {

using namespace ir;  // NOLINT: passes build TIR nodes

class InitLowerer : public StmtExprMutator {
 public:
  Stmt VisitStmt(const Stmt& s) override {
    Stmt visited = StmtExprMutator::VisitStmt(s);
    const auto* block = visited.as<BlockNode>();
    if (block == nullptr || !block->init) return visited;
    PrimExpr cond;
    for (const IterVar& iv : block->iter_vars) {
      if (iv->iter_kind != IterKind::kReduce) continue;
      PrimExpr at_start = Binary(NodeKind::kEQ, iv->var, iv->dom->min);
      cond = cond ? Binary(NodeKind::kAnd, cond, at_start) : at_start;
    }
    Stmt init = cond ? Stmt(Make<IfThenElseNode>(cond, block->init, nullptr)) : block->init;
    BlockNode* out = CopyBlock(*block);
    out->init = Stmt();
    out->body = Seq({init, block->body});
    return Stmt(out);
  }
};

}  // namespace

PrimFunc LowerInitBlock(const PrimFunc& f) { return WithBody(f, InitLowerer().VisitStmt(f->body)); }

}  // namespace kiln::tir
