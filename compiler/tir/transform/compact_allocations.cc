// Shrinks intermediate allocations to what is used (TVM's PlanAndUpdateBufferAllocationLocation
// and CompactBufferAllocation in one pass over plain loops).
//
// An Allocate first sinks into the loops around all its accesses when each iteration provably
// uses its own part of the buffer (no value can flow between iterations), then each dimension is
// cut to the constant-width window the accesses touch, with indices shifted to the window's
// start:
//
//   allocate T[64, 64]                        for i in range(64):
//   for i in range(64):                  ->     allocate T[1, 64]
//     for j: T[i, j] = ...; ... T[i, j]          for j: T[0, j] = ...; ... T[0, j]
#include <unordered_set>

#include "compiler/arith/analyzer.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/tir/transform/transform.h"

namespace kiln::tir {
namespace {

using namespace ir;  // NOLINT: a pass over TIR

// Where the accesses of one dimension fall, relative to the variables bound outside the
// statement examined: [base + lo, base + hi].
struct Window {
  bool known = false;
  PrimExpr base;
  int64_t lo = 0, hi = 0;
  int64_t width() const { return hi - lo + 1; }
};

// The accesses to `buffer` inside `body`, and the variables `body` binds.
class AccessCollector : public StmtExprVisitor {
 public:
  explicit AccessCollector(const BufferNode* buffer) : buffer_(buffer) {}
  std::vector<std::vector<PrimExpr>> accesses;
  std::vector<const ForNode*> loops;
  std::unordered_set<const Object*> bound_inside;
  bool opaque_use = false;  // the data pointer used other than through loads and stores

  void VisitExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<BufferLoadNode>(); l && l->buffer.get() == buffer_) {
      accesses.push_back(l->indices);
      for (const PrimExpr& i : l->indices) VisitExpr(i);
      return;
    }
    if (e.get() == buffer_->data.get()) opaque_use = true;
    if (const auto* let = e.as<LetNode>()) bound_inside.insert(let->var.get());
    DefaultVisitExpr(e);
  }
  void VisitStmt(const Stmt& s) override {
    if (const auto* st = s.as<BufferStoreNode>(); st && st->buffer.get() == buffer_) {
      accesses.push_back(st->indices);
      for (const PrimExpr& i : st->indices) VisitExpr(i);
      VisitExpr(st->value);
      return;
    }
    if (const auto* f = s.as<ForNode>()) {
      loops.push_back(f);
      bound_inside.insert(f->loop_var.get());
    }
    if (const auto* let = s.as<LetStmtNode>()) bound_inside.insert(let->var.get());
    DefaultVisitStmt(s);
  }

 private:
  const BufferNode* buffer_;
};

bool Mentions(const PrimExpr& e, const std::unordered_set<const Object*>& vars) {
  bool found = false;
  PostOrderVisit(e, [&](const PrimExpr& x) {
    if (vars.count(x.get()) > 0 || x.as<BufferLoadNode>()) found = true;
  });
  return found;
}

