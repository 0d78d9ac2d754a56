// GridSample (opset 16) on 4-D inputs: every output pixel samples X at the grid's normalized
// (x, y), bilinearly, bicubically or at the nearest pixel, with zeros, border or reflection
// padding. Each
// sample point is a gather of the flattened image along its pixels (the same index for every
// channel), weighted and masked where it falls outside.
#include "absl/strings/str_cat.h"
#include "compiler/frontend/onnx/convert_context.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend::onnx_import {
namespace {

const DataType kF32 = DataType::Float(32);

struct Sampler {
  Context& ctx;
  Expr flat;  // X as [N, C, H * W]
  PrimExpr n, c;
  int64_t h, w, ho, wo;
  std::string padding;
  bool align_corners;

  absl::StatusOr<Expr> Call(const char* op, std::vector<Expr> args, ir::Attrs attrs = {}) {
    return ctx.Call(op, std::move(args), std::move(attrs));
  }
  Expr F(double v) { return ctx.Scalar(kF32, v); }

  // The normalized coordinate [-1, 1] as a pixel position along an axis of `size` pixels.
  absl::StatusOr<Expr> Unnormalize(const Expr& g, int64_t size) {
    KILN_ASSIGN_OR_RETURN(Expr plus, Call("relax.add", {g, F(1)}));
    if (align_corners) {
      return Call("relax.multiply", {plus, F(0.5 * static_cast<double>(size - 1))});
    }
    KILN_ASSIGN_OR_RETURN(Expr scaled,
                          Call("relax.multiply", {plus, F(0.5 * static_cast<double>(size))}));
    return Call("relax.subtract", {scaled, F(0.5)});
  }

  // Border: clamped into the image; reflection: reflected off its edges until inside, then
  // clamped; zeros: unchanged (a sample outside reads 0).
  absl::StatusOr<Expr> Pad(Expr x, int64_t size) {
    if (padding == "reflection") {
      const double lo2 = align_corners ? 0 : -1;
      const double hi2 =
          align_corners ? 2.0 * static_cast<double>(size - 1) : 2.0 * static_cast<double>(size) - 1;
      if (hi2 == lo2) return Call("relax.zeros_like", {x});
      const double min = lo2 / 2, span = (hi2 - lo2) / 2;
      KILN_ASSIGN_OR_RETURN(Expr shifted, Call("relax.subtract", {x, F(min)}));
      KILN_ASSIGN_OR_RETURN(Expr in, Call("relax.abs", {shifted}));
      KILN_ASSIGN_OR_RETURN(Expr ratio, Call("relax.divide", {in, F(span)}));
      KILN_ASSIGN_OR_RETURN(Expr flips, Call("relax.floor", {ratio}));
      KILN_ASSIGN_OR_RETURN(Expr whole, Call("relax.multiply", {flips, F(span)}));
      KILN_ASSIGN_OR_RETURN(Expr extra, Call("relax.subtract", {in, whole}));
      KILN_ASSIGN_OR_RETURN(Expr half, Call("relax.multiply", {flips, F(0.5)}));
      KILN_ASSIGN_OR_RETURN(Expr half_floor, Call("relax.floor", {half}));
      KILN_ASSIGN_OR_RETURN(Expr twice, Call("relax.multiply", {half_floor, F(2)}));
      KILN_ASSIGN_OR_RETURN(Expr parity, Call("relax.subtract", {flips, twice}));
      KILN_ASSIGN_OR_RETURN(Expr even, Call("relax.equal", {parity, F(0)}));
      KILN_ASSIGN_OR_RETURN(Expr forward, Call("relax.add", {extra, F(min)}));
      KILN_ASSIGN_OR_RETURN(Expr back, Call("relax.subtract", {F(span + min), extra}));
      KILN_ASSIGN_OR_RETURN(x, Call("relax.where", {even, forward, back}));
    }
    if (padding == "border" || padding == "reflection") {
      return Call("relax.clip", {x},
                  {{"min", FloatAttr(0)}, {"max", FloatAttr(static_cast<double>(size - 1))}});
    }
    return x;
  }

