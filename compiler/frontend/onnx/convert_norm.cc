// Normalizations: BatchNormalization (inference, folded to a scale and a shift), LRN (as padded
// shifted sums), InstanceNormalization and LayerNormalization (with its Mean and InvStdDev
// outputs).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/onnx/convert_context.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend::onnx_import {
namespace {

using ir::IntImm;
using ir::relax::MakeShape;

// ---- Normalizations ----

// BatchNormalization: y = x * s + (B - mean * s) with s = scale / sqrt(var + eps). In inference
// s and the shift are constants for a trained model, folded at compile time, and the two
// broadcast ops fuse into the producing convolution. In training mode (opset 14+) the mean and
// variance are the batch's, over every axis but the channels', and the running statistics come
// out updated: running = input * momentum + batch * (1 - momentum).
absl::StatusOr<Outputs> BatchNorm(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  if (xs.size() < 2) return ctx.Error("needs an input of rank >= 2");
  Expr in[4];
  for (size_t i = 0; i < 4; ++i) {
    KILN_ASSIGN_OR_RETURN(in[i], ctx.Tensor(i + 1));
  }
  DataType t = ctx.DType(x);
  const bool training = ctx.Int("training_mode", 0) != 0;
  Expr mean = in[2], var = in[3];
  if (training) {
    std::vector<int64_t> axes = {0};
    for (size_t k = 2; k < xs.size(); ++k) axes.push_back(static_cast<int64_t>(k));
    KILN_ASSIGN_OR_RETURN(mean, ctx.Call("relax.mean", {x}, {{"axis", IntsAttr(axes)}}));
    KILN_ASSIGN_OR_RETURN(Expr centered_mean, PerChannel(ctx, mean, xs.size()));
    KILN_ASSIGN_OR_RETURN(Expr centered, ctx.Call("relax.subtract", {x, centered_mean}));
    KILN_ASSIGN_OR_RETURN(Expr squared, ctx.Call("relax.multiply", {centered, centered}));
    KILN_ASSIGN_OR_RETURN(var, ctx.Call("relax.mean", {squared}, {{"axis", IntsAttr(axes)}}));
  }
  KILN_ASSIGN_OR_RETURN(Expr var_eps,
                        ctx.Call("relax.add", {var, ctx.Scalar(t, ctx.Float("epsilon", 1e-5))}));
  KILN_ASSIGN_OR_RETURN(Expr root, ctx.Call("relax.sqrt", {var_eps}));
  KILN_ASSIGN_OR_RETURN(Expr s, ctx.Call("relax.divide", {in[0], root}));
  KILN_ASSIGN_OR_RETURN(Expr ms, ctx.Call("relax.multiply", {mean, s}));
  KILN_ASSIGN_OR_RETURN(Expr shift, ctx.Call("relax.subtract", {in[1], ms}));
  KILN_ASSIGN_OR_RETURN(s, PerChannel(ctx, s, xs.size()));
  KILN_ASSIGN_OR_RETURN(shift, PerChannel(ctx, shift, xs.size()));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.multiply", {x, s}));
  KILN_ASSIGN_OR_RETURN(y, ctx.Call("relax.add", {y, shift}));
  if (!training) return One(y);
  const double momentum = ctx.Float("momentum", 0.9);
  Outputs out = One(y);
  for (const auto& [running, batch] : {std::pair{in[2], mean}, std::pair{in[3], var}}) {
    KILN_ASSIGN_OR_RETURN(Expr kept,
                          ctx.Call("relax.multiply", {running, ctx.Scalar(t, momentum)}));
    KILN_ASSIGN_OR_RETURN(Expr added,
                          ctx.Call("relax.multiply", {batch, ctx.Scalar(t, 1 - momentum)}));
    KILN_ASSIGN_OR_RETURN(Expr updated, ctx.Call("relax.add", {kept, added}));
    out.push_back(One(updated)[0]);
  }
  return out;
}

// InstanceNormalization: per sample and channel over the spatial axes.
// LRN: x / (bias + alpha / size * s)^beta, s the sum of squares over a window of `size`
// channels around each one (floor((size - 1) / 2) before, ceil after): the squares padded along
// the channels, then `size` shifted slices added.
absl::StatusOr<Outputs> Lrn(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, ctx.Shape(x));
  const int64_t size = ctx.Int("size", 0);
  if (size < 1) return ctx.Error("size must be positive");
  if (shape.size() < 2) return ctx.Error("needs an input of rank 2 or more (N, C, ...)");
  const int64_t* channels = ir::AsConstInt(shape[1]);
  if (channels == nullptr) return ctx.Unsupported("LRN over a channel count not known");
  DataType t = ctx.DType(x);
  KILN_ASSIGN_OR_RETURN(Expr square, ctx.Call("relax.multiply", {x, x}));
  std::vector<int64_t> width(2 * shape.size(), 0);
  width[2] = (size - 1) / 2;
  width[3] = size - 1 - width[2];
  KILN_ASSIGN_OR_RETURN(Expr padded, ctx.Call("relax.nn.pad", {square},
                                              {{"pad_width", IntsAttr(width)},
                                               {"pad_value", FloatAttr(0)},
                                               {"pad_mode", StrAttr("constant")}}));
  Expr sum;
  for (int64_t j = 0; j < size; ++j) {
    KILN_ASSIGN_OR_RETURN(Expr window, ctx.Call("relax.strided_slice", {padded},
                                                {{"axes", IntsAttr({1})},
                                                 {"begin", IntsAttr({j})},
                                                 {"end", IntsAttr({j + *channels})},
                                                 {"strides", IntsAttr({1})}}));
    if (sum) {
      KILN_ASSIGN_OR_RETURN(sum, ctx.Call("relax.add", {sum, window}));
    } else {
      sum = window;
    }
  }
  const double alpha = ctx.Float("alpha", 1e-4), beta = ctx.Float("beta", 0.75);
  KILN_ASSIGN_OR_RETURN(Expr scaled,
                        ctx.Call("relax.multiply", {sum, ctx.Scalar(t, alpha / size)}));
  KILN_ASSIGN_OR_RETURN(Expr base,
                        ctx.Call("relax.add", {scaled, ctx.Scalar(t, ctx.Float("bias", 1.0))}));
  KILN_ASSIGN_OR_RETURN(Expr denominator, ctx.Call("relax.power", {base, ctx.Scalar(t, beta)}));
  return OneOf(ctx.Call("relax.divide", {x, denominator}));
}

