// Elementwise math, activations, comparisons, reductions and softmax. Integer arithmetic on
// values known at import time (shape computations) is folded here instead of emitted.
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/onnx/convert_context.h"
#include "compiler/frontend/onnx/shape_math.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend::onnx_import {
namespace {

using ir::IntImm;
using ir::NodeKind;

// ---- Folding known integers ----

using IntFold = std::optional<PrimExpr> (*)(const PrimExpr& a, const PrimExpr& b,
                                            arith::Analyzer* ana);

// Applies `fold` elementwise with broadcasting when both inputs' elements are known; nullopt
// when either is unknown or `fold` cannot decide an element.
std::optional<Value> FoldBinary(Context& ctx, IntFold fold, DataType out_dtype) {
  if (!ctx.Has(0) || !ctx.Has(1)) return std::nullopt;
  const Value& a = ctx.In(0);
  const Value& b = ctx.In(1);
  if (!a.elems || !b.elems) return std::nullopt;
  absl::StatusOr<std::vector<int64_t>> shape = BroadcastKnown(a.elems_shape, b.elems_shape);
  if (!shape.ok()) return std::nullopt;
  // Two known inputs of 1,024 elements broadcast to a million, and the next op to a billion:
  // past kMaxKnownElems the result is computed at run time instead.
  int64_t n = 1;
  for (int64_t d : *shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxKnownElems) return std::nullopt;
  }
  // Row-major index of output element `flat` within an input of `in_shape` (broadcast).
  auto source = [&](const std::vector<int64_t>& in_shape, int64_t flat) {
    int64_t index = 0, stride = 1, rest = flat;
    for (size_t k = shape->size(); k-- > 0;) {
      int64_t coord = rest % (*shape)[k];
      rest /= (*shape)[k];
      size_t skip = shape->size() - in_shape.size();
      if (k < skip) continue;
      int64_t dim = in_shape[k - skip];
      index += (dim == 1 ? 0 : coord) * stride;
      stride *= dim;
    }
    return index;
  };
  std::vector<PrimExpr> out;
  for (int64_t i = 0; i < n; ++i) {
    std::optional<PrimExpr> e = fold((*a.elems)[source(a.elems_shape, i)],
                                     (*b.elems)[source(b.elems_shape, i)], ctx.analyzer());
    if (!e) return std::nullopt;
    out.push_back(*e);
  }
  return KnownInts(std::move(out), *shape, out_dtype);
}

std::optional<PrimExpr> Simplified(PrimExpr e, arith::Analyzer* ana) {
  return ana->Simplify(std::move(e));
}

std::optional<PrimExpr> FoldAdd(const PrimExpr& a, const PrimExpr& b, arith::Analyzer* ana) {
  return Simplified(a + b, ana);
}
std::optional<PrimExpr> FoldSub(const PrimExpr& a, const PrimExpr& b, arith::Analyzer* ana) {
  return Simplified(a - b, ana);
}
std::optional<PrimExpr> FoldMul(const PrimExpr& a, const PrimExpr& b, arith::Analyzer* ana) {
  return Simplified(a * b, ana);
}
// ONNX integer division truncates; floor division agrees on the non-negative values of shape
// arithmetic, and constants are computed exactly.
std::optional<PrimExpr> FoldDiv(const PrimExpr& a, const PrimExpr& b, arith::Analyzer* ana) {
  const int64_t* x = ir::AsConstInt(a);
  const int64_t* y = ir::AsConstInt(b);
  if (y != nullptr && *y == 0) return std::nullopt;
  if (x != nullptr && y != nullptr) return IntImm(DataType::Int(64), *x / *y);
  if (y == nullptr || *y < 0) return std::nullopt;
  return Simplified(ir::FloorDiv(a, b), ana);
}
std::optional<PrimExpr> FoldMin(const PrimExpr& a, const PrimExpr& b, arith::Analyzer* ana) {
  return Simplified(ir::Min(a, b), ana);
}
std::optional<PrimExpr> FoldMax(const PrimExpr& a, const PrimExpr& b, arith::Analyzer* ana) {
  return Simplified(ir::Max(a, b), ana);
}
// Comparisons fold only when decidable.
std::optional<PrimExpr> Decide(const PrimExpr& cond, arith::Analyzer* ana) {
  if (ana->CanProve(cond)) return IntImm(DataType::Int(64), 1);
  if (ana->CanProve(ir::Not(cond))) return IntImm(DataType::Int(64), 0);
  return std::nullopt;
}
std::optional<PrimExpr> FoldEqual(const PrimExpr& a, const PrimExpr& b, arith::Analyzer* ana) {
  return Decide(ir::Binary(NodeKind::kEQ, a, b), ana);
}
std::optional<PrimExpr> FoldLess(const PrimExpr& a, const PrimExpr& b, arith::Analyzer* ana) {
  return Decide(a < b, ana);
}
std::optional<PrimExpr> FoldGreater(const PrimExpr& a, const PrimExpr& b, arith::Analyzer* ana) {
  return Decide(b < a, ana);
}

// ---- Unary ----

template <const char* kOp>
absl::StatusOr<Outputs> Unary(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call(kOp, {x}));
  return One(y);
}

constexpr char kSqrt[] = "relax.sqrt";
constexpr char kExp[] = "relax.exp";
constexpr char kLog[] = "relax.log";
constexpr char kErf[] = "relax.erf";
constexpr char kTanh[] = "relax.tanh";
constexpr char kSigmoid[] = "relax.sigmoid";
constexpr char kRelu[] = "relax.nn.relu";
constexpr char kAbs[] = "relax.abs";
constexpr char kFloor[] = "relax.floor";
constexpr char kCeil[] = "relax.ceil";
constexpr char kNot[] = "relax.logical_not";
constexpr char kSign[] = "relax.sign";
constexpr char kSin[] = "relax.sin";
constexpr char kCos[] = "relax.cos";
constexpr char kTan[] = "relax.tan";
constexpr char kAsin[] = "relax.asin";
constexpr char kAcos[] = "relax.acos";
constexpr char kAtan[] = "relax.atan";
constexpr char kSinh[] = "relax.sinh";
constexpr char kCosh[] = "relax.cosh";
constexpr char kAsinh[] = "relax.asinh";
constexpr char kAcosh[] = "relax.acosh";
constexpr char kAtanh[] = "relax.atanh";

absl::StatusOr<Outputs> Neg(Context& ctx) {
  if (std::optional<std::vector<PrimExpr>> e = ctx.Elems(0)) {
    for (PrimExpr& x : *e) x = ctx.analyzer()->Simplify(IntImm(x->dtype, 0) - x);
    return Outputs{KnownInts(std::move(*e), ctx.In(0).elems_shape, ctx.In(0).elems_dtype)};
  }
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.negative", {x}));
  return One(y);
}

absl::StatusOr<Outputs> Reciprocal(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.divide", {ctx.Scalar(ctx.DType(x), 1), x}));
  return One(y);
}