// Per dimension, the window of `buffer`'s accesses inside `body`. Each index splits into a base
// (the index with every loop inside `body` at its first iteration), which must be the same for
// all accesses up to a constant, and a bounded offset over those loops.
std::vector<Window> AccessWindows(const Buffer& buffer, const Stmt& body) {
  AccessCollector c(buffer.get());
  c.VisitStmt(body);
  std::vector<Window> windows(buffer->shape.size());
  if (c.opaque_use || c.accesses.empty()) return windows;
  arith::Analyzer analyzer;
  std::unordered_set<const Object*> bounded;
  for (const ForNode* f : c.loops) {
    const int64_t* min = AsConstInt(f->min);
    const int64_t* extent = AsConstInt(f->extent);
    if (min == nullptr || extent == nullptr || *extent <= 0) continue;
    analyzer.Bind(f->loop_var, *min, *min + *extent - 1);
    bounded.insert(f->loop_var.get());
  }
  // Every variable in the accesses that is not a bounded loop inside `body`.
  std::unordered_set<const Object*> outside_or_unbounded;
  for (const std::vector<PrimExpr>& access : c.accesses) {
    for (const PrimExpr& index : access) {
      PostOrderVisit(index, [&](const PrimExpr& x) {
        if (x.as<VarNode>() && bounded.count(x.get()) == 0) outside_or_unbounded.insert(x.get());
      });
    }
  }
  auto at_first_iteration = [&](const PrimExpr& e) {
    return analyzer.Simplify(Substitute(e, [&](const Var& v) -> PrimExpr {
      for (const ForNode* f : c.loops) {
        if (f->loop_var.get() == v.get()) return f->min;
      }
      return PrimExpr();
    }));
  };
  for (size_t d = 0; d < windows.size(); ++d) {
    Window& w = windows[d];
    w.known = true;
    for (const std::vector<PrimExpr>& access : c.accesses) {
      if (access.size() != windows.size()) return {};
      // A vector index Ramp(b, s, n) touches b .. b + s * (n - 1).
      PrimExpr index = access[d];
      int64_t lanes_lo = 0, lanes_hi = 0;
      if (const auto* ramp = index.as<RampNode>()) {
        const int64_t* stride = AsConstInt(ramp->stride);
        if (stride == nullptr) return {};
        (*stride < 0 ? lanes_lo : lanes_hi) = *stride * (ramp->lanes - 1);
        index = ramp->base;
      }
      if (index->dtype.lanes() != 1) return {};
      PrimExpr base = at_first_iteration(index);
      PrimExpr offset_expr = analyzer.Simplify(index - base);
      arith::ConstIntBound offset = analyzer.Bound(offset_expr);
      if (offset.min != arith::ConstIntBound::kNegInf) offset.min += lanes_lo;
      if (offset.max != arith::ConstIntBound::kPosInf) offset.max += lanes_hi;
      // The offset must be a function of the bounded loops alone (i % n is not).
      if (Mentions(base, c.bound_inside) || Mentions(offset_expr, outside_or_unbounded) ||
          offset.min == arith::ConstIntBound::kNegInf ||
          offset.max == arith::ConstIntBound::kPosInf) {
        w.known = false;
        break;
      }
      int64_t shift = 0;
      if (w.base) {
        PrimExpr offset = analyzer.Simplify(base - w.base);
        const int64_t* diff = AsConstInt(offset);
        if (diff == nullptr) {
          w.known = false;
          break;
        }
        shift = *diff;
      } else {
        w.base = base;
        w.lo = offset.min;
        w.hi = offset.max;
      }
      w.lo = std::min(w.lo, shift + offset.min);
      w.hi = std::max(w.hi, shift + offset.max);
    }
  }
  return windows;
}

// True when different iterations of `loop` touch disjoint parts of `buffer`: some dimension's
// window moves by at least its width from one iteration to the next.
bool IterationsAreDisjoint(const Buffer& buffer, const ForNode& loop) {
  arith::Analyzer analyzer;
  for (const Window& w : AccessWindows(buffer, loop.body)) {
    if (!w.known) continue;
    PrimExpr next = Substitute(w.base, [&](const Var& v) -> PrimExpr {
      return v.get() == loop.loop_var.get() ? PrimExpr(loop.loop_var + 1) : PrimExpr();
    });
    PrimExpr stride = analyzer.Simplify(next - w.base);
    const int64_t* step = AsConstInt(stride);
    if (step != nullptr && (*step >= w.width() || -*step >= w.width())) return true;
  }
  return false;
}

// Rewrites accesses of `from` into `to`, each index shifted down by the window start.
class Retarget : public StmtExprMutator {
 public:
  Retarget(const BufferNode* from, Buffer to, std::vector<PrimExpr> starts)
      : from_(from), to_(std::move(to)), starts_(std::move(starts)) {}
  PrimExpr VisitExpr(const PrimExpr& e) override {
    PrimExpr visited = StmtExprMutator::VisitExpr(e);
    if (const auto* l = visited.as<BufferLoadNode>(); l && l->buffer.get() == from_)
      return Make<BufferLoadNode>(l->dtype, to_, Shift(l->indices));
    return visited;
  }
  Stmt VisitStmt(const Stmt& s) override {
    Stmt visited = StmtExprMutator::VisitStmt(s);
    if (const auto* st = visited.as<BufferStoreNode>(); st && st->buffer.get() == from_)
      return Make<BufferStoreNode>(to_, st->value, Shift(st->indices));
    return visited;
  }

