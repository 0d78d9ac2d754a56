#include "compiler/tir/default_schedule.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/tir_functor.h"

namespace kiln::tir {
namespace {

using namespace ir;  // NOLINT: a pass over TIR

struct Loop {
  const ForNode* node;
  IterKind kind = IterKind::kOpaque;  // of the iter var it drives
};

// Reorders and annotates perfect serial loop nests around a single block.
// An elementwise stage after a tiled reduction, applied as each tile is stored:
//   for v...: out[v...] = value(M[v...], other[f(v)])   with M the reduction's result,
// read nowhere else, so M is never materialized (a fused matmul + bias + activation).
struct Epilogue {
  const BlockNode* block = nullptr;   // stores out[iter vars] = value
  const BufferNode* reads = nullptr;  // M
};

class Scheduler : public StmtExprMutator {
 public:
  explicit Scheduler(const Stmt& body) {
    PostOrderVisit(body, [&](const PrimExpr& e) {
      if (const auto* l = e.as<BufferLoadNode>()) ++loads_[l->buffer.get()];
    });
  }

  Stmt VisitStmt(const Stmt& s) override {
    if (const auto* seq = s.as<SeqStmtNode>()) return VisitSeq(*seq);
    if (const auto* block = s.as<BlockNode>()) return VisitAllocatingBlock(s, *block);
    if (!s.as<ForNode>()) return StmtExprMutator::VisitStmt(s);
    return ScheduleNest(s, nullptr);
  }

 private:
  // A perfect nest of plain serial loops around one block.
  struct Nest {
    std::vector<Loop> loops;
    Stmt inner;  // the block realize
    const BlockRealizeNode* realize = nullptr;
  };

  static bool AsNest(const Stmt& s, Nest* nest) {
    Stmt inner = s;
    while (const auto* f = inner.as<ForNode>()) {
      if (f->for_kind != ForKind::kSerial || !f->annotations.empty()) break;
      nest->loops.push_back({f});
      inner = f->body;
    }
    nest->inner = inner;
    nest->realize = inner.as<BlockRealizeNode>();
    return !nest->loops.empty() && nest->realize != nullptr &&
           Classify(*nest->realize, &nest->loops);
  }

  // Schedules the nest `s`; with an epilogue, returns null unless the epilogue was absorbed.
  Stmt ScheduleNest(const Stmt& s, const Epilogue* epilogue) {
    Nest nest;
    if (!AsNest(s, &nest)) return epilogue ? nullptr : StmtExprMutator::VisitStmt(s);
    const BlockRealizeNode* realize = nest.realize;
    std::vector<Loop> spatial, reduce;
    for (const Loop& l : nest.loops) (l.kind == IterKind::kSpatial ? spatial : reduce).push_back(l);
    if (epilogue) return TileReduction(spatial, reduce, *realize, epilogue);
    if (spatial.empty()) return s;
    if (Stmt tiled = TileReduction(spatial, reduce, *realize, nullptr)) return tiled;
    // New order: all spatial but the last, the reductions, the last spatial loop.
    std::vector<Loop> order(spatial.begin(), spatial.end() - 1);
    order.insert(order.end(), reduce.begin(), reduce.end());
    order.push_back(spatial.back());
    Stmt body = nest.inner;
    for (size_t i = order.size(); i-- > 0;) {
      const ForNode* f = order[i].node;
      ForKind kind = ForKind::kSerial;
      if (i + 1 == order.size() && order.size() > 1) kind = ForKind::kVectorized;
      if (i == 0 && order[i].kind == IterKind::kSpatial) kind = ForKind::kParallel;
      body = MakeFor(f->loop_var, f->min, f->extent, kind, body, f->annotations);
    }
    return body;
  }

  Stmt VisitSeq(const SeqStmtNode& seq) {
    std::vector<Stmt> out;
    for (size_t k = 0; k < seq.seq.size(); ++k) {
      Epilogue epilogue;
      if (k + 1 < seq.seq.size() && AsEpilogue(seq.seq[k], seq.seq[k + 1], &epilogue)) {
        if (Stmt fused = ScheduleNest(seq.seq[k], &epilogue)) {
          out.push_back(fused);
          ++k;
          continue;
        }
      }
      out.push_back(VisitStmt(seq.seq[k]));
    }
    return Seq(std::move(out));
  }