// Clip(x, min, max): bounds from inputs (opset 11+) or attributes (before); constant bounds
// become relax.clip, tensor bounds maximum/minimum.
absl::StatusOr<Outputs> Clip(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  ir::Attrs attrs;
  if (ctx.opset() < 11) {
    // Before opset 11 the bounds are attributes (absent: unbounded).
    for (const char* key : {"min", "max"}) {
      if (ctx.HasAttr(key)) attrs.push_back({key, FloatAttr(ctx.Float(key, 0))});
    }
    return OneOf(ctx.Call("relax.clip", {x}, attrs));
  }
  std::vector<std::pair<size_t, const char*>> dynamic;
  for (auto [index, key] : {std::pair<size_t, const char*>{1, "min"}, {2, "max"}}) {
    if (!ctx.Has(index)) continue;
    absl::StatusOr<std::vector<double>> bound = ctx.ConstFloats(index);
    if (bound.ok() && bound->size() == 1) {
      attrs.push_back({key, FloatAttr((*bound)[0])});
    } else {
      dynamic.push_back({index, key});
    }
  }
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.clip", {x}, attrs));
  for (auto [index, key] : dynamic) {
    KILN_ASSIGN_OR_RETURN(Expr bound, ctx.Tensor(index));
    KILN_ASSIGN_OR_RETURN(
        y, ctx.Call(std::string(key) == "min" ? "relax.maximum" : "relax.minimum", {y, bound}));
  }
  return One(y);
}

absl::StatusOr<Outputs> LeakyRelu(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  DataType t = ctx.DType(x);
  double alpha = ctx.Float("alpha", 0.01);
  KILN_ASSIGN_OR_RETURN(Expr scaled, ctx.Call("relax.multiply", {x, ctx.Scalar(t, alpha)}));
  KILN_ASSIGN_OR_RETURN(Expr positive, ctx.Call("relax.greater", {x, ctx.Scalar(t, 0)}));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.where", {positive, x, scaled}));
  return One(y);
}

// clip(alpha * x + beta, 0, 1)
absl::StatusOr<Expr> HardSigmoidOf(Context& ctx, const Expr& x, double alpha, double beta) {
  DataType t = ctx.DType(x);
  KILN_ASSIGN_OR_RETURN(Expr ax, ctx.Call("relax.multiply", {x, ctx.Scalar(t, alpha)}));
  KILN_ASSIGN_OR_RETURN(Expr axb, ctx.Call("relax.add", {ax, ctx.Scalar(t, beta)}));
  return ctx.Call("relax.clip", {axb}, {{"min", FloatAttr(0)}, {"max", FloatAttr(1)}});
}

absl::StatusOr<Outputs> HardSigmoid(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr y,
                        HardSigmoidOf(ctx, x, ctx.Float("alpha", 0.2), ctx.Float("beta", 0.5)));
  return One(y);
}

absl::StatusOr<Outputs> HardSwish(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr gate, HardSigmoidOf(ctx, x, 1.0 / 6.0, 0.5));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.multiply", {x, gate}));
  return One(y);
}

// where(x > 0, x, negative(x)): the shape of Elu, Selu, ThresholdedRelu and PRelu.
absl::StatusOr<Expr> PiecewiseAtZero(Context& ctx, const Expr& x, const Expr& negative_part,
                                     double threshold = 0) {
  KILN_ASSIGN_OR_RETURN(Expr above,
                        ctx.Call("relax.greater", {x, ctx.Scalar(ctx.DType(x), threshold)}));
  return ctx.Call("relax.where", {above, x, negative_part});
}

// Elu: x > 0 ? x : alpha * (exp(x) - 1)
absl::StatusOr<Outputs> Elu(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  DataType t = ctx.DType(x);
  KILN_ASSIGN_OR_RETURN(Expr e, ctx.Call("relax.exp", {x}));
  KILN_ASSIGN_OR_RETURN(Expr em1, ctx.Call("relax.subtract", {e, ctx.Scalar(t, 1)}));
  KILN_ASSIGN_OR_RETURN(Expr neg,
                        ctx.Call("relax.multiply", {em1, ctx.Scalar(t, ctx.Float("alpha", 1.0))}));
  return OneOf(PiecewiseAtZero(ctx, x, neg));
}

// Selu: gamma * (x > 0 ? x : alpha * (exp(x) - 1)), with ONNX's float32 defaults.
absl::StatusOr<Outputs> Selu(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  DataType t = ctx.DType(x);
  double alpha = ctx.Float("alpha", 1.67326319217681884765625);
  double gamma = ctx.Float("gamma", 1.05070102214813232421875);
  KILN_ASSIGN_OR_RETURN(Expr e, ctx.Call("relax.exp", {x}));
  KILN_ASSIGN_OR_RETURN(Expr em1, ctx.Call("relax.subtract", {e, ctx.Scalar(t, 1)}));
  KILN_ASSIGN_OR_RETURN(Expr neg, ctx.Call("relax.multiply", {em1, ctx.Scalar(t, alpha)}));
  KILN_ASSIGN_OR_RETURN(Expr y, PiecewiseAtZero(ctx, x, neg));
  return OneOf(ctx.Call("relax.multiply", {y, ctx.Scalar(t, gamma)}));
}

// Celu: x > 0 ? x : alpha * (exp(x / alpha) - 1), which is max(0, x) + min(0, that).
absl::StatusOr<Outputs> Celu(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  DataType t = ctx.DType(x);
  double alpha = ctx.Float("alpha", 1.0);
  if (alpha == 0) return ctx.Error("alpha must not be 0");
  KILN_ASSIGN_OR_RETURN(Expr scaled, ctx.Call("relax.divide", {x, ctx.Scalar(t, alpha)}));
  KILN_ASSIGN_OR_RETURN(Expr e, ctx.Call("relax.exp", {scaled}));
  KILN_ASSIGN_OR_RETURN(Expr em1, ctx.Call("relax.subtract", {e, ctx.Scalar(t, 1)}));
  KILN_ASSIGN_OR_RETURN(Expr neg, ctx.Call("relax.multiply", {em1, ctx.Scalar(t, alpha)}));
  return OneOf(PiecewiseAtZero(ctx, x, neg));
}

// ThresholdedRelu: x > alpha ? x : 0
absl::StatusOr<Outputs> ThresholdedRelu(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr zero, ctx.Call("relax.zeros_like", {x}));
  return OneOf(PiecewiseAtZero(ctx, x, zero, ctx.Float("alpha", 1.0)));
}

// PRelu: x > 0 ? x : slope * x. Before opset 7 a 1-D slope of one value per channel applies
// along axis 1 (later opsets broadcast it as NumPy does).
absl::StatusOr<Outputs> PRelu(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr slope, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ss, ctx.Shape(slope));
  if (ctx.opset() < 7 && ss.size() == 1 && xs.size() > 2 &&
      ctx.analyzer()->CanProveEqual(ss[0], xs[1])) {
    std::vector<PrimExpr> channel = {ss[0]};
    for (size_t k = 2; k < xs.size(); ++k) channel.push_back(I64(1));
    KILN_ASSIGN_OR_RETURN(slope, ctx.Call("relax.reshape", {slope, ir::relax::MakeShape(channel)}));
  }
  KILN_ASSIGN_OR_RETURN(Expr scaled, ctx.Call("relax.multiply", {x, slope}));
  KILN_ASSIGN_OR_RETURN(Expr above, ctx.Call("relax.greater", {x, ctx.Scalar(ctx.DType(x), 0)}));
  return OneOf(ctx.Call("relax.where", {above, x, scaled}));
}

