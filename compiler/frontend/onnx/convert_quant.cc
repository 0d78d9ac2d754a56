// Linear quantization (ONNX opsets 10 to 13): QuantizeLinear, DequantizeLinear and
// DynamicQuantizeLinear, and the integer family MatMulInteger, QLinearMatMul, ConvInteger and
// QLinearConv, written with Relax's elementwise ops, matmul and conv2d on int32 and float32; and
// ONNX Runtime's QLinearAdd, QLinearMul, QLinearGlobalAveragePool, QLinearConcat,
// QLinearLeakyRelu and QLinearSigmoid (domain com.microsoft).
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/onnx/convert_context.h"
#include "compiler/relax/op_registry.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend::onnx_import {
namespace {

const DataType kF32 = DataType::Float(32);
const DataType kI32 = DataType::Int(32);

absl::StatusOr<Expr> Cast(Context& ctx, const Expr& x, DataType to) {
  if (ctx.DType(x) == to) return x;
  return ctx.Call("relax.astype", {x}, {{"dtype", StrAttr(to.ToString())}});
}

// A quantization parameter: a scalar, or (opset 13) a 1-D tensor of the input's `axis` length,
// reshaped so it broadcasts along that axis.
absl::StatusOr<Expr> AlongAxis(Context& ctx, const Expr& param, const Expr& x) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ps, ctx.Shape(param));
  if (ps.empty() || (ps.size() == 1 && ir::AsConstInt(ps[0]) && *ir::AsConstInt(ps[0]) == 1)) {
    return param;
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  if (ps.size() != 1) return ctx.Error("a scale or zero point must be a scalar or 1-D");
  int64_t axis = ctx.Int("axis", 1);
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return ctx.Error(absl::StrCat("axis out of range for rank ", rank));
  std::vector<PrimExpr> shape(xs.size(), ir::IntImm(DataType::Int(64), 1));
  shape[axis] = ps[0];
  return ctx.Call("relax.reshape", {param, ir::relax::MakeShape(shape)});
}

// The range of an 8-bit integer type.
absl::StatusOr<std::pair<double, double>> Range(Context& ctx, DataType t) {
  if (t == DataType::UInt(8)) return std::make_pair(0.0, 255.0);
  if (t == DataType::Int(8)) return std::make_pair(-128.0, 127.0);
  return ctx.Unsupported(absl::StrCat("quantizing to ", t.ToString(), " (uint8 and int8 are)"));
}

// saturate(round(x / scale) + zero_point) as `to`, from a float32 `x`.
absl::StatusOr<Expr> Quantize(Context& ctx, const Expr& x, const Expr& scale,
                              const Expr& zero_point, DataType to) {
  KILN_ASSIGN_OR_RETURN(auto range, Range(ctx, to));
  KILN_ASSIGN_OR_RETURN(Expr scaled, ctx.Call("relax.divide", {x, scale}));
  KILN_ASSIGN_OR_RETURN(Expr rounded, RoundHalfEven(ctx, scaled));
  KILN_ASSIGN_OR_RETURN(Expr zp, Cast(ctx, zero_point, kF32));
  KILN_ASSIGN_OR_RETURN(Expr shifted, ctx.Call("relax.add", {rounded, zp}));
  KILN_ASSIGN_OR_RETURN(
      Expr clipped, ctx.Call("relax.clip", {shifted},
                             {{"min", FloatAttr(range.first)}, {"max", FloatAttr(range.second)}}));
  return Cast(ctx, clipped, to);
}

