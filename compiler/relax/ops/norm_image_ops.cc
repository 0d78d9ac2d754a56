// Normalization (batch_norm in inference mode, layer_norm) and image resizing (resize2d:
// nearest, linear and cubic, ONNX coordinates).
#include <algorithm>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "compiler/ir/printer.h"
#include "compiler/relax/ops/op_common.h"

namespace kiln::ir::relax::ops {
namespace {

using tir::Combiner;
using tir::Indices;
using tir::Load;

// ---- Normalization ----

// batch_norm(x, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-5, center, scale)
//   -> (normalized, moving_mean, moving_var): inference mode.
absl::StatusOr<StructInfo> InferBatchNorm(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  for (size_t i = 1; i < 5; ++i) {
    absl::StatusOr<const TensorStructInfoNode*> p = TensorArg(call, i);
    if (!p.ok()) return p.status();
    if ((*p)->ndim >= 0 && (*p)->ndim != 1)
      return OpError(call, absl::StrCat("argument ", i, " must be a vector over the channels"));
  }
  absl::StatusOr<int64_t> axis = IntAttr(call, "axis", 1);
  if (!axis.ok()) return axis.status();
  if ((*x)->ndim >= 0) {
    absl::StatusOr<int> a = NormalizeAxis(call, *axis, (*x)->ndim);
    if (!a.ok()) return a.status();
  }
  return Make<TupleStructInfoNode>(std::vector<StructInfo>{
      call.args[0]->struct_info(), call.args[3]->struct_info(), call.args[4]->struct_info()});
}

// The attributes batch_norm and layer_norm share.
struct NormAttrs {
  double epsilon;
  bool center, scale;
};

absl::StatusOr<NormAttrs> ParseNormAttrs(const CallNode& call) {
  absl::StatusOr<double> eps = FloatAttr(call, "epsilon", 1e-5);
  absl::StatusOr<bool> center = BoolAttr(call, "center", true);
  absl::StatusOr<bool> scale = BoolAttr(call, "scale", true);
  if (!eps.ok() || !center.ok() || !scale.ok())
    return !eps.ok() ? eps.status() : !center.ok() ? center.status() : scale.status();
  return NormAttrs{*eps, *center, *scale};
}

absl::Status LegalizeBatchNorm(const CallNode& call, const std::vector<Buffer>& in,
                               const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer& x = in[0];
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", 1);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int> axis = NormalizeAxis(call, *axis_attr, static_cast<int>(x->shape.size()));
  if (!axis.ok()) return axis.status();
  absl::StatusOr<NormAttrs> norm = ParseNormAttrs(call);
  if (!norm.ok()) return norm.status();
  DataType t = x->dtype;
  b.Compute("batch_norm", out[0], [&](const Indices& i) {
    Indices c = {i[*axis]};
    PrimExpr v = Div(Load(x, i) - Load(in[3], c),
                     Call(t, "sqrt", {Load(in[4], c) + MakeConst(t, norm->epsilon)}));
    if (norm->scale) v = v * Load(in[1], c);
    if (norm->center) v = v + Load(in[2], c);
    return v;
  });
  b.Compute("batch_norm_mean", out[1], [&](const Indices& i) { return Load(in[3], i); });
  b.Compute("batch_norm_var", out[2], [&](const Indices& i) { return Load(in[4], i); });
  return absl::OkStatus();
}

// layer_norm(x, gamma, beta, axes=[-1], epsilon=1e-5, center, scale): normalizes over `axes`;
// gamma and beta have the shape of those axes.
absl::StatusOr<StructInfo> InferLayerNorm(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  if (!(*x)->dtype.is_void() && !(*x)->dtype.is_float())
    return OpError(call,
                   absl::StrCat("needs a floating-point tensor, got ", (*x)->dtype.ToString()));
  for (size_t i = 1; i < 3; ++i) {
    absl::StatusOr<const TensorStructInfoNode*> p = TensorArg(call, i);
    if (!p.ok()) return p.status();
  }
  if ((*x)->ndim >= 0) {
    absl::StatusOr<std::vector<int>> axes = ReduceAxes(call, "axes", (*x)->ndim);
    if (!axes.ok()) return axes.status();
    if (!GetAttr(call.attrs, "axes")) return OpError(call, "needs axes=[...]");
    for (size_t i = 1; i < 3; ++i) {
      int nd = call.args[i]->struct_info().as<TensorStructInfoNode>()->ndim;
      if (nd >= 0 && nd != static_cast<int>(axes->size()))
        return OpError(call, absl::StrCat("argument ", i, " must have rank ", axes->size(),
                                          " (one dimension per normalized axis)"));
    }
  }
  return call.args[0]->struct_info();
}

absl::Status LegalizeLayerNorm(const CallNode& call, const std::vector<Buffer>& in,
                               const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer& x = in[0];
  int ndim = static_cast<int>(x->shape.size());
  absl::StatusOr<std::vector<int>> axes = ReduceAxes(call, "axes", ndim);
  if (!axes.ok()) return axes.status();
  absl::StatusOr<NormAttrs> norm = ParseNormAttrs(call);
  if (!norm.ok()) return norm.status();
  DataType t = x->dtype;
  std::vector<PrimExpr> kept = x->shape, extents;
  PrimExpr count = Int64(1);
  for (int a : *axes) {
    kept[a] = IntImm(x->shape[a]->dtype, 1);
    extents.push_back(x->shape[a]);
    count = count * x->shape[a];
  }
  auto is_axis = [&](int i) { return std::find(axes->begin(), axes->end(), i) != axes->end(); };
  auto input = [&](const Indices& s, const Indices& r) {
    Indices idx = s;
    for (size_t k = 0; k < axes->size(); ++k) idx[(*axes)[k]] = r[k];
    return Load(x, idx);
  };
  auto at_kept = [&](const Indices& i) {
    Indices k = i;
    for (int a : *axes) k[a] = IntImm(i[a]->dtype, 0);
    return k;
  };
  PrimExpr n = Cast(t, count);
  Buffer sum = b.Temp("sum", t, kept);
  b.Reduce("sum_red", sum, extents, Combiner::kSum, input);
  Buffer sq = b.Temp("sq_sum", t, kept);
  // Two-pass variance (around the mean) for accuracy.
  b.Reduce("sq_sum_red", sq, extents, Combiner::kSum, [&](const Indices& s, const Indices& r) {
    PrimExpr d = input(s, r) - Div(Load(sum, s), n);
    return d * d;
  });
  b.Compute("layer_norm", out[0], [&](const Indices& i) {
    Indices k = at_kept(i);
    PrimExpr mean = Div(Load(sum, k), n);
    PrimExpr v = Div(Load(x, i) - mean,
                     Call(t, "sqrt", {Div(Load(sq, k), n) + MakeConst(t, norm->epsilon)}));
    Indices p;
    for (int a = 0; a < ndim; ++a) {
      if (is_axis(a)) p.push_back(i[a]);
    }
    if (norm->scale) v = v * Load(in[1], p);
    if (norm->center) v = v + Load(in[2], p);
    return v;
  });
  return absl::OkStatus();
}

// ---- image.resize2d(x[, size_shape[, scales]], size=[oh, ow], scale_h, scale_w, method,
// coordinate_transformation_mode, rounding_method, cubic_alpha, cubic_exclude): NCHW resize of
// the two spatial axes, nearest, bilinear or bicubic, with ONNX's coordinate conventions (TVM's
// attribute names). The input's spatial extents must be static. The output size is the `size`
// attribute, or a shape argument [oh, ow] whose values may be known only at run time; the
// coordinate scales are the attributes (0: output / input), or a float32 tensor [4] read at run
// time (ONNX's scales, spatial at 2 and 3). ----

struct Resize {
  int64_t size[2];  // -1 where the shape argument gives the output size
  double scale[2];
  std::string method;  // nearest_neighbor, linear or cubic
  std::string transform, rounding;
  double cubic_alpha = -0.75;
  bool cubic_exclude = false;  // taps outside the image weigh 0, the rest renormalized
};

absl::StatusOr<Resize> ParseResize(const CallNode& call) {
  Resize r;
  if (call.args.empty() || call.args.size() > 3) {
    return OpError(call, "takes x, then optionally the output size (a shape) and scales");
  }
  absl::StatusOr<std::optional<std::vector<int64_t>>> size = IntListAttr(call, "size");
  if (!size.ok()) return size.status();
  const bool size_arg = call.args.size() >= 2;
  if (!size_arg && (!size->has_value() || (*size)->size() != 2)) {
    return OpError(call, "needs size=[oh, ow] or the output size as a shape argument");
  }
  for (int d = 0; d < 2; ++d) {
    r.size[d] = size_arg ? -1 : (**size)[d];
    if (!size_arg && r.size[d] < 1) return OpError(call, "size must be >= 1");
    absl::StatusOr<double> s = FloatAttr(call, d == 0 ? "scale_h" : "scale_w", 0);
    if (!s.ok()) return s.status();
    r.scale[d] = *s;
  }
  absl::StatusOr<std::string> method = StringAttr(call, "method", "nearest_neighbor");
  absl::StatusOr<std::string> transform =
      StringAttr(call, "coordinate_transformation_mode", "half_pixel");
  absl::StatusOr<std::string> rounding = StringAttr(call, "rounding_method", "round_prefer_floor");
  for (const auto* a : {&method, &transform, &rounding}) {
    if (!a->ok()) return a->status();
  }
  if (*method != "nearest_neighbor" && *method != "linear" && *method != "cubic") {
    return OpError(call,
                   absl::StrCat("method \"", *method, "\" (nearest_neighbor, linear, cubic)"));
  }
  absl::StatusOr<double> alpha = FloatAttr(call, "cubic_alpha", -0.75);
  if (!alpha.ok()) return alpha.status();
  absl::StatusOr<int64_t> exclude = IntAttr(call, "cubic_exclude", 0);
  if (!exclude.ok()) return exclude.status();
  r.cubic_alpha = *alpha;
  r.cubic_exclude = *exclude != 0;
  static const char* kTransforms[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                      "asymmetric", "tf_half_pixel_for_nn"};
  if (std::find(std::begin(kTransforms), std::end(kTransforms), *transform) ==
      std::end(kTransforms))
    return OpError(call, absl::StrCat("coordinate_transformation_mode \"", *transform, "\""));
  static const char* kRoundings[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (std::find(std::begin(kRoundings), std::end(kRoundings), *rounding) == std::end(kRoundings))
    return OpError(call, absl::StrCat("rounding_method \"", *rounding, "\""));
  r.method = *method;
  r.transform = *transform;
  r.rounding = *rounding;
  return r;
}

absl::StatusOr<StructInfo> InferResize2d(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<std::vector<PrimExpr>> dims = KnownDims(call, 0);
  if (!dims.ok()) return dims.status();
  if (dims->size() != 4) return OpError(call, "needs an NCHW tensor");
  absl::StatusOr<Resize> r = ParseResize(call);
  if (!r.ok()) return r.status();
  DataType t = call.args[0]->struct_info().as<TensorStructInfoNode>()->dtype;
  if (!t.is_void() && !t.is_float()) return OpError(call, "needs a floating-point tensor");
  for (int d = 0; d < 2; ++d) {
    if (AsConstInt((*dims)[2 + d]) == nullptr) return OpError(call, "needs static spatial extents");
  }
  if (call.args.size() == 3) {
    const auto* scales = call.args[2]->struct_info().as<TensorStructInfoNode>();
    if (scales == nullptr || scales->dtype != DataType::Float(32)) {
      return OpError(call, "argument 2 (scales) must be a float32 tensor");
    }
    const std::vector<PrimExpr>* sd = scales->dims();
    if (sd != nullptr && (sd->size() != 1 || (AsConstInt((*sd)[0]) && *AsConstInt((*sd)[0]) != 4)))
      return OpError(call, "argument 2 (scales) must have 4 values");
  }
  if (call.args.size() >= 2) {
    const std::vector<PrimExpr>* size = ShapeArg(call, 1);
    if (size == nullptr || size->size() != 2) {
      return OpError(call, "argument 1 must be the output size, a shape of 2 values");
    }
    return TensorSInfo({(*dims)[0], (*dims)[1], (*size)[0], (*size)[1]}, t);
  }
  return TensorSInfo({(*dims)[0], (*dims)[1], Int64(r->size[0]), Int64(r->size[1])}, t);
}

absl::Status LegalizeResize2d(const CallNode& call, const std::vector<Buffer>& in,
                              const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  absl::StatusOr<Resize> r = ParseResize(call);
  if (!r.ok()) return r.status();
  const Buffer& x = in[0];
  DataType f = DataType::Float(32);  // coordinates in float32, as ONNX Runtime computes them
  DataType i64 = DataType::Int(64);
  auto c = [&](double v) { return MakeConst(f, v); };
  // Known at compile time: the output size and the scales, unless the run gives them.
  const std::optional<Buffer> run_scales =
      in.size() > 1 ? std::optional<Buffer>(in[1]) : std::nullopt;
  const bool static_size = AsConstInt(out[0]->shape[2]) && AsConstInt(out[0]->shape[3]);
  // The source coordinate of output index `o` along spatial axis d.
  auto source = [&](const PrimExpr& o, int d) -> PrimExpr {
    const int64_t n_in = *AsConstInt(x->shape[2 + d]);
    PrimExpr v = Cast(f, o);
    if (static_size && !run_scales) {
      const int64_t n_out = *AsConstInt(out[0]->shape[2 + d]);
      double scale = r->scale[d] > 0 ? r->scale[d] : static_cast<double>(n_out) / n_in;
      if (r->transform == "asymmetric") return Div(v, c(scale));
      if (r->transform == "tf_half_pixel_for_nn") return Div(v + c(0.5), c(scale));
      if (r->transform == "align_corners") {
        // ONNX's output width here is scale x input, not rounded: 0.8 x 4 = 3.2 for 3 outputs.
        const double width = static_cast<double>(n_in) * scale;
        if (n_out == 1 || width == 1) return c(0);
        return v * c(static_cast<double>(n_in - 1) / (width - 1));
      }
      if (r->transform == "pytorch_half_pixel" && n_out == 1) return c(0);
      return Div(v + c(0.5), c(scale)) - c(0.5);  // half_pixel
    }
    // The same with the output size or the scale known only at run time.
    const PrimExpr n_out = out[0]->shape[2 + d];
    const PrimExpr scale = run_scales        ? Load(*run_scales, {IntImm(i64, 2 + d)})
                           : r->scale[d] > 0 ? c(r->scale[d])
                                             : Div(Cast(f, n_out), c(static_cast<double>(n_in)));
    const PrimExpr one_out = Binary(NodeKind::kEQ, n_out, IntImm(n_out->dtype, 1));
    if (r->transform == "asymmetric") return Div(v, scale);
    if (r->transform == "tf_half_pixel_for_nn") return Div(v + c(0.5), scale);
    if (r->transform == "align_corners") {
      PrimExpr width = c(static_cast<double>(n_in)) * scale;
      PrimExpr degenerate = Binary(NodeKind::kOr, one_out, Binary(NodeKind::kEQ, width, c(1)));
      return Select(degenerate, c(0), v * Div(c(static_cast<double>(n_in - 1)), width - c(1)));
    }
    PrimExpr half_pixel = Div(v + c(0.5), scale) - c(0.5);
    if (r->transform == "pytorch_half_pixel") return Select(one_out, c(0), half_pixel);
    return half_pixel;
  };
  auto clamp = [&](const PrimExpr& v, int d) {
    return Min(Max(v, IntImm(i64, 0)), IntImm(i64, *AsConstInt(x->shape[2 + d]) - 1));
  };
  auto floor_int = [&](const PrimExpr& v) { return Cast(i64, Call(f, "floor", {v})); };
  b.Compute("resize2d", out[0], [&](const Indices& i) -> PrimExpr {
    if (r->method == "cubic") {
      // Four taps per axis, at floor(v) - 1 ... floor(v) + 2 (edge-clamped), weighted by the
      // cubic convolution kernel of the fraction, as ONNX's reference computes it.
      const double a = r->cubic_alpha;
      PrimExpr weight[2][4], tap[2][4];
      for (int d = 0; d < 2; ++d) {
        PrimExpr v = source(i[2 + d], d);
        PrimExpr k = floor_int(v);
        PrimExpr t = v - Cast(f, k);
        PrimExpr s = c(1) - t;
        auto far = [&](const PrimExpr& u) {  // 1 <= |distance| < 2
          return ((c(a) * u - c(5 * a)) * u + c(8 * a)) * u - c(4 * a);
        };
        auto near = [&](const PrimExpr& u) {  // |distance| < 1
          return ((c(a + 2) * u - c(a + 3)) * u) * u + c(1);
        };
        PrimExpr w[4] = {far(t + c(1)), near(t), near(s), far(s + c(1))};
        const int64_t n = *AsConstInt(x->shape[2 + d]);
        PrimExpr total = c(0);
        for (int j = 0; j < 4; ++j) {
          PrimExpr idx = k + IntImm(i64, j - 1);
          if (r->cubic_exclude) {
            PrimExpr inside = Binary(NodeKind::kAnd, IntImm(i64, 0) <= idx, idx < IntImm(i64, n));
            w[j] = Select(inside, w[j], c(0));
          }
          total = total + w[j];
          tap[d][j] = clamp(idx, d);
        }
        for (int j = 0; j < 4; ++j) {
          weight[d][j] = Cast(x->dtype, r->cubic_exclude ? Div(w[j], total) : w[j]);
        }
      }
      PrimExpr sum = MakeConst(x->dtype, 0);
      for (int p = 0; p < 4; ++p) {
        PrimExpr row = MakeConst(x->dtype, 0);
        for (int q = 0; q < 4; ++q) {
          row = row + Load(x, {i[0], i[1], tap[0][p], tap[1][q]}) * weight[1][q];
        }
        sum = sum + row * weight[0][p];
      }
      return sum;
    }
    if (r->method == "nearest_neighbor") {
      Indices src = {i[0], i[1]};
      for (int d = 0; d < 2; ++d) {
        PrimExpr v = source(i[2 + d], d);
        PrimExpr k = r->rounding == "floor"  ? floor_int(v)
                     : r->rounding == "ceil" ? Cast(i64, Call(f, "ceil", {v}))
                     : r->rounding == "round_prefer_ceil"
                         ? floor_int(v + c(0.5))
                         : Cast(i64, Call(f, "ceil", {v - c(0.5)}));
        src.push_back(clamp(k, d));
      }
      return Load(x, src);
    }
    // Bilinear: the source point clamped into the image, its two neighbours per axis.
    PrimExpr lo[2], hi[2], w[2];
    for (int d = 0; d < 2; ++d) {
      PrimExpr v = source(i[2 + d], d);
      double last = static_cast<double>(*AsConstInt(x->shape[2 + d]) - 1);
      v = Min(Max(v, c(0)), c(last));
      lo[d] = clamp(floor_int(v), d);
      hi[d] = clamp(lo[d] + 1, d);
      w[d] = Cast(x->dtype, v - Cast(f, lo[d]));
    }
    DataType t = x->dtype;
    auto at = [&](const PrimExpr& y, const PrimExpr& xx) { return Load(x, {i[0], i[1], y, xx}); };
    PrimExpr one = MakeConst(t, 1);
    PrimExpr top = at(lo[0], lo[1]) * (one - w[1]) + at(lo[0], hi[1]) * w[1];
    PrimExpr bottom = at(hi[0], lo[1]) * (one - w[1]) + at(hi[0], hi[1]) * w[1];
    return top * (one - w[0]) + bottom * w[0];
  });
  return absl::OkStatus();
}

}  // namespace

void RegisterNormAndImageOps(std::vector<OpInfo>* ops) {
  ops->push_back({"relax.nn.batch_norm", 5, InferBatchNorm, true, OpPattern::kOutEWiseFusable,
                  "batch normalization with moving statistics (inference)", LegalizeBatchNorm});
  ops->push_back({"relax.nn.layer_norm", 3, InferLayerNorm, true, OpPattern::kOpaque,
                  "layer normalization over axes with gamma and beta", LegalizeLayerNorm});
  ops->push_back({"relax.image.resize2d", -1, InferResize2d, true, OpPattern::kInjective,
                  "NCHW resize to size=[oh, ow] or a shape argument (and run-time scales), "
                  "nearest_neighbor, linear or cubic (ONNX coordinates)",
                  LegalizeResize2d});
}

}  // namespace kiln::ir::relax::ops