// Softplus: log(exp(x) + 1); Softsign: x / (1 + |x|)
absl::StatusOr<Outputs> Softplus(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr e, ctx.Call("relax.exp", {x}));
  KILN_ASSIGN_OR_RETURN(Expr e1, ctx.Call("relax.add", {e, ctx.Scalar(ctx.DType(x), 1)}));
  return OneOf(ctx.Call("relax.log", {e1}));
}

absl::StatusOr<Outputs> Softsign(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr a, ctx.Call("relax.abs", {x}));
  KILN_ASSIGN_OR_RETURN(Expr a1, ctx.Call("relax.add", {a, ctx.Scalar(ctx.DType(x), 1)}));
  return OneOf(ctx.Call("relax.divide", {x, a1}));
}

// Shrink: x < -lambd ? x + bias : x > lambd ? x - bias : 0
absl::StatusOr<Outputs> Shrink(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  DataType t = ctx.DType(x);
  double lambd = ctx.Float("lambd", 0.5), bias = ctx.Float("bias", 0);
  KILN_ASSIGN_OR_RETURN(Expr below, ctx.Call("relax.less", {x, ctx.Scalar(t, -lambd)}));
  KILN_ASSIGN_OR_RETURN(Expr above, ctx.Call("relax.greater", {x, ctx.Scalar(t, lambd)}));
  KILN_ASSIGN_OR_RETURN(Expr plus, ctx.Call("relax.add", {x, ctx.Scalar(t, bias)}));
  KILN_ASSIGN_OR_RETURN(Expr minus, ctx.Call("relax.subtract", {x, ctx.Scalar(t, bias)}));
  KILN_ASSIGN_OR_RETURN(Expr zero, ctx.Call("relax.zeros_like", {x}));
  KILN_ASSIGN_OR_RETURN(Expr upper, ctx.Call("relax.where", {above, minus, zero}));
  return OneOf(ctx.Call("relax.where", {below, plus, upper}));
}

// IsNaN: x != x. IsInf: |x| == inf, or only one sign of it.
absl::StatusOr<Outputs> IsNaN(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  return OneOf(ctx.Call("relax.not_equal", {x, x}));
}

absl::StatusOr<Outputs> IsInf(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  DataType t = ctx.DType(x);
  bool positive = ctx.Int("detect_positive", 1) != 0;
  bool negative = ctx.Int("detect_negative", 1) != 0;
  if (positive && negative) {
    KILN_ASSIGN_OR_RETURN(Expr a, ctx.Call("relax.abs", {x}));
    return OneOf(ctx.Call("relax.equal", {a, ctx.Scalar(t, INFINITY)}));
  }
  if (positive) return OneOf(ctx.Call("relax.equal", {x, ctx.Scalar(t, INFINITY)}));
  if (negative) return OneOf(ctx.Call("relax.equal", {x, ctx.Scalar(t, -INFINITY)}));
  return ctx.Unsupported("IsInf detecting neither infinity");
}

// And, Or, Xor of booleans: where(a, b, a), where(a, a, b), a != b.
absl::StatusOr<Outputs> And(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr a, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr b, ctx.Tensor(1));
  return OneOf(ctx.Call("relax.where", {a, b, a}));
}

absl::StatusOr<Outputs> Or(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr a, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr b, ctx.Tensor(1));
  return OneOf(ctx.Call("relax.where", {a, a, b}));
}

absl::StatusOr<Outputs> Xor(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr a, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr b, ctx.Tensor(1));
  return OneOf(ctx.Call("relax.not_equal", {a, b}));
}

// Mod: fmod = 0 takes the divisor's sign (floor_mod); fmod = 1 the dividend's, as C's fmod:
// floor_mod(a, b) - b where it is nonzero and a and b differ in sign.
// Mod of a and b, whatever their type.
absl::StatusOr<Outputs> ModOf(Context& ctx, Expr a, Expr b) {
  bool is_float = ctx.DType(a).is_float();
  if (ctx.Int("fmod", 0) == 0 && is_float)
    return ctx.Error("fmod must be 1 for floating-point inputs");
  Expr r;
  if (is_float) {  // floor_mod is integer-only: a - floor(a / b) * b
    KILN_ASSIGN_OR_RETURN(Expr q, ctx.Call("relax.divide", {a, b}));
    KILN_ASSIGN_OR_RETURN(Expr qf, ctx.Call("relax.floor", {q}));
    KILN_ASSIGN_OR_RETURN(Expr qb, ctx.Call("relax.multiply", {qf, b}));
    KILN_ASSIGN_OR_RETURN(r, ctx.Call("relax.subtract", {a, qb}));
  } else {
    KILN_ASSIGN_OR_RETURN(r, ctx.Call("relax.floor_mod", {a, b}));
  }
  if (ctx.Int("fmod", 0) == 0) return One(r);
  DataType t = ctx.DType(a);
  KILN_ASSIGN_OR_RETURN(Expr a_neg, ctx.Call("relax.less", {a, ctx.Scalar(t, 0)}));
  KILN_ASSIGN_OR_RETURN(Expr b_neg, ctx.Call("relax.less", {b, ctx.Scalar(t, 0)}));
  KILN_ASSIGN_OR_RETURN(Expr signs_differ, ctx.Call("relax.not_equal", {a_neg, b_neg}));
  KILN_ASSIGN_OR_RETURN(Expr nonzero, ctx.Call("relax.not_equal", {r, ctx.Scalar(t, 0)}));
  KILN_ASSIGN_OR_RETURN(Expr adjust, ctx.Call("relax.where", {nonzero, signs_differ, nonzero}));
  KILN_ASSIGN_OR_RETURN(Expr shifted, ctx.Call("relax.subtract", {r, b}));
  return OneOf(ctx.Call("relax.where", {adjust, shifted, r}));
}

absl::StatusOr<Outputs> Mod(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr a, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr b, ctx.Tensor(1));
  // float16 is computed in float32 and rounded once, as NumPy's fmod (ONNX's reference) does:
  // rounding each step to half precision loses the remainder's low bits.
  if (ctx.DType(a) == DataType::Float(16)) {
    auto widen = [&](const Expr& v) {
      return ctx.Call("relax.astype", {v}, {{"dtype", StrAttr("float32")}});
    };
    KILN_ASSIGN_OR_RETURN(a, widen(a));
    KILN_ASSIGN_OR_RETURN(b, widen(b));
    KILN_ASSIGN_OR_RETURN(Outputs wide, ModOf(ctx, a, b));
    KILN_ASSIGN_OR_RETURN(
        Expr y, ctx.Call("relax.astype", {wide[0].expr}, {{"dtype", StrAttr("float16")}}));
    return One(y);
  }
  return ModOf(ctx, a, b);
}