// QuantizeLinear(x, y_scale, y_zero_point = uint8 0, axis = 1)
absl::StatusOr<Outputs> QuantizeLinear(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  if (ctx.DType(x) != kF32) return ctx.Unsupported("QuantizeLinear of a non-float32 input");
  KILN_ASSIGN_OR_RETURN(Expr scale, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(scale, AlongAxis(ctx, scale, x));
  Expr zero_point = ctx.Scalar(DataType::UInt(8), 0);
  if (ctx.Has(2)) {
    KILN_ASSIGN_OR_RETURN(zero_point, ctx.Tensor(2));
    KILN_ASSIGN_OR_RETURN(zero_point, AlongAxis(ctx, zero_point, x));
  }
  return OneOf(Quantize(ctx, x, scale, zero_point, ctx.DType(zero_point)));
}

// DequantizeLinear(x, x_scale, x_zero_point = 0, axis = 1): (x - zero_point) * scale
absl::StatusOr<Outputs> DequantizeLinear(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr scale, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(scale, AlongAxis(ctx, scale, x));
  KILN_ASSIGN_OR_RETURN(Expr xf, Cast(ctx, x, kF32));
  if (ctx.Has(2)) {
    KILN_ASSIGN_OR_RETURN(Expr zp, ctx.Tensor(2));
    KILN_ASSIGN_OR_RETURN(zp, AlongAxis(ctx, zp, x));
    KILN_ASSIGN_OR_RETURN(zp, Cast(ctx, zp, kF32));
    KILN_ASSIGN_OR_RETURN(xf, ctx.Call("relax.subtract", {xf, zp}));
  }
  return OneOf(ctx.Call("relax.multiply", {xf, scale}));
}

// DynamicQuantizeLinear(x) -> y (uint8), y_scale, y_zero_point: the range [min(0, min x),
// max(0, max x)] mapped onto [0, 255].
absl::StatusOr<Outputs> DynamicQuantizeLinear(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  if (ctx.DType(x) != kF32) return ctx.Unsupported("DynamicQuantizeLinear of a non-float32 input");
  KILN_ASSIGN_OR_RETURN(Expr hi, ctx.Call("relax.max", {x}));
  KILN_ASSIGN_OR_RETURN(Expr lo, ctx.Call("relax.min", {x}));
  KILN_ASSIGN_OR_RETURN(hi, ctx.Call("relax.maximum", {hi, ctx.Scalar(kF32, 0)}));
  KILN_ASSIGN_OR_RETURN(lo, ctx.Call("relax.minimum", {lo, ctx.Scalar(kF32, 0)}));
  KILN_ASSIGN_OR_RETURN(Expr span, ctx.Call("relax.subtract", {hi, lo}));
  KILN_ASSIGN_OR_RETURN(Expr scale, ctx.Call("relax.divide", {span, ctx.Scalar(kF32, 255)}));
  // zero_point = saturate(round(0 - lo / scale))
  KILN_ASSIGN_OR_RETURN(Expr ratio, ctx.Call("relax.divide", {lo, scale}));
  KILN_ASSIGN_OR_RETURN(Expr negated, ctx.Call("relax.negative", {ratio}));
  KILN_ASSIGN_OR_RETURN(Expr zp_f, RoundHalfEven(ctx, negated));
  KILN_ASSIGN_OR_RETURN(
      zp_f, ctx.Call("relax.clip", {zp_f}, {{"min", FloatAttr(0)}, {"max", FloatAttr(255)}}));
  KILN_ASSIGN_OR_RETURN(Expr zp, Cast(ctx, zp_f, DataType::UInt(8)));
  KILN_ASSIGN_OR_RETURN(Expr y, Quantize(ctx, x, scale, zp_f, DataType::UInt(8)));
  Outputs out;
  out.push_back(One(y)[0]);
  out.push_back(One(scale)[0]);
  out.push_back(One(zp)[0]);
  return out;
}

// x - zero_point (when given) in int32.
absl::StatusOr<Expr> Centered(Context& ctx, const Expr& x, const Expr& zero_point) {
  KILN_ASSIGN_OR_RETURN(Expr xi, Cast(ctx, x, kI32));
  if (!zero_point) return xi;
  KILN_ASSIGN_OR_RETURN(Expr z, Cast(ctx, zero_point, kI32));
  return ctx.Call("relax.subtract", {xi, z});
}

// (a - a_zero_point) @ (b - b_zero_point) in int32.
absl::StatusOr<Expr> IntegerMatmul(Context& ctx, const Expr& a, const Expr& a_zp, const Expr& b,
                                   const Expr& b_zp) {
  KILN_ASSIGN_OR_RETURN(Expr ai, Centered(ctx, a, a_zp));
  KILN_ASSIGN_OR_RETURN(Expr bi, Centered(ctx, b, b_zp));
  return ctx.Call("relax.matmul", {ai, bi});
}

// A zero point that must be a scalar here (per-row or per-column ones are not supported).
absl::StatusOr<Expr> ScalarZeroPoint(Context& ctx, size_t input) {
  if (!ctx.Has(input)) return Expr();
  KILN_ASSIGN_OR_RETURN(Expr zp, ctx.Tensor(input));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, ctx.Shape(zp));
  int64_t n = 1;
  for (const PrimExpr& d : shape) {
    const int64_t* c = ir::AsConstInt(d);
    if (c == nullptr) return ctx.Unsupported("a zero point of unknown size");
    n *= *c;
  }
  if (n != 1) return ctx.Unsupported("per-row or per-column zero points");
  if (!shape.empty()) {
    KILN_ASSIGN_OR_RETURN(zp, ctx.Call("relax.reshape", {zp, ir::relax::MakeShape({})}));
  }
  return zp;
}