  // 1 where 0 <= v <= size - 1, else 0 (float).
  absl::StatusOr<Expr> Inside(const Expr& v, int64_t size) {
    KILN_ASSIGN_OR_RETURN(Expr clamped, Call("relax.clip", {v},
                                             {{"min", FloatAttr(0)},
                                              {"max", FloatAttr(static_cast<double>(size - 1))}}));
    KILN_ASSIGN_OR_RETURN(Expr same, Call("relax.equal", {clamped, v}));
    return Call("relax.astype", {same}, {{"dtype", StrAttr("float32")}});
  }

  // X at integer pixel positions (yi, xi) ([N, Ho, Wo] floats), times `weight`, 0 outside.
  absl::StatusOr<Expr> Tap(const Expr& yi, const Expr& xi, Expr weight) {
    KILN_ASSIGN_OR_RETURN(Expr in_y, Inside(yi, h));
    KILN_ASSIGN_OR_RETURN(Expr in_x, Inside(xi, w));
    KILN_ASSIGN_OR_RETURN(Expr mask, Call("relax.multiply", {in_y, in_x}));
    KILN_ASSIGN_OR_RETURN(weight, Call("relax.multiply", {weight, mask}));
    auto clamp = [&](const Expr& v, int64_t size) {
      return Call("relax.clip", {v},
                  {{"min", FloatAttr(0)}, {"max", FloatAttr(static_cast<double>(size - 1))}});
    };
    KILN_ASSIGN_OR_RETURN(Expr yc, clamp(yi, h));
    KILN_ASSIGN_OR_RETURN(Expr xc, clamp(xi, w));
    KILN_ASSIGN_OR_RETURN(Expr row, Call("relax.multiply", {yc, F(static_cast<double>(w))}));
    KILN_ASSIGN_OR_RETURN(Expr pos, Call("relax.add", {row, xc}));
    KILN_ASSIGN_OR_RETURN(Expr index, Call("relax.astype", {pos}, {{"dtype", StrAttr("int64")}}));
    const PrimExpr one = ir::IntImm(DataType::Int(64), 1);
    const PrimExpr points = ir::IntImm(DataType::Int(64), ho * wo);
    KILN_ASSIGN_OR_RETURN(index,
                          Call("relax.reshape", {index, ir::relax::MakeShape({n, one, points})}));
    KILN_ASSIGN_OR_RETURN(
        index, Call("relax.broadcast_to", {index, ir::relax::MakeShape({n, c, points})}));
    KILN_ASSIGN_OR_RETURN(Expr values,
                          Call("relax.gather_elements", {flat, index}, {{"axis", IntAttr(2)}}));
    const PrimExpr hh = ir::IntImm(DataType::Int(64), ho), ww = ir::IntImm(DataType::Int(64), wo);
    KILN_ASSIGN_OR_RETURN(values,
                          Call("relax.reshape", {values, ir::relax::MakeShape({n, c, hh, ww})}));
    KILN_ASSIGN_OR_RETURN(weight, Call("relax.expand_dims", {weight}, {{"axis", IntsAttr({1})}}));
    return Call("relax.multiply", {values, weight});
  }
};

// The cubic convolution weights (A = -0.75) of the taps at offsets -1, 0, 1 and 2 from floor(x),
// for the fraction t = x - floor(x).
absl::StatusOr<std::vector<Expr>> CubicWeights(Sampler& s, const Expr& t, const Expr& ones) {
  constexpr double A = -0.75;
  // Near taps (|d| <= 1): ((A + 2) d - (A + 3)) d^2 + 1; far taps (1 < |d| < 2):
  // ((A d - 5A) d + 8A) d - 4A, with d the tap's distance.
  auto near = [&](const Expr& d) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(Expr a, s.Call("relax.multiply", {d, s.F(A + 2)}));
    KILN_ASSIGN_OR_RETURN(a, s.Call("relax.subtract", {a, s.F(A + 3)}));
    KILN_ASSIGN_OR_RETURN(Expr d2, s.Call("relax.multiply", {d, d}));
    KILN_ASSIGN_OR_RETURN(a, s.Call("relax.multiply", {a, d2}));
    return s.Call("relax.add", {a, s.F(1)});
  };
  auto far = [&](const Expr& d) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(Expr a, s.Call("relax.multiply", {d, s.F(A)}));
    KILN_ASSIGN_OR_RETURN(a, s.Call("relax.subtract", {a, s.F(5 * A)}));
    KILN_ASSIGN_OR_RETURN(a, s.Call("relax.multiply", {a, d}));
    KILN_ASSIGN_OR_RETURN(a, s.Call("relax.add", {a, s.F(8 * A)}));
    KILN_ASSIGN_OR_RETURN(a, s.Call("relax.multiply", {a, d}));
    return s.Call("relax.subtract", {a, s.F(4 * A)});
  };
  KILN_ASSIGN_OR_RETURN(Expr t1, s.Call("relax.add", {t, s.F(1)}));    // distance to -1
  KILN_ASSIGN_OR_RETURN(Expr u, s.Call("relax.subtract", {ones, t}));  // distance to +1
  KILN_ASSIGN_OR_RETURN(Expr u1, s.Call("relax.add", {u, s.F(1)}));    // distance to +2
  std::vector<Expr> w(4);
  KILN_ASSIGN_OR_RETURN(w[0], far(t1));
  KILN_ASSIGN_OR_RETURN(w[1], near(t));
  KILN_ASSIGN_OR_RETURN(w[2], near(u));
  KILN_ASSIGN_OR_RETURN(w[3], far(u1));
  return w;
}