// Round: to the nearest integer, ties to even.
absl::StatusOr<Outputs> Round(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  if (!ctx.DType(x).is_float()) return One(x);
  return OneOf(RoundHalfEven(ctx, x));
}

// CumSum(x, axis): relax.cumsum; reverse=1 sums from the end (the axis flipped around it). An
// axis known only at run time (a graph input) sums along every axis and selects the one it
// names: the output's shape is the input's whichever it is.
absl::StatusOr<Expr> CumSumAlong(Context& ctx, Expr x, int64_t axis) {
  auto flip = [&](const Expr& e) {
    return ctx.Call("relax.strided_slice", {e},
                    {{"axes", IntsAttr({axis})},
                     {"begin", IntsAttr({-1})},
                     {"end", IntsAttr({std::numeric_limits<int64_t>::min()})},
                     {"strides", IntsAttr({-1})}});
  };
  bool reverse = ctx.Int("reverse", 0) != 0;
  if (reverse) {
    KILN_ASSIGN_OR_RETURN(x, flip(x));
  }
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.cumsum", {x},
                                         {{"axis", IntAttr(axis)},
                                          {"exclusive", IntAttr(ctx.Int("exclusive", 0) != 0)}}));
  if (reverse) {
    KILN_ASSIGN_OR_RETURN(y, flip(y));
  }
  return y;
}

absl::StatusOr<Outputs> CumSum(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  if (absl::StatusOr<std::vector<int64_t>> axis = ctx.ConstInts(1); axis.ok()) {
    if (axis->size() != 1) return ctx.Error("axis must be a scalar");
    return OneOf(CumSumAlong(ctx, x, (*axis)[0]));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, ctx.Shape(x));
  int64_t rank = static_cast<int64_t>(shape.size());
  KILN_ASSIGN_OR_RETURN(Expr axis, ctx.Tensor(1));
  if (ctx.DType(axis) != DataType::Int(64)) {
    KILN_ASSIGN_OR_RETURN(axis, ctx.Call("relax.astype", {axis}, {{"dtype", StrAttr("int64")}}));
  }
  // A negative axis counts from the end.
  KILN_ASSIGN_OR_RETURN(Expr negative,
                        ctx.Call("relax.less", {axis, ctx.Scalar(DataType::Int(64), 0)}));
  KILN_ASSIGN_OR_RETURN(
      Expr wrapped,
      ctx.Call("relax.add", {axis, ctx.Scalar(DataType::Int(64), static_cast<double>(rank))}));
  KILN_ASSIGN_OR_RETURN(axis, ctx.Call("relax.where", {negative, wrapped, axis}));
  KILN_ASSIGN_OR_RETURN(Expr y, CumSumAlong(ctx, x, rank - 1));
  for (int64_t k = rank - 2; k >= 0; --k) {
    KILN_ASSIGN_OR_RETURN(Expr along, CumSumAlong(ctx, x, k));
    KILN_ASSIGN_OR_RETURN(
        Expr chosen,
        ctx.Call("relax.equal", {axis, ctx.Scalar(DataType::Int(64), static_cast<double>(k))}));
    KILN_ASSIGN_OR_RETURN(y, ctx.Call("relax.where", {chosen, along, y}));
  }
  return One(y);
}

// ---- Binary ----

struct BinarySpec {
  const char* op;
  IntFold fold;    // null: never folded
  bool predicate;  // bool result
};

template <const BinarySpec& kSpec>
absl::StatusOr<Outputs> Binary(Context& ctx) {
  if (kSpec.fold != nullptr) {
    DataType out = kSpec.predicate ? DataType::Bool()
                   : ctx.Has(0)    ? ctx.In(0).elems_dtype
                                   : DataType::Int(64);
    if (std::optional<Value> v = FoldBinary(ctx, kSpec.fold, out)) return Outputs{std::move(*v)};
  }
  KILN_ASSIGN_OR_RETURN(Expr a, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr b, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call(kSpec.op, {a, b}));
  return One(y);
}

constexpr BinarySpec kAdd = {"relax.add", FoldAdd, false};
constexpr BinarySpec kSub = {"relax.subtract", FoldSub, false};
constexpr BinarySpec kMul = {"relax.multiply", FoldMul, false};
constexpr BinarySpec kEqual = {"relax.equal", FoldEqual, true};
constexpr BinarySpec kLess = {"relax.less", FoldLess, true};
constexpr BinarySpec kGreater = {"relax.greater", FoldGreater, true};
constexpr BinarySpec kLessEqual = {"relax.less_equal", nullptr, true};
constexpr BinarySpec kGreaterEqual = {"relax.greater_equal", nullptr, true};

// Div: ONNX integer division truncates toward zero, as relax.divide of integers does (TIR's
// Div: LLVM's sdiv/udiv). A zero divisor, undefined in ONNX, gives 0 here rather than a trap.
absl::StatusOr<Outputs> Div(Context& ctx) {
  if (std::optional<Value> v = FoldBinary(ctx, FoldDiv, ctx.In(0).elems_dtype))
    return Outputs{std::move(*v)};
  KILN_ASSIGN_OR_RETURN(Expr a, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr b, ctx.Tensor(1));
  if (ctx.DType(a).is_float()) return OneOf(ctx.Call("relax.divide", {a, b}));
  const DataType t = ctx.DType(b);
  KILN_ASSIGN_OR_RETURN(Expr zero, ctx.Call("relax.equal", {b, ctx.Scalar(t, 0)}));
  KILN_ASSIGN_OR_RETURN(Expr divisor, ctx.Call("relax.where", {zero, ctx.Scalar(t, 1), b}));
  KILN_ASSIGN_OR_RETURN(Expr q, ctx.Call("relax.divide", {a, divisor}));
  return OneOf(ctx.Call("relax.where", {zero, ctx.Scalar(ctx.DType(a), 0), q}));
}

// Pow: a constant exponent of 2, 1 or 0.5 becomes a multiply, nothing or a sqrt.
absl::StatusOr<Outputs> Pow(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  if (absl::StatusOr<std::vector<double>> e = ctx.ConstFloats(1); e.ok() && e->size() == 1) {
    double p = (*e)[0];
    if (p == 1) return One(x);
    if (p == 2) return OneOf(ctx.Call("relax.multiply", {x, x}));
    if (p == 0.5) return OneOf(ctx.Call("relax.sqrt", {x}));
  }
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Tensor(1));
  // The result has the base's type. An integer power is computed in float64, exact for every
  // result float64 holds exactly (all int32 ones), as NumPy's reference does.
  DataType t = ctx.DType(x);
  DataType compute = t.is_float() ? t : DataType::Float(64);
  auto as = [&](const Expr& e, DataType d) -> absl::StatusOr<Expr> {
    if (ctx.DType(e) == d) return e;
    return ctx.Call("relax.astype", {e}, {{"dtype", StrAttr(d.ToString())}});
  };
  KILN_ASSIGN_OR_RETURN(Expr base, as(x, compute));
  KILN_ASSIGN_OR_RETURN(Expr exponent, as(y, compute));
  KILN_ASSIGN_OR_RETURN(Expr out, ctx.Call("relax.power", {base, exponent}));
  return OneOf(as(out, t));
}

