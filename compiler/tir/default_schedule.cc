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
    if (Stmt tiled = TileReduction(spatial, reduce, *realize)) return tiled;
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
  // Register blocking for matmul-like nests (two or more spatial loops around reductions, the
  // last two with constant extents divisible by the tile): the init moves to its own nest
  // (decompose_reduction), and a 4 x 32 tile of the output is updated per reduction step:
  //   i, j, k  ->  i.o (parallel), [init rows], k, j.o, i.i (unrolled 4), j.i (vectorized 32)
  // Each B row segment loaded is used for 4 output rows; the 4 output rows stay in L1 across k.
  static Stmt TileReduction(const std::vector<Loop>& spatial, const std::vector<Loop>& reduce,
                            const BlockRealizeNode& realize) {
    constexpr int64_t kRows = 4, kCols = 32;
    if (spatial.size() < 2 || reduce.empty()) return nullptr;
    const ForNode* li = spatial[spatial.size() - 2].node;
    const ForNode* lj = spatial.back().node;
    const int64_t* ei = AsConstInt(li->extent);
    const int64_t* ej = AsConstInt(lj->extent);
    const int64_t* mi = AsConstInt(li->min);
    const int64_t* mj = AsConstInt(lj->min);
    if (ei == nullptr || ej == nullptr || mi == nullptr || mj == nullptr || *mi != 0 || *mj != 0 ||
        *ei % kRows != 0 || *ej % kCols != 0) {
      return nullptr;
    }
    DataType ti = li->loop_var->dtype, tj = lj->loop_var->dtype;
    Var io = MakeVar(li->loop_var->name + "_o", ti), ii = MakeVar(li->loop_var->name + "_i", ti);
    Var jo = MakeVar(lj->loop_var->name + "_o", tj), ji = MakeVar(lj->loop_var->name + "_i", tj);
    auto tiled_values = [&](const Var& i_inner, const Var& j_inner) {
      std::vector<PrimExpr> values;
      for (const PrimExpr& v : realize.iter_values) {
        if (v.get() == li->loop_var.get()) {
          values.push_back(io * IntImm(ti, kRows) + i_inner);
        } else if (v.get() == lj->loop_var.get()) {
          values.push_back(jo * IntImm(tj, kCols) + j_inner);
        } else {
          values.push_back(v);
        }
      }
      return values;
    };
    const BlockNode& block = *realize.block;
    Stmt init_nest;
    Block update_block = realize.block;
    if (block.init) {
      auto* init = new BlockNode();
      Block init_block(init);
      auto* update = new BlockNode();
      update_block = Block(update);
      init->name = block.name + "_init";
      update->name = block.name;
      Var ii0 = MakeVar(ii->name, ti), ji0 = MakeVar(ji->name, tj), jo0 = MakeVar(jo->name, tj);
      std::vector<PrimExpr> all = tiled_values(ii0, ji0), init_values;
      for (PrimExpr& v : all) {
        v = Substitute(
            v, [&](const Var& x) -> PrimExpr { return x == jo ? PrimExpr(jo0) : PrimExpr(); });
      }
      for (size_t k = 0; k < block.iter_vars.size(); ++k) {
        if (block.iter_vars[k]->iter_kind != IterKind::kSpatial) continue;
        init->iter_vars.push_back(block.iter_vars[k]);
        init_values.push_back(all[k]);
      }
      init->writes = block.writes;
      init->body = block.init;
      update->iter_vars = block.iter_vars;
      update->reads = block.reads;
      update->writes = block.writes;
      update->alloc_buffers = block.alloc_buffers;
      update->match_buffers = block.match_buffers;
      update->annotations = block.annotations;
      update->body = block.body;
      init_nest = Make<BlockRealizeNode>(init_values, realize.predicate, init_block);
      init_nest = MakeFor(ji0, IntImm(tj, 0), IntImm(tj, kCols), ForKind::kVectorized, init_nest);
      init_nest = MakeFor(ii0, IntImm(ti, 0), IntImm(ti, kRows), ForKind::kUnrolled, init_nest);
      init_nest = MakeFor(jo0, IntImm(tj, 0), IntImm(tj, *ej / kCols), ForKind::kSerial, init_nest);
    }
    Stmt body = Make<BlockRealizeNode>(tiled_values(ii, ji), realize.predicate, update_block);
    body = MakeFor(ji, IntImm(tj, 0), IntImm(tj, kCols), ForKind::kVectorized, body);
    body = MakeFor(ii, IntImm(ti, 0), IntImm(ti, kRows), ForKind::kUnrolled, body);
    body = MakeFor(jo, IntImm(tj, 0), IntImm(tj, *ej / kCols), ForKind::kSerial, body);
    for (size_t r = reduce.size(); r-- > 0;) {
      const ForNode* f = reduce[r].node;
      body = MakeFor(f->loop_var, f->min, f->extent, ForKind::kSerial, body);
    }
    if (init_nest) body = Seq({init_nest, body});
    bool outermost = spatial.size() == 2;
    body = MakeFor(io, IntImm(ti, 0), IntImm(ti, *ei / kRows),
                   outermost ? ForKind::kParallel : ForKind::kSerial, body);
    for (size_t k = spatial.size() - 2; k-- > 0;) {
      const ForNode* f = spatial[k].node;
      body = MakeFor(f->loop_var, f->min, f->extent, k == 0 ? ForKind::kParallel : ForKind::kSerial,
                     body);
    }
    return body;
  }

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
  return WithBody(f, Scheduler().VisitStmt(f->body));
}

IRModule ApplyDefaultSchedule(const IRModule& mod) {
  IRModuleBuilder builder(mod);
  for (const auto& [name, entry] : mod->functions) {
    if (auto f = entry.second.as_ref<PrimFuncNode>())
      builder.Update(entry.first, ApplyDefaultSchedule(f));
  }
  return builder.Build();
}

}  // namespace kiln::tir