  // Records a block's allocations (the intermediates an epilogue may absorb) and drops those
  // that scheduling left unused.
  Stmt VisitAllocatingBlock(const Stmt& s, const BlockNode& block) {
    for (const Buffer& b : block.alloc_buffers) intermediates_.insert(b.get());
    Stmt out = StmtExprMutator::VisitStmt(s);
    const auto* scheduled = out.as<BlockNode>();
    if (scheduled == nullptr || scheduled->alloc_buffers.empty()) return out;
    struct Uses : StmtExprVisitor {
      std::unordered_set<const BufferNode*> buffers;
      void VisitBuffer(const Buffer& b) override { buffers.insert(b.get()); }
    } uses;
    uses.VisitStmt(scheduled->body);
    const std::unordered_set<const BufferNode*>& used = uses.buffers;
    std::vector<Buffer> kept;
    for (const Buffer& b : scheduled->alloc_buffers) {
      if (used.count(b.get())) kept.push_back(b);
    }
    if (kept.size() == scheduled->alloc_buffers.size()) return out;
    BlockNode* copy = CopyBlock(*scheduled);
    Block owner(copy);
    copy->alloc_buffers = std::move(kept);
    return owner;
  }

  // `consumer` is `for v...: out[v...] = value` reading the result M of the reduction nest
  // `producer` only at M[v...], over all of M, and M is an intermediate nothing else reads.
  bool AsEpilogue(const Stmt& producer, const Stmt& consumer, Epilogue* epilogue) const {
    Nest p, c;
    if (!AsNest(producer, &p) || !AsNest(consumer, &c)) return false;
    const auto* m = p.realize->block->body.as<BufferStoreNode>();
    const BlockNode& block = *c.realize->block;
    const auto* store = block.body.as<BufferStoreNode>();
    if (m == nullptr || store == nullptr || block.init || !block.alloc_buffers.empty() ||
        !block.match_buffers.empty() || intermediates_.count(m->buffer.get()) == 0 ||
        store->buffer.get() == m->buffer.get() || store->indices.size() != block.iter_vars.size() ||
        m->buffer->shape.size() != block.iter_vars.size() ||
        c.loops.size() != block.iter_vars.size()) {
      return false;
    }
    for (size_t k = 0; k < block.iter_vars.size(); ++k) {
      const IterVar& iv = block.iter_vars[k];
      const int64_t* extent = AsConstInt(c.loops[k].node->extent);
      const int64_t* dim = AsConstInt(m->buffer->shape[k]);
      if (iv->iter_kind != IterKind::kSpatial || store->indices[k].get() != iv->var.get() ||
          c.realize->iter_values[k].get() != c.loops[k].node->loop_var.get() || extent == nullptr ||
          dim == nullptr || *extent != *dim) {
        return false;
      }
    }
    int reads = 0;
    bool elsewhere = false;
    PostOrderVisit(store->value, [&](const PrimExpr& e) {
      const auto* l = e.as<BufferLoadNode>();
      if (l == nullptr || l->buffer.get() != m->buffer.get()) return;
      ++reads;
      std::vector<PrimExpr> at;
      for (const IterVar& iv : block.iter_vars) at.push_back(iv->var);
      if (!SameIndices(l->indices, at)) elsewhere = true;
    });
    auto total = loads_.find(m->buffer.get());
    if (reads == 0 || elsewhere || total == loads_.end() ||
        total->second != reads + CountLoads(p.realize->block->body, m->buffer.get())) {
      return false;
    }
    epilogue->block = &block;
    epilogue->reads = m->buffer.get();
    return true;
  }

  static int CountLoads(const Stmt& s, const BufferNode* buffer) {
    int n = 0;
    PostOrderVisit(s, [&](const PrimExpr& e) {
      if (const auto* l = e.as<BufferLoadNode>(); l != nullptr && l->buffer.get() == buffer) ++n;
    });
    return n;
  }