// Min, Max, Sum, Mean: variadic with broadcasting.
template <const BinarySpec& kSpec, bool kMean = false>
absl::StatusOr<Outputs> Variadic(Context& ctx) {
  if (ctx.num_inputs() == 0) return ctx.Error("needs at least one input");
  KILN_ASSIGN_OR_RETURN(Expr acc, ctx.Tensor(0));
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(i));
    KILN_ASSIGN_OR_RETURN(acc, ctx.Call(kSpec.op, {acc, x}));
  }
  if (kMean && ctx.num_inputs() > 1) {
    KILN_ASSIGN_OR_RETURN(
        acc, ctx.Call("relax.divide",
                      {acc, ctx.Scalar(ctx.DType(acc), static_cast<double>(ctx.num_inputs()))}));
  }
  return One(acc);
}

constexpr BinarySpec kMax = {"relax.maximum", FoldMax, false};
constexpr BinarySpec kMin = {"relax.minimum", FoldMin, false};

absl::StatusOr<Outputs> Where(Context& ctx) {
  std::optional<std::vector<PrimExpr>> c = ctx.Elems(0), x = ctx.Elems(1), y = ctx.Elems(2);
  if (c && x && y && ctx.In(0).elems_shape == ctx.In(1).elems_shape &&
      ctx.In(1).elems_shape == ctx.In(2).elems_shape) {
    std::vector<PrimExpr> out;
    for (size_t i = 0; i < c->size(); ++i) {
      const int64_t* cond = ir::AsConstInt((*c)[i]);
      if (cond == nullptr) break;
      out.push_back(*cond ? (*x)[i] : (*y)[i]);
    }
    if (out.size() == c->size())
      return Outputs{KnownInts(std::move(out), ctx.In(1).elems_shape, ctx.In(1).elems_dtype)};
  }
  KILN_ASSIGN_OR_RETURN(Expr cond, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr a, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(Expr b, ctx.Tensor(2));
  KILN_ASSIGN_OR_RETURN(Expr out, ctx.Call("relax.where", {cond, a, b}));
  return One(out);
}

absl::StatusOr<Outputs> Cast(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(DataType to, DataTypeFromOnnx(static_cast<int>(ctx.Int("to", 0))));
  if (std::optional<std::vector<PrimExpr>> e = ctx.Elems(0); e && to.is_integral()) {
    if (to.is_bool()) {
      for (PrimExpr& x : *e) {
        const int64_t* c = ir::AsConstInt(x);
        if (c == nullptr) return ctx.Unsupported("Cast of a symbolic value to bool");
        x = IntImm(DataType::Int(64), *c != 0);
      }
    }
    return Outputs{KnownInts(std::move(*e), ctx.In(0).elems_shape, to)};
  }
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  if (ctx.DType(x) == to) return One(x);
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.astype", {x}, {{"dtype", StrAttr(to.ToString())}}));
  return One(y);
}

// MeanVarianceNormalization: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes` (default
// 0, 2, 3), as ONNX's function body defines it.
absl::StatusOr<Outputs> MeanVarianceNormalization(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  DataType t = ctx.DType(x);
  std::vector<int64_t> axes = ctx.Ints("axes").value_or(std::vector<int64_t>{0, 2, 3});
  ir::Attrs mean_attrs = {{"axis", IntsAttr(axes)}, {"keepdims", IntAttr(1)}};
  KILN_ASSIGN_OR_RETURN(Expr mean, ctx.Call("relax.mean", {x}, mean_attrs));
  KILN_ASSIGN_OR_RETURN(Expr square, ctx.Call("relax.multiply", {x, x}));
  KILN_ASSIGN_OR_RETURN(Expr mean_of_square, ctx.Call("relax.mean", {square}, mean_attrs));
  KILN_ASSIGN_OR_RETURN(Expr square_of_mean, ctx.Call("relax.multiply", {mean, mean}));
  KILN_ASSIGN_OR_RETURN(Expr variance,
                        ctx.Call("relax.subtract", {mean_of_square, square_of_mean}));
  KILN_ASSIGN_OR_RETURN(Expr stddev, ctx.Call("relax.sqrt", {variance}));
  KILN_ASSIGN_OR_RETURN(Expr denominator, ctx.Call("relax.add", {stddev, ctx.Scalar(t, 1e-9)}));
  KILN_ASSIGN_OR_RETURN(Expr centered, ctx.Call("relax.subtract", {x, mean}));
  return OneOf(ctx.Call("relax.divide", {centered, denominator}));
}

// BitShift: x << y or x >> y (direction LEFT or RIGHT), on unsigned integers.
absl::StatusOr<Outputs> BitShift(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Tensor(1));
  std::string direction = ctx.Str("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    return ctx.Error(absl::StrCat("direction must be LEFT or RIGHT, got \"", direction, "\""));
  return OneOf(ctx.Call(direction == "LEFT" ? "relax.left_shift" : "relax.right_shift", {x, y}));
}

// CastLike: Cast to the element type of the second input.
absl::StatusOr<Outputs> CastLike(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr like, ctx.Tensor(1));
  DataType to = ctx.DType(like);
  if (ctx.DType(x) == to) return One(x);
  return OneOf(ctx.Call("relax.astype", {x}, {{"dtype", StrAttr(to.ToString())}}));
}

// ---- Reductions ----

// The axes of a Reduce* node: the `axes` attribute, or the second input (ReduceSum from opset
// 13, all of them from 18). Empty means all axes unless noop_with_empty_axes.
absl::StatusOr<std::optional<std::vector<int64_t>>> ReduceAxesOf(Context& ctx) {
  if (ctx.Has(1)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.ConstInts(1));
    return std::optional<std::vector<int64_t>>(axes);
  }
  return ctx.Ints("axes");
}

