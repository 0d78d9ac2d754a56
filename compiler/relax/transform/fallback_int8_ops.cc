// FallbackInt8Ops (transform.h).
#include <cstring>
#include <string>
#include <vector>

#include "compiler/ir/relax_functor.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/op_registry.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/relax/transform/utils.h"

namespace kiln::ir::relax {
namespace {

Expr FloatConstant(std::vector<int64_t> shape, const std::vector<float>& values) {
  std::string bytes(values.size() * 4, '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return MakeConstant(DataType::Float(32), std::move(shape), std::move(bytes));
}

Expr Scalar(double v) { return FloatConstant({}, {static_cast<float>(v)}); }

Expr Op(const char* name, std::vector<Expr> args, Attrs attrs = {}) {
  return MakeCall(GetOp(name), std::move(args), {}, std::move(attrs));
}

// The int8 weight byte k of int32 word `w`.
float Byte(uint32_t w, int k) { return static_cast<float>(static_cast<int8_t>(w >> (8 * k))); }

const uint32_t* Words(const ConstantNode& c) {
  return reinterpret_cast<const uint32_t*>(c.bytes->data());
}

int64_t IntAttrOr(const Attrs& attrs, const char* key, int64_t fallback) {
  ObjectRef v = GetAttr(attrs, key);
  const auto* i = v ? v.as<IntImmNode>() : nullptr;
  return i != nullptr ? i->value : fallback;
}

std::vector<float> Floats(const ConstantNode& c) {
  int64_t n = 1;
  for (int64_t d : c.shape) n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  if (c.dtype == DataType::Float(32)) {
    std::memcpy(out.data(), c.bytes->data(), out.size() * 4);
  } else {  // int32
    const auto* p = reinterpret_cast<const int32_t*>(c.bytes->data());
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(p[i]);
  }
  return out;
}

// uint8 data centered on its zero point, in float32: padding with zeros is then the zero point.
Expr Centered(const Expr& x, int64_t zero_point) {
  Expr xf = Op("relax.astype", {x}, {{"dtype", ir::Make<ir::StringImmNode>("float32")}});
  return zero_point == 0 ? xf : Op("relax.subtract", {xf, Scalar(static_cast<double>(zero_point))});
}

Expr Requantized(const CallNode& call, Expr acc, const std::vector<float>& bias,
                 const std::vector<float>& multiplier);

// The window attributes of an int8 convolution, for conv2d.
Attrs WindowAttrs(const CallNode& call) {
  Attrs attrs;
  for (const char* key : {"strides", "padding", "dilation"}) {
    if (ObjectRef v = GetAttr(call.attrs, key)) attrs.push_back({key, v});
  }
  return attrs;
}

// qnn.conv2d_int8 -> conv2d of the centered data by the float weights, the bias (the zero
// point's share put back) and the requantization as elementwise operators.
Expr FallbackConv(const CallNode& call) {
  const auto* w = call.args[1].as<ConstantNode>();
  const auto* bias = call.args[2].as<ConstantNode>();
  const auto* mult = call.args[3].as<ConstantNode>();
  const auto* x = call.args[0]->struct_info().as<TensorStructInfoNode>();
  const std::vector<PrimExpr>* xd = x != nullptr ? x->dims() : nullptr;
  if (w == nullptr || bias == nullptr || mult == nullptr || xd == nullptr || w->shape.size() != 5 ||
      !AsConstInt((*xd)[1])) {
    return Expr();
  }
  const int64_t block = w->shape[4], words = w->shape[1], kh = w->shape[2], kw = w->shape[3];
  const int64_t out_c = w->shape[0] * block, in_c = *AsConstInt((*xd)[1]);
  const int64_t zx = IntAttrOr(call.attrs, "input_zero_point", 0);
  std::vector<float> weight(static_cast<size_t>(out_c * in_c * kh * kw));
  std::vector<float> b = Floats(*bias);
  for (int64_t o = 0; o < out_c; ++o) {
    double sum = 0;
    for (int64_t c = 0; c < in_c; ++c) {
      for (int64_t i = 0; i < kh; ++i) {
        for (int64_t j = 0; j < kw; ++j) {
          const uint32_t word =
              Words(*w)[ops::Int8ConvWeightWord(o, c, i, j, words, kh, kw, block)];
          const float v = Byte(word, static_cast<int>(c % 4));
          weight[((o * in_c + c) * kh + i) * kw + j] = v;
          sum += v;
        }
      }
    }
    b[o] += static_cast<float>(zx * sum);  // the bias before the zero point's share came off
  }
  Attrs conv_attrs = WindowAttrs(call);
  Expr acc =
      Op("relax.nn.conv2d",
         {Centered(call.args[0], zx), FloatConstant({out_c, in_c, kh, kw}, weight)}, conv_attrs);
  return Requantized(call, acc, b, Floats(*mult));
}

// (acc + bias) × multiplier, per channel of NCHW `acc`, requantized as the int8 operators store.
Expr Requantized(const CallNode& call, Expr acc, const std::vector<float>& bias,
                 const std::vector<float>& multiplier) {
  const int64_t channels = static_cast<int64_t>(bias.size());
  acc = Op("relax.add", {acc, FloatConstant({1, channels, 1, 1}, bias)});
  acc = Op("relax.multiply", {acc, FloatConstant({1, channels, 1, 1}, multiplier)});
  const int64_t zy = IntAttrOr(call.attrs, "output_zero_point", 0);
  const double low = static_cast<double>(IntAttrOr(call.attrs, "out_min", 0) - zy);
  const double high = static_cast<double>(IntAttrOr(call.attrs, "out_max", 255) - zy);
  acc = Op(
      "relax.clip", {acc},
      {{"min", FloatImm(DataType::Float(64), low)}, {"max", FloatImm(DataType::Float(64), high)}});
  acc = Op("relax.nearbyint", {acc});
  if (zy != 0) acc = Op("relax.add", {acc, Scalar(static_cast<double>(zy))});
  return Op("relax.astype", {acc}, {{"dtype", ir::Make<ir::StringImmNode>("uint8")}});
}

// qnn.depthwise_conv2d_int8 -> the float32 depthwise conv2d (its weights already float), so
// that it gets the float path's layouts.
Expr FallbackDepthwise(const CallNode& call) {
  const auto* w = call.args[1].as<ConstantNode>();
  const auto* bias = call.args[2].as<ConstantNode>();
  const auto* mult = call.args[3].as<ConstantNode>();
  if (w == nullptr || bias == nullptr || mult == nullptr || w->shape.size() != 3) return Expr();
  const int64_t channels = w->shape[0];
  const int64_t zx = IntAttrOr(call.attrs, "input_zero_point", 0);
  std::vector<float> b = Floats(*bias);
  const std::vector<float> weight = Floats(*w);
  const int64_t taps = w->shape[1] * w->shape[2];
  for (int64_t c = 0; c < channels; ++c) {
    double sum = 0;
    for (int64_t t = 0; t < taps; ++t) sum += weight[c * taps + t];
    b[c] += static_cast<float>(zx * sum);
  }
  Attrs attrs = WindowAttrs(call);
  attrs.push_back({"groups", IntImm(DataType::Int(64), channels)});
  Expr acc = Op(
      "relax.nn.conv2d",
      {Centered(call.args[0], zx), FloatConstant({channels, 1, w->shape[1], w->shape[2]}, weight)},
      attrs);
  return Requantized(call, acc, b, Floats(*mult));
}

// qnn.dense_int8 -> matmul of the data in float32 by the float weights, plus the correction,
// rounded back to int32.
Expr FallbackDense(const CallNode& call) {
  const auto* w = call.args[1].as<ConstantNode>();
  const auto* corr = call.args[2].as<ConstantNode>();
  const auto* x = call.args[0]->struct_info().as<TensorStructInfoNode>();
  const std::vector<PrimExpr>* xd = x != nullptr ? x->dims() : nullptr;
  if (w == nullptr || corr == nullptr || xd == nullptr || xd->size() != 2 ||
      !AsConstInt((*xd)[1]) || w->shape.size() != 3) {
    return Expr();
  }
  const int64_t block = w->shape[2], words = w->shape[1], n = w->shape[0] * block;
  const int64_t k = *AsConstInt((*xd)[1]);
  std::vector<float> weight(static_cast<size_t>(k * n));
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      weight[r * n + c] =
          Byte(Words(*w)[ops::Int8DenseWeightWord(r, c, words, block)], static_cast<int>(r % 4));
    }
  }
  Expr acc = Op("relax.matmul", {Centered(call.args[0], 0), FloatConstant({k, n}, weight)});
  acc = Op("relax.add", {acc, FloatConstant({n}, Floats(*corr))});
  acc = Op("relax.nearbyint", {acc});
  return Op("relax.astype", {acc}, {{"dtype", ir::Make<ir::StringImmNode>("int32")}});
}

class Int8Fallback : public ExprMutator {
 public:
  Expr VisitExpr(const Expr& e) override {
    Expr visited = DefaultVisitExpr(e);
    const auto* call = visited.as<CallNode>();
    if (call == nullptr) return visited;
    const std::string op = OpName(call);
    Expr replaced = op == "relax.qnn.conv2d_int8"             ? FallbackConv(*call)
                    : op == "relax.qnn.depthwise_conv2d_int8" ? FallbackDepthwise(*call)
                    : op == "relax.qnn.dense_int8"            ? FallbackDense(*call)
                                                              : Expr();
    return replaced ? replaced : visited;
  }
};

}  // namespace

absl::StatusOr<IRModule> FallbackInt8Ops(const IRModule& mod, const target::CpuPolicy& policy) {
  if (policy.int8_kernels) return mod;
  IRModuleBuilder out(mod);
  bool changed = false;
  for (const auto& [name, entry] : mod->functions) {
    const auto* f = entry.second.as<FunctionNode>();
    if (f == nullptr) continue;
    Expr body = Int8Fallback().VisitExpr(f->body);
    if (body.get() == f->body.get()) continue;  // no int8 operator: nothing to normalize
    changed = true;
    out.Update(entry.first,
               MakeFunction(f->params, body, f->ret_struct_info, f->is_pure, f->attrs));
  }
  return changed ? NormalizeModule(out.Build()) : mod;
}

}  // namespace kiln::ir::relax