  // The epilogue's value at one tile point: its iter vars at `indices`, M read from `acc`.
  class EpilogueRewriter : public StmtExprMutator {
   public:
    EpilogueRewriter(const Epilogue& e, const std::vector<PrimExpr>& indices, PrimExpr acc)
        : reads_(e.reads), acc_(std::move(acc)) {
      for (size_t k = 0; k < indices.size(); ++k) {
        const Var& iv = e.block->iter_vars[k]->var;
        values_[iv.get()] =
            indices[k]->dtype == iv->dtype ? indices[k] : Cast(iv->dtype, indices[k]);
      }
    }
    PrimExpr VisitExpr(const PrimExpr& e) override {
      if (const auto* v = e.as<VarNode>()) {
        auto it = values_.find(v);
        return it == values_.end() ? e : it->second;
      }
      if (const auto* l = e.as<BufferLoadNode>(); l != nullptr && l->buffer.get() == reads_)
        return acc_;
      return DefaultVisitExpr(e);
    }

   private:
    const BufferNode* reads_;
    PrimExpr acc_;
    std::unordered_map<const VarNode*, PrimExpr> values_;
  };

  std::unordered_map<const BufferNode*, int> loads_;  // loads of each buffer in the function
  std::unordered_set<const BufferNode*> intermediates_;

  // Register blocking for matmul- and conv-like nests: two or more spatial loops around
  // reductions, the last two (i, j) with constant extents, one store to the output at the spatial
  // iter vars, and the output read only at that point. A rows x cols tile of the output (4 x 32
  // for a matmul; fewer where the extents do not divide, e.g. 4 x 8 for a 56 x 56 conv image)
  // lives in a local accumulator (registers, once unrolled and vectorized) across the whole
  // reduction:
  //
  //   for j.o in parallel(N/32):           # the B panel of j.o stays in L2 across i.o
  //     for i.o in range(M/4):
  //       acc[4, 32] = init                # or the output's current value, without an init
  //       for k: acc[i.i, j.i] = body      # i.i unrolled 4, j.i vectorized 32
  //       C[i.o*4 + i.i, j.o*32 + j.i] = acc
  //
  // An operand indexed [k, j] or [j, k] is first packed into panels P[j.o, k, j.i], so that the
  // inner loop reads it contiguously (the unpacked rows are a page apart for large N). Packing
  // copies the operand once, so it is done only when each panel is reused by enough rows.
  static constexpr int64_t kMinRowsToPack = 16;

  // The largest tile dimension from `choices` that divides `extent`, or 0.
  static int64_t TileSize(int64_t extent, std::initializer_list<int64_t> choices) {
    for (int64_t c : choices) {
      if (extent % c == 0) return c;
    }
    return 0;
  }

