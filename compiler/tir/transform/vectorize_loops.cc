// VectorizeLoops: `vectorized` loops become Ramp/Broadcast vector code (transform.h).
#include <numeric>

#include "compiler/arith/analyzer.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/tir/transform/transform.h"

namespace kiln::tir {
namespace {

using namespace ir;  // NOLINT: a pass over TIR

constexpr int64_t kMaxLanes = 64;

// Rewrites one loop body with the loop variable as a vector; `ok` turns false on anything it
// does not handle (the caller then keeps the loop).
class Vectorizer {
 public:
  Vectorizer(const Var& var, PrimExpr ramp, int lanes)
      : var_(var), ramp_(std::move(ramp)), lanes_(lanes) {}
  bool ok = true;

  Stmt Stmt_(const Stmt& s) {
    if (!ok) return s;
    if (const auto* seq = s.as<SeqStmtNode>()) {
      std::vector<Stmt> out;
      for (const Stmt& x : seq->seq) out.push_back(Stmt_(x));
      return Make<SeqStmtNode>(std::move(out));
    }
    if (const auto* st = s.as<BufferStoreNode>()) {
      std::vector<PrimExpr> indices;
      bool vector_index = false;
      for (const PrimExpr& i : st->indices) {
        indices.push_back(Expr(i));
        vector_index |= indices.back()->dtype.lanes() > 1;
      }
      PrimExpr value = Expr(st->value);
      // A store at a scalar address with a vector value would race between lanes.
      if (!vector_index) {
        ok = false;
        return s;
      }
      if (value->dtype.lanes() == 1) value = Make<BroadcastNode>(value, lanes_);
      ContiguousAcrossRows(st->buffer, &indices);
      return Make<BufferStoreNode>(st->buffer, value, std::move(indices));
    }
    ok = false;
    return s;
  }

  PrimExpr Expr(const PrimExpr& e) {
    if (!ok) return e;
    if (e.get() == var_.get()) return ramp_;
    if (e.as<IntImmNode>() || e.as<FloatImmNode>() || e.as<VarNode>()) return e;
    if (const auto* b = e.as<BinaryNode>()) {
      PrimExpr a = Expr(b->a), c = Expr(b->b);
      // Keep index arithmetic a Ramp, so that accesses stay recognizably contiguous:
      // x + ramp(b, s) = ramp(x + b, s), ramp(b, s) * x = ramp(b * x, s * x).
      const auto* ra = a.as<RampNode>();
      const auto* rc = c.as<RampNode>();
      bool sa = a->dtype.lanes() == 1, sc = c->dtype.lanes() == 1;
      if (b->kind() == NodeKind::kAdd && ra != nullptr && sc)
        return Make<RampNode>(ra->base + c, ra->stride, ra->lanes);
      if (b->kind() == NodeKind::kAdd && rc != nullptr && sa)
        return Make<RampNode>(a + rc->base, rc->stride, rc->lanes);
      if (b->kind() == NodeKind::kSub && ra != nullptr && sc)
        return Make<RampNode>(ra->base - c, ra->stride, ra->lanes);
      if (b->kind() == NodeKind::kMul && ra != nullptr && sc)
        return Make<RampNode>(ra->base * c, ra->stride * c, ra->lanes);
      if (b->kind() == NodeKind::kMul && rc != nullptr && sa)
        return Make<RampNode>(a * rc->base, a * rc->stride, rc->lanes);
      if (PrimExpr split = DivModOfRamp(b->kind(), ra, c); split.defined()) return split;
      Match(&a, &c);
      return Binary(b->kind(), a, c);
    }
    if (const auto* c = e.as<CastNode>()) {
      PrimExpr v = Expr(c->value);
      return Cast(c->dtype.with_lanes(v->dtype.lanes()), v);
    }
    if (const auto* s = e.as<SelectNode>()) {
      PrimExpr cond = Expr(s->condition), t = Expr(s->true_value), f = Expr(s->false_value);
      Match(&t, &f);
      if (cond->dtype.lanes() != t->dtype.lanes()) {
        if (cond->dtype.lanes() == 1) {
          cond = Make<BroadcastNode>(cond, t->dtype.lanes());
        } else {
          t = Widen(t);
          f = Widen(f);
        }
      }
      return Select(cond, t, f);
    }
    if (const auto* l = e.as<BufferLoadNode>()) {
      std::vector<PrimExpr> indices;
      int lanes = 1;
      for (const PrimExpr& i : l->indices) {
        indices.push_back(Expr(i));
        lanes = std::max(lanes, indices.back()->dtype.lanes());
      }
      ContiguousAcrossRows(l->buffer, &indices);
      return Make<BufferLoadNode>(l->dtype.with_lanes(lanes), l->buffer, std::move(indices));
    }
    if (const auto* c = e.as<ir::CallNode>()) {
      if (!IsMathIntrinsic(c->op)) {
        ok = false;
        return e;
      }
      std::vector<PrimExpr> args;
      int lanes = 1;
      for (const PrimExpr& a : c->args) {
        args.push_back(Expr(a));
        lanes = std::max(lanes, args.back()->dtype.lanes());
      }
      for (PrimExpr& a : args) {
        if (lanes > 1 && a->dtype.lanes() == 1) a = Make<BroadcastNode>(a, lanes);
      }
      return Make<ir::CallNode>(c->dtype.with_lanes(lanes), c->op, std::move(args));
    }
    ok = false;
    return e;
  }