// A constant input's numbers, or nullopt when input `i` is absent or not a constant.
std::optional<std::vector<double>> ConstNumbers(Context& ctx, size_t i) {
  if (!ctx.Has(i)) return std::nullopt;
  absl::StatusOr<Expr> e = ctx.Tensor(i);
  if (!e.ok()) return std::nullopt;
  const auto* c = e->as<ir::relax::ConstantNode>();
  if (c == nullptr) return std::nullopt;
  return ConstantNumbers(*c);
}

// MatMulInteger of uint8 data by a constant int8 matrix (zero points 0) as one int8 kernel,
// relax.qnn.dense_int8 over the data's rows (leading dimensions flattened); nullopt otherwise.
absl::StatusOr<std::optional<Expr>> Int8Dense(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr a, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr b, ctx.Tensor(1));
  const auto* bc = b.as<ir::relax::ConstantNode>();
  if (ctx.DType(a) != DataType::UInt(8) || bc == nullptr || bc->dtype != DataType::Int(8) ||
      bc->shape.size() != 2 || bc->shape[1] % 4 != 0) {
    return std::nullopt;
  }
  std::optional<std::vector<double>> a_zp = ConstNumbers(ctx, 2), b_zp = ConstNumbers(ctx, 3);
  if ((ctx.Has(2) && (!a_zp || a_zp->size() != 1)) || (ctx.Has(3) && !b_zp)) return std::nullopt;
  if (b_zp) {
    for (double z : *b_zp)
      if (z != 0) return std::nullopt;
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> as, ctx.Shape(a));
  const int64_t k = bc->shape[0], n = bc->shape[1];
  const int64_t* ak = as.empty() ? nullptr : ir::AsConstInt(as.back());
  if (as.size() < 2 || ak == nullptr || *ak != k) return std::nullopt;
  // [N / b, ceil(K / 4), b] words, b columns innermost; each column's share of the zero point.
  const int64_t block = ir::relax::ops::Int8WeightBlock(n);
  const int64_t words = (k + 3) / 4;
  const std::vector<double> bv = ConstantNumbers(*bc);
  const double zx = a_zp ? (*a_zp)[0] : 0;
  std::vector<uint32_t> packed(static_cast<size_t>(n * words), 0);
  std::vector<double> correction(n, 0.0);
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      const double v = bv[r * n + c];
      correction[c] -= zx * v;
      packed[ir::relax::ops::Int8DenseWeightWord(r, c, words, block)] |=
          uint32_t{static_cast<uint8_t>(static_cast<int8_t>(v))} << (8 * (r % 4));
    }
  }
  std::string bytes(packed.size() * sizeof(uint32_t), '\0');
  std::memcpy(bytes.data(), packed.data(), bytes.size());
  Expr weight =
      ir::relax::MakeConstant(DataType::Int(32), {n / block, words, block}, std::move(bytes));
  Expr corr = MakeNumericConstant(DataType::Int(32), {n}, correction);
  Expr rows = a;
  if (as.size() > 2) {
    PrimExpr m = as[0];
    for (size_t d = 1; d + 1 < as.size(); ++d) m = m * as[d];
    KILN_ASSIGN_OR_RETURN(
        rows, ctx.Call("relax.reshape",
                       {a, ir::relax::MakeShape({ctx.analyzer()->Simplify(m), as.back()})}));
  }
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.qnn.dense_int8", {rows, weight, corr}));
  if (as.size() > 2) {
    std::vector<PrimExpr> shape(as.begin(), as.end() - 1);
    shape.push_back(ir::IntImm(DataType::Int(64), n));
    KILN_ASSIGN_OR_RETURN(y, ctx.Call("relax.reshape", {y, ir::relax::MakeShape(shape)}));
  }
  return y;
}