// Bicubic: 4 x 4 taps around the unpadded position; each tap's pixel is padded on its own
// (border and reflection move it inside, zeros reads 0 outside).
absl::StatusOr<Expr> Bicubic(Sampler& s, const Expr& px, const Expr& py, const Expr& ones) {
  KILN_ASSIGN_OR_RETURN(Expr x0, s.Call("relax.floor", {px}));
  KILN_ASSIGN_OR_RETURN(Expr y0, s.Call("relax.floor", {py}));
  KILN_ASSIGN_OR_RETURN(Expr tx, s.Call("relax.subtract", {px, x0}));
  KILN_ASSIGN_OR_RETURN(Expr ty, s.Call("relax.subtract", {py, y0}));
  KILN_ASSIGN_OR_RETURN(std::vector<Expr> wx, CubicWeights(s, tx, ones));
  KILN_ASSIGN_OR_RETURN(std::vector<Expr> wy, CubicWeights(s, ty, ones));
  Expr sum;
  for (int i = 0; i < 4; ++i) {
    KILN_ASSIGN_OR_RETURN(Expr yi, s.Call("relax.add", {y0, s.F(i - 1)}));
    KILN_ASSIGN_OR_RETURN(yi, s.Pad(yi, s.h));
    for (int j = 0; j < 4; ++j) {
      KILN_ASSIGN_OR_RETURN(Expr xj, s.Call("relax.add", {x0, s.F(j - 1)}));
      KILN_ASSIGN_OR_RETURN(xj, s.Pad(xj, s.w));
      KILN_ASSIGN_OR_RETURN(Expr weight, s.Call("relax.multiply", {wy[i], wx[j]}));
      KILN_ASSIGN_OR_RETURN(Expr tap, s.Tap(yi, xj, weight));
      if (sum) {
        KILN_ASSIGN_OR_RETURN(sum, s.Call("relax.add", {sum, tap}));
      } else {
        sum = tap;
      }
    }
  }
  return sum;
}