  static Stmt TileReduction(const std::vector<Loop>& spatial, const std::vector<Loop>& reduce,
                            const BlockRealizeNode& realize, const Epilogue* epilogue) {
    if (spatial.size() < 2 || reduce.empty()) return nullptr;
    const BlockNode& block = *realize.block;
    const ForNode* li = spatial[spatial.size() - 2].node;
    const ForNode* lj = spatial.back().node;
    const int64_t* ei = AsConstInt(li->extent);
    const int64_t* ej = AsConstInt(lj->extent);
    const int64_t* mi = AsConstInt(li->min);
    const int64_t* mj = AsConstInt(lj->min);
    if (ei == nullptr || ej == nullptr || mi == nullptr || mj == nullptr || *mi != 0 || *mj != 0 ||
        !block.alloc_buffers.empty() || !block.match_buffers.empty()) {
      return nullptr;
    }
    const int64_t rows = TileSize(*ei, {4, 2, 1}), cols = TileSize(*ej, {32, 16, 8});
    if (cols == 0) return nullptr;
    // Block iter var -> the loop var driving it.
    std::unordered_map<const Object*, const VarNode*> loop_of;
    for (size_t k = 0; k < block.iter_vars.size(); ++k)
      loop_of[block.iter_vars[k]->var.get()] = realize.iter_values[k].as<VarNode>();
    const auto* store = block.body.as<BufferStoreNode>();
    if (store == nullptr || !IndexedBySpatialVars(*store, block, loop_of)) return nullptr;
    const auto* init = block.init ? block.init.as<BufferStoreNode>() : nullptr;
    if (block.init && (init == nullptr || init->buffer.get() != store->buffer.get() ||
                       !SameIndices(init->indices, store->indices))) {
      return nullptr;
    }
    bool output_read_elsewhere = false;
    PostOrderVisit(store->value, [&](const PrimExpr& e) {
      const auto* l = e.as<BufferLoadNode>();
      if (l && l->buffer.get() == store->buffer.get() && !SameIndices(l->indices, store->indices))
        output_read_elsewhere = true;
    });
    if (output_read_elsewhere) return nullptr;

    const Buffer& out = store->buffer;
    DataType ti = li->loop_var->dtype, tj = lj->loop_var->dtype;
    Var io = MakeVar(li->loop_var->name + "_o", ti), jo = MakeVar(lj->loop_var->name + "_o", tj);
    Buffer acc =
        MakeBuffer(out->name + "_acc", out->dtype, {IntImm(ti, rows), IntImm(tj, cols)}, "local");
    Panel panel;
    if (*ei >= kMinRowsToPack) panel = FindPanel(*store, loop_of, lj, reduce, cols);

    // One 4 x 32 tile statement: `make(ii, ji, rewrite)` where rewrite maps the block's iter
    // vars to this tile's points and loads of the output to the accumulator.
    auto tile = [&](const std::string& tag,
                    const std::function<Stmt(const Var&, const Var&)>& make) {
      Var ii = MakeVar(li->loop_var->name + "_i" + tag, ti);
      Var ji = MakeVar(lj->loop_var->name + "_i" + tag, tj);
      Stmt body = make(ii, ji);
      body = MakeFor(ji, IntImm(tj, 0), IntImm(tj, cols), ForKind::kVectorized, body);
      return MakeFor(ii, IntImm(ti, 0), IntImm(ti, rows), ForKind::kUnrolled, body);
    };
    auto rewriter = [&](const Var& ii, const Var& ji) {
      return Rewriter(realize, li, lj, io * IntImm(ti, rows) + ii, jo * IntImm(tj, cols) + ji, out,
                      acc, {ii, ji}, panel, jo, ji);
    };
    Stmt start = tile("_init", [&](const Var& ii, const Var& ji) {
      Rewriter r = rewriter(ii, ji);
      PrimExpr value = init ? r.VisitExpr(init->value)
                            : Make<BufferLoadNode>(out->dtype, out, r.Indices(store->indices));
      return Make<BufferStoreNode>(acc, value, std::vector<PrimExpr>{ii, ji});
    });
    Stmt update = tile("", [&](const Var& ii, const Var& ji) {
      Rewriter r = rewriter(ii, ji);
      return Make<BufferStoreNode>(acc, r.VisitExpr(store->value), std::vector<PrimExpr>{ii, ji});
    });
    for (size_t r = reduce.size(); r-- > 0;) {
      const ForNode* f = reduce[r].node;
      update = MakeFor(f->loop_var, f->min, f->extent, ForKind::kSerial, update);
    }
    Stmt finish = tile("_store", [&](const Var& ii, const Var& ji) {
      Rewriter r = rewriter(ii, ji);
      std::vector<PrimExpr> indices;
      for (const PrimExpr& x : store->indices) indices.push_back(r.VisitExpr(x));
      PrimExpr tile_value = Make<BufferLoadNode>(acc->dtype, acc, std::vector<PrimExpr>{ii, ji});
      if (epilogue != nullptr) {
        const auto* e = epilogue->block->body.as<BufferStoreNode>();
        EpilogueRewriter er(*epilogue, indices, tile_value);
        return Make<BufferStoreNode>(e->buffer, er.VisitExpr(e->value), indices);
      }
      return Make<BufferStoreNode>(out, tile_value, indices);
    });
    Stmt body = Make<AllocateNode>(acc, Seq({start, update, finish}));
    // Outer loops: the leading spatial ones, then j.o and i.o; the first that has more than one
    // iteration runs in parallel (a batch-1 conv parallelizes over its channels).
    struct Outer {
      Var var;
      PrimExpr min, extent;
    };
    std::vector<Outer> outer;
    for (size_t k = 0; k + 2 < spatial.size(); ++k)
      outer.push_back({spatial[k].node->loop_var, spatial[k].node->min, spatial[k].node->extent});
    outer.push_back({jo, IntImm(tj, 0), IntImm(tj, *ej / cols)});
    outer.push_back({io, IntImm(ti, 0), IntImm(ti, *ei / rows)});
    size_t parallel = 0;
    while (parallel + 1 < outer.size() && AsConstInt(outer[parallel].extent) &&
           *AsConstInt(outer[parallel].extent) == 1) {
      ++parallel;
    }
    for (size_t k = outer.size(); k-- > 0;) {
      body = MakeFor(outer[k].var, outer[k].min, outer[k].extent,
                     k == parallel ? ForKind::kParallel : ForKind::kSerial, body);
    }
    if (!panel.packed) return body;
    return Make<AllocateNode>(panel.packed, Seq({PackPanels(panel, lj, tj), body}));
  }