// MatMulInteger(A, B, a_zero_point, b_zero_point) -> int32
absl::StatusOr<Outputs> MatMulInteger(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(std::optional<Expr> int8, Int8Dense(ctx));
  if (int8) return One(*int8);
  KILN_ASSIGN_OR_RETURN(Expr a, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr b, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(Expr a_zp, ScalarZeroPoint(ctx, 2));
  KILN_ASSIGN_OR_RETURN(Expr b_zp, ScalarZeroPoint(ctx, 3));
  return OneOf(IntegerMatmul(ctx, a, a_zp, b, b_zp));
}

// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp):
// quantize((a - a_zp) @ (b - b_zp) * a_scale * b_scale, y_scale, y_zp)
absl::StatusOr<Outputs> QLinearMatMul(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr a, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr a_scale, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(Expr a_zp, ScalarZeroPoint(ctx, 2));
  KILN_ASSIGN_OR_RETURN(Expr b, ctx.Tensor(3));
  KILN_ASSIGN_OR_RETURN(Expr b_scale, ctx.Tensor(4));
  KILN_ASSIGN_OR_RETURN(Expr b_zp, ScalarZeroPoint(ctx, 5));
  KILN_ASSIGN_OR_RETURN(Expr y_scale, ctx.Tensor(6));
  KILN_ASSIGN_OR_RETURN(Expr y_zp, ScalarZeroPoint(ctx, 7));
  if (!y_zp) return ctx.Error("y_zero_point is required");
  for (const Expr* s : {&a_scale, &b_scale, &y_scale}) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, ctx.Shape(*s));
    int64_t n = 1;
    for (const PrimExpr& d : shape) n *= ir::AsConstInt(d) ? *ir::AsConstInt(d) : -1;
    if (n != 1) return ctx.Unsupported("per-row or per-column scales");
  }
  KILN_ASSIGN_OR_RETURN(Expr product, IntegerMatmul(ctx, a, a_zp, b, b_zp));
  KILN_ASSIGN_OR_RETURN(Expr real, Cast(ctx, product, kF32));
  KILN_ASSIGN_OR_RETURN(Expr scale, ctx.Call("relax.multiply", {a_scale, b_scale}));
  KILN_ASSIGN_OR_RETURN(real, ctx.Call("relax.multiply", {real, scale}));
  return OneOf(Quantize(ctx, real, y_scale, y_zp, ctx.DType(y_zp)));
}

