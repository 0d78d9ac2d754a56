// Neural-network operators: Conv, ConvTranspose, Gemm, MatMul, pooling, Resize, MaxUnpool and the
// losses (normalizations are in convert_norm.cc). 1-D
// convolution and pooling run as 2-D with a height of 1; a 3-D convolution is relax.nn.conv3d, 3-D
// pooling runs as 2-D pooling over the depth taps.
#include <cmath>
#include <functional>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/frontend/onnx/convert_context.h"
#include "compiler/frontend/onnx/shape_math.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend::onnx_import {
namespace {

using ir::IntImm;
using ir::relax::MakeShape;

std::vector<int64_t> ConstDims(const std::vector<PrimExpr>& dims) {
  std::vector<int64_t> out;
  for (const PrimExpr& d : dims) {
    const int64_t* c = ir::AsConstInt(d);
    out.push_back(c != nullptr ? *c : -1);
  }
  return out;
}

// ---- Spatial windows (Conv, MaxPool, AveragePool) ----

struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begins, then ends
  bool one_d = false;
};

// Reads kernel_shape (or `kernel` from the weight), strides, dilations, pads and auto_pad for a
// node over `x` with `spatial` spatial dimensions.
absl::StatusOr<Window> ReadWindow(Context& ctx, const std::vector<PrimExpr>& x_shape,
                                  std::vector<int64_t> kernel) {
  size_t spatial = x_shape.size() - 2;
  Window w;
  if (std::optional<std::vector<int64_t>> k = ctx.Ints("kernel_shape")) kernel = *k;
  if (kernel.size() != spatial) {
    return ctx.Error(absl::StrCat("kernel_shape [", absl::StrJoin(kernel, ", "),
                                  "] does not match ", spatial, " spatial dimensions"));
  }
  w.kernel = kernel;
  w.strides = ctx.Ints("strides").value_or(std::vector<int64_t>(spatial, 1));
  w.dilations = ctx.Ints("dilations").value_or(std::vector<int64_t>(spatial, 1));
  w.pads = ctx.Ints("pads").value_or(std::vector<int64_t>(2 * spatial, 0));
  if (w.strides.size() != spatial || w.dilations.size() != spatial || w.pads.size() != 2 * spatial)
    return ctx.Error("strides, dilations or pads do not match the spatial rank");
  for (size_t d = 0; d < spatial; ++d) {
    if (w.kernel[d] < 1 || w.strides[d] < 1 || w.dilations[d] < 1)
      return ctx.Error("kernel_shape, strides and dilations must be >= 1");
  }
  for (int64_t p : w.pads) {
    if (p < 0) return ctx.Error("pads must be >= 0");
  }
  std::string auto_pad = ctx.Str("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    std::fill(w.pads.begin(), w.pads.end(), 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t d = 0; d < spatial; ++d) {
      const int64_t* in = ir::AsConstInt(x_shape[2 + d]);
      if (in == nullptr) return ctx.Unsupported("auto_pad SAME needs static spatial dimensions");
      int64_t out = (*in + w.strides[d] - 1) / w.strides[d];
      int64_t total = std::max<int64_t>(
          0, (out - 1) * w.strides[d] + (w.kernel[d] - 1) * w.dilations[d] + 1 - *in);
      int64_t small = total / 2;
      w.pads[d] = auto_pad == "SAME_UPPER" ? small : total - small;
      w.pads[d + spatial] = total - w.pads[d];
    }
  } else if (auto_pad != "NOTSET") {
    return ctx.Error(absl::StrCat("unknown auto_pad \"", auto_pad, "\""));
  }
  return w;
}

// Window attributes for the 2-D Relax ops; a 1-D window gets a unit height.
ir::Attrs WindowAttrs(const Window& w) {
  if (w.one_d) {
    return {{"strides", IntsAttr({1, w.strides[0]})},
            {"dilation", IntsAttr({1, w.dilations[0]})},
            {"padding", IntsAttr({0, w.pads[0], 0, w.pads[1]})}};
  }
  return {{"strides", IntsAttr(w.strides)},
          {"dilation", IntsAttr(w.dilations)},
          {"padding", IntsAttr({w.pads[0], w.pads[1], w.pads[2], w.pads[3]})}};
}

// [N, C, L] -> [N, C, 1, L] for the 1-D forms.
absl::StatusOr<Expr> AddUnitHeight(Context& ctx, const Expr& x) {
  return ctx.Call("relax.expand_dims", {x}, {{"axis", IntsAttr({2})}});
}
absl::StatusOr<Expr> DropUnitHeight(Context& ctx, const Expr& x) {
  return ctx.Call("relax.squeeze", {x}, {{"axis", IntsAttr({2})}});
}

// 3-D windows as 2-D ones: the depth taps of the window are KD slices of the (padded) input along
// D, each folded into the batch ([N, C, OD, H, W] -> [N * OD, C, H, W]) and run through the 2-D op;
// `combine` adds or maxes the KD results, which are unfolded to [N, C', OD, OH, OW].
using Window2d = std::function<absl::StatusOr<Expr>(const Expr& x, int64_t kd)>;