  // An operand read at [k, j] or [j, k] (k the only reduction loop, constant extent), packed into
  // `packed` = [N/32, K, 32].
  struct Panel {
    Buffer source;
    Buffer packed;
    bool j_first = false;
    const ForNode* k_loop = nullptr;
    int64_t cols = 0;
  };

  static PrimExpr CastTo(DataType t, const PrimExpr& e) { return e->dtype == t ? e : Cast(t, e); }

  static bool IsConstZero(const PrimExpr& e) {
    const int64_t* v = AsConstInt(e);
    return v != nullptr && *v == 0;
  }

  static Panel FindPanel(const BufferStoreNode& store,
                         const std::unordered_map<const Object*, const VarNode*>& loop_of,
                         const ForNode* lj, const std::vector<Loop>& reduce, int64_t cols) {
    Panel panel;
    if (reduce.size() != 1 || !AsConstInt(reduce[0].node->extent) ||
        !IsConstZero(reduce[0].node->min)) {
      return panel;
    }
    const VarNode* k_var = reduce[0].node->loop_var.get();
    auto driven_by = [&](const PrimExpr& index, const VarNode* loop) {
      const auto* v = index.as<VarNode>();
      auto it = v ? loop_of.find(v) : loop_of.end();
      return it != loop_of.end() && it->second == loop;
    };
    PostOrderVisit(store.value, [&](const PrimExpr& e) {
      const auto* l = e.as<BufferLoadNode>();
      if (panel.source || !l || l->indices.size() != 2 || l->buffer.get() == store.buffer.get())
        return;
      bool kj = driven_by(l->indices[0], k_var) && driven_by(l->indices[1], lj->loop_var.get());
      bool jk = driven_by(l->indices[0], lj->loop_var.get()) && driven_by(l->indices[1], k_var);
      if (!kj && !jk) return;
      panel.source = l->buffer;
      panel.j_first = jk;
    });
    if (!panel.source) return panel;
    panel.k_loop = reduce[0].node;
    panel.cols = cols;
    DataType tj = lj->loop_var->dtype;
    panel.packed = MakeBuffer(panel.source->name + "_panels", panel.source->dtype,
                              {IntImm(tj, *AsConstInt(lj->extent) / cols),
                               CastTo(tj, panel.k_loop->extent), IntImm(tj, cols)});
    return panel;
  }

  //   for jo in parallel(N/32): for k in range(K): for ji in vectorized(32):
  //     P[jo, k, ji] = B[k, jo*32 + ji]   (or B[jo*32 + ji, k])
  static Stmt PackPanels(const Panel& panel, const ForNode* lj, DataType tj) {
    const ForNode* lk = panel.k_loop;
    Var jo = MakeVar("pack_" + lj->loop_var->name + "_o", tj);
    Var k = MakeVar("pack_" + lk->loop_var->name, lk->loop_var->dtype);
    Var ji = MakeVar("pack_" + lj->loop_var->name + "_i", tj);
    const int64_t cols = panel.cols;
    PrimExpr j = jo * IntImm(tj, cols) + ji;
    std::vector<PrimExpr> src =
        panel.j_first ? std::vector<PrimExpr>{j, k} : std::vector<PrimExpr>{k, j};
    Stmt body = Make<BufferStoreNode>(panel.packed,
                                      Make<BufferLoadNode>(panel.source->dtype, panel.source, src),
                                      std::vector<PrimExpr>{jo, CastTo(tj, k), ji});
    body = MakeFor(ji, IntImm(tj, 0), IntImm(tj, cols), ForKind::kVectorized, body);
    body = MakeFor(k, lk->min, lk->extent, ForKind::kSerial, body);
    return MakeFor(jo, IntImm(tj, 0), IntImm(tj, *AsConstInt(lj->extent) / cols),
                   ForKind::kParallel, body);
  }