 private:
  std::vector<PrimExpr> Shift(const std::vector<PrimExpr>& indices) {
    std::vector<PrimExpr> out;
    for (size_t d = 0; d < indices.size(); ++d) {
      const auto* ramp = indices[d].as<RampNode>();
      if (starts_[d] && ramp != nullptr) {
        out.push_back(
            Make<RampNode>(analyzer_.Simplify(ramp->base - starts_[d]), ramp->stride, ramp->lanes));
        continue;
      }
      out.push_back(starts_[d] ? analyzer_.Simplify(indices[d] - starts_[d]) : indices[d]);
    }
    return out;
  }
  const BufferNode* from_;
  Buffer to_;
  std::vector<PrimExpr> starts_;
  arith::Analyzer analyzer_;
};

// The allocation of `buffer` around `body`, cut to its access windows.
Stmt Compact(const Buffer& buffer, const Stmt& body) {
  if (!buffer->strides.empty()) return Make<AllocateNode>(buffer, body);
  std::vector<Window> windows = AccessWindows(buffer, body);
  std::vector<PrimExpr> shape = buffer->shape, starts(shape.size());
  bool changed = false;
  for (size_t d = 0; d < windows.size(); ++d) {
    const Window& w = windows[d];
    if (!w.known) continue;
    const int64_t* extent = AsConstInt(shape[d]);
    if (extent != nullptr && w.width() >= *extent) continue;
    DataType t = shape[d]->dtype;
    shape[d] = IntImm(t, w.width());
    starts[d] = w.base + IntImm(w.base->dtype, w.lo);
    changed = true;
  }
  if (!changed) return Make<AllocateNode>(buffer, body);
  Buffer compact = WithShape(buffer, std::move(shape));
  return Make<AllocateNode>(compact, Retarget(buffer.get(), compact, starts).VisitStmt(body));
}

// True when `s` touches `buffer` at all.
bool Uses(const Buffer& buffer, const Stmt& s) {
  AccessCollector c(buffer.get());
  c.VisitStmt(s);
  return !c.accesses.empty() || c.opaque_use;
}

// Sinks the allocation of `buffer` as deep as its uses allow, then compacts it.
Stmt Place(const Buffer& buffer, const Stmt& body) {
  if (const auto* seq = body.as<SeqStmtNode>()) {
    int user = -1;
    for (size_t k = 0; k < seq->seq.size(); ++k) {
      if (!Uses(buffer, seq->seq[k])) continue;
      if (user >= 0) return Compact(buffer, body);
      user = static_cast<int>(k);
    }
    if (user < 0) return Compact(buffer, body);
    std::vector<Stmt> stmts = seq->seq;
    stmts[user] = Place(buffer, stmts[user]);
    return Make<SeqStmtNode>(std::move(stmts));
  }
  if (const auto* f = body.as<ForNode>()) {
    if (!IterationsAreDisjoint(buffer, *f)) return Compact(buffer, body);
    return MakeFor(f->loop_var, f->min, f->extent, f->for_kind, Place(buffer, f->body),
                   f->annotations);
  }
  return Compact(buffer, body);
}

class AllocationCompactor : public StmtExprMutator {
 public:
  Stmt VisitStmt(const Stmt& s) override {
    Stmt visited = StmtExprMutator::VisitStmt(s);
    const auto* a = visited.as<AllocateNode>();
    return a ? Place(a->buffer, a->body) : visited;
  }
};

}  // namespace

PrimFunc CompactAllocations(const PrimFunc& f) {
  return WithBody(f, AllocationCompactor().VisitStmt(f->body));
}

}  // namespace kiln::tir