absl::StatusOr<Expr> Over3d(Context& ctx, Expr x, const Window& w, double pad_value,
                            const Window2d& window2d, const char* combine) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  const int64_t* depth = ir::AsConstInt(xs[2]);
  if (depth == nullptr) return ctx.Unsupported("a 3-D window over a depth not known");
  if (w.pads[0] > 0 || w.pads[3] > 0) {
    KILN_ASSIGN_OR_RETURN(
        x, ctx.Call("relax.nn.pad", {x},
                    {{"pad_width", IntsAttr({0, 0, 0, 0, w.pads[0], w.pads[3], 0, 0, 0, 0})},
                     {"pad_value", FloatAttr(pad_value)},
                     {"pad_mode", StrAttr("constant")}}));
  }
  const int64_t padded = *depth + w.pads[0] + w.pads[3];
  const int64_t od = (padded - (w.kernel[0] - 1) * w.dilations[0] - 1) / w.strides[0] + 1;
  if (od < 1) return ctx.Error("the window is deeper than the padded input");
  Expr acc;
  for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
    const int64_t begin = kd * w.dilations[0];
    KILN_ASSIGN_OR_RETURN(Expr slice,
                          ctx.Call("relax.strided_slice", {x},
                                   {{"axes", IntsAttr({2})},
                                    {"begin", IntsAttr({begin})},
                                    {"end", IntsAttr({begin + (od - 1) * w.strides[0] + 1})},
                                    {"strides", IntsAttr({w.strides[0]})}}));
    KILN_ASSIGN_OR_RETURN(
        Expr moved, ctx.Call("relax.permute_dims", {slice}, {{"axes", IntsAttr({0, 2, 1, 3, 4})}}));
    KILN_ASSIGN_OR_RETURN(
        Expr folded,
        ctx.Call("relax.reshape", {moved, MakeShape({xs[0] * I64(od), xs[1], xs[3], xs[4]})}));
    KILN_ASSIGN_OR_RETURN(Expr y, window2d(folded, kd));
    if (acc) {
      KILN_ASSIGN_OR_RETURN(acc, ctx.Call(combine, {acc, y}));
    } else {
      acc = y;
    }
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ys, ctx.Shape(acc));
  KILN_ASSIGN_OR_RETURN(
      Expr unfolded,
      ctx.Call("relax.reshape", {acc, MakeShape({xs[0], I64(od), ys[1], ys[2], ys[3]})}));
  return ctx.Call("relax.permute_dims", {unfolded}, {{"axes", IntsAttr({0, 2, 1, 3, 4})}});
}

// The 2-D window of the H and W axes of a 3-D one.
Window Inner2d(const Window& w) {
  Window inner;
  inner.kernel = {w.kernel[1], w.kernel[2]};
  inner.strides = {w.strides[1], w.strides[2]};
  inner.dilations = {w.dilations[1], w.dilations[2]};
  inner.pads = {w.pads[1], w.pads[2], w.pads[4], w.pads[5]};
  return inner;
}

}  // namespace

absl::StatusOr<Expr> ConvOf(Context& ctx, Expr x, Expr weight, const Expr& bias) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ws, ctx.Shape(weight));
  if (xs.size() < 3 || xs.size() > 5)
    return ctx.Unsupported(
        absl::StrCat("Conv over ", xs.size() - 2, " spatial dimensions (1, 2 or 3)"));
  if (ws.size() != xs.size()) return ctx.Error("the weight's rank differs from the input's");
  std::vector<int64_t> kernel = ConstDims(std::vector<PrimExpr>(ws.begin() + 2, ws.end()));
  KILN_ASSIGN_OR_RETURN(Window w, ReadWindow(ctx, xs, kernel));
  if (xs.size() == 5) {
    ir::Attrs attrs = {{"strides", IntsAttr(w.strides)},
                       {"dilation", IntsAttr(w.dilations)},
                       {"padding", IntsAttr(w.pads)},
                       {"groups", IntAttr(ctx.Int("group", 1))}};
    KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.nn.conv3d", {x, weight}, attrs));
    if (bias) {
      KILN_ASSIGN_OR_RETURN(Expr b, PerChannel(ctx, bias, 5));
      KILN_ASSIGN_OR_RETURN(y, ctx.Call("relax.add", {y, b}));
    }
    return y;
  }
  w.one_d = xs.size() == 3;
  if (w.one_d) {
    KILN_ASSIGN_OR_RETURN(x, AddUnitHeight(ctx, x));
    KILN_ASSIGN_OR_RETURN(weight, AddUnitHeight(ctx, weight));
  }
  ir::Attrs attrs = WindowAttrs(w);
  attrs.push_back({"groups", IntAttr(ctx.Int("group", 1))});
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.nn.conv2d", {x, weight}, attrs));
  if (bias) {
    KILN_ASSIGN_OR_RETURN(Expr b, PerChannel(ctx, bias, 4));
    KILN_ASSIGN_OR_RETURN(y, ctx.Call("relax.add", {y, b}));
  }
  if (w.one_d) {
    KILN_ASSIGN_OR_RETURN(y, DropUnitHeight(ctx, y));
  }
  return y;
}

absl::StatusOr<ir::Attrs> Conv2dWindowAttrs(Context& ctx, const std::vector<PrimExpr>& x_shape,
                                            std::vector<int64_t> kernel) {
  if (x_shape.size() != 4) return ctx.Unsupported("an int8 convolution that is not 2-D");
  KILN_ASSIGN_OR_RETURN(Window w, ReadWindow(ctx, x_shape, std::move(kernel)));
  return WindowAttrs(w);
}