  // Substitutes a block's iter vars by one tile point, the output by the accumulator and the
  // panel operand by its packed copy.
  class Rewriter : public StmtExprMutator {
   public:
    Rewriter(const BlockRealizeNode& realize, const ForNode* li, const ForNode* lj, PrimExpr i,
             PrimExpr j, Buffer out, Buffer acc, std::vector<PrimExpr> acc_index,
             const Panel& panel, Var jo, Var ji)
        : out_(std::move(out)),
          acc_(std::move(acc)),
          acc_index_(std::move(acc_index)),
          panel_(panel),
          jo_(std::move(jo)),
          ji_(std::move(ji)) {
      for (size_t k = 0; k < realize.block->iter_vars.size(); ++k) {
        const PrimExpr& loop = realize.iter_values[k];
        const Object* iv = realize.block->iter_vars[k]->var.get();
        if (loop.get() == li->loop_var.get()) {
          values_[iv] = i;
        } else if (loop.get() == lj->loop_var.get()) {
          values_[iv] = j;
        } else {
          values_[iv] = loop;
        }
      }
    }
    // Output indices at this tile point.
    std::vector<PrimExpr> Indices(const std::vector<PrimExpr>& indices) {
      std::vector<PrimExpr> out;
      for (const PrimExpr& x : indices) out.push_back(VisitExpr(x));
      return out;
    }
    PrimExpr VisitExpr(const PrimExpr& e) override {
      if (const auto* v = e.as<VarNode>()) {
        auto it = values_.find(v);
        return it == values_.end() ? e : it->second;
      }
      if (const auto* l = e.as<BufferLoadNode>()) {
        if (l->buffer.get() == out_.get()) return Make<BufferLoadNode>(l->dtype, acc_, acc_index_);
        if (panel_.packed && l->buffer.get() == panel_.source.get()) {
          PrimExpr k = VisitExpr(l->indices[panel_.j_first ? 1 : 0]);
          return Make<BufferLoadNode>(l->dtype, panel_.packed,
                                      std::vector<PrimExpr>{jo_, CastTo(jo_->dtype, k), ji_});
        }
      }
      return DefaultVisitExpr(e);
    }

   private:
    Buffer out_, acc_;
    std::vector<PrimExpr> acc_index_;
    const Panel& panel_;
    Var jo_, ji_;
    std::unordered_map<const Object*, PrimExpr> values_;
  };

  static bool SameIndices(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t k = 0; k < a.size(); ++k) {
      if (a[k].get() != b[k].get()) return false;
    }
    return true;
  }

  // The store writes one point per spatial iteration: its indices are the spatial iter vars,
  // each once.
  static bool IndexedBySpatialVars(
      const BufferStoreNode& store, const BlockNode& block,
      const std::unordered_map<const Object*, const VarNode*>& loop_of) {
    size_t spatial = 0;
    for (const IterVar& iv : block.iter_vars) spatial += iv->iter_kind == IterKind::kSpatial;
    if (store.indices.size() != spatial) return false;
    std::unordered_set<const VarNode*> seen;
    for (const PrimExpr& index : store.indices) {
      const auto* v = index.as<VarNode>();
      if (v == nullptr || loop_of.count(v) == 0 || !seen.insert(v).second) return false;
      for (const IterVar& iv : block.iter_vars) {
        if (iv->var.get() == v && iv->iter_kind != IterKind::kSpatial) return false;
      }
    }
    return true;
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
  return WithBody(f, Scheduler(f->body).VisitStmt(f->body));
}

IRModule ApplyDefaultSchedule(const IRModule& mod) {
  IRModuleBuilder builder(mod);
  for (const auto& [name, entry] : mod->functions) {
    if (auto f = entry.second.as_ref<PrimFuncNode>())
      builder.Update(entry.first, ApplyDefaultSchedule(f));
  }
  return builder.Build();
}

PrimFunc ApplyDefaultScheduleAndMark(const PrimFunc& f) {
  if (GetAttr(f->attrs, "tir.is_scheduled")) return f;
  return WithFuncAttr(ApplyDefaultSchedule(f), "tir.is_scheduled", Bool(true));
}

pass::PassPtr DefaultSchedulePass() {
  return pass::MakePrimFuncPass(
      "DefaultSchedule",
      [](const PrimFunc& f) -> absl::StatusOr<PrimFunc> { return ApplyDefaultScheduleAndMark(f); });
}

}  // namespace kiln::tir