// ConvInteger(x, w, x_zero_point, w_zero_point) -> int32: Conv of the zero-point-subtracted
// int32 values (padding is then zero, as ONNX defines it).
absl::StatusOr<Outputs> ConvInteger(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr w, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(Expr x_zp, ScalarZeroPoint(ctx, 2));
  KILN_ASSIGN_OR_RETURN(Expr w_zp, ScalarZeroPoint(ctx, 3));
  KILN_ASSIGN_OR_RETURN(Expr xi, Centered(ctx, x, x_zp));
  KILN_ASSIGN_OR_RETURN(Expr wi, Centered(ctx, w, w_zp));
  return OneOf(ConvOf(ctx, xi, wi, Expr()));
}

// QLinearConv as one int8 kernel, relax.qnn.conv2d_int8 (uint8 data by int8 weights with the int8
// dot product, the requantization in the store) or relax.qnn.depthwise_conv2d_int8, where its form
// allows: 2-D, one group (output channels a multiple of 4) or one channel per group, uint8 data
// and result, constant int8 weights with zero points 0, constant scales and zero points.
// nullopt otherwise: the general form.
absl::StatusOr<std::optional<Expr>> Int8Conv(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr w, ctx.Tensor(3));
  const auto* wc = w.as<ir::relax::ConstantNode>();
  if (ctx.DType(x) != DataType::UInt(8) || wc == nullptr || wc->dtype != DataType::Int(8) ||
      wc->shape.size() != 4) {
    return std::nullopt;
  }
  const int64_t out_c = wc->shape[0], in_c = wc->shape[1], kh = wc->shape[2], kw = wc->shape[3];
  const int64_t groups = ctx.Int("group", 1);
  const bool depthwise = groups == out_c && in_c == 1 && groups > 1;
  if (groups != 1 && !depthwise) return std::nullopt;
  std::optional<std::vector<double>> x_scale = ConstNumbers(ctx, 1), w_scale = ConstNumbers(ctx, 4),
                                     y_scale = ConstNumbers(ctx, 6);
  std::optional<std::vector<double>> x_zp = ConstNumbers(ctx, 2), w_zp = ConstNumbers(ctx, 5),
                                     y_zp = ConstNumbers(ctx, 7);
  if (!x_scale || !w_scale || !y_scale || !y_zp || x_scale->size() != 1 || y_scale->size() != 1 ||
      y_zp->size() != 1 ||
      (w_scale->size() != 1 && static_cast<int64_t>(w_scale->size()) != out_c) ||
      (ctx.Has(2) && (!x_zp || x_zp->size() != 1)) || (!depthwise && out_c % 4 != 0)) {
    return std::nullopt;
  }
  KILN_ASSIGN_OR_RETURN(Expr y_zp_expr, ctx.Tensor(7));
  if (ctx.DType(y_zp_expr) != DataType::UInt(8)) return std::nullopt;
  if (ctx.Has(5)) {
    if (!w_zp) return std::nullopt;
    for (double z : *w_zp)
      if (z != 0) return std::nullopt;
  }
  std::optional<std::vector<double>> bias;
  if (ctx.Has(8)) {
    bias = ConstNumbers(ctx, 8);
    if (!bias || static_cast<int64_t>(bias->size()) != out_c) return std::nullopt;
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  if (xs.size() != 4) return std::nullopt;
  const int64_t* channels = ir::AsConstInt(xs[1]);
  if (channels == nullptr || *channels != in_c * groups) return std::nullopt;
  KILN_ASSIGN_OR_RETURN(ir::Attrs attrs, Conv2dWindowAttrs(ctx, xs, {kh, kw}));
  const double zx = x_zp ? (*x_zp)[0] : 0;
  attrs.push_back({"input_zero_point", IntAttr(static_cast<int64_t>(zx))});
  attrs.push_back({"output_zero_point", IntAttr(static_cast<int64_t>((*y_zp)[0]))});
  const std::vector<double> wv = ConstantNumbers(*wc);
  std::vector<double> corrected(out_c), multiplier(out_c);
  for (int64_t o = 0; o < out_c; ++o) {
    double sum = 0;
    for (int64_t k = 0; k < in_c * kh * kw; ++k) sum += wv[o * in_c * kh * kw + k];
    corrected[o] = (bias ? (*bias)[o] : 0) - zx * sum;
    const float scale = static_cast<float>((*x_scale)[0]) *
                        static_cast<float>((*w_scale)[w_scale->size() == 1 ? 0 : o]);
    multiplier[o] = scale / static_cast<float>((*y_scale)[0]);
  }
  Expr m = MakeNumericConstant(DataType::Float(32), {out_c}, multiplier);
  if (depthwise) {
    // One channel per group: exact float32 arithmetic on the integers, reading uint8.
    if (kh * kw * 255 * 128 >= (int64_t{1} << 24)) return std::nullopt;
    Expr weight = MakeNumericConstant(DataType::Float(32), {out_c, kh, kw}, wv);
    Expr b = MakeNumericConstant(DataType::Float(32), {out_c}, corrected);
    KILN_ASSIGN_OR_RETURN(Expr y,
                          ctx.Call("relax.qnn.depthwise_conv2d_int8", {x, weight, b, m}, attrs));
    return y;
  }

  // The weight as words of four input channels ([O / b, ceil(I / 4), KH, KW, b], channel 4i + k
  // in byte k of word i); the bias less the input zero point's share, Σ w · x_zp; and the
  // multiplier x_scale × w_scale / y_scale, all per output channel.
  const int64_t block = ir::relax::ops::Int8WeightBlock(out_c);
  const int64_t words = (in_c + 3) / 4;
  std::vector<uint32_t> packed(static_cast<size_t>(out_c * words * kh * kw), 0);
  for (int64_t o = 0; o < out_c; ++o) {
    for (int64_t c = 0; c < in_c; ++c) {
      for (int64_t i = 0; i < kh; ++i) {
        for (int64_t j = 0; j < kw; ++j) {
          const double v = wv[((o * in_c + c) * kh + i) * kw + j];
          packed[ir::relax::ops::Int8ConvWeightWord(o, c, i, j, words, kh, kw, block)] |=
              uint32_t{static_cast<uint8_t>(static_cast<int8_t>(v))} << (8 * (c % 4));
        }
      }
    }
  }
  std::string bytes(packed.size() * sizeof(uint32_t), '\0');
  std::memcpy(bytes.data(), packed.data(), bytes.size());
  Expr weight = ir::relax::MakeConstant(DataType::Int(32), {out_c / block, words, kh, kw, block},
                                        std::move(bytes));
  Expr b = MakeNumericConstant(DataType::Int(32), {out_c}, corrected);
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.qnn.conv2d_int8", {x, weight, b, m}, attrs));
  return y;
}

// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B):
// quantize((ConvInteger(x, w) + B) * x_scale * w_scale, y_scale, y_zp); w_scale may be one per
// output channel.
absl::StatusOr<Outputs> QLinearConv(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(std::optional<Expr> int8, Int8Conv(ctx));
  if (int8) return One(*int8);
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr x_scale, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(Expr x_zp, ScalarZeroPoint(ctx, 2));
  KILN_ASSIGN_OR_RETURN(Expr w, ctx.Tensor(3));
  KILN_ASSIGN_OR_RETURN(Expr w_scale, ctx.Tensor(4));
  KILN_ASSIGN_OR_RETURN(Expr w_zp, ScalarZeroPoint(ctx, 5));
  KILN_ASSIGN_OR_RETURN(Expr y_scale, ctx.Tensor(6));
  KILN_ASSIGN_OR_RETURN(Expr y_zp, ScalarZeroPoint(ctx, 7));
  if (!y_zp) return ctx.Error("y_zero_point is required");
  KILN_ASSIGN_OR_RETURN(Expr xi, Centered(ctx, x, x_zp));
  KILN_ASSIGN_OR_RETURN(Expr wi, Centered(ctx, w, w_zp));
  Expr bias;
  if (ctx.Has(8)) {
    KILN_ASSIGN_OR_RETURN(bias, ctx.Tensor(8));
    KILN_ASSIGN_OR_RETURN(bias, Cast(ctx, bias, kI32));
  }
  KILN_ASSIGN_OR_RETURN(Expr acc, ConvOf(ctx, xi, wi, bias));
  KILN_ASSIGN_OR_RETURN(Expr real, Cast(ctx, acc, kF32));
  // w_scale per output channel: along axis 1 of the output.
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ws, ctx.Shape(w_scale));
  if (ws.size() == 1) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ys, ctx.Shape(real));
    std::vector<PrimExpr> shape(ys.size(), ir::IntImm(DataType::Int(64), 1));
    shape[1] = ws[0];
    KILN_ASSIGN_OR_RETURN(w_scale,
                          ctx.Call("relax.reshape", {w_scale, ir::relax::MakeShape(shape)}));
  }
  KILN_ASSIGN_OR_RETURN(Expr scale, ctx.Call("relax.multiply", {x_scale, w_scale}));
  KILN_ASSIGN_OR_RETURN(real, ctx.Call("relax.multiply", {real, scale}));
  return OneOf(Quantize(ctx, real, y_scale, y_zp, ctx.DType(y_zp)));
}