namespace {

absl::StatusOr<Outputs> Conv(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr weight, ctx.Tensor(1));
  Expr bias;
  if (ctx.Has(2)) {
    KILN_ASSIGN_OR_RETURN(bias, ctx.Tensor(2));
  }
  return OneOf(ConvOf(ctx, x, weight, bias));
}

template <bool kMax>
absl::StatusOr<Outputs> Pool(Context& ctx) {
  if (ctx.node().output_size() > 1 && !ctx.node().output(1).empty())
    return ctx.Unsupported("the Indices output of MaxPool");
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  if (xs.size() < 3 || xs.size() > 5) {
    return ctx.Unsupported(
        absl::StrCat("pooling over ", xs.size() - 2, " spatial dimensions (1, 2 or 3)"));
  }
  if (!ctx.HasAttr("kernel_shape")) return ctx.Error("kernel_shape is required");
  KILN_ASSIGN_OR_RETURN(Window w, ReadWindow(ctx, xs, {}));
  if (xs.size() == 5) {
    // The maximum of the depth taps' 2-D maxima; the mean of their 2-D means, which is the 3-D
    // mean where every tap is a whole one (no depth padding, or padding counted).
    const bool count_pad = ctx.Int("count_include_pad", 0) != 0;
    if (ctx.Int("ceil_mode", 0) != 0) return ctx.Unsupported("3-D pooling with ceil_mode");
    if (!kMax && !count_pad && (w.pads[0] > 0 || w.pads[3] > 0))
      return ctx.Unsupported("3-D average pooling over a padded depth without count_include_pad");
    Window inner = Inner2d(w);
    ir::Attrs attrs = WindowAttrs(inner);
    attrs.push_back({"pool_size", IntsAttr(inner.kernel)});
    if (!kMax) attrs.push_back({"count_include_pad", IntAttr(count_pad)});
    DataType t = ctx.DType(x);
    KILN_ASSIGN_OR_RETURN(
        Expr y, Over3d(
                    ctx, x, w, kMax ? -std::numeric_limits<double>::infinity() : 0,
                    [&](const Expr& folded, int64_t) {
                      return ctx.Call(kMax ? "relax.nn.max_pool2d" : "relax.nn.avg_pool2d",
                                      {folded}, attrs);
                    },
                    kMax ? "relax.maximum" : "relax.add"));
    if (!kMax) {
      KILN_ASSIGN_OR_RETURN(
          y, ctx.Call("relax.divide", {y, ctx.Scalar(t, static_cast<double>(w.kernel[0]))}));
    }
    return One(y);
  }
  w.one_d = xs.size() == 3;
  if (w.one_d) {
    KILN_ASSIGN_OR_RETURN(x, AddUnitHeight(ctx, x));
  }
  ir::Attrs attrs = WindowAttrs(w);
  attrs.push_back(
      {"pool_size", IntsAttr(w.one_d ? std::vector<int64_t>{1, w.kernel[0]} : w.kernel)});
  attrs.push_back({"ceil_mode", IntAttr(ctx.Int("ceil_mode", 0) != 0)});
  if (!kMax) attrs.push_back({"count_include_pad", IntAttr(ctx.Int("count_include_pad", 0) != 0)});
  KILN_ASSIGN_OR_RETURN(Expr y,
                        ctx.Call(kMax ? "relax.nn.max_pool2d" : "relax.nn.avg_pool2d", {x}, attrs));
  if (w.one_d) {
    KILN_ASSIGN_OR_RETURN(y, DropUnitHeight(ctx, y));
  }
  return One(y);
}

template <bool kMax>
absl::StatusOr<Outputs> GlobalPool(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  if (xs.size() < 3) return ctx.Error("needs an input of rank >= 3");
  std::vector<int64_t> axes;
  for (size_t k = 2; k < xs.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call(kMax ? "relax.max" : "relax.mean", {x},
                                         {{"axis", IntsAttr(axes)}, {"keepdims", IntAttr(1)}}));
  return One(y);
}

// ---- Gemm and MatMul ----

absl::StatusOr<Outputs> MatMul(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr a, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr b, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.matmul", {a, b}));
  return One(y);
}

// Gemm: alpha * A' B' + beta * C. A transposed B (a PyTorch Linear) becomes a transpose the
// constant folder does at compile time followed by a matmul.
absl::StatusOr<Outputs> Gemm(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr a, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr b, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> as, ctx.Shape(a));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> bs, ctx.Shape(b));
  if (as.size() != 2 || bs.size() != 2) return ctx.Error("A and B must be matrices");
  if (ctx.Int("transA", 0) != 0) {
    KILN_ASSIGN_OR_RETURN(a, ctx.Call("relax.permute_dims", {a}));
  }
  if (ctx.Int("transB", 0) != 0) {
    KILN_ASSIGN_OR_RETURN(b, ctx.Call("relax.permute_dims", {b}));
  }
  DataType t = ctx.DType(a);
  double alpha = ctx.Float("alpha", 1), beta = ctx.Float("beta", 1);
  if (alpha != 1) {
    KILN_ASSIGN_OR_RETURN(a, ctx.Call("relax.multiply", {a, ctx.Scalar(t, alpha)}));
  }
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.matmul", {a, b}));
  if (ctx.Has(2) && beta != 0) {
    KILN_ASSIGN_OR_RETURN(Expr c, ctx.Tensor(2));
    if (beta != 1) {
      KILN_ASSIGN_OR_RETURN(c, ctx.Call("relax.multiply", {c, ctx.Scalar(t, beta)}));
    }
    KILN_ASSIGN_OR_RETURN(y, ctx.Call("relax.add", {y, c}));
  }
  return One(y);
}

