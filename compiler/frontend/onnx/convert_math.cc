// Elementwise math, activations and comparisons. Integer arithmetic on values known at import
// time (shape computations) is folded here instead of emitted. Reductions, softmax and TopK are
// in convert_reduce.cc.
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
// Mod with fmod = 0 takes the divisor's sign: floor_mod, exact for constants, and simplified for
// a symbolic dividend over a positive constant (Swin's padding, (7 - H % 7) % 7).
std::optional<PrimExpr> FoldFloorMod(const PrimExpr& a, const PrimExpr& b, arith::Analyzer* ana) {
  const int64_t* x = ir::AsConstInt(a);
  const int64_t* y = ir::AsConstInt(b);
  if (y == nullptr || *y == 0) return std::nullopt;
  if (x != nullptr) {
    int64_t r = *x % *y;
    if (r != 0 && ((r < 0) != (*y < 0))) r += *y;
    return IntImm(DataType::Int(64), r);
  }
  if (*y < 0) return std::nullopt;
  return Simplified(ir::FloorMod(a, b), ana);
}
// fmod = 1 takes the dividend's sign, as C's %: constants only.
std::optional<PrimExpr> FoldTruncMod(const PrimExpr& a, const PrimExpr& b, arith::Analyzer*) {
  const int64_t* x = ir::AsConstInt(a);
  const int64_t* y = ir::AsConstInt(b);
  if (x == nullptr || y == nullptr || *y == 0) return std::nullopt;
  if (*y == -1) return IntImm(DataType::Int(64), 0);  // INT64_MIN % -1 would trap
  return IntImm(DataType::Int(64), *x % *y);
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
  // Known integers (shape arithmetic) stay known: a padding computed from a shape is a constant.
  if (std::optional<Value> v = FoldBinary(
          ctx, ctx.Int("fmod", 0) == 0 ? FoldFloorMod : FoldTruncMod, ctx.In(0).elems_dtype)) {
    return Outputs{std::move(*v)};
  }
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

}  // namespace

// relax.nearbyint: LLVM's roundeven, one instruction (vrndscaleps, frintn).
absl::StatusOr<Expr> RoundHalfEven(Context& ctx, const Expr& x) {
  return ctx.Call("relax.nearbyint", {x});
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
}

}  // namespace kiln::frontend::onnx_import