absl::StatusOr<Outputs> GridSample(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr grid, ctx.Tensor(1));
  if (ctx.DType(x) != kF32 || ctx.DType(grid) != kF32) {
    return ctx.Unsupported("GridSample of tensors other than float32");
  }
  const std::string mode = ctx.Str("mode", "bilinear");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") {
    return ctx.Error(absl::StrCat("unknown mode '", mode, "'"));
  }
  const std::string padding = ctx.Str("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection") {
    return ctx.Error(absl::StrCat("unknown padding_mode '", padding, "'"));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> gs, ctx.Shape(grid));
  if (xs.size() != 4 || gs.size() != 4) return ctx.Unsupported("GridSample other than 2-D");
  const int64_t* h = ir::AsConstInt(xs[2]);
  const int64_t* w = ir::AsConstInt(xs[3]);
  const int64_t* ho = ir::AsConstInt(gs[1]);
  const int64_t* wo = ir::AsConstInt(gs[2]);
  if (!h || !w || !ho || !wo)
    return ctx.Unsupported("GridSample over sizes not known at import time");
  Sampler s{ctx, Expr(), xs[0], xs[1], *h, *w, *ho, *wo, padding, ctx.Int("align_corners", 0) != 0};
  KILN_ASSIGN_OR_RETURN(
      s.flat,
      ctx.Call("relax.reshape",
               {x, ir::relax::MakeShape({xs[0], xs[1], ir::IntImm(DataType::Int(64), *h * *w)})}));
  auto coordinate = [&](int64_t k) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(Expr g, ctx.Call("relax.strided_slice", {grid},
                                           {{"axes", IntsAttr({3})},
                                            {"begin", IntsAttr({k})},
                                            {"end", IntsAttr({k + 1})},
                                            {"strides", IntsAttr({1})}}));
    return ctx.Call("relax.squeeze", {g}, {{"axis", IntsAttr({3})}});
  };
  KILN_ASSIGN_OR_RETURN(Expr gx, coordinate(0));
  KILN_ASSIGN_OR_RETURN(Expr gy, coordinate(1));
  KILN_ASSIGN_OR_RETURN(Expr px, s.Unnormalize(gx, *w));
  KILN_ASSIGN_OR_RETURN(Expr py, s.Unnormalize(gy, *h));
  KILN_ASSIGN_OR_RETURN(Expr ones, ctx.Call("relax.ones_like", {px}));
  if (mode == "bicubic") return OneOf(Bicubic(s, px, py, ones));
  KILN_ASSIGN_OR_RETURN(px, s.Pad(px, *w));
  KILN_ASSIGN_OR_RETURN(py, s.Pad(py, *h));
  if (mode == "nearest") {
    KILN_ASSIGN_OR_RETURN(Expr xr, RoundHalfEven(ctx, px));
    KILN_ASSIGN_OR_RETURN(Expr yr, RoundHalfEven(ctx, py));
    return OneOf(s.Tap(yr, xr, ones));
  }
  KILN_ASSIGN_OR_RETURN(Expr x0, ctx.Call("relax.floor", {px}));
  KILN_ASSIGN_OR_RETURN(Expr y0, ctx.Call("relax.floor", {py}));
  KILN_ASSIGN_OR_RETURN(Expr x1, ctx.Call("relax.add", {x0, s.F(1)}));
  KILN_ASSIGN_OR_RETURN(Expr y1, ctx.Call("relax.add", {y0, s.F(1)}));
  KILN_ASSIGN_OR_RETURN(Expr wx1, ctx.Call("relax.subtract", {px, x0}));
  KILN_ASSIGN_OR_RETURN(Expr wy1, ctx.Call("relax.subtract", {py, y0}));
  KILN_ASSIGN_OR_RETURN(Expr wx0, ctx.Call("relax.subtract", {ones, wx1}));
  KILN_ASSIGN_OR_RETURN(Expr wy0, ctx.Call("relax.subtract", {ones, wy1}));
  Expr sum;
  for (auto [yi, wy] : {std::pair<Expr*, Expr*>{&y0, &wy0}, {&y1, &wy1}}) {
    for (auto [xi, wx] : {std::pair<Expr*, Expr*>{&x0, &wx0}, {&x1, &wx1}}) {
      KILN_ASSIGN_OR_RETURN(Expr weight, ctx.Call("relax.multiply", {*wy, *wx}));
      KILN_ASSIGN_OR_RETURN(Expr tap, s.Tap(*yi, *xi, weight));
      if (sum) {
        KILN_ASSIGN_OR_RETURN(sum, ctx.Call("relax.add", {sum, tap}));
      } else {
        sum = tap;
      }
    }
  }
  return One(sum);
}

}  // namespace

void RegisterGridSampleConverter(ConverterTable* t) { (*t)["GridSample"] = GridSample; }

}  // namespace kiln::frontend::onnx_import