// ---- Resize ----

// Resize by sizes or scales only the run knows (a graph input, or computed): the output's
// spatial extents are bound at run time — checked to keep N and C, and to be at least 1 — and
// run-time scales go to the kernel, which reads its coordinate scale from them.
// `scales_input` and `sizes_input` are where the node has them (-1: it has none).
absl::StatusOr<Outputs> ResizeAtRunTime(Context& ctx, const Expr& x, const std::vector<int64_t>& in,
                                        ir::Attrs attrs, int scales_input, int sizes_input) {
  ShapeMath m{ctx};
  std::vector<Expr> args = {x};
  Expr sizes, scales;
  if (sizes_input >= 0 && ctx.Has(sizes_input)) {
    KILN_ASSIGN_OR_RETURN(Expr given, ctx.Tensor(sizes_input));
    KILN_ASSIGN_OR_RETURN(int64_t n, m.Length(given, "sizes"));
    if (n != 4) return ctx.Error("sizes must have 4 values");
    KILN_ASSIGN_OR_RETURN(sizes, m.Int64(given));
  } else {
    KILN_ASSIGN_OR_RETURN(scales, ctx.Tensor(scales_input));
    KILN_ASSIGN_OR_RETURN(int64_t n, m.Length(scales, "scales"));
    if (n != 4) return ctx.Error("scales must have 4 values");
    if (ctx.DType(scales) != DataType::Float(32)) {
      KILN_ASSIGN_OR_RETURN(scales,
                            m.Call("relax.astype", {scales}, {{"dtype", StrAttr("float32")}}));
    }
    // The output size is floor(input size x scale), as ONNX defines it.
    KILN_ASSIGN_OR_RETURN(Expr in_dims, m.Tensor({I64(in[0]), I64(in[1]), I64(in[2]), I64(in[3])}));
    KILN_ASSIGN_OR_RETURN(Expr in_f,
                          m.Call("relax.astype", {in_dims}, {{"dtype", StrAttr("float32")}}));
    KILN_ASSIGN_OR_RETURN(Expr scaled, m.Call("relax.multiply", {in_f, scales}));
    KILN_ASSIGN_OR_RETURN(scaled, m.Call("relax.floor", {scaled}));
    KILN_ASSIGN_OR_RETURN(sizes, m.Int64(scaled));
  }
  KILN_ASSIGN_OR_RETURN(Expr kept, m.Tensor({I64(in[0]), I64(in[1]), I64(1), I64(1)}));
  KILN_ASSIGN_OR_RETURN(Expr diff, m.Call("relax.subtract", {sizes, kept}));
  KILN_ASSIGN_OR_RETURN(Expr moved, m.Call("relax.not_equal", {diff, m.I(0)}));
  KILN_ASSIGN_OR_RETURN(moved, m.Int64(moved));
  KILN_ASSIGN_OR_RETURN(Expr batch_channel, m.Tensor({I64(1), I64(1), I64(0), I64(0)}));
  KILN_ASSIGN_OR_RETURN(moved, m.Call("relax.multiply", {moved, batch_channel}));
  KILN_ASSIGN_OR_RETURN(Expr nc_changed, m.Reduce("relax.sum", moved));
  KILN_ASSIGN_OR_RETURN(Expr empty, m.Negatives(diff));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> out, ctx.DimsAtRunTime(sizes, {nc_changed, empty}));
  args.push_back(MakeShape({out[2], out[3]}));
  if (scales.defined()) args.push_back(scales);
  return OneOf(ctx.Call("relax.image.resize2d", args, attrs));
}

