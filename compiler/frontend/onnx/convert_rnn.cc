// The recurrent layers RNN, GRU and LSTM (ONNX opsets 7 to 14), forward direction, unrolled over
// a sequence length known at import time: the input projection is one matmul for the whole
// sequence, each step one matmul with the recurrent weights and the gates' elementwise math.
#include "absl/strings/str_cat.h"
#include "compiler/frontend/onnx/convert_context.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend::onnx_import {
namespace {

enum class Cell { kRnn, kGru, kLstm };

int Gates(Cell c) { return c == Cell::kRnn ? 1 : c == Cell::kGru ? 3 : 4; }

absl::StatusOr<Expr> Slice(Context& ctx, const Expr& x, int64_t axis, int64_t begin, int64_t end) {
  return ctx.Call("relax.strided_slice", {x},
                  {{"axes", IntsAttr({axis})},
                   {"begin", IntsAttr({begin})},
                   {"end", IntsAttr({end})},
                   {"strides", IntsAttr({1})}});
}

absl::StatusOr<Expr> Squeeze0(Context& ctx, const Expr& x) {
  return ctx.Call("relax.squeeze", {x}, {{"axis", IntsAttr({0})}});
}

absl::StatusOr<Expr> Transposed(Context& ctx, const Expr& x) {
  return ctx.Call("relax.permute_dims", {x}, {{"axes", IntsAttr({1, 0})}});
}

absl::StatusOr<Expr> Add(Context& ctx, const Expr& a, const Expr& b) {
  return ctx.Call("relax.add", {a, b});
}

absl::StatusOr<Expr> Mul(Context& ctx, const Expr& a, const Expr& b) {
  return ctx.Call("relax.multiply", {a, b});
}

absl::StatusOr<Outputs> Recurrent(Context& ctx, Cell cell) {
  const std::string direction = ctx.Str("direction", "forward");
  if (direction != "forward") return ctx.Unsupported(absl::StrCat("direction '", direction, "'"));
  if (ctx.HasAttr("activations")) return ctx.Unsupported("activations other than the defaults");
  if (ctx.HasAttr("clip")) return ctx.Unsupported("clip");
  if (ctx.Int("input_forget", 0) != 0) return ctx.Unsupported("input_forget");
  const int64_t layout = ctx.Int("layout", 0);
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  if (!ctx.DType(x).is_float()) return ctx.Error("X must be floating-point");
  if (layout != 0) {
    KILN_ASSIGN_OR_RETURN(x, ctx.Call("relax.permute_dims", {x}, {{"axes", IntsAttr({1, 0, 2})}}));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  if (xs.size() != 3) return ctx.Error("X must be [seq_length, batch, input_size]");
  const int64_t* seq = ir::AsConstInt(xs[0]);
  if (seq == nullptr) return ctx.Unsupported("a sequence length not known at import time");
  const int64_t hidden = ctx.Int("hidden_size", 0);
  if (hidden <= 0) return ctx.Error("hidden_size is required");
  const int64_t gates = Gates(cell);
  const int64_t gh = gates * hidden;
  if (ctx.Has(4)) {  // sequence_lens: every sequence the full length, or refused
    absl::StatusOr<std::vector<int64_t>> lens = ctx.ConstInts(4);
    if (!lens.ok()) return ctx.Unsupported("sequence_lens known only at run time");
    for (int64_t n : *lens) {
      if (n != *seq) return ctx.Unsupported("sequences shorter than the input's length");
    }
  }
  DataType t = ctx.DType(x);
  KILN_ASSIGN_OR_RETURN(Expr w, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(Expr r, ctx.Tensor(2));
  KILN_ASSIGN_OR_RETURN(w, Squeeze0(ctx, w));  // [gates * hidden, input]
  KILN_ASSIGN_OR_RETURN(r, Squeeze0(ctx, r));  // [gates * hidden, hidden]
  KILN_ASSIGN_OR_RETURN(Expr wt, Transposed(ctx, w));
  KILN_ASSIGN_OR_RETURN(Expr rt, Transposed(ctx, r));
  Expr wb, rb;
  if (ctx.Has(3)) {
    KILN_ASSIGN_OR_RETURN(Expr b, ctx.Tensor(3));
    KILN_ASSIGN_OR_RETURN(b, Squeeze0(ctx, b));
    KILN_ASSIGN_OR_RETURN(wb, Slice(ctx, b, 0, 0, gh));
    KILN_ASSIGN_OR_RETURN(rb, Slice(ctx, b, 0, gh, 2 * gh));
  }
  // The input's projection for every step at once: [seq, batch, gates * hidden].
  KILN_ASSIGN_OR_RETURN(Expr xw, ctx.Call("relax.matmul", {x, wt}));
  if (wb) {
    KILN_ASSIGN_OR_RETURN(xw, Add(ctx, xw, wb));
  }
  std::vector<PrimExpr> state_shape = {xs[1], ir::IntImm(DataType::Int(64), hidden)};
  Expr h, c;
  if (ctx.Has(5)) {
    KILN_ASSIGN_OR_RETURN(h, ctx.Tensor(5));
    KILN_ASSIGN_OR_RETURN(h, Squeeze0(ctx, h));
  } else {
    KILN_ASSIGN_OR_RETURN(h, ctx.Call("relax.zeros", {ir::relax::MakeShape(state_shape)},
                                      {{"dtype", StrAttr(t.ToString())}}));
  }
  Expr p;  // LSTM peepholes [3 * hidden]: input, output, forget
  if (cell == Cell::kLstm) {
    if (ctx.Has(6)) {
      KILN_ASSIGN_OR_RETURN(c, ctx.Tensor(6));
      KILN_ASSIGN_OR_RETURN(c, Squeeze0(ctx, c));
    } else {
      KILN_ASSIGN_OR_RETURN(c, ctx.Call("relax.zeros", {ir::relax::MakeShape(state_shape)},
                                        {{"dtype", StrAttr(t.ToString())}}));
    }
    if (ctx.Has(7)) {
      KILN_ASSIGN_OR_RETURN(p, ctx.Tensor(7));
      KILN_ASSIGN_OR_RETURN(p, Squeeze0(ctx, p));
    }
  }
  const bool linear_before_reset = ctx.Int("linear_before_reset", 0) != 0;
  auto gate = [&](const Expr& e, int64_t k) {
    return Slice(ctx, e, 1, k * hidden, (k + 1) * hidden);
  };
  auto sigmoid = [&](const Expr& e) { return ctx.Call("relax.sigmoid", {e}); };
  auto tanh = [&](const Expr& e) { return ctx.Call("relax.tanh", {e}); };
  std::vector<Expr> steps;
  for (int64_t s = 0; s < *seq; ++s) {
    KILN_ASSIGN_OR_RETURN(Expr xt, Slice(ctx, xw, 0, s, s + 1));
    KILN_ASSIGN_OR_RETURN(xt, Squeeze0(ctx, xt));  // [batch, gates * hidden]
    KILN_ASSIGN_OR_RETURN(Expr hr, ctx.Call("relax.matmul", {h, rt}));
    if (rb) {
      KILN_ASSIGN_OR_RETURN(hr, Add(ctx, hr, rb));
    }
    if (cell == Cell::kRnn) {
      KILN_ASSIGN_OR_RETURN(Expr sum, Add(ctx, xt, hr));
      KILN_ASSIGN_OR_RETURN(h, tanh(sum));
    } else if (cell == Cell::kGru) {  // gates z, r, h
      KILN_ASSIGN_OR_RETURN(Expr xz, gate(xt, 0));
      KILN_ASSIGN_OR_RETURN(Expr xr, gate(xt, 1));
      KILN_ASSIGN_OR_RETURN(Expr xh, gate(xt, 2));
      KILN_ASSIGN_OR_RETURN(Expr hz, gate(hr, 0));
      KILN_ASSIGN_OR_RETURN(Expr hrr, gate(hr, 1));
      KILN_ASSIGN_OR_RETURN(Expr zs, Add(ctx, xz, hz));
      KILN_ASSIGN_OR_RETURN(Expr z, sigmoid(zs));
      KILN_ASSIGN_OR_RETURN(Expr rs, Add(ctx, xr, hrr));
      KILN_ASSIGN_OR_RETURN(Expr rg, sigmoid(rs));
      Expr candidate_in;
      if (linear_before_reset) {  // r * (H Rh + Rbh)
        KILN_ASSIGN_OR_RETURN(Expr hh, gate(hr, 2));
        KILN_ASSIGN_OR_RETURN(candidate_in, Mul(ctx, rg, hh));
      } else {  // (r * H) Rh + Rbh
        KILN_ASSIGN_OR_RETURN(Expr rh, Mul(ctx, rg, h));
        KILN_ASSIGN_OR_RETURN(Expr rh_t, Slice(ctx, rt, 1, 2 * hidden, 3 * hidden));
        KILN_ASSIGN_OR_RETURN(candidate_in, ctx.Call("relax.matmul", {rh, rh_t}));
        if (rb) {
          KILN_ASSIGN_OR_RETURN(Expr rbh, Slice(ctx, rb, 0, 2 * hidden, 3 * hidden));
          KILN_ASSIGN_OR_RETURN(candidate_in, Add(ctx, candidate_in, rbh));
        }
      }
      KILN_ASSIGN_OR_RETURN(Expr hs, Add(ctx, xh, candidate_in));
      KILN_ASSIGN_OR_RETURN(Expr ht, tanh(hs));
      // H = (1 - z) * h~ + z * H = h~ + z * (H - h~)
      KILN_ASSIGN_OR_RETURN(Expr diff, ctx.Call("relax.subtract", {h, ht}));
      KILN_ASSIGN_OR_RETURN(Expr zd, Mul(ctx, z, diff));
      KILN_ASSIGN_OR_RETURN(h, Add(ctx, ht, zd));
    } else {  // LSTM gates i, o, f, c
      KILN_ASSIGN_OR_RETURN(Expr g, Add(ctx, xt, hr));
      KILN_ASSIGN_OR_RETURN(Expr gi, gate(g, 0));
      KILN_ASSIGN_OR_RETURN(Expr go, gate(g, 1));
      KILN_ASSIGN_OR_RETURN(Expr gf, gate(g, 2));
      KILN_ASSIGN_OR_RETURN(Expr gc, gate(g, 3));
      if (p) {
        KILN_ASSIGN_OR_RETURN(Expr pi, Slice(ctx, p, 0, 0, hidden));
        KILN_ASSIGN_OR_RETURN(Expr pf, Slice(ctx, p, 0, 2 * hidden, 3 * hidden));
        KILN_ASSIGN_OR_RETURN(Expr pic, Mul(ctx, pi, c));
        KILN_ASSIGN_OR_RETURN(gi, Add(ctx, gi, pic));
        KILN_ASSIGN_OR_RETURN(Expr pfc, Mul(ctx, pf, c));
        KILN_ASSIGN_OR_RETURN(gf, Add(ctx, gf, pfc));
      }
      KILN_ASSIGN_OR_RETURN(Expr i, sigmoid(gi));
      KILN_ASSIGN_OR_RETURN(Expr f, sigmoid(gf));
      KILN_ASSIGN_OR_RETURN(Expr ct, tanh(gc));
      KILN_ASSIGN_OR_RETURN(Expr fc, Mul(ctx, f, c));
      KILN_ASSIGN_OR_RETURN(Expr ic, Mul(ctx, i, ct));
      KILN_ASSIGN_OR_RETURN(c, Add(ctx, fc, ic));
      if (p) {
        KILN_ASSIGN_OR_RETURN(Expr po, Slice(ctx, p, 0, hidden, 2 * hidden));
        KILN_ASSIGN_OR_RETURN(Expr poc, Mul(ctx, po, c));
        KILN_ASSIGN_OR_RETURN(go, Add(ctx, go, poc));
      }
      KILN_ASSIGN_OR_RETURN(Expr o, sigmoid(go));
      KILN_ASSIGN_OR_RETURN(Expr tc, tanh(c));
      KILN_ASSIGN_OR_RETURN(h, Mul(ctx, o, tc));
    }
    KILN_ASSIGN_OR_RETURN(Expr step, ctx.Call("relax.expand_dims", {h}, {{"axis", IntsAttr({0})}}));
    steps.push_back(step);
  }
  // Y: [seq, 1, batch, hidden] (layout 1: [batch, seq, 1, hidden]); Y_h, Y_c: [1, batch, hidden]
  // (layout 1: [batch, 1, hidden]).
  KILN_ASSIGN_OR_RETURN(
      Expr y, ctx.Call("relax.concat", {ir::relax::MakeTuple(steps)}, {{"axis", IntAttr(0)}}));
  KILN_ASSIGN_OR_RETURN(y, ctx.Call("relax.expand_dims", {y}, {{"axis", IntsAttr({1})}}));
  auto final_state = [&](const Expr& state) -> absl::StatusOr<Expr> {
    return ctx.Call("relax.expand_dims", {state}, {{"axis", IntsAttr({layout != 0 ? 1 : 0})}});
  };
  if (layout != 0) {
    KILN_ASSIGN_OR_RETURN(y,
                          ctx.Call("relax.permute_dims", {y}, {{"axes", IntsAttr({2, 0, 1, 3})}}));
  }
  Outputs out;
  out.push_back(One(y)[0]);
  KILN_ASSIGN_OR_RETURN(Expr yh, final_state(h));
  out.push_back(One(yh)[0]);
  if (cell == Cell::kLstm) {
    KILN_ASSIGN_OR_RETURN(Expr yc, final_state(c));
    out.push_back(One(yc)[0]);
  }
  return out;
}

absl::StatusOr<Outputs> Rnn(Context& ctx) { return Recurrent(ctx, Cell::kRnn); }
absl::StatusOr<Outputs> Gru(Context& ctx) { return Recurrent(ctx, Cell::kGru); }
absl::StatusOr<Outputs> Lstm(Context& ctx) { return Recurrent(ctx, Cell::kLstm); }

}  // namespace

void RegisterRecurrentConverters(ConverterTable* t) {
  (*t)["RNN"] = Rnn;
  (*t)["GRU"] = Gru;
  (*t)["LSTM"] = Lstm;
}

}  // namespace kiln::frontend::onnx_import
