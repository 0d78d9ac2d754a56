// The graph half of post-training quantization: which tensors of an ONNX model a static int8
// quantization touches, and the rewrite into a standard QDQ model (QuantizeLinear /
// DequantizeLinear pairs, as ONNX Runtime's quantizer writes them), so that any ONNX runtime
// runs the same quantized model.
//
// - Conv, Gemm and MatMul are the quantized layers. Their constant weights become int8,
//   symmetric, one scale per output channel (opset 13 and later; per tensor before); their
//   activation inputs and outputs become uint8 with a scale and zero point each (per tensor);
//   a bias becomes int32 at the scale input_scale × weight_scale.
// - A layer's output is taken after a Relu or Clip that is its only consumer, so the pair sits
//   where an int8 kernel's requantizing epilogue would store.
// - A quantized tensor keeps its float name for the consumers that stay in float (graph outputs,
//   layers kept in float); the others read `NAME_dequantized`.
// - BatchNormalization after a Conv is folded into it first (FoldBatchNorms).
#ifndef KILN_COMPILER_QUANTIZE_QDQ_GRAPH_H_
#define KILN_COMPILER_QUANTIZE_QDQ_GRAPH_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/frontend/onnx/onnx_proto.h"

namespace kiln::quantize {

// A layer a QDQ model runs in int8.
struct QuantizedLayer {
  std::string name;     // the node's name, or OP_TYPE#INDEX for a node without one
  std::string op_type;  // Conv, Gemm or MatMul
  std::string output;   // the float tensor its output group ends in (after a fused Relu/Clip)
};

struct QuantizationPlan {
  std::vector<QuantizedLayer> layers;
  // The float activations that get a uint8 QuantizeLinear/DequantizeLinear pair, in graph order:
  // the layers' activation inputs and outputs.
  std::vector<std::string> activations;
  // The layers left in float because --keep-float named them, or because their form is not one
  // quantized here (a Gemm with alpha or beta, a weight that is not a float32 constant).
  std::vector<std::string> float_layers;
};

// The uint8 parameters of one activation: real = scale × (q − zero_point).
struct ActivationParams {
  float scale = 1;
  int zero_point = 0;
};

// The asymmetric uint8 parameters that cover [lo, hi] (widened to hold 0, which must be exact).
ActivationParams ParamsForRange(float lo, float hi);

// Folds every BatchNormalization whose input is a Conv output read by nothing else, with
// constant weights and statistics, into that Conv. Returns how many were folded.
absl::StatusOr<int> FoldBatchNorms(onnx::ModelProto& model);

// The layers of `model` to quantize. `keep_float` names layers (node names) to leave in float;
// a name that matches no Conv, Gemm or MatMul node is InvalidArgument naming it.
absl::StatusOr<QuantizationPlan> PlanQuantization(const onnx::ModelProto& model,
                                                  const std::set<std::string>& keep_float);

// Rewrites `model` into its QDQ form: `params` holds every activation of `plan`.
absl::Status WriteQdqModel(onnx::ModelProto& model, const QuantizationPlan& plan,
                           const std::map<std::string, ActivationParams>& params);

// The name a quantized activation's dequantized value has in the QDQ model.
std::string DequantizedName(const std::string& tensor);

// Adds `tensors` to the graph's outputs (float32, shape unstated), after the existing ones and
// skipping those already outputs; returns the names of all outputs in order.
std::vector<std::string> ExposeTensors(onnx::ModelProto& model,
                                       const std::vector<std::string>& tensors);

// The names of the graph inputs that are not initializers, in order.
std::vector<std::string> GraphInputs(const onnx::ModelProto& model);

}  // namespace kiln::quantize

#endif  // KILN_COMPILER_QUANTIZE_QDQ_GRAPH_H_