// Resize of the two innermost axes of an NCHW tensor: nearest, (bi)linear or (bi)cubic.
absl::StatusOr<Outputs> Resize(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  if (xs.size() != 4) return ctx.Unsupported("Resize of a tensor that is not 4-D (NCHW)");
  std::vector<int64_t> in = ConstDims(xs);
  if (in[2] < 0 || in[3] < 0) return ctx.Unsupported("Resize needs static spatial dimensions");
  std::string mode = ctx.Str("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return ctx.Unsupported(absl::StrCat("Resize mode \"", mode, "\" (nearest, linear, cubic)"));
  if (ctx.Int("antialias", 0) != 0) return ctx.Unsupported("Resize with antialias");
  if (ctx.HasAttr("axes")) return ctx.Unsupported("Resize with axes");
  std::string transform = ctx.Str("coordinate_transformation_mode", "half_pixel");
  if (transform == "tf_crop_and_resize") return ctx.Unsupported("tf_crop_and_resize");
  ir::Attrs common = {{"method", StrAttr(mode == "nearest" ? "nearest_neighbor" : mode)},
                      {"cubic_alpha", FloatAttr(ctx.Float("cubic_coeff_a", -0.75))},
                      {"cubic_exclude", IntAttr(ctx.Int("exclude_outside", 0))},
                      {"coordinate_transformation_mode", StrAttr(transform)},
                      {"rounding_method", StrAttr(ctx.Str("nearest_mode", "round_prefer_floor"))}};
  // Inputs: X, roi, scales, sizes (opset 11+); sizes wins when given.
  if ((ctx.Has(3) && !ctx.ConstInts(3).ok()) ||
      (!ctx.Has(3) && ctx.Has(2) && !ctx.ConstFloats(2).ok())) {
    return ResizeAtRunTime(ctx, x, in, common, /*scales_input=*/2, /*sizes_input=*/3);
  }
  double scale[2];
  int64_t out[2];
  if (ctx.Has(3)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ctx.ConstInts(3));
    if (sizes.size() != 4) return ctx.Error("sizes must have 4 values");
    if (sizes[0] != in[0] || sizes[1] != in[1])
      return ctx.Unsupported("Resize of the batch or channel axis");
    for (int d = 0; d < 2; ++d) {
      out[d] = sizes[2 + d];
      scale[d] = static_cast<double>(out[d]) / static_cast<double>(in[2 + d]);
    }
  } else if (ctx.Has(2)) {
    KILN_ASSIGN_OR_RETURN(std::vector<double> scales, ctx.ConstFloats(2));
    if (scales.size() != 4) return ctx.Error("scales must have 4 values");
    if (scales[0] != 1 || scales[1] != 1)
      return ctx.Unsupported("Resize of the batch or channel axis");
    for (int d = 0; d < 2; ++d) {
      scale[d] = scales[2 + d];
      out[d] = static_cast<int64_t>(std::floor(static_cast<double>(in[2 + d]) * scale[d]));
    }
  } else {
    return ctx.Error("needs scales or sizes");
  }
  if (out[0] <= 0 || out[1] <= 0) return ctx.Error("the output would be empty");
  ir::Attrs attrs = {{"size", IntsAttr({out[0], out[1]})},
                     {"scale_h", FloatAttr(scale[0])},
                     {"scale_w", FloatAttr(scale[1])}};
  attrs.insert(attrs.end(), common.begin(), common.end());
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.image.resize2d", {x}, attrs));
  return One(y);
}

// Upsample (opsets 7 and 9, deprecated for Resize): scales as an attribute (7) or an input
// (9), nearest or linear, with Resize's asymmetric coordinates (nearest rounds down).
absl::StatusOr<Outputs> Upsample(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  if (xs.size() != 4) return ctx.Unsupported("Upsample of a tensor that is not 4-D (NCHW)");
  std::vector<int64_t> in = ConstDims(xs);
  if (in[2] < 0 || in[3] < 0) return ctx.Unsupported("Upsample needs static spatial dimensions");
  std::string mode = ctx.Str("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear")
    return ctx.Unsupported(absl::StrCat("Upsample mode \"", mode, "\" (nearest, linear)"));
  ir::Attrs attrs = {{"method", StrAttr(mode == "nearest" ? "nearest_neighbor" : mode)},
                     {"coordinate_transformation_mode", StrAttr("asymmetric")},
                     {"rounding_method", StrAttr("floor")}};
  std::vector<double> scales;
  if (std::optional<std::vector<double>> attr = ctx.Floats("scales")) {
    scales = *attr;
  } else if (!ctx.Has(1)) {
    return ctx.Error("needs scales");
  } else if (absl::StatusOr<std::vector<double>> known = ctx.ConstFloats(1); known.ok()) {
    scales = *known;
  } else {
    return ResizeAtRunTime(ctx, x, in, attrs, /*scales_input=*/1, /*sizes_input=*/-1);
  }
  if (scales.size() != 4) return ctx.Error("scales must have 4 values");
  if (scales[0] != 1 || scales[1] != 1)
    return ctx.Unsupported("Upsample of the batch or channel axis");
  int64_t out[2];
  for (int d = 0; d < 2; ++d) {
    out[d] = static_cast<int64_t>(std::floor(static_cast<double>(in[2 + d]) * scales[2 + d]));
    if (out[d] <= 0) return ctx.Error("the output would be empty");
  }
  attrs.push_back({"size", IntsAttr({out[0], out[1]})});
  attrs.push_back({"scale_h", FloatAttr(scales[2])});
  attrs.push_back({"scale_w", FloatAttr(scales[3])});
  return OneOf(ctx.Call("relax.image.resize2d", {x}, attrs));
}

