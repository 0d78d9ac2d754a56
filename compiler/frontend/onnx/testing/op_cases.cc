#include "compiler/frontend/onnx/testing/op_cases.h"

#include <cstring>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "compiler/backend/testing/model_test_util.h"

namespace kiln::frontend::testing {
namespace {

using backend::testing::Array;
using backend::testing::Random;
using backend::testing::ToTensor;
using A = std::vector<onnx::AttributeProto>;
using Dims = std::vector<int64_t>;

constexpr int kF = onnx::TensorProto::FLOAT;
constexpr int kI64 = onnx::TensorProto::INT64;
constexpr int kI32 = onnx::TensorProto::INT32;
constexpr int kBool = onnx::TensorProto::BOOL;

// Fixed-seed values, drawn in order from one counter that AllOpCases resets: the same cases
// always get the same inputs and weights.
uint32_t next_seed = 1;

Array Values(const Dims& shape, double lo = -2, double hi = 2) {
  return Random(shape, next_seed++, lo, hi);
}

runtime::Tensor FloatInput(const Dims& shape, double lo = -2, double hi = 2) {
  return ToTensor(Values(shape, lo, hi), "float32");
}

runtime::Tensor IntInput(const Dims& shape, const std::vector<int64_t>& values) {
  Array a;
  a.shape = shape;
  for (int64_t v : values) a.data.push_back(static_cast<double>(v));
  return ToTensor(a, "int64");
}

// Small integers stored as floats: ties for ArgMax and exact comparisons.
runtime::Tensor IntegralFloats(const Dims& shape, int levels) {
  Array a = Values(shape, 0, levels);
  for (double& v : a.data) v = std::floor(v);
  return ToTensor(a, "float32");
}

onnx::TensorProto FloatInit(const std::string& name, const Dims& shape, double lo = -1,
                            double hi = 1) {
  Array a = Values(shape, lo, hi);
  return FloatTensor(name, shape, std::vector<float>(a.data.begin(), a.data.end()));
}

onnx::TensorProto Scalar(const std::string& name, float v) { return FloatTensor(name, {}, {v}); }

OpCase Case(std::string name, int opset) {
  return OpCase{std::move(name), GraphBuilder(opset), {}};
}

// x -> op -> y, one float input.
OpCase Unary(const std::string& name, const std::string& op, const Dims& shape, A attrs = {},
             double lo = -2, double hi = 2, int opset = 13) {
  OpCase c = Case(name, opset);
  c.graph.Input("x", kF, shape).Output("y", kF).Node(op, {"x"}, {"y"}, attrs);
  c.inputs = {FloatInput(shape, lo, hi)};
  return c;
}

// (a, b) -> op -> y with broadcasting.
OpCase Binary(const std::string& name, const std::string& op, const Dims& a, const Dims& b,
              int out_type = kF, double lo = -2, double hi = 2) {
  OpCase c = Case(name, 13);
  c.graph.Input("a", kF, a).Input("b", kF, b).Output("y", out_type).Node(op, {"a", "b"}, {"y"});
  c.inputs = {FloatInput(a, lo, hi), FloatInput(b, lo, hi)};
  return c;
}

// x -> op(x, W[, B]) with initializers.
OpCase Conv(const std::string& name, const Dims& x, const Dims& w, bool bias, A attrs) {
  OpCase c = Case(name, 13);
  std::vector<std::string> in = {"x", "W"};
  c.graph.Input("x", kF, x).Output("y", kF).Init(FloatInit("W", w));
  if (bias) {
    c.graph.Init(FloatInit("B", {w[0]}));
    in.push_back("B");
  }
  c.graph.Node("Conv", in, {"y"}, attrs);
  c.inputs = {FloatInput(x)};
  return c;
}

OpCase Pool(const std::string& name, const std::string& op, const Dims& x, A attrs) {
  return Unary(name, op, x, std::move(attrs));
}

OpCase Resize(const std::string& name, const Dims& x, const std::string& what,
              const std::vector<float>& values, A attrs) {
  OpCase c = Case(name, 13);
  c.graph.Input("x", kF, x).Output("y", kF);
  if (what == "scales") {
    c.graph.Init(FloatTensor("scales", {4}, values));
    c.graph.Node("Resize", {"x", "", "scales"}, {"y"}, attrs);
  } else {
    c.graph.Init(IntTensor("sizes", {4}, Dims(values.begin(), values.end())));
    c.graph.Node("Resize", {"x", "", "", "sizes"}, {"y"}, attrs);
  }
  c.inputs = {FloatInput(x)};
  return c;
}

OpCase Einsum(const std::string& name, const std::string& equation, const std::vector<Dims>& in) {
  OpCase c = Case(name, 13);
  std::vector<std::string> names;
  for (size_t k = 0; k < in.size(); ++k) {
    names.push_back("x" + std::to_string(k));
    c.graph.Input(names.back(), kF, in[k]);
    c.inputs.push_back(FloatInput(in[k]));
  }
  c.graph.Output("y", kF).Node("Einsum", names, {"y"}, {AttrString("equation", equation)});
  return c;
}

void AddConvCases(std::vector<OpCase>* cases) {
  cases->push_back(
      Conv("conv_basic", {1, 4, 7, 7}, {6, 4, 3, 3}, true, {AttrInts("pads", {1, 1, 1, 1})}));
  cases->push_back(Conv("conv_stride_dilation", {1, 4, 9, 9}, {5, 4, 3, 3}, false,
                        {AttrInts("strides", {2, 2}), AttrInts("dilations", {2, 2}),
                         AttrInts("pads", {2, 1, 2, 1})}));
  cases->push_back(Conv("conv_asymmetric_pads", {1, 3, 6, 6}, {4, 3, 3, 3}, true,
                        {AttrInts("pads", {0, 1, 2, 0})}));
  cases->push_back(Conv("conv_groups", {2, 4, 6, 6}, {6, 2, 3, 3}, true, {AttrInt("group", 2)}));
  cases->push_back(
      Conv("conv_depthwise", {1, 4, 8, 8}, {4, 1, 3, 3}, true,
           {AttrInt("group", 4), AttrInts("pads", {1, 1, 1, 1}), AttrInts("strides", {2, 2})}));
  cases->push_back(Conv("conv_same_upper", {1, 4, 7, 7}, {4, 4, 4, 4}, false,
                        {AttrString("auto_pad", "SAME_UPPER"), AttrInts("strides", {2, 2})}));
  cases->push_back(Conv("conv_same_lower", {1, 4, 7, 7}, {4, 4, 4, 4}, true,
                        {AttrString("auto_pad", "SAME_LOWER"), AttrInts("strides", {2, 2})}));
  cases->push_back(Conv("conv_valid", {1, 2, 5, 6}, {3, 2, 2, 2}, true,
                        {AttrString("auto_pad", "VALID"), AttrInts("kernel_shape", {2, 2})}));
  cases->push_back(Conv("conv_1d", {2, 3, 10}, {4, 3, 3}, true,
                        {AttrInts("pads", {1, 1}), AttrInts("strides", {2})}));
}

// Added after the others, so that their seeds (and committed references) stay as they were.
void AddConv3dCases(std::vector<OpCase>* cases) {
  // 3-D: 16 output channels over a reduction of 81 (the packed OIDHW16o weight), then strides,
  // dilations and asymmetric pads per axis, groups, and a depthwise one.
  cases->push_back(Conv("conv_3d", {1, 3, 5, 6, 7}, {16, 3, 3, 3, 3}, true,
                        {AttrInts("pads", {1, 1, 1, 1, 1, 1})}));
  cases->push_back(Conv("conv_3d_strides_dilations", {2, 4, 7, 8, 9}, {5, 4, 3, 2, 3}, false,
                        {AttrInts("strides", {2, 1, 2}), AttrInts("dilations", {1, 2, 1}),
                         AttrInts("pads", {0, 1, 2, 1, 0, 1})}));
  cases->push_back(
      Conv("conv_3d_groups", {1, 4, 4, 5, 5}, {6, 2, 3, 3, 3}, true, {AttrInt("group", 2)}));
  cases->push_back(Conv(
      "conv_3d_depthwise", {1, 4, 5, 5, 5}, {4, 1, 3, 3, 3}, true,
      {AttrInt("group", 4), AttrInts("pads", {1, 1, 1, 1, 1, 1}), AttrInts("strides", {2, 2, 2})}));
}

void AddMatrixCases(std::vector<OpCase>* cases) {
  {
    OpCase c = Case("gemm_transb_bias", 13);
    c.graph.Input("a", kF, {3, 5}).Output("y", kF).Init(FloatInit("B", {4, 5}));
    c.graph.Init(FloatInit("C", {4})).Node("Gemm", {"a", "B", "C"}, {"y"}, {AttrInt("transB", 1)});
    c.inputs = {FloatInput({3, 5})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("gemm_transa_alpha_beta", 13);
    c.graph.Input("a", kF, {5, 3}).Output("y", kF).Init(FloatInit("B", {5, 4}));
    c.graph.Init(FloatInit("C", {3, 4}))
        .Node("Gemm", {"a", "B", "C"}, {"y"},
              {AttrInt("transA", 1), AttrFloat("alpha", 0.5f), AttrFloat("beta", 2.0f)});
    c.inputs = {FloatInput({5, 3})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("gemm_no_c", 11);
    c.graph.Input("a", kF, {2, 3}).Input("b", kF, {3, 4}).Output("y", kF);
    c.graph.Node("Gemm", {"a", "b"}, {"y"});
    c.inputs = {FloatInput({2, 3}), FloatInput({3, 4})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("gemm_dynamic_batch", 13);
    c.graph.Input("a", kF, {-1, 5}, {"N"}).Output("y", kF).Init(FloatInit("B", {4, 5}));
    c.graph.Init(FloatInit("C", {4})).Node("Gemm", {"a", "B", "C"}, {"y"}, {AttrInt("transB", 1)});
    c.inputs = {FloatInput({3, 5})};
    cases->push_back(std::move(c));
  }
  cases->push_back(Binary("matmul_2d", "MatMul", {3, 4}, {4, 5}));
  cases->push_back(Binary("matmul_batched", "MatMul", {2, 3, 4}, {4, 5}));
  cases->push_back(Binary("matmul_vector", "MatMul", {4}, {2, 4, 3}));
  cases->push_back(
      Einsum("einsum_attention_scores", "bhqd,bhkd->bhqk", {{2, 2, 3, 4}, {2, 2, 5, 4}}));
  cases->push_back(
      Einsum("einsum_attention_values", "bhqk,bhkd->bhqd", {{2, 2, 3, 5}, {2, 2, 5, 4}}));
  cases->push_back(Einsum("einsum_batched_matmul", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}));
  cases->push_back(Einsum("einsum_linear", "bsd,hd->bsh", {{2, 3, 4}, {5, 4}}));
  cases->push_back(Einsum("einsum_heads_merge", "bqhd,hdo->bqo", {{2, 3, 2, 4}, {2, 4, 5}}));
  cases->push_back(Einsum("einsum_transpose", "ij->ji", {{3, 4}}));
  cases->push_back(Einsum("einsum_sum", "bij->bj", {{2, 3, 4}}));
  cases->push_back(Einsum("einsum_outer", "i,j->ij", {{3}, {4}}));
  cases->push_back(Einsum("einsum_dot_implicit", "i,i", {{6}, {6}}));
}

void AddElementwiseCases(std::vector<OpCase>* cases) {
  cases->push_back(Binary("add_broadcast", "Add", {2, 3, 4}, {4}));
  cases->push_back(Binary("sub_broadcast", "Sub", {2, 1, 4}, {3, 1}));
  cases->push_back(Binary("mul_scalar_shape", "Mul", {3, 4}, {1}));
  cases->push_back(Binary("div", "Div", {2, 3}, {2, 3}, kF, 0.5, 2));
  cases->push_back(Binary("pow_tensor", "Pow", {2, 3}, {2, 3}, kF, 0.5, 2));
  for (float p : {2.0f, 3.0f, 0.5f}) {
    std::string name = p == 2 ? "pow_square" : p == 3 ? "pow_cube" : "pow_sqrt";
    OpCase c = Case(name, 13);
    c.graph.Input("x", kF, {2, 5}).Output("y", kF).Init(Scalar("p", p));
    c.graph.Node("Pow", {"x", "p"}, {"y"});
    c.inputs = {FloatInput({2, 5}, 0.1, 2)};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("max_variadic", 13);
    c.graph.Input("a", kF, {2, 3}).Input("b", kF, {3}).Input("c", kF, {2, 1}).Output("y", kF);
    c.graph.Node("Max", {"a", "b", "c"}, {"y"});
    c.inputs = {FloatInput({2, 3}), FloatInput({3}), FloatInput({2, 1})};
    cases->push_back(std::move(c));
  }
  cases->push_back(Binary("min_binary", "Min", {2, 3}, {2, 3}));
  cases->push_back(Unary("sqrt", "Sqrt", {2, 6}, {}, 0.1, 4));
  cases->push_back(Unary("neg", "Neg", {2, 6}));
  cases->push_back(Unary("exp", "Exp", {2, 6}));
  cases->push_back(Unary("log", "Log", {2, 6}, {}, 0.1, 4));
  cases->push_back(Unary("erf", "Erf", {2, 6}));
  cases->push_back(Unary("tanh", "Tanh", {2, 6}));
  cases->push_back(Unary("sigmoid", "Sigmoid", {2, 6}));
  cases->push_back(Unary("relu", "Relu", {2, 6}));
  cases->push_back(Unary("leaky_relu_default", "LeakyRelu", {2, 6}));
  cases->push_back(Unary("leaky_relu_alpha", "LeakyRelu", {2, 6}, {AttrFloat("alpha", 0.3f)}));
  cases->push_back(Unary("hard_sigmoid", "HardSigmoid", {2, 6},
                         {AttrFloat("alpha", 0.3f), AttrFloat("beta", 0.4f)}, -4, 4));
  cases->push_back(Unary("hard_swish", "HardSwish", {2, 6}, {}, -5, 5, 14));
  {
    OpCase c = Case("clip_min_max", 13);
    c.graph.Input("x", kF, {3, 4})
        .Output("y", kF)
        .Init(Scalar("lo", -0.5f))
        .Init(Scalar("hi", 0.7f));
    c.graph.Node("Clip", {"x", "lo", "hi"}, {"y"});
    c.inputs = {FloatInput({3, 4})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("clip_min_only", 11);
    c.graph.Input("x", kF, {3, 4}).Output("y", kF).Init(Scalar("lo", 0.25f));
    c.graph.Node("Clip", {"x", "lo"}, {"y"});
    c.inputs = {FloatInput({3, 4})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("where_greater", 13);
    c.graph.Input("a", kF, {2, 4}).Input("b", kF, {4}).Output("y", kF);
    c.graph.Node("Greater", {"a", "b"}, {"g"}).Node("Where", {"g", "a", "b"}, {"y"});
    c.inputs = {FloatInput({2, 4}), FloatInput({4})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("equal_int", 13);
    c.graph.Input("a", kI64, {2, 4}).Input("b", kI64, {4}).Output("y", kBool);
    c.graph.Node("Equal", {"a", "b"}, {"y"});
    c.inputs = {IntInput({2, 4}, {1, 2, 3, 4, 4, 3, 2, 1}), IntInput({4}, {1, 3, 2, 1})};
    cases->push_back(std::move(c));
  }
  cases->push_back(Binary("less", "Less", {3, 4}, {4}, kBool));
  cases->push_back(Binary("greater", "Greater", {3, 4}, {3, 1}, kBool));
  {
    OpCase c = Case("not_less", 13);
    c.graph.Input("a", kF, {3, 4}).Input("b", kF, {3, 4}).Output("y", kBool);
    c.graph.Node("Less", {"a", "b"}, {"l"}).Node("Not", {"l"}, {"y"});
    c.inputs = {FloatInput({3, 4}), FloatInput({3, 4})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("cast_float_to_int32", 13);
    c.graph.Input("x", kF, {2, 5}).Output("y", kI32);
    c.graph.Node("Cast", {"x"}, {"y"}, {AttrInt("to", kI32)});
    c.inputs = {FloatInput({2, 5}, -5, 5)};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("cast_int_to_float", 13);
    c.graph.Input("x", kI64, {5}).Output("y", kF);
    c.graph.Node("Cast", {"x"}, {"y"}, {AttrInt("to", kF)});
    c.inputs = {IntInput({5}, {-3, 0, 7, 100000, -42})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("cast_float_to_bool", 13);
    c.graph.Input("x", kF, {6}).Output("y", kBool);
    c.graph.Node("Cast", {"x"}, {"y"}, {AttrInt("to", kBool)});
    c.inputs = {IntegralFloats({6}, 2)};
    cases->push_back(std::move(c));
  }
  cases->push_back(Unary("identity", "Identity", {2, 3}));
  cases->push_back(Unary("dropout_inference", "Dropout", {2, 3}));
}

void AddReductionCases(std::vector<OpCase>* cases) {
  cases->push_back(Unary("softmax_axis1", "Softmax", {2, 3, 4}, {AttrInt("axis", 1)}));
  cases->push_back(
      Unary("softmax_opset11_flatten", "Softmax", {2, 3, 4}, {AttrInt("axis", 1)}, -2, 2, 11));
  cases->push_back(Unary("log_softmax_default", "LogSoftmax", {2, 3, 4}));
  cases->push_back(Unary("log_softmax_opset11", "LogSoftmax", {2, 3, 4}, {}, -2, 2, 11));
  cases->push_back(Unary("reduce_mean_keepdims", "ReduceMean", {2, 3, 4}, {AttrInts("axes", {1})}));
  cases->push_back(Unary("reduce_max_all", "ReduceMax", {2, 3, 4}, {AttrInt("keepdims", 0)}));
  cases->push_back(Unary("reduce_min_last", "ReduceMin", {2, 3, 4}, {AttrInts("axes", {-1})}));
  {
    OpCase c = Case("reduce_sum_axes_input", 13);
    c.graph.Input("x", kF, {2, 3, 4}).Output("y", kF).Init(IntTensor("axes", {2}, {0, 2}));
    c.graph.Node("ReduceSum", {"x", "axes"}, {"y"}, {AttrInt("keepdims", 0)});
    c.inputs = {FloatInput({2, 3, 4})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("reduce_sum_opset11_attr", 11);
    c.graph.Input("x", kF, {2, 3, 4}).Output("y", kF);
    c.graph.Node("ReduceSum", {"x"}, {"y"}, {AttrInts("axes", {1, 2})});
    c.inputs = {FloatInput({2, 3, 4})};
    cases->push_back(std::move(c));
  }
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (int last : {0, 1}) {
      OpCase c = Case(std::string(op == std::string("ArgMax") ? "argmax" : "argmin") +
                          (last ? "_last_index" : "_first_index"),
                      13);
      c.graph.Input("x", kF, {3, 6}).Output("y", kI64);
      c.graph.Node(
          op, {"x"}, {"y"},
          {AttrInt("axis", 1), AttrInt("keepdims", last), AttrInt("select_last_index", last)});
      c.inputs = {IntegralFloats({3, 6}, 3)};
      cases->push_back(std::move(c));
    }
  }
}

void AddNormPoolCases(std::vector<OpCase>* cases) {
  {
    OpCase c = Case("layer_norm_last_axis", 17);
    c.graph.Input("x", kF, {2, 3, 8})
        .Output("y", kF)
        .Init(FloatInit("s", {8}))
        .Init(FloatInit("b", {8}));
    c.graph.Node("LayerNormalization", {"x", "s", "b"}, {"y"}, {AttrFloat("epsilon", 1e-5f)});
    c.inputs = {FloatInput({2, 3, 8})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("layer_norm_axis1_no_bias", 17);
    c.graph.Input("x", kF, {2, 3, 4}).Output("y", kF).Init(FloatInit("s", {3, 4}));
    c.graph.Node("LayerNormalization", {"x", "s"}, {"y"}, {AttrInt("axis", 1)});
    c.inputs = {FloatInput({2, 3, 4})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("batch_norm", 15);
    c.graph.Input("x", kF, {2, 3, 4, 4}).Output("y", kF).Init(FloatInit("s", {3}));
    c.graph.Init(FloatInit("b", {3})).Init(FloatInit("m", {3})).Init(FloatInit("v", {3}, 0.5, 2));
    c.graph.Node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"},
                 {AttrFloat("epsilon", 1e-3f)});
    c.inputs = {FloatInput({2, 3, 4, 4})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("instance_norm", 13);
    c.graph.Input("x", kF, {2, 3, 5, 5}).Output("y", kF).Init(FloatInit("s", {3}));
    c.graph.Init(FloatInit("b", {3}));
    c.graph.Node("InstanceNormalization", {"x", "s", "b"}, {"y"}, {AttrFloat("epsilon", 1e-3f)});
    c.inputs = {FloatInput({2, 3, 5, 5})};
    cases->push_back(std::move(c));
  }
  cases->push_back(Pool("max_pool_pads_strides", "MaxPool", {1, 2, 7, 7},
                        {AttrInts("kernel_shape", {3, 3}), AttrInts("strides", {2, 2}),
                         AttrInts("pads", {1, 1, 1, 1})}));
  cases->push_back(Pool(
      "max_pool_ceil", "MaxPool", {1, 2, 7, 7},
      {AttrInts("kernel_shape", {2, 2}), AttrInts("strides", {2, 2}), AttrInt("ceil_mode", 1)}));
  cases->push_back(Pool("max_pool_dilation", "MaxPool", {1, 2, 7, 7},
                        {AttrInts("kernel_shape", {2, 2}), AttrInts("dilations", {2, 2})}));
  cases->push_back(Pool("max_pool_same_upper", "MaxPool", {1, 2, 7, 7},
                        {AttrInts("kernel_shape", {3, 3}), AttrInts("strides", {2, 2}),
                         AttrString("auto_pad", "SAME_UPPER")}));
  cases->push_back(Pool("max_pool_1d", "MaxPool", {1, 2, 9},
                        {AttrInts("kernel_shape", {3}), AttrInts("strides", {2})}));
  cases->push_back(Pool("avg_pool_exclude_pad", "AveragePool", {1, 2, 7, 7},
                        {AttrInts("kernel_shape", {3, 3}), AttrInts("strides", {2, 2}),
                         AttrInts("pads", {1, 1, 1, 1})}));
  cases->push_back(Pool("avg_pool_include_pad", "AveragePool", {1, 2, 7, 7},
                        {AttrInts("kernel_shape", {3, 3}), AttrInts("strides", {2, 2}),
                         AttrInts("pads", {1, 1, 1, 1}), AttrInt("count_include_pad", 1)}));
  cases->push_back(Pool(
      "avg_pool_ceil", "AveragePool", {1, 2, 8, 8},
      {AttrInts("kernel_shape", {3, 3}), AttrInts("strides", {2, 2}), AttrInt("ceil_mode", 1)}));
  cases->push_back(Unary("global_average_pool", "GlobalAveragePool", {2, 3, 4, 5}));
}

void AddShapeCases(std::vector<OpCase>* cases) {
  cases->push_back(Unary("flatten_axis2", "Flatten", {2, 3, 4, 5}, {AttrInt("axis", 2)}));
  cases->push_back(Unary("flatten_default", "Flatten", {2, 3, 4}));
  {
    OpCase c = Case("reshape_zero_and_infer", 13);
    c.graph.Input("x", kF, {2, 3, 4}).Output("y", kF).Init(IntTensor("shape", {2}, {0, -1}));
    c.graph.Node("Reshape", {"x", "shape"}, {"y"});
    c.inputs = {FloatInput({2, 3, 4})};
    cases->push_back(std::move(c));
  }
  cases->push_back(Unary("transpose_perm", "Transpose", {2, 3, 4}, {AttrInts("perm", {2, 0, 1})}));
  cases->push_back(Unary("transpose_default", "Transpose", {2, 3, 4}));
  {
    OpCase c = Case("concat_negative_axis", 13);
    c.graph.Input("a", kF, {2, 3}).Input("b", kF, {2, 1}).Input("c", kF, {2, 2}).Output("y", kF);
    c.graph.Node("Concat", {"a", "b", "c"}, {"y"}, {AttrInt("axis", -1)});
    c.inputs = {FloatInput({2, 3}), FloatInput({2, 1}), FloatInput({2, 2})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("split_attr_opset11", 11);
    c.graph.Input("x", kF, {6, 4}).Output("y0", kF).Output("y1", kF);
    c.graph.Node("Split", {"x"}, {"y0", "y1"}, {AttrInts("split", {2, 4})});
    c.inputs = {FloatInput({6, 4})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("split_input_opset13", 13);
    c.graph.Input("x", kF, {2, 6}).Output("y0", kF).Output("y1", kF).Output("y2", kF);
    c.graph.Init(IntTensor("split", {3}, {1, 2, 3}));
    c.graph.Node("Split", {"x", "split"}, {"y0", "y1", "y2"}, {AttrInt("axis", 1)});
    c.inputs = {FloatInput({2, 6})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("split_equal", 13);
    c.graph.Input("x", kF, {2, 6}).Output("y0", kF).Output("y1", kF).Output("y2", kF);
    c.graph.Node("Split", {"x"}, {"y0", "y1", "y2"}, {AttrInt("axis", 1)});
    c.inputs = {FloatInput({2, 6})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("slice_axes_clamped", 13);
    c.graph.Input("x", kF, {4, 6}).Output("y", kF).Init(IntTensor("starts", {2}, {1, -4}));
    c.graph.Init(IntTensor("ends", {2}, {3, 1000})).Init(IntTensor("axes", {2}, {0, 1}));
    c.graph.Node("Slice", {"x", "starts", "ends", "axes"}, {"y"});
    c.inputs = {FloatInput({4, 6})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("slice_negative_step", 13);
    c.graph.Input("x", kF, {5, 6}).Output("y", kF).Init(IntTensor("starts", {1}, {-1}));
    c.graph.Init(IntTensor("ends", {1}, {std::numeric_limits<int64_t>::min()}));
    c.graph.Init(IntTensor("axes", {1}, {1})).Init(IntTensor("steps", {1}, {-2}));
    c.graph.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
    c.inputs = {FloatInput({5, 6})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("gather_axis1_negative", 13);
    c.graph.Input("x", kF, {3, 5}).Output("y", kF).Init(IntTensor("i", {2, 2}, {0, -1, 4, 2}));
    c.graph.Node("Gather", {"x", "i"}, {"y"}, {AttrInt("axis", 1)});
    c.inputs = {FloatInput({3, 5})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("gather_scalar_index", 13);
    c.graph.Input("x", kF, {4, 3}).Output("y", kF).Init(IntTensor("i", {}, {2}));
    c.graph.Node("Gather", {"x", "i"}, {"y"});
    c.inputs = {FloatInput({4, 3})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("gather_runtime_indices", 13);
    c.graph.Input("x", kF, {5, 2}).Input("i", kI64, {4}).Output("y", kF);
    c.graph.Node("Gather", {"x", "i"}, {"y"});
    c.inputs = {FloatInput({5, 2}), IntInput({4}, {4, 0, -2, 1})};
    cases->push_back(std::move(c));
  }
  cases->push_back(
      Unary("unsqueeze_opset11", "Unsqueeze", {3, 4}, {AttrInts("axes", {0, 3})}, -2, 2, 11));
  {
    OpCase c = Case("unsqueeze_opset13", 13);
    c.graph.Input("x", kF, {3, 4}).Output("y", kF).Init(IntTensor("axes", {1}, {-2}));
    c.graph.Node("Unsqueeze", {"x", "axes"}, {"y"});
    c.inputs = {FloatInput({3, 4})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("squeeze_axes_input", 13);
    c.graph.Input("x", kF, {1, 3, 1, 4}).Output("y", kF).Init(IntTensor("axes", {2}, {0, 2}));
    c.graph.Node("Squeeze", {"x", "axes"}, {"y"});
    c.inputs = {FloatInput({1, 3, 1, 4})};
    cases->push_back(std::move(c));
  }
  cases->push_back(Unary("squeeze_all", "Squeeze", {1, 3, 1, 4}, {}, -2, 2, 11));
  {
    OpCase c = Case("expand_bidirectional", 13);
    c.graph.Input("x", kF, {3, 1}).Output("y", kF).Init(IntTensor("shape", {3}, {2, 1, 4}));
    c.graph.Node("Expand", {"x", "shape"}, {"y"});
    c.inputs = {FloatInput({3, 1})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("tile", 13);
    c.graph.Input("x", kF, {2, 3}).Output("y", kF).Init(IntTensor("r", {2}, {2, 3}));
    c.graph.Node("Tile", {"x", "r"}, {"y"});
    c.inputs = {FloatInput({2, 3})};
    cases->push_back(std::move(c));
  }
  {
    // The attention reshape of exported transformers, over a symbolic batch: Shape -> Gather ->
    // Unsqueeze -> Concat -> Reshape, folded at import time.
    OpCase c = Case("shape_driven_reshape", 13);
    c.graph.Input("x", kF, {-1, 4, 6}, {"N"}).Output("y", kF);
    c.graph.Init(IntTensor("zero", {}, {0})).Init(IntTensor("ax0", {1}, {0}));
    c.graph.Init(IntTensor("rest", {1}, {-1}));
    c.graph.Node("Shape", {"x"}, {"s"})
        .Node("Gather", {"s", "zero"}, {"n"})
        .Node("Unsqueeze", {"n", "ax0"}, {"n1"})
        .Node("Concat", {"n1", "rest"}, {"target"}, {AttrInt("axis", 0)})
        .Node("Reshape", {"x", "target"}, {"y"});
    c.inputs = {FloatInput({2, 4, 6})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("shape_start_end", 15);
    c.graph.Input("x", kF, {2, 3, 5}).Output("y", kI64);
    c.graph.Node("Shape", {"x"}, {"y"}, {AttrInt("start", 1)});
    c.inputs = {FloatInput({2, 3, 5})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("constant_tensor", 13);
    c.graph.Input("x", kF, {3, 4}).Output("y", kF);
    c.graph.Node("Constant", {}, {"k"},
                 {AttrTensor("value", FloatTensor("", {4}, {1, -2, 3.5f, 0}))});
    c.graph.Node("Add", {"x", "k"}, {"y"});
    c.inputs = {FloatInput({3, 4})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("constant_value_floats", 13);
    c.graph.Input("x", kF, {2, 3}).Output("y", kF);
    c.graph.Node("Constant", {}, {"k"}, {AttrFloats("value_floats", {0.5f, 2, -1})});
    c.graph.Node("Mul", {"x", "k"}, {"y"});
    c.inputs = {FloatInput({2, 3})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("constant_of_shape", 13);
    c.graph.Input("x", kF, {2, 3}).Output("y", kF);
    c.graph.Node("Shape", {"x"}, {"s"})
        .Node("ConstantOfShape", {"s"}, {"k"}, {AttrTensor("value", FloatTensor("", {1}, {1.5f}))})
        .Node("Add", {"x", "k"}, {"y"});
    c.inputs = {FloatInput({2, 3})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("range_float", 13);
    c.graph.Input("x", kF, {4}).Output("y", kF);
    c.graph.Init(Scalar("start", 0.5f)).Init(Scalar("limit", 3.5f)).Init(Scalar("delta", 0.75f));
    c.graph.Node("Range", {"start", "limit", "delta"}, {"r"}).Node("Add", {"x", "r"}, {"y"});
    c.inputs = {FloatInput({4})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("range_int", 13);
    c.graph.Input("x", kI64, {3}).Output("y", kI64);
    c.graph.Init(IntTensor("start", {}, {2})).Init(IntTensor("limit", {}, {11}));
    c.graph.Init(IntTensor("delta", {}, {3}));
    c.graph.Node("Range", {"start", "limit", "delta"}, {"r"}).Node("Add", {"x", "r"}, {"y"});
    c.inputs = {IntInput({3}, {10, 20, 30})};
    cases->push_back(std::move(c));
  }
  for (const char* mode : {"constant", "reflect", "edge"}) {
    OpCase c = Case(std::string("pad_") + mode, 13);
    c.graph.Input("x", kF, {1, 2, 3, 4}).Output("y", kF);
    c.graph.Init(IntTensor("pads", {8}, {0, 0, 1, 2, 0, 0, 2, 1}));
    std::vector<std::string> in = {"x", "pads"};
    if (std::string(mode) == "constant") {
      c.graph.Init(Scalar("v", 0.5f));
      in.push_back("v");
    }
    c.graph.Node("Pad", in, {"y"}, {AttrString("mode", mode)});
    c.inputs = {FloatInput({1, 2, 3, 4})};
    cases->push_back(std::move(c));
  }
}

void AddResizeCases(std::vector<OpCase>* cases) {
  cases->push_back(Resize(
      "resize_nearest_asymmetric_floor", {1, 2, 3, 4}, "scales", {1, 1, 2, 2},
      {AttrString("mode", "nearest"), AttrString("coordinate_transformation_mode", "asymmetric"),
       AttrString("nearest_mode", "floor")}));
  cases->push_back(Resize("resize_nearest_half_pixel", {1, 2, 3, 4}, "scales", {1, 1, 2, 3},
                          {AttrString("mode", "nearest")}));
  cases->push_back(
      Resize("resize_nearest_downsample", {1, 1, 6, 8}, "sizes", {1, 1, 4, 3},
             {AttrString("mode", "nearest"), AttrString("nearest_mode", "round_prefer_ceil")}));
  cases->push_back(Resize("resize_linear_half_pixel", {1, 2, 3, 4}, "scales", {1, 1, 2, 2},
                          {AttrString("mode", "linear")}));
  cases->push_back(Resize("resize_linear_align_corners", {1, 2, 3, 4}, "sizes", {1, 2, 5, 7},
                          {AttrString("mode", "linear"),
                           AttrString("coordinate_transformation_mode", "align_corners")}));
  cases->push_back(Resize("resize_linear_pytorch_down", {1, 2, 5, 6}, "sizes", {1, 2, 2, 3},
                          {AttrString("mode", "linear"),
                           AttrString("coordinate_transformation_mode", "pytorch_half_pixel")}));
}

// ONNX Runtime's quantized operators (com.microsoft) on uint8 inputs, as its quantizer writes them
// in the QOperator format.
void AddMicrosoftQuantizedCases(std::vector<OpCase>* cases) {
  constexpr int kU8 = onnx::TensorProto::UINT8;
  auto bytes = [](const Dims& shape) {
    Array a = Values(shape, 0, 255.99);
    for (double& v : a.data) v = std::floor(v);
    return ToTensor(a, "uint8");
  };
  // Scale and zero point initializers "NAME_scale", "NAME_zp".
  auto params = [](OpCase& c, const std::string& name, float scale, uint8_t zero_point) {
    c.graph.Init(Scalar(name + "_scale", scale)).Init(Uint8Tensor(name + "_zp", {}, {zero_point}));
  };
  for (const char* op : {"QLinearAdd", "QLinearMul"}) {
    OpCase c = Case(absl::StrCat("qlinear_", absl::AsciiStrToLower(op + 7), "_broadcast"), 13);
    c.graph.Input("a", kU8, {2, 3, 4}).Input("b", kU8, {3, 1}).Output("c", kU8);
    params(c, "a", 0.05f, 120);
    params(c, "b", 0.031f, 131);
    params(c, "c", 0.07f, 125);
    c.graph.DomainNode("com.microsoft", op,
                       {"a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "c_scale", "c_zp"}, {"c"});
    c.inputs = {bytes({2, 3, 4}), bytes({3, 1})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("qlinear_global_average_pool", 13);
    c.graph.Input("x", kU8, {1, 5, 4, 4}).Output("y", kU8);
    params(c, "x", 0.02f, 100);
    params(c, "y", 0.01f, 90);
    c.graph.DomainNode("com.microsoft", "QLinearGlobalAveragePool",
                       {"x", "x_scale", "x_zp", "y_scale", "y_zp"}, {"y"},
                       {AttrInt("channels_last", 0)});
    c.inputs = {bytes({1, 5, 4, 4})};
    cases->push_back(std::move(c));
  }
  {
    OpCase c = Case("qlinear_concat", 13);
    c.graph.Input("a", kU8, {1, 2, 3}).Input("b", kU8, {1, 4, 3}).Output("y", kU8);
    params(c, "a", 0.04f, 128);
    params(c, "b", 0.06f, 110);
    params(c, "y", 0.05f, 120);
    c.graph.DomainNode("com.microsoft", "QLinearConcat",
                       {"y_scale", "y_zp", "a", "a_scale", "a_zp", "b", "b_scale", "b_zp"}, {"y"},
                       {AttrInt("axis", 1)});
    c.inputs = {bytes({1, 2, 3}), bytes({1, 4, 3})};
    cases->push_back(std::move(c));
  }
  for (const char* op : {"QLinearLeakyRelu", "QLinearSigmoid"}) {
    const bool leaky = std::string(op) == "QLinearLeakyRelu";
    OpCase c = Case(leaky ? "qlinear_leaky_relu" : "qlinear_sigmoid", 13);
    c.graph.Input("x", kU8, {2, 8}).Output("y", kU8);
    params(c, "x", 0.05f, 128);
    params(c, "y", 0.02f, 60);
    A attrs;
    if (leaky) attrs.push_back(AttrFloat("alpha", 0.1f));
    c.graph.DomainNode("com.microsoft", op, {"x", "x_scale", "x_zp", "y_scale", "y_zp"}, {"y"},
                       attrs);
    c.inputs = {bytes({2, 8})};
    cases->push_back(std::move(c));
  }
}

}  // namespace

std::vector<OpCase> AllOpCases() {
  next_seed = 1;
  std::vector<OpCase> cases;
  AddConvCases(&cases);
  AddMatrixCases(&cases);
  AddElementwiseCases(&cases);
  AddReductionCases(&cases);
  AddNormPoolCases(&cases);
  AddShapeCases(&cases);
  AddResizeCases(&cases);
  AddConv3dCases(&cases);
  AddMicrosoftQuantizedCases(&cases);
  return cases;
}

}  // namespace kiln::frontend::testing