// ---- ONNX Runtime's quantized operators (domain com.microsoft), as its quantizer writes them in
// the QOperator format: each is its float operator between a dequantize of every input and a
// quantize of the result, which the fusion pass makes one kernel of. ----

// The real values of the quantized input at `x`, its scale and zero point following (the zero
// point optional: 0).
absl::StatusOr<Expr> RealOf(Context& ctx, size_t x, size_t scale, size_t zero_point) {
  KILN_ASSIGN_OR_RETURN(Expr q, ctx.Tensor(x));
  KILN_ASSIGN_OR_RETURN(Expr s, ctx.Tensor(scale));
  KILN_ASSIGN_OR_RETURN(Expr real, Cast(ctx, q, kF32));
  if (ctx.Has(zero_point)) {
    KILN_ASSIGN_OR_RETURN(Expr zp, ctx.Tensor(zero_point));
    KILN_ASSIGN_OR_RETURN(zp, Cast(ctx, zp, kF32));
    KILN_ASSIGN_OR_RETURN(real, ctx.Call("relax.subtract", {real, zp}));
  }
  return ctx.Call("relax.multiply", {real, s});
}

// `real` quantized at the scale and zero point of inputs `scale` and `zero_point` (absent: 0 of
// the type of input `like`).
absl::StatusOr<Outputs> QuantizedResult(Context& ctx, const Expr& real, size_t scale,
                                        size_t zero_point, size_t like) {
  KILN_ASSIGN_OR_RETURN(Expr s, ctx.Tensor(scale));
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(like));
  Expr zp = ctx.Scalar(ctx.DType(x), 0);
  if (ctx.Has(zero_point)) {
    KILN_ASSIGN_OR_RETURN(zp, ctx.Tensor(zero_point));
  }
  return OneOf(Quantize(ctx, real, s, zp, ctx.DType(zp)));
}

// QLinearAdd / QLinearMul(A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale,
// C_zero_point), broadcasting.
template <const char* kOp>
absl::StatusOr<Outputs> QLinearBinary(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr a, RealOf(ctx, 0, 1, 2));
  KILN_ASSIGN_OR_RETURN(Expr b, RealOf(ctx, 3, 4, 5));
  KILN_ASSIGN_OR_RETURN(Expr c, ctx.Call(kOp, {a, b}));
  return QuantizedResult(ctx, c, 6, 7, 0);
}
constexpr char kAdd[] = "relax.add";
constexpr char kMultiply[] = "relax.multiply";