// MaxUnpool(X, I, output_shape): X's values scattered into zeros at the flat indices MaxPool
// gave (((n * C + c) * H + h) * W + w); the output's size is MaxPool's input size (from the window
// attributes) or output_shape, known at import time or only at run time.
absl::StatusOr<Outputs> MaxUnpool(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr indices, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  if (xs.size() < 3) return ctx.Error("X must have spatial dimensions");
  if (!ctx.HasAttr("kernel_shape")) return ctx.Error("kernel_shape is required");
  KILN_ASSIGN_OR_RETURN(Window w, ReadWindow(ctx, xs, {}));
  int64_t count = 1;
  for (int64_t d : ConstDims(xs)) {
    if (d < 0) return ctx.Unsupported("MaxUnpool over sizes not known at import time");
    count *= d;
  }
  // The indices are flat into MaxPool's input, whose size the window gives.
  std::vector<int64_t> pooled_from = ConstDims(xs);
  const size_t spatial = xs.size() - 2;
  for (size_t k = 0; k < spatial; ++k) {
    pooled_from[2 + k] =
        (pooled_from[2 + k] - 1) * w.strides[k] + w.kernel[k] - w.pads[k] - w.pads[spatial + k];
  }
  // The output: that size, or output_shape (known at import time or only at run time), which
  // holds it at its origin, zeros beyond.
  ShapeMath m{ctx};
  std::vector<PrimExpr> out_shape;
  if (ctx.Has(2) && !ctx.ConstInts(2).ok()) {
    KILN_ASSIGN_OR_RETURN(Expr given, ctx.Tensor(2));
    KILN_ASSIGN_OR_RETURN(int64_t rank, m.Length(given, "output_shape"));
    if (rank != static_cast<int64_t>(xs.size()))
      return ctx.Error("output_shape has the wrong rank");
    KILN_ASSIGN_OR_RETURN(Expr dims, m.Int64(given));
    std::vector<PrimExpr> pooled_dims;
    for (int64_t d : pooled_from) pooled_dims.push_back(I64(d));
    KILN_ASSIGN_OR_RETURN(Expr inferred, m.Tensor(pooled_dims));
    KILN_ASSIGN_OR_RETURN(Expr room, m.Call("relax.subtract", {dims, inferred}));
    KILN_ASSIGN_OR_RETURN(Expr too_small, m.Negatives(room));  // it must hold MaxPool's input
    KILN_ASSIGN_OR_RETURN(out_shape, ctx.DimsAtRunTime(dims, {too_small}));
  } else {
    std::vector<int64_t> out = pooled_from;
    if (ctx.Has(2)) {
      KILN_ASSIGN_OR_RETURN(out, ctx.ConstInts(2));
      if (out.size() != xs.size()) return ctx.Error("output_shape has the wrong rank");
    }
    for (size_t k = 0; k < out.size(); ++k) {
      if (out[k] <= 0) return ctx.Error("the output shape must be positive");
      if (out[k] < pooled_from[k]) return ctx.Error("output_shape is smaller than MaxPool's input");
      out_shape.push_back(I64(out[k]));
    }
  }
  PrimExpr total = I64(1);
  for (const PrimExpr& d : out_shape) total = total * d;
  KILN_ASSIGN_OR_RETURN(Expr flat_x, ctx.Call("relax.reshape", {x, MakeShape({I64(count)})}));
  KILN_ASSIGN_OR_RETURN(Expr flat_i, ctx.Call("relax.reshape", {indices, MakeShape({I64(count)})}));
  KILN_ASSIGN_OR_RETURN(flat_i, m.Int64(flat_i));
  bool same = true;
  for (size_t k = 0; k < out_shape.size(); ++k) {
    const int64_t* d = ir::AsConstInt(out_shape[k]);
    same = same && d != nullptr && *d == pooled_from[k];
  }
  if (!same) {
    // Each index's coordinates in MaxPool's input, flattened again over the output's shape.
    Expr placed = m.I(0);
    int64_t in_stride = 1;
    PrimExpr out_stride = I64(1);
    for (size_t k = out_shape.size(); k-- > 0;) {
      KILN_ASSIGN_OR_RETURN(Expr coord, m.Call("relax.floor_divide", {flat_i, m.I(in_stride)}));
      KILN_ASSIGN_OR_RETURN(coord, m.Call("relax.floor_mod", {coord, m.I(pooled_from[k])}));
      KILN_ASSIGN_OR_RETURN(Expr stride, m.Tensor({out_stride}));
      KILN_ASSIGN_OR_RETURN(coord, m.Call("relax.multiply", {coord, stride}));
      KILN_ASSIGN_OR_RETURN(placed, m.Call("relax.add", {placed, coord}));
      in_stride *= pooled_from[k];
      out_stride = out_stride * out_shape[k];
    }
    flat_i = placed;
  }
  KILN_ASSIGN_OR_RETURN(Expr zeros, ctx.Call("relax.zeros", {MakeShape({total})},
                                             {{"dtype", StrAttr(ctx.DType(x).ToString())}}));
  KILN_ASSIGN_OR_RETURN(Expr scattered, ctx.Call("relax.scatter_elements", {zeros, flat_i, flat_x},
                                                 {{"axis", IntAttr(0)}}));
  return OneOf(ctx.Call("relax.reshape", {scattered, MakeShape(out_shape)}));
}

}  // namespace