 private:
  // [..., ramp // c, ramp % c] into a buffer whose rows hold c elements: consecutive elements
  // of the (row-major) buffer, even where the ramp crosses a row (a 1x1 convolution's vector
  // along a flattened 56 x 56 image). Becomes [..., base // c, ramp(base % c, 1, L)], the last
  // index running past the row: code generation reads that as one contiguous access.
  static void ContiguousAcrossRows(const Buffer& buffer, std::vector<PrimExpr>* indices) {
    const size_t n = indices->size();
    if (n < 2 || buffer->shape.size() != n) return;
    const auto* div = (*indices)[n - 2].as<BinaryNode>();
    const auto* mod = (*indices)[n - 1].as<BinaryNode>();
    if (!div || !mod || div->kind() != NodeKind::kFloorDiv || mod->kind() != NodeKind::kFloorMod)
      return;
    const auto* a = div->a.as<RampNode>();
    const auto* b = mod->a.as<RampNode>();
    const auto* c1 = div->b.as<BroadcastNode>();
    const auto* c2 = mod->b.as<BroadcastNode>();
    if (!a || !b || !c1 || !c2) return;
    const int64_t* stride = AsConstInt(a->stride);
    const int64_t* row = AsConstInt(buffer->shape.back());
    const int64_t* c = AsConstInt(c1->value);
    const int64_t* c_mod = AsConstInt(c2->value);
    if (!stride || *stride != 1 || !row || !c || !c_mod || *c != *row || *c_mod != *row ||
        !arith::Analyzer().CanProveEqual(a->base, b->base) || !AsConstInt(b->stride) ||
        *AsConstInt(b->stride) != 1)
      return;
    (*indices)[n - 2] = FloorDiv(a->base, c1->value);
    (*indices)[n - 1] = Make<RampNode>(FloorMod(a->base, c1->value), a->stride, a->lanes);
  }