// QLinearGlobalAveragePool(X, x_scale, x_zero_point, y_scale, y_zero_point), NCHW or
// (channels_last) NHWC: the mean over the spatial axes, kept as 1s.
absl::StatusOr<Outputs> QLinearGlobalAveragePool(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, RealOf(ctx, 0, 1, 2));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  if (xs.size() < 3) return ctx.Error("needs an input of rank >= 3");
  const bool channels_last = ctx.Int("channels_last", 0) != 0;
  std::vector<int64_t> axes;
  for (size_t k = channels_last ? 1 : 2; k < xs.size() - (channels_last ? 1 : 0); ++k)
    axes.push_back(static_cast<int64_t>(k));
  KILN_ASSIGN_OR_RETURN(
      Expr mean, ctx.Call("relax.mean", {x}, {{"axis", IntsAttr(axes)}, {"keepdims", IntAttr(1)}}));
  return QuantizedResult(ctx, mean, 3, 4, 0);
}

// QLinearConcat(Y_scale, Y_zero_point, X1, X1_scale, X1_zero_point, X2, ...), attribute axis.
absl::StatusOr<Outputs> QLinearConcat(Context& ctx) {
  if (ctx.num_inputs() < 5 || (ctx.num_inputs() - 2) % 3 != 0)
    return ctx.Error("takes Y_scale, Y_zero_point and a (X, scale, zero point) triple per input");
  if (!ctx.HasAttr("axis")) return ctx.Error("axis is required");
  std::vector<Expr> parts;
  for (size_t i = 2; i < ctx.num_inputs(); i += 3) {
    KILN_ASSIGN_OR_RETURN(Expr real, RealOf(ctx, i, i + 1, i + 2));
    parts.push_back(real);
  }
  KILN_ASSIGN_OR_RETURN(Expr joined, ctx.Call("relax.concat", {ir::relax::MakeTuple(parts)},
                                              {{"axis", IntAttr(ctx.Int("axis", 0))}}));
  return QuantizedResult(ctx, joined, 0, 1, 2);
}

// QLinearLeakyRelu(X, X_scale, X_zero_point, Y_scale, Y_zero_point), attribute alpha.
absl::StatusOr<Outputs> QLinearLeakyRelu(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, RealOf(ctx, 0, 1, 2));
  KILN_ASSIGN_OR_RETURN(
      Expr scaled, ctx.Call("relax.multiply", {x, ctx.Scalar(kF32, ctx.Float("alpha", 0.01))}));
  KILN_ASSIGN_OR_RETURN(Expr positive, ctx.Call("relax.greater", {x, ctx.Scalar(kF32, 0)}));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.where", {positive, x, scaled}));
  return QuantizedResult(ctx, y, 3, 4, 0);
}

// QLinearSigmoid(X, X_scale, X_zero_point, Y_scale, Y_zero_point).
absl::StatusOr<Outputs> QLinearSigmoid(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, RealOf(ctx, 0, 1, 2));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.sigmoid", {x}));
  return QuantizedResult(ctx, y, 3, 4, 0);
}

}  // namespace

void RegisterQuantizeConverters(ConverterTable* t) {
  (*t)["com.microsoft.QLinearAdd"] = QLinearBinary<kAdd>;
  (*t)["com.microsoft.QLinearMul"] = QLinearBinary<kMultiply>;
  (*t)["com.microsoft.QLinearGlobalAveragePool"] = QLinearGlobalAveragePool;
  (*t)["com.microsoft.QLinearConcat"] = QLinearConcat;
  (*t)["com.microsoft.QLinearLeakyRelu"] = QLinearLeakyRelu;
  (*t)["com.microsoft.QLinearSigmoid"] = QLinearSigmoid;
  (*t)["QuantizeLinear"] = QuantizeLinear;
  (*t)["DequantizeLinear"] = DequantizeLinear;
  (*t)["DynamicQuantizeLinear"] = DynamicQuantizeLinear;
  (*t)["MatMulInteger"] = MatMulInteger;
  (*t)["QLinearMatMul"] = QLinearMatMul;
  (*t)["ConvInteger"] = ConvInteger;
  (*t)["QLinearConv"] = QLinearConv;
}

}  // namespace kiln::frontend::onnx_import