// ConvTranspose: relax.nn.conv2d_transpose (1-D with a unit height). Pads come from `pads`, or,
// given output_shape or auto_pad SAME_*, from the output size asked for, split as ONNX says.
absl::StatusOr<Outputs> ConvTranspose(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr weight, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> ws, ctx.Shape(weight));
  if (xs.size() != 3 && xs.size() != 4)
    return ctx.Unsupported(
        absl::StrCat("ConvTranspose over ", xs.size() - 2, " spatial dimensions (1 or 2)"));
  if (ws.size() != xs.size()) return ctx.Error("the weight's rank differs from the input's");
  size_t spatial = xs.size() - 2;
  std::vector<int64_t> kernel = ConstDims(std::vector<PrimExpr>(ws.begin() + 2, ws.end()));
  kernel = ctx.Ints("kernel_shape").value_or(kernel);
  std::vector<int64_t> strides = ctx.Ints("strides").value_or(std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> dilations = ctx.Ints("dilations").value_or(std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> pads = ctx.Ints("pads").value_or(std::vector<int64_t>(2 * spatial, 0));
  std::vector<int64_t> out_pad =
      ctx.Ints("output_padding").value_or(std::vector<int64_t>(spatial, 0));
  if (kernel.size() != spatial || strides.size() != spatial || dilations.size() != spatial ||
      pads.size() != 2 * spatial || out_pad.size() != spatial)
    return ctx.Error(
        "kernel_shape, strides, dilations, pads or output_padding do not match the "
        "spatial rank");
  for (size_t d = 0; d < spatial; ++d) {
    if (kernel[d] < 1) return ctx.Unsupported("a kernel size not known at import time");
  }
  std::string auto_pad = ctx.Str("auto_pad", "NOTSET");
  std::optional<std::vector<int64_t>> output_shape = ctx.Ints("output_shape");
  if (output_shape && output_shape->size() == spatial + 2)
    output_shape = std::vector<int64_t>(output_shape->begin() + 2, output_shape->end());
  if (auto_pad == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  } else if (output_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (output_shape && output_shape->size() != spatial)
      return ctx.Error("output_shape does not match the spatial rank");
    for (size_t d = 0; d < spatial; ++d) {
      const int64_t* in = ir::AsConstInt(xs[2 + d]);
      if (in == nullptr) return ctx.Unsupported("output_shape or auto_pad with dynamic sizes");
      int64_t target = output_shape ? (*output_shape)[d] : *in * strides[d];
      int64_t total =
          strides[d] * (*in - 1) + out_pad[d] + (kernel[d] - 1) * dilations[d] + 1 - target;
      if (total < 0) {
        // Larger than the full transposed size: the extra rows and columns come at the end, as
        // ONNX's reference makes them (output padding, where no input contributes).
        out_pad[d] -= total;
        pads[d] = pads[d + spatial] = 0;
        continue;
      }
      int64_t half = total / 2;
      pads[d] = auto_pad == "SAME_UPPER" ? half : total - half;
      pads[d + spatial] = total - pads[d];
    }
  } else if (auto_pad != "NOTSET") {
    return ctx.Error(absl::StrCat("unknown auto_pad \"", auto_pad, "\""));
  }
  bool one_d = spatial == 1;
  if (one_d) {
    KILN_ASSIGN_OR_RETURN(x, AddUnitHeight(ctx, x));
    KILN_ASSIGN_OR_RETURN(weight, AddUnitHeight(ctx, weight));
    strides.insert(strides.begin(), 1);
    dilations.insert(dilations.begin(), 1);
    out_pad.insert(out_pad.begin(), 0);
    pads = {0, pads[0], 0, pads[1]};
  }
  ir::Attrs attrs = {{"strides", IntsAttr(strides)},
                     {"padding", IntsAttr(pads)},
                     {"output_padding", IntsAttr(out_pad)},
                     {"dilation", IntsAttr(dilations)},
                     {"groups", IntAttr(ctx.Int("group", 1))}};
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.nn.conv2d_transpose", {x, weight}, attrs));
  if (ctx.Has(2)) {
    KILN_ASSIGN_OR_RETURN(Expr bias, ctx.Tensor(2));
    KILN_ASSIGN_OR_RETURN(bias, PerChannel(ctx, bias, 4));
    KILN_ASSIGN_OR_RETURN(y, ctx.Call("relax.add", {y, bias}));
  }
  if (one_d) {
    KILN_ASSIGN_OR_RETURN(y, DropUnitHeight(ctx, y));
  }
  return One(y);
}

// ---- Losses ----

// NegativeLogLikelihoodLoss of log-probabilities `input` (N, C, d...) at `target` (N, d...):
// loss = -input[n, target[n, d], d] * weight[target[n, d]], with classes equal to ignore_index
// weighing 0, then reduced ("none", "sum", or "mean": divided by the sum of the weights). The
// gather is a one-hot mask against the class indices, summed over the class axis.
absl::StatusOr<Expr> NllLoss(Context& ctx, const Expr& input, const Expr& target,
                             const Expr& weight) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(input));
  if (xs.size() < 2) return ctx.Error("the input needs a class axis (N, C, ...)");
  const int64_t* classes = ir::AsConstInt(xs[1]);
  if (classes == nullptr) return ctx.Unsupported("a class count not known at import time");
  DataType t = ctx.DType(input);
  std::vector<int64_t> along_classes(xs.size(), 1);
  along_classes[1] = *classes;
  KILN_ASSIGN_OR_RETURN(Expr class_ids, ctx.Iota(*classes, along_classes));
  Expr label = target;
  if (ctx.DType(label) != DataType::Int(64)) {
    KILN_ASSIGN_OR_RETURN(label, ctx.Call("relax.astype", {label}, {{"dtype", StrAttr("int64")}}));
  }
  KILN_ASSIGN_OR_RETURN(Expr label1,
                        ctx.Call("relax.expand_dims", {label}, {{"axis", IntsAttr({1})}}));
  KILN_ASSIGN_OR_RETURN(Expr hit, ctx.Call("relax.equal", {label1, class_ids}));
  KILN_ASSIGN_OR_RETURN(Expr one_hot,
                        ctx.Call("relax.astype", {hit}, {{"dtype", StrAttr(t.ToString())}}));
  KILN_ASSIGN_OR_RETURN(Expr masked, ctx.Call("relax.multiply", {input, one_hot}));
  ir::Attrs over_classes = {{"axis", IntsAttr({1})}, {"keepdims", IntAttr(0)}};
  KILN_ASSIGN_OR_RETURN(Expr picked, ctx.Call("relax.sum", {masked}, over_classes));
  // The weight of each element's class (1 without weights), 0 where the class is ignored.
  Expr w;
  if (weight) {
    KILN_ASSIGN_OR_RETURN(Expr wc, ctx.Call("relax.reshape", {weight, MakeShape([&] {
                                                                std::vector<PrimExpr> d;
                                                                for (int64_t v : along_classes)
                                                                  d.push_back(I64(v));
                                                                return d;
                                                              }())}));
    KILN_ASSIGN_OR_RETURN(Expr wm, ctx.Call("relax.multiply", {one_hot, wc}));
    KILN_ASSIGN_OR_RETURN(w, ctx.Call("relax.sum", {wm}, over_classes));
  }
  if (ctx.HasAttr("ignore_index")) {
    KILN_ASSIGN_OR_RETURN(
        Expr kept, ctx.Call("relax.not_equal",
                            {label, ctx.Scalar(DataType::Int(64), ctx.Int("ignore_index", 0))}));
    KILN_ASSIGN_OR_RETURN(Expr keptf,
                          ctx.Call("relax.astype", {kept}, {{"dtype", StrAttr(t.ToString())}}));
    if (w) {
      KILN_ASSIGN_OR_RETURN(w, ctx.Call("relax.multiply", {w, keptf}));
    } else {
      w = keptf;
    }
  }
  KILN_ASSIGN_OR_RETURN(Expr loss, ctx.Call("relax.negative", {picked}));
  if (w) {
    KILN_ASSIGN_OR_RETURN(loss, ctx.Call("relax.multiply", {loss, w}));
  }
  std::string reduction = ctx.Str("reduction", "mean");
  if (reduction == "none") return loss;
  KILN_ASSIGN_OR_RETURN(Expr total, ctx.Call("relax.sum", {loss}, {{"keepdims", IntAttr(0)}}));
  if (reduction == "sum") return total;
  if (reduction != "mean") return ctx.Error(absl::StrCat("unknown reduction \"", reduction, "\""));
  if (!w) return ctx.Call("relax.mean", {loss}, {{"keepdims", IntAttr(0)}});
  KILN_ASSIGN_OR_RETURN(Expr weight_sum, ctx.Call("relax.sum", {w}, {{"keepdims", IntAttr(0)}}));
  return ctx.Call("relax.divide", {total, weight_sum});
}