// `op` over axes computed at run time (ReduceSum's input from opset 13). Each dimension in turn
// is reduced where the axes name it: reduced with keepdims and broadcast back, so that both
// choices have one shape for a select. Then index 0 of each reduced dimension is kept, and
// without keepdims those dimensions are dropped. The axes are checked at run time to be
// distinct and in range.
absl::StatusOr<Expr> ReduceAtRunTime(Context& ctx, const char* op, const Expr& x) {
  ShapeMath m{ctx};
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.Shape(x));
  const int64_t rank = static_cast<int64_t>(dims.size());
  KILN_ASSIGN_OR_RETURN(Expr axes, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(int64_t k, m.Length(axes, "axes"));
  const bool keepdims = ctx.Int("keepdims", 1) != 0;
  if (k == 0) {  // no axes: nothing, or everything
    if (ctx.Int("noop_with_empty_axes", 0) != 0) return x;
    return ctx.Call(op, {x}, {{"keepdims", IntAttr(keepdims)}});
  }
  Expr bad_axes;
  KILN_ASSIGN_OR_RETURN(Expr named, m.Named(axes, k, rank, &bad_axes));
  KILN_ASSIGN_OR_RETURN(Expr is_named, m.Call("relax.equal", {named, m.I(1)}));
  Expr y = x;
  for (int64_t d = 0; d < rank; ++d) {
    KILN_ASSIGN_OR_RETURN(Expr reduced,
                          m.Call(op, {y}, {{"axis", IntsAttr({d})}, {"keepdims", IntAttr(1)}}));
    KILN_ASSIGN_OR_RETURN(Expr spread,
                          m.Call("relax.broadcast_to", {reduced, ir::relax::MakeShape(dims)}));
    KILN_ASSIGN_OR_RETURN(Expr here,
                          m.Call("relax.take", {is_named, m.I(d)}, {{"axis", IntAttr(0)}}));
    KILN_ASSIGN_OR_RETURN(y, m.Call("relax.where", {here, spread, y}));
  }
  KILN_ASSIGN_OR_RETURN(Expr dim, m.Tensor(dims));
  KILN_ASSIGN_OR_RETURN(Expr kept_dims, m.Call("relax.where", {is_named, m.I(1), dim}));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> e, ctx.DimsAtRunTime(kept_dims, {bad_axes}));
  for (int64_t d = 0; d < rank; ++d) {
    KILN_ASSIGN_OR_RETURN(Expr index, m.Iota(e[d]));
    KILN_ASSIGN_OR_RETURN(y, m.Call("relax.take", {y, index}, {{"axis", IntAttr(d)}}));
  }
  if (keepdims) return y;
  if (rank == k) return m.Call("relax.reshape", {y, ir::relax::MakeShape({})});
  // The kept dimensions, in order: dimension p goes to its rank among the kept.
  KILN_ASSIGN_OR_RETURN(Expr kept, m.Call("relax.subtract", {m.I(1), named}));
  KILN_ASSIGN_OR_RETURN(Expr order, m.Call("relax.cumsum", {kept}, {{"axis", IntAttr(0)}}));
  KILN_ASSIGN_OR_RETURN(order, m.Call("relax.subtract", {order, m.I(1)}));
  KILN_ASSIGN_OR_RETURN(Expr to, m.Call("relax.where", {is_named, m.I(-1), order}));
  KILN_ASSIGN_OR_RETURN(Expr out, m.Scatter(dim, to, rank, rank - k));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> out_dims, ctx.DimsAtRunTime(out));
  return m.Call("relax.reshape", {y, ir::relax::MakeShape(out_dims)});
}

// `op` over the node's axes of `x` (keepdims, noop_with_empty_axes as the node says).
absl::StatusOr<Expr> ReduceOf(Context& ctx, const char* op, const Expr& x) {
  if (ctx.Has(1) && !ctx.ConstInts(1).ok()) return ReduceAtRunTime(ctx, op, x);
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, ReduceAxesOf(ctx));
  bool keepdims = ctx.Int("keepdims", 1) != 0;
  if ((!axes || axes->empty()) && ctx.Int("noop_with_empty_axes", 0) != 0) return x;
  ir::Attrs attrs = {{"keepdims", IntAttr(keepdims)}};
  if (axes && !axes->empty()) attrs.push_back({"axis", IntsAttr(*axes)});
  return ctx.Call(op, {x}, attrs);
}

template <const char* kOp>
absl::StatusOr<Outputs> Reduce(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  return OneOf(ReduceOf(ctx, kOp, x));
}

// The reductions ONNX defines as a sum between an elementwise step before and one after:
// ReduceL1 = sum |x|, ReduceL2 = sqrt(sum x^2), ReduceSumSquare = sum x^2,
// ReduceLogSum = log(sum x), ReduceLogSumExp = log(sum exp(x)).
struct SumReduction {
  const char* before;  // "relax.abs", "relax.square", "relax.exp" or null
  const char* after;   // "relax.sqrt", "relax.log" or null
};

template <const SumReduction& kSpec>
absl::StatusOr<Outputs> ReduceComposite(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  if (kSpec.before != nullptr) {
    KILN_ASSIGN_OR_RETURN(x, ctx.Call(kSpec.before, {x}));
  }
  KILN_ASSIGN_OR_RETURN(Expr y, ReduceOf(ctx, "relax.sum", x));
  if (kSpec.after != nullptr) {
    KILN_ASSIGN_OR_RETURN(y, ctx.Call(kSpec.after, {y}));
  }
  return One(y);
}

constexpr SumReduction kReduceL1 = {"relax.abs", nullptr};
constexpr SumReduction kReduceL2 = {"relax.square", "relax.sqrt"};
constexpr SumReduction kReduceSumSquare = {"relax.square", nullptr};
constexpr SumReduction kReduceLogSum = {nullptr, "relax.log"};
constexpr SumReduction kReduceLogSumExp = {"relax.exp", "relax.log"};

constexpr char kReduceMean[] = "relax.mean";
constexpr char kReduceSum[] = "relax.sum";
constexpr char kReduceMax[] = "relax.max";
constexpr char kReduceMin[] = "relax.min";
constexpr char kReduceProd[] = "relax.prod";

// ArgMax/ArgMin; select_last_index reverses the axis, so the first match from the end wins.
template <const char* kOp>
absl::StatusOr<Outputs> Arg(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, ctx.Shape(x));
  int64_t axis = ctx.Int("axis", 0);
  int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < -rank || axis >= rank)
    return ctx.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  if (axis < 0) axis += rank;
  ir::Attrs attrs = {{"axis", IntAttr(axis)}, {"keepdims", IntAttr(ctx.Int("keepdims", 1) != 0)}};
  if (ctx.Int("select_last_index", 0) == 0) return OneOf(ctx.Call(kOp, {x}, attrs));
  KILN_ASSIGN_OR_RETURN(Expr reversed,
                        ctx.Call("relax.strided_slice", {x},
                                 {{"axes", IntsAttr({axis})},
                                  {"begin", IntsAttr({-1})},
                                  {"end", IntsAttr({std::numeric_limits<int64_t>::min()})},
                                  {"strides", IntsAttr({-1})}}));
  KILN_ASSIGN_OR_RETURN(Expr index, ctx.Call(kOp, {reversed}, attrs));
  // index in the reversed axis -> (n - 1) - index
  const int64_t* n = ir::AsConstInt(shape[axis]);
  if (n == nullptr) return ctx.Unsupported("select_last_index along a symbolic axis");
  KILN_ASSIGN_OR_RETURN(Expr y,
                        ctx.Call("relax.subtract", {ctx.Scalar(DataType::Int(64), *n - 1), index}));
  return One(y);
}

constexpr char kArgMax[] = "relax.argmax";
constexpr char kArgMin[] = "relax.argmin";

