#include "compiler/tir/default_schedule.h"

#include <unordered_map>

#include "compiler/ir/tir_functor.h"

namespace kiln::tir {
namespace {

using namespace ir;  // NOLINT: a pass over TIR

struct Loop {
  const ForNode* node;
  IterKind kind = IterKind::kOpaque;  // of the iter var it drives
};

// Reorders and annotates perfect serial loop nests around a single block.
class Scheduler : public StmtExprMutator {
 public:
  Stmt VisitStmt(const Stmt& s) override {
    if (!s.as<ForNode>()) return StmtExprMutator::VisitStmt(s);
    // Collect a perfect nest of plain serial loops.
    std::vector<Loop> loops;
    Stmt inner = s;
    while (const auto* f = inner.as<ForNode>()) {
      if (f->for_kind != ForKind::kSerial || !f->annotations.empty()) break;
      loops.push_back({f});
      inner = f->body;
    }
    const auto* realize = inner.as<BlockRealizeNode>();
    if (loops.empty() || realize == nullptr || !Classify(*realize, &loops)) {
      return StmtExprMutator::VisitStmt(s);
    }
    std::vector<Loop> spatial, reduce;
    for (const Loop& l : loops) (l.kind == IterKind::kSpatial ? spatial : reduce).push_back(l);
    if (spatial.empty()) return s;
    // New order: all spatial but the last, the reductions, the last spatial loop.
    std::vector<Loop> order(spatial.begin(), spatial.end() - 1);
    order.insert(order.end(), reduce.begin(), reduce.end());
    order.push_back(spatial.back());
    Stmt body = inner;
    for (size_t i = order.size(); i-- > 0;) {
      const ForNode* f = order[i].node;
      ForKind kind = ForKind::kSerial;
      if (i + 1 == order.size() && order.size() > 1) kind = ForKind::kVectorized;
      if (i == 0 && order[i].kind == IterKind::kSpatial) kind = ForKind::kParallel;
      body = MakeFor(f->loop_var, f->min, f->extent, kind, body, f->annotations);
    }
    return body;
  }

 private:
  // Each loop must drive exactly one iter var directly (a remap) and the block must not read
  // what it writes at other points of a spatial axis; returns false to leave the nest alone.
  static bool Classify(const BlockRealizeNode& realize, std::vector<Loop>* loops) {
    const BlockNode& block = *realize.block;
    if (realize.iter_values.size() != block.iter_vars.size()) return false;
    std::unordered_map<const Object*, IterKind> by_loop_var;
    for (size_t i = 0; i < realize.iter_values.size(); ++i) {
      const auto* v = realize.iter_values[i].as<VarNode>();
      if (v == nullptr || by_loop_var.count(v) > 0) return false;
      IterKind kind = block.iter_vars[i]->iter_kind;
      if (kind != IterKind::kSpatial && kind != IterKind::kReduce) return false;
      by_loop_var[v] = kind;
    }
    for (Loop& l : *loops) {
      auto it = by_loop_var.find(l.node->loop_var.get());
      if (it == by_loop_var.end()) return false;
      l.kind = it->second;
    }
    const auto* pred = realize.predicate.as<IntImmNode>();
    return pred != nullptr && pred->value == 1;
  }
};

}  // namespace

PrimFunc ApplyDefaultSchedule(const PrimFunc& f) {
  if (GetAttr(f->attrs, "tir.is_scheduled")) return f;
  Stmt body = Scheduler().VisitStmt(f->body);
  if (body == f->body) return f;
  auto* node = new PrimFuncNode();
  node->params = f->params;
  node->buffer_map = f->buffer_map;
  node->attrs = f->attrs;
  node->body = body;
  return PrimFunc(node);
}

IRModule ApplyDefaultSchedule(const IRModule& mod) {
  IRModuleBuilder builder(mod);
  for (const auto& [name, entry] : mod->functions) {
    if (const auto* f = entry.second.as<PrimFuncNode>()) {
      builder.Update(entry.first, ApplyDefaultSchedule(entry.second.as_ref<PrimFuncNode>()));
      (void)f;
    }
  }
  return builder.Build();
}

}  // namespace kiln::tir