absl::StatusOr<Outputs> InstanceNorm(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr scale, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(Expr bias, ctx.Tensor(2));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  if (xs.size() < 3) return ctx.Error("needs an input of rank >= 3");
  std::vector<int64_t> axes;
  for (size_t k = 2; k < xs.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  ir::Attrs reduce = {{"axis", IntsAttr(axes)}, {"keepdims", IntAttr(1)}};
  DataType t = ctx.DType(x);
  KILN_ASSIGN_OR_RETURN(Expr mean, ctx.Call("relax.mean", {x}, reduce));
  KILN_ASSIGN_OR_RETURN(Expr d, ctx.Call("relax.subtract", {x, mean}));
  KILN_ASSIGN_OR_RETURN(Expr d2, ctx.Call("relax.multiply", {d, d}));
  KILN_ASSIGN_OR_RETURN(Expr var, ctx.Call("relax.mean", {d2}, reduce));
  KILN_ASSIGN_OR_RETURN(Expr var_eps,
                        ctx.Call("relax.add", {var, ctx.Scalar(t, ctx.Float("epsilon", 1e-5))}));
  KILN_ASSIGN_OR_RETURN(Expr root, ctx.Call("relax.sqrt", {var_eps}));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.divide", {d, root}));
  KILN_ASSIGN_OR_RETURN(scale, PerChannel(ctx, scale, xs.size()));
  KILN_ASSIGN_OR_RETURN(bias, PerChannel(ctx, bias, xs.size()));
  KILN_ASSIGN_OR_RETURN(y, ctx.Call("relax.multiply", {y, scale}));
  KILN_ASSIGN_OR_RETURN(y, ctx.Call("relax.add", {y, bias}));
  return One(y);
}

// LayerNormalization (opset 17): over the axes from `axis` to the last.
absl::StatusOr<Outputs> LayerNorm(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr scale, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  int64_t rank = static_cast<int64_t>(xs.size());
  int64_t axis = ctx.Int("axis", -1);
  if (axis < -rank || axis >= rank)
    return ctx.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  if (axis < 0) axis += rank;
  std::vector<int64_t> axes;
  std::vector<PrimExpr> norm_shape;
  for (int64_t k = axis; k < rank; ++k) {
    axes.push_back(k);
    norm_shape.push_back(xs[k]);
  }
  // Scale and bias may be given broadcastable; the Relax op wants the normalized shape.
  auto fit = [&](Expr v) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> vs, ctx.Shape(v));
    if (vs.size() == norm_shape.size()) {
      bool same = true;
      for (size_t k = 0; k < vs.size(); ++k)
        same = same && ctx.analyzer()->CanProveEqual(vs[k], norm_shape[k]);
      if (same) return v;
    }
    return ctx.Call("relax.broadcast_to", {v, MakeShape(norm_shape)});
  };
  KILN_ASSIGN_OR_RETURN(scale, fit(scale));
  Expr bias;
  if (ctx.Has(2)) {
    KILN_ASSIGN_OR_RETURN(bias, ctx.Tensor(2));
    KILN_ASSIGN_OR_RETURN(bias, fit(bias));
  } else {
    KILN_ASSIGN_OR_RETURN(bias, ctx.Call("relax.zeros", {MakeShape(norm_shape)},
                                         {{"dtype", StrAttr(ctx.DType(x).ToString())}}));
  }
  double epsilon = ctx.Float("epsilon", 1e-5);
  KILN_ASSIGN_OR_RETURN(Expr y,
                        ctx.Call("relax.nn.layer_norm", {x, scale, bias},
                                 {{"axes", IntsAttr(axes)}, {"epsilon", FloatAttr(epsilon)}}));
  Outputs outputs = One(y);
  // The optional Mean and InvStdDev outputs, reduced with the normalized axes kept as 1s.
  if (ctx.node().output_size() > 1) {
    ir::Attrs reduce = {{"axis", IntsAttr(axes)}, {"keepdims", IntAttr(1)}};
    KILN_ASSIGN_OR_RETURN(Expr mean, ctx.Call("relax.mean", {x}, reduce));
    KILN_ASSIGN_OR_RETURN(Expr var, ctx.Call("relax.variance", {x}, reduce));
    KILN_ASSIGN_OR_RETURN(Expr shifted,
                          ctx.Call("relax.add", {var, ctx.Scalar(ctx.DType(x), epsilon)}));
    KILN_ASSIGN_OR_RETURN(Expr inv_std, ctx.Call("relax.rsqrt", {shifted}));
    outputs.push_back(One(mean)[0]);
    outputs.push_back(One(inv_std)[0]);
  }
  return outputs;
}

}  // namespace

void RegisterNormConverters(ConverterTable* t) {
  (*t)["BatchNormalization"] = BatchNorm;
  (*t)["InstanceNormalization"] = InstanceNorm;
  (*t)["LRN"] = Lrn;
  (*t)["LayerNormalization"] = LayerNorm;
}

}  // namespace kiln::frontend::onnx_import