absl::StatusOr<Outputs> NegativeLogLikelihoodLoss(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr input, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr target, ctx.Tensor(1));
  Expr weight;
  if (ctx.Has(2)) {
    KILN_ASSIGN_OR_RETURN(weight, ctx.Tensor(2));
  }
  return OneOf(NllLoss(ctx, input, target, weight));
}

// SoftmaxCrossEntropyLoss: the NLL loss of log_softmax over the class axis, which is also the
// optional second output.
absl::StatusOr<Outputs> SoftmaxCrossEntropyLoss(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr scores, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr labels, ctx.Tensor(1));
  Expr weight;
  if (ctx.Has(2)) {
    KILN_ASSIGN_OR_RETURN(weight, ctx.Tensor(2));
  }
  KILN_ASSIGN_OR_RETURN(Expr log_prob,
                        ctx.Call("relax.nn.log_softmax", {scores}, {{"axis", IntAttr(1)}}));
  KILN_ASSIGN_OR_RETURN(Expr loss, NllLoss(ctx, log_prob, labels, weight));
  return Outputs{One(loss)[0], One(log_prob)[0]};
}

void RegisterNNConverters(ConverterTable* t) {
  (*t)["Conv"] = Conv;
  (*t)["ConvTranspose"] = ConvTranspose;
  (*t)["MaxPool"] = Pool<true>;
  (*t)["AveragePool"] = Pool<false>;
  (*t)["GlobalAveragePool"] = GlobalPool<false>;
  (*t)["GlobalMaxPool"] = GlobalPool<true>;
  (*t)["MatMul"] = MatMul;
  (*t)["Gemm"] = Gemm;
  (*t)["Resize"] = Resize;
  (*t)["Upsample"] = Upsample;
  (*t)["MaxUnpool"] = MaxUnpool;
  (*t)["NegativeLogLikelihoodLoss"] = NegativeLogLikelihoodLoss;
  (*t)["SoftmaxCrossEntropyLoss"] = SoftmaxCrossEntropyLoss;
}

}  // namespace kiln::frontend::onnx_import