  // ramp(base, 1, L) // c and % c, where no lane crosses a multiple of c (base % c + L <= c
  // for every base the loop can take): base // c and ramp(base % c, 1, L). A fused
  // loop over (i, j) vectorized by L indexes [ramp // n, ramp % n]; this keeps that a
  // contiguous row access instead of a gather.
  PrimExpr DivModOfRamp(NodeKind kind, const RampNode* ramp, const PrimExpr& divisor) {
    if (ramp == nullptr || (kind != NodeKind::kFloorDiv && kind != NodeKind::kFloorMod)) {
      return PrimExpr();
    }
    const int64_t* stride = AsConstInt(ramp->stride);
    const int64_t* c = AsConstInt(divisor);
    if (stride == nullptr || *stride != 1 || c == nullptr || *c <= 0) return PrimExpr();
    // base = coeff * k + r: base % c is r % g plus a multiple of g = gcd(coeff, c).
    arith::ModularSet m = arith::Analyzer().Modular(ramp->base);
    int64_t g = m.coeff == 0 ? *c : std::gcd(m.coeff, *c);
    int64_t r = ((m.base % g) + g) % g;
    if (r + ramp->lanes > g) return PrimExpr();
    // The quotient is the same in every lane: a scalar, which keeps the access's other indices
    // scalar (what codegen needs for one contiguous load); uses that need a vector broadcast it.
    if (kind == NodeKind::kFloorDiv) return FloorDiv(ramp->base, divisor);
    return Make<RampNode>(FloorMod(ramp->base, divisor), ramp->stride, ramp->lanes);
  }
  PrimExpr Widen(const PrimExpr& e) {
    return e->dtype.lanes() == 1 ? PrimExpr(Make<BroadcastNode>(e, lanes_)) : e;
  }
  void Match(PrimExpr* a, PrimExpr* b) {
    if ((*a)->dtype.lanes() > 1 && (*b)->dtype.lanes() == 1)
      *b = Make<BroadcastNode>(*b, (*a)->dtype.lanes());
    if ((*b)->dtype.lanes() > 1 && (*a)->dtype.lanes() == 1)
      *a = Make<BroadcastNode>(*a, (*b)->dtype.lanes());
  }
  Var var_;
  PrimExpr ramp_;
  int lanes_;
};

class LoopVectorizer : public StmtExprMutator {
 public:
  Stmt VisitStmt(const Stmt& s) override {
    Stmt visited = StmtExprMutator::VisitStmt(s);
    const auto* f = visited.as<ForNode>();
    if (f == nullptr || f->for_kind != ForKind::kVectorized) return visited;
    const int64_t* extent = AsConstInt(f->extent);
    if (extent != nullptr && *extent < 2) return visited;
    if (extent != nullptr && *extent <= kMaxLanes) {
      int lanes = static_cast<int>(*extent);
      Vectorizer v(f->loop_var, Make<RampNode>(f->min, IntImm(f->min->dtype, 1), lanes), lanes);
      Stmt body = v.Stmt_(f->body);
      return v.ok ? body : visited;
    }
    return SplitWithTail(*f, visited);
  }

 private:
  static constexpr int kChunk = 16;

  // A long or symbolic extent: full vectors of kChunk lanes, then the remainder one lane at a
  // time, so no lane reads or writes past the loop's range:
  //   for v in vectorized(min, n)  ->  for vo in range(n // 16): body[v = ramp(min + vo*16, 1, 16)]
  //                                    for vt in range(n % 16):  body[v = min + n // 16 * 16 + vt]
  static Stmt SplitWithTail(const ForNode& f, const Stmt& unchanged) {
    DataType t = f.loop_var->dtype;
    PrimExpr chunk = IntImm(t, kChunk);
    Var vo = MakeVar(f.loop_var->name + "_vo", t), vt = MakeVar(f.loop_var->name + "_vt", t);
    Vectorizer v(f.loop_var, Make<RampNode>(f.min + vo * chunk, IntImm(t, 1), kChunk), kChunk);
    Stmt vector_body = v.Stmt_(f.body);
    if (!v.ok) return unchanged;
    PrimExpr full = FloorDiv(f.extent, chunk);
    PrimExpr tail_base = f.min + full * chunk;
    Stmt tail_body = Substitute(f.body, [&](const Var& x) -> PrimExpr {
      return x == f.loop_var ? tail_base + vt : PrimExpr();
    });
    return Seq({MakeFor(vo, IntImm(t, 0), full, ForKind::kSerial, vector_body),
                MakeFor(vt, IntImm(t, 0), FloorMod(f.extent, chunk), ForKind::kSerial, tail_body)});
  }
};

}  // namespace

PrimFunc VectorizeLoops(const PrimFunc& f) {
  return WithBody(f, LoopVectorizer().VisitStmt(f->body));
}

}  // namespace kiln::tir