// The Softmax family's axis: from opset 13 a plain axis (default -1); before, (default 1) the
// input is seen as 2-D, flattened at `axis`. `along(in, axis)` computes on the tensor it is given
// (the matrix, along axis 1, when flattening matters) and the result takes x's shape back.
using AlongAxis = std::function<absl::StatusOr<Expr>(const Expr& in, int64_t axis)>;
absl::StatusOr<Expr> SoftmaxFamily(Context& ctx, const Expr& x, const AlongAxis& along) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, ctx.Shape(x));
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = ctx.Int("axis", ctx.opset() >= 13 ? -1 : 1);
  if (axis < -rank || axis >= rank)
    return ctx.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  if (axis < 0) axis += rank;
  if (ctx.opset() >= 13 || axis == rank - 1) return along(x, axis);
  PrimExpr outer = I64(1), inner = I64(1);
  for (int64_t k = 0; k < rank; ++k)
    (k < axis ? outer : inner) = (k < axis ? outer : inner) * shape[k];
  KILN_ASSIGN_OR_RETURN(
      Expr flat,
      ctx.Call("relax.reshape", {x, ir::relax::MakeShape({ctx.analyzer()->Simplify(outer),
                                                          ctx.analyzer()->Simplify(inner)})}));
  KILN_ASSIGN_OR_RETURN(Expr y, along(flat, 1));
  return ctx.Call("relax.reshape", {y, ir::relax::MakeShape(shape)});
}

// Softmax/LogSoftmax.
template <const char* kOp>
absl::StatusOr<Outputs> Softmax(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  return OneOf(SoftmaxFamily(ctx, x, [&](const Expr& in, int64_t axis) {
    return ctx.Call(kOp, {in}, {{"axis", IntAttr(axis)}});
  }));
}

// Hardmax: 1 at the first maximum along the axis, 0 elsewhere (the Softmax family's axis).
absl::StatusOr<Outputs> Hardmax(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  return OneOf(SoftmaxFamily(ctx, x, [&](const Expr& in, int64_t axis) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in_shape, ctx.Shape(in));
    const int64_t* n = ir::AsConstInt(in_shape[axis]);
    if (n == nullptr) return ctx.Unsupported("Hardmax along an axis not known at import time");
    KILN_ASSIGN_OR_RETURN(Expr arg, ctx.Call("relax.argmax", {in},
                                             {{"axis", IntAttr(axis)}, {"keepdims", IntAttr(1)}}));
    std::vector<int64_t> ids_shape(in_shape.size(), 1);
    ids_shape[axis] = *n;
    KILN_ASSIGN_OR_RETURN(Expr ids, ctx.Iota(*n, ids_shape));
    KILN_ASSIGN_OR_RETURN(Expr hit, ctx.Call("relax.equal", {arg, ids}));
    return ctx.Call("relax.astype", {hit}, {{"dtype", StrAttr(ctx.DType(x).ToString())}});
  }));
}

constexpr char kSoftmax[] = "relax.nn.softmax";
constexpr char kLogSoftmax[] = "relax.nn.log_softmax";

}  // namespace

// f = floor(x); above half f + 1, below f, at exactly half whichever of f and f + 1 is even.
absl::StatusOr<Expr> RoundHalfEven(Context& ctx, const Expr& x) {
  DataType t = ctx.DType(x);
  KILN_ASSIGN_OR_RETURN(Expr f, ctx.Call("relax.floor", {x}));
  KILN_ASSIGN_OR_RETURN(Expr frac, ctx.Call("relax.subtract", {x, f}));
  KILN_ASSIGN_OR_RETURN(Expr up, ctx.Call("relax.add", {f, ctx.Scalar(t, 1)}));
  // parity = f - 2 * floor(f / 2): 0 or 1 (floor_mod is integer-only).
  KILN_ASSIGN_OR_RETURN(Expr halved, ctx.Call("relax.multiply", {f, ctx.Scalar(t, 0.5)}));
  KILN_ASSIGN_OR_RETURN(Expr half_floor, ctx.Call("relax.floor", {halved}));
  KILN_ASSIGN_OR_RETURN(Expr twice, ctx.Call("relax.multiply", {half_floor, ctx.Scalar(t, 2)}));
  KILN_ASSIGN_OR_RETURN(Expr parity, ctx.Call("relax.subtract", {f, twice}));
  KILN_ASSIGN_OR_RETURN(Expr even, ctx.Call("relax.add", {f, parity}));
  KILN_ASSIGN_OR_RETURN(Expr above, ctx.Call("relax.greater", {frac, ctx.Scalar(t, 0.5)}));
  KILN_ASSIGN_OR_RETURN(Expr below, ctx.Call("relax.less", {frac, ctx.Scalar(t, 0.5)}));
  KILN_ASSIGN_OR_RETURN(Expr not_above, ctx.Call("relax.where", {below, f, even}));
  return ctx.Call("relax.where", {above, up, not_above});
}

// TopK along an axis of static length n: each element's rank is the number of elements that
// come before it (greater, or smaller when largest=0; an equal one at a lower index first), and
// output position p takes the element ranked p. O(n^2) comparisons, no sort kernel: for the
// short axes TopK sees in models. K may be known only at run time (checked to be 0 to n).
absl::StatusOr<Outputs> TopK(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  const int64_t rank = static_cast<int64_t>(xs.size());
  int64_t axis = ctx.Int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return ctx.Error("axis out of range");
  const int64_t* n = ir::AsConstInt(xs[axis]);
  if (n == nullptr) return ctx.Unsupported("TopK along an axis whose length is not known");
  const bool largest = ctx.Int("largest", 1) != 0;
  ShapeMath m{ctx};
  // K: known, or bound at run time.
  PrimExpr k;
  if (absl::StatusOr<std::vector<int64_t>> known = ctx.ConstInts(1); known.ok()) {
    if (known->size() != 1 || (*known)[0] < 0 || (*known)[0] > *n) {
      return ctx.Error(absl::StrCat("K must be one value from 0 to ", *n));
    }
    k = I64((*known)[0]);
  } else {
    KILN_ASSIGN_OR_RETURN(Expr given, ctx.Tensor(1));
    KILN_ASSIGN_OR_RETURN(Expr k_t, m.Int64(given));
    KILN_ASSIGN_OR_RETURN(k_t, m.Call("relax.reshape", {k_t, ir::relax::MakeShape({I64(1)})}));
    KILN_ASSIGN_OR_RETURN(Expr below, m.Negatives(k_t));
    KILN_ASSIGN_OR_RETURN(Expr n_t, m.Tensor({I64(*n)}));
    KILN_ASSIGN_OR_RETURN(Expr room, m.Call("relax.subtract", {n_t, k_t}));
    KILN_ASSIGN_OR_RETURN(Expr above, m.Negatives(room));
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.DimsAtRunTime(k_t, {below, above}));
    k = dims[0];
  }
  // An index along a new axis at `at` of a rank + 1 tensor: [1, ..., len, ..., 1].
  auto index_along = [&](const PrimExpr& len, int64_t at) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(Expr iota, m.Iota(len));
    std::vector<PrimExpr> shape(static_cast<size_t>(rank + 1), I64(1));
    shape[static_cast<size_t>(at)] = len;
    return m.Call("relax.reshape", {iota, ir::relax::MakeShape(shape)});
  };
  auto expand = [&](const Expr& e, int64_t at) {
    return m.Call("relax.expand_dims", {e}, {{"axis", IntsAttr({at})}});
  };
  // Element i along `axis`, element j along axis + 1.
  KILN_ASSIGN_OR_RETURN(Expr xi, expand(x, axis + 1));
  KILN_ASSIGN_OR_RETURN(Expr xj, expand(x, axis));
  KILN_ASSIGN_OR_RETURN(Expr before, m.Call(largest ? "relax.greater" : "relax.less", {xj, xi}));
  KILN_ASSIGN_OR_RETURN(Expr equal, m.Call("relax.equal", {xj, xi}));
  KILN_ASSIGN_OR_RETURN(Expr ii, index_along(I64(*n), axis));
  KILN_ASSIGN_OR_RETURN(Expr jj, index_along(I64(*n), axis + 1));
  KILN_ASSIGN_OR_RETURN(Expr lower, m.Call("relax.less", {jj, ii}));
  KILN_ASSIGN_OR_RETURN(Expr tie, m.Call("relax.where", {equal, lower, equal}));  // and
  KILN_ASSIGN_OR_RETURN(before, m.Call("relax.where", {before, before, tie}));    // or
  KILN_ASSIGN_OR_RETURN(before, m.Int64(before));
  KILN_ASSIGN_OR_RETURN(Expr ranks,
                        m.Call("relax.sum", {before}, {{"axis", IntsAttr({axis + 1})}}));
  // Position p (along axis + 1) takes the element (along axis) ranked p.
  KILN_ASSIGN_OR_RETURN(Expr ranked, expand(ranks, axis + 1));
  KILN_ASSIGN_OR_RETURN(Expr p, index_along(k, axis + 1));
  KILN_ASSIGN_OR_RETURN(Expr at, m.Call("relax.equal", {ranked, p}));
  KILN_ASSIGN_OR_RETURN(Expr picked, m.Call("relax.where", {at, xi, ctx.Scalar(ctx.DType(x), 0)}));
  KILN_ASSIGN_OR_RETURN(Expr values, m.Call("relax.sum", {picked}, {{"axis", IntsAttr({axis})}}));
  KILN_ASSIGN_OR_RETURN(Expr where_i, m.Call("relax.where", {at, ii, m.I(0)}));
  KILN_ASSIGN_OR_RETURN(Expr indices, m.Call("relax.sum", {where_i}, {{"axis", IntsAttr({axis})}}));
  Outputs out = One(values);
  out.push_back(One(indices)[0]);
  return out;
}

