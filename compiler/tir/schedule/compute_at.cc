// Schedule primitives compute_at / reverse_compute_at: a block moved under a loop, iterating
// over the region of its buffer that the blocks under the loop touch in one iteration.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/arith/analyzer.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/tir/schedule/ir_util.h"
#include "compiler/tir/schedule/schedule.h"

namespace kiln::tir {

using namespace ir;  // NOLINT: TIR rewriting
namespace su = schedule_util;
using su::Locate;
using su::Place;

namespace {

PrimExpr BindingOf(const BlockRealizeNode& r, const VarNode* iter_var) {
  for (size_t k = 0; k < r.iter_values.size(); ++k) {
    if (r.block->iter_vars[k]->var.get() == iter_var) return r.iter_values[k];
  }
  return PrimExpr();
}

struct Span {
  PrimExpr min;
  int64_t extent;
};

// The loops inside the one a block moves under: their variables, and each one's loop.
struct InnerLoops {
  std::set<const VarNode*> vars;
  std::map<const VarNode*, const ForNode*> loops;
};

// The values `index` takes as the loops `inner` run: an affine index, a sum of such, or a floor
// division or remainder of one by a constant (a stride-2 convolution's deinterleaved columns,
// kw % 2 and ow + kw / 2). Null when the index is none of these; an error when a loop it uses
// has a symbolic range.
absl::StatusOr<std::optional<Span>> SpanOf(const PrimExpr& index, const InnerLoops& inner) {
  if (std::optional<su::AffineForm> form = su::Affine(index, inner.vars)) {
    PrimExpr lo = form->rest;
    int64_t extent = 1;
    for (const auto& [v, c] : form->coeffs) {
      const ForNode* l = inner.loops.at(v);
      const int64_t* min = AsConstInt(l->min);
      const int64_t* ext = AsConstInt(l->extent);
      if (min == nullptr || ext == nullptr) {
        return absl::FailedPreconditionError(
            absl::StrCat(": loop '", v->name, "' inside it has a symbolic range"));
      }
      int64_t low = c > 0 ? c * *min : c * (*min + *ext - 1);
      lo = su::Add(lo, IntImm(index->dtype, low));
      extent += (c > 0 ? c : -c) * (*ext - 1);
    }
    if (!lo) lo = IntImm(index->dtype, 0);
    return std::optional<Span>(Span{lo, extent});
  }
  const auto* binary = index.as<BinaryNode>();
  if (binary == nullptr) return std::optional<Span>();
  if (binary->kind() == NodeKind::kAdd) {
    absl::StatusOr<std::optional<Span>> a = SpanOf(binary->a, inner);
    if (!a.ok() || !*a) return a;
    absl::StatusOr<std::optional<Span>> b = SpanOf(binary->b, inner);
    if (!b.ok() || !*b) return b;
    return std::optional<Span>(
        Span{su::Add((*a)->min, (*b)->min), (*a)->extent + (*b)->extent - 1});
  }
  const int64_t* k = AsConstInt(binary->b);
  if (k == nullptr || *k < 1 ||
      (binary->kind() != NodeKind::kFloorDiv && binary->kind() != NodeKind::kFloorMod)) {
    return std::optional<Span>();
  }
  absl::StatusOr<std::optional<Span>> a = SpanOf(binary->a, inner);
  if (!a.ok() || !*a) return a;
  // Exact where the operand's values are constants; a remainder may otherwise take any of its k
  // values, and a quotient of a value not known here is not bounded.
  const int64_t* lo = AsConstInt((*a)->min);
  auto floor_div = [](int64_t x, int64_t d) { return x >= 0 ? x / d : -((-x + d - 1) / d); };
  if (binary->kind() == NodeKind::kFloorMod) {
    if (lo != nullptr && floor_div(*lo, *k) == floor_div(*lo + (*a)->extent - 1, *k)) {
      const int64_t first = *lo - floor_div(*lo, *k) * *k;
      return std::optional<Span>(Span{IntImm(index->dtype, first), (*a)->extent});
    }
    return std::optional<Span>(Span{IntImm(index->dtype, 0), *k});
  }
  if (lo == nullptr) return std::optional<Span>();
  const int64_t first = floor_div(*lo, *k), last = floor_div(*lo + (*a)->extent - 1, *k);
  return std::optional<Span>(Span{IntImm(index->dtype, first), last - first + 1});
}

// Moves `block` (alone in its loop nest) under `loop`, iterating over the part of `buffer` the
// blocks under the loop touch in one of its iterations. `reverse`: the block consumes what they
// produce (placed after them); otherwise it produces what they consume (placed before).
absl::StatusOr<PrimFunc> MoveUnder(const PrimFunc& f, const std::string& name, const Var& loop_var,
                                   bool reverse) {
  const char* primitive = reverse ? "reverse_compute_at" : "compute_at";
  std::string what =
      absl::StrCat(primitive, " of block '", name, "' at loop '", loop_var->name, "'");
  Place place = Locate(f, name);
  std::vector<Stmt> loop_path = su::PathToLoop(f->body, loop_var.get());
  const auto* loop = loop_path.back().as<ForNode>();
  int loop_scope = su::ScopeIndex(loop_path);
  const BlockNode* scope_of_loop =
      loop_scope >= 0 ? loop_path[loop_scope].as<BlockNode>() : nullptr;
  if (scope_of_loop != place.scope) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the loop is not in the block's scope"));
  }
  if (su::ChildRealizes(Stmt(place.top)).size() != 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": the block shares its loop nest with other blocks; it must be alone in it"));
  }
  const StmtNode* loop_top = su::TopLevelStmt(place.scope_body, loop);
  if (loop_top == place.top) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the block is already inside the loop's nest"));
  }
  // Program order in the scope: a producer goes before its consumers' loop, a consumer after.
  std::vector<Stmt> tops = place.scope_body.as<SeqStmtNode>()
                               ? place.scope_body.as<SeqStmtNode>()->seq
                               : std::vector<Stmt>{place.scope_body};
  size_t block_pos = 0, loop_pos = 0;
  for (size_t k = 0; k < tops.size(); ++k) {
    if (tops[k].get() == place.top) block_pos = k;
    if (tops[k].get() == loop_top) loop_pos = k;
  }
  if (reverse ? block_pos < loop_pos : block_pos > loop_pos) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the block comes ", reverse ? "before" : "after", " the loop's nest; ",
                     primitive, " moves a ", reverse ? "consumer" : "producer"));
  }
  // Nothing between the two may link with the block: a consumer moved up past the producer of
  // another buffer it reads would read it before it is written; a producer moved down past
  // another consumer of what it writes, the same the other way.
  const std::set<const BufferNode*> linked =
      reverse ? su::LoadedBuffers(*place.block) : su::StoredBuffers(*place.block);
  for (size_t k = std::min(block_pos, loop_pos) + 1; k < std::max(block_pos, loop_pos); ++k) {
    // Blocks and bare stores alike (a fused function's 0-d values are stores at the root).
    struct Accesses : StmtExprVisitor {
      bool stores = false;
      std::set<const BufferNode*> buffers;
      void VisitExpr(const PrimExpr& e) override {
        if (const auto* l = e.as<BufferLoadNode>(); l && !stores) buffers.insert(l->buffer.get());
        DefaultVisitExpr(e);
      }
      void VisitStmt(const Stmt& s) override {
        if (const auto* st = s.as<BufferStoreNode>(); st && stores)
          buffers.insert(st->buffer.get());
        DefaultVisitStmt(s);
      }
    } between;
    between.stores = reverse;
    between.VisitStmt(tops[k]);
    for (const BufferNode* b : between.buffers) {
      if (linked.count(b)) {
        return absl::FailedPreconditionError(
            absl::StrCat(what, ": a statement between them ", reverse ? "writes" : "reads", " '",
                         b->name, "', which the block ", reverse ? "reads" : "writes"));
      }
    }
  }
  if (!su::IsConst(place.realize->predicate, 1)) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": the block has a predicate"));
  }
  // The buffers linking the block with the blocks under the loop.
  std::set<const BufferNode*> mine =
      reverse ? su::LoadedBuffers(*place.block) : su::StoredBuffers(*place.block);
  std::map<const BufferNode*, std::vector<Span>> spans;  // per buffer, per dimension
  std::set<const VarNode*> outer;                        // the loop and the loops around it
  arith::Analyzer analyzer;
  for (const Stmt& s : loop_path) {
    if (const auto* l = s.as<ForNode>()) {
      outer.insert(l->loop_var.get());
      analyzer.Bind(l->loop_var, MakeRange(l->min, l->extent));
    }
  }
  for (const BlockRealizeNode* r : su::ChildRealizes(loop->body)) {
    std::vector<Stmt> path = su::PathToBlock(loop->body, r->block->name);
    InnerLoops inner;
    for (const Stmt& s : path) {
      if (const auto* l = s.as<ForNode>()) {
        inner.vars.insert(l->loop_var.get());
        inner.loops[l->loop_var.get()] = l;
      }
    }
    // Accesses of the linking buffers in this block, as loop expressions.
    std::vector<std::pair<const BufferNode*, std::vector<PrimExpr>>> accesses;
    auto on_access = [&](const BufferNode* buffer, const std::vector<PrimExpr>& indices) {
      if (!mine.count(buffer)) return;
      std::vector<PrimExpr> bound;
      for (const PrimExpr& i : indices) {
        bound.push_back(Substitute(i, [&](const Var& v) { return BindingOf(*r, v.get()); }));
      }
      accesses.emplace_back(buffer, std::move(bound));
    };
    struct Visitor : StmtExprVisitor {
      std::function<void(const BufferNode*, const std::vector<PrimExpr>&)> on;
      bool stores = false;
      void VisitExpr(const PrimExpr& e) override {
        if (const auto* l = e.as<BufferLoadNode>(); l && !stores) on(l->buffer.get(), l->indices);
        DefaultVisitExpr(e);
      }
      void VisitStmt(const Stmt& s) override {
        if (const auto* st = s.as<BufferStoreNode>(); st && stores) {
          on(st->buffer.get(), st->indices);
        }
        DefaultVisitStmt(s);
      }
    } visitor;
    visitor.on = on_access;
    visitor.stores = reverse;
    visitor.VisitStmt(r->block->body);
    if (r->block->init) visitor.VisitStmt(r->block->init);
    for (const auto& [buffer, indices] : accesses) {
      std::vector<Span> span;
      for (const PrimExpr& index : indices) {
        absl::StatusOr<std::optional<Span>> range = SpanOf(index, inner);
        if (!range.ok())
          return absl::FailedPreconditionError(absl::StrCat(what, range.status().message()));
        if (!*range) {
          return absl::FailedPreconditionError(absl::StrCat(
              what, ": block '", r->block->name, "' accesses '", buffer->name,
              "' at an index that is not affine in the loops inside '", loop_var->name, "'"));
        }
        span.push_back(**range);
      }
      auto& known = spans[buffer];
      if (known.empty()) {
        known = span;
        continue;
      }
      for (size_t d = 0; d < span.size(); ++d) {  // union, for offsets that are constants
        const int64_t* delta = nullptr;
        PrimExpr diff = analyzer.Simplify(span[d].min - known[d].min);
        delta = AsConstInt(diff);
        if (delta == nullptr) {
          return absl::FailedPreconditionError(
              absl::StrCat(what, ": the accesses of '", buffer->name,
                           "' under the loop do not differ by constants"));
        }
        int64_t lo = std::min<int64_t>(0, *delta);
        int64_t hi = std::max(known[d].extent, *delta + span[d].extent);
        if (lo < 0) known[d].min = span[d].min;
        known[d].extent = hi - lo;
      }
    }
  }
  if (spans.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": no block under the loop ", reverse ? "writes" : "reads",
                     " what the block ", reverse ? "reads" : "writes"));
  }
  if (spans.size() > 1) {
    return absl::UnimplementedError(absl::StrCat(
        what, ": the block is linked to the loop's blocks through more than one buffer"));
  }
  const BufferNode* buffer = spans.begin()->first;
  const std::vector<Span>& span = spans.begin()->second;
  // How the block indexes that buffer: by distinct iter vars, one per dimension.
  std::optional<std::map<const VarNode*, size_t>> dims;
  bool consistent = true;
  auto check = [&](const std::vector<PrimExpr>& indices) {
    std::optional<std::map<const VarNode*, size_t>> d = su::DimsOfIterVars(indices, *place.block);
    if (!d || (dims && *d != *dims)) consistent = false;
    dims = d;
  };
  std::function<void(const Stmt&)> scan = [&](const Stmt& s) {
    if (!s) return;
    if (reverse) {
      PostOrderVisit(s, [&](const PrimExpr& e) {
        if (const auto* l = e.as<BufferLoadNode>(); l && l->buffer.get() == buffer) {
          check(l->indices);
        }
      });
    } else {
      struct Stores : StmtExprVisitor {
        std::function<void(const BufferStoreNode&)> on;
        void VisitStmt(const Stmt& x) override {
          if (const auto* st = x.as<BufferStoreNode>()) on(*st);
          DefaultVisitStmt(x);
        }
      } stores;
      stores.on = [&](const BufferStoreNode& st) {
        if (st.buffer.get() == buffer) check(st.indices);
      };
      stores.VisitStmt(s);
    }
  };
  scan(place.block->body);
  scan(place.block->init);
  if (!consistent || !dims) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the block must access '", buffer->name,
                     "' at its iter vars (buffer[v0, v1, ...]), the same way everywhere"));
  }
  // New loops over the span; other iter vars keep their whole domain.
  std::set<std::string> names = su::UsedNames(f);
  std::vector<PrimExpr> values;
  std::vector<std::pair<Var, int64_t>> new_loops;
  PrimExpr predicate = Bool(true);
  for (const IterVar& iv : place.block->iter_vars) {
    DataType t = iv->var->dtype;
    PrimExpr lo = iv->dom->min;
    const int64_t* full = AsConstInt(iv->dom->extent);
    int64_t extent;
    auto it = dims->find(iv->var.get());
    if (it != dims->end()) {
      lo = span[it->second].min;
      extent = span[it->second].extent;
    } else if (full != nullptr) {
      extent = *full;
    } else {
      return absl::FailedPreconditionError(
          absl::StrCat(what, ": iter var '", iv->var->name, "' has a symbolic domain"));
    }
    if (lo->dtype != t) lo = Cast(t, lo);
    PrimExpr value = lo;
    if (extent > 1) {
      Var ax = MakeVar(su::FreshName(absl::StrCat("ax", new_loops.size()), &names), t);
      new_loops.emplace_back(ax, extent);
      value = su::Add(lo, ax);
    }
    values.push_back(value);
    if (it != dims->end()) {
      PrimExpr end = iv->dom->min + iv->dom->extent;
      if (!analyzer.CanProve(lo + IntImm(t, extent) <= end)) {
        predicate = su::And(predicate, value < end);
      }
    }
  }
  Stmt nest = Make<BlockRealizeNode>(values, predicate, place.realize->block);
  for (size_t k = new_loops.size(); k-- > 0;) {
    DataType t = new_loops[k].first->dtype;
    nest = MakeFor(new_loops[k].first, IntImm(t, 0), IntImm(t, new_loops[k].second),
                   ForKind::kSerial, nest);
  }
  Stmt body = reverse ? Seq({loop->body, nest}) : Seq({nest, loop->body});
  Stmt moved = su::WithLoopBody(*loop, su::Rebuild(body, {}));
  std::map<const StmtNode*, Stmt> edits = {{place.top, Stmt()}, {loop, moved}};
  return WithBody(f, su::Rebuild(f->body, edits));
}

}  // namespace

absl::Status Schedule::ComputeAt(BlockRV block, LoopRV loop) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  absl::StatusOr<Var> var = LoopVar(loop);
  if (!var.ok()) return var.status();
  absl::StatusOr<PrimFunc> moved = MoveUnder(func(), *name, *var, /*reverse=*/false);
  if (!moved.ok()) return moved.status();
  SetFunc(*moved);
  v1::TraceInstruction* inst = Record("ComputeAt");
  inst->add_inputs()->set_rv(su::RvName(block));
  inst->add_inputs()->set_rv(su::RvName(loop));
  return absl::OkStatus();
}

absl::Status Schedule::ReverseComputeAt(BlockRV block, LoopRV loop) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  absl::StatusOr<Var> var = LoopVar(loop);
  if (!var.ok()) return var.status();
  absl::StatusOr<PrimFunc> moved = MoveUnder(func(), *name, *var, /*reverse=*/true);
  if (!moved.ok()) return moved.status();
  SetFunc(*moved);
  v1::TraceInstruction* inst = Record("ReverseComputeAt");
  inst->add_inputs()->set_rv(su::RvName(block));
  inst->add_inputs()->set_rv(su::RvName(loop));
  return absl::OkStatus();
}

}  // namespace kiln::tir