void RegisterMathConverters(ConverterTable* t) {
  (*t)["Sqrt"] = Unary<kSqrt>;
  (*t)["Exp"] = Unary<kExp>;
  (*t)["Log"] = Unary<kLog>;
  (*t)["Erf"] = Unary<kErf>;
  (*t)["Tanh"] = Unary<kTanh>;
  (*t)["Sigmoid"] = Unary<kSigmoid>;
  (*t)["Relu"] = Unary<kRelu>;
  (*t)["Abs"] = Unary<kAbs>;
  (*t)["Floor"] = Unary<kFloor>;
  (*t)["Ceil"] = Unary<kCeil>;
  (*t)["Not"] = Unary<kNot>;
  (*t)["Sign"] = Unary<kSign>;
  (*t)["Sin"] = Unary<kSin>;
  (*t)["Cos"] = Unary<kCos>;
  (*t)["Tan"] = Unary<kTan>;
  (*t)["Asin"] = Unary<kAsin>;
  (*t)["Acos"] = Unary<kAcos>;
  (*t)["Atan"] = Unary<kAtan>;
  (*t)["Sinh"] = Unary<kSinh>;
  (*t)["Cosh"] = Unary<kCosh>;
  (*t)["Asinh"] = Unary<kAsinh>;
  (*t)["Acosh"] = Unary<kAcosh>;
  (*t)["Atanh"] = Unary<kAtanh>;
  (*t)["Elu"] = Elu;
  (*t)["Selu"] = Selu;
  (*t)["Celu"] = Celu;
  (*t)["ThresholdedRelu"] = ThresholdedRelu;
  (*t)["PRelu"] = PRelu;
  (*t)["Softplus"] = Softplus;
  (*t)["Softsign"] = Softsign;
  (*t)["Shrink"] = Shrink;
  (*t)["IsNaN"] = IsNaN;
  (*t)["IsInf"] = IsInf;
  (*t)["And"] = And;
  (*t)["Or"] = Or;
  (*t)["Xor"] = Xor;
  (*t)["Mod"] = Mod;
  (*t)["CumSum"] = CumSum;
  (*t)["Round"] = Round;
  (*t)["Hardmax"] = Hardmax;
  (*t)["Neg"] = Neg;
  (*t)["Reciprocal"] = Reciprocal;
  (*t)["Clip"] = Clip;
  (*t)["LeakyRelu"] = LeakyRelu;
  (*t)["HardSigmoid"] = HardSigmoid;
  (*t)["HardSwish"] = HardSwish;
  (*t)["Add"] = Binary<kAdd>;
  (*t)["Sub"] = Binary<kSub>;
  (*t)["Mul"] = Binary<kMul>;
  (*t)["Div"] = Div;
  (*t)["Pow"] = Pow;
  (*t)["Equal"] = Binary<kEqual>;
  (*t)["Less"] = Binary<kLess>;
  (*t)["Greater"] = Binary<kGreater>;
  (*t)["LessOrEqual"] = Binary<kLessEqual>;
  (*t)["GreaterOrEqual"] = Binary<kGreaterEqual>;
  (*t)["Max"] = Variadic<kMax>;
  (*t)["Min"] = Variadic<kMin>;
  (*t)["Sum"] = Variadic<kAdd>;
  (*t)["Mean"] = Variadic<kAdd, true>;
  (*t)["Where"] = Where;
  (*t)["Cast"] = Cast;
  (*t)["CastLike"] = CastLike;
  (*t)["BitShift"] = BitShift;
  (*t)["MeanVarianceNormalization"] = MeanVarianceNormalization;
  (*t)["ReduceMean"] = Reduce<kReduceMean>;
  (*t)["ReduceSum"] = Reduce<kReduceSum>;
  (*t)["ReduceMax"] = Reduce<kReduceMax>;
  (*t)["ReduceMin"] = Reduce<kReduceMin>;
  (*t)["ReduceProd"] = Reduce<kReduceProd>;
  (*t)["ReduceL1"] = ReduceComposite<kReduceL1>;
  (*t)["ReduceL2"] = ReduceComposite<kReduceL2>;
  (*t)["ReduceSumSquare"] = ReduceComposite<kReduceSumSquare>;
  (*t)["ReduceLogSum"] = ReduceComposite<kReduceLogSum>;
  (*t)["ReduceLogSumExp"] = ReduceComposite<kReduceLogSumExp>;
  (*t)["ArgMax"] = Arg<kArgMax>;
  (*t)["TopK"] = TopK;
  (*t)["ArgMin"] = Arg<kArgMin>;
  (*t)["Softmax"] = Softmax<kSoftmax>;
  (*t)["LogSoftmax"] = Softmax<kLogSoftmax>;
}

}  // namespace kiln::frontend::onnx_import
