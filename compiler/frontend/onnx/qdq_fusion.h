// QDQ fusion, before conversion: a QDQ model (quantize's output, ONNX Runtime's quantizer's)
// writes each int8 layer as float arithmetic between DequantizeLinear and QuantizeLinear nodes.
// Where a Conv (one group, or one channel per group) reads dequantized uint8 data and dequantized
// constant int8 weights (and bias) and its output — after an optional Relu or Clip — is quantized
// to uint8, the three nodes become the QLinearConv they mean (and a Clip of its uint8 output for
// the activation: clamping commutes with the monotone quantization), so that the converter can emit
// one int8 kernel. Exact: the rewrite computes what ONNX defines for the pattern, up to the float
// rounding of the bias rescaled to the accumulator's scale.
//
// A Gemm or MatMul of dequantized uint8 data by a dequantized int8 constant becomes
// MatMulInteger, a Cast to float and the scaling (and bias) that dequantize its int32 result,
// whatever reads it: the integer product is one int8 kernel.
//
// A MaxPool between a DequantizeLinear and a QuantizeLinear of the same scale and zero point
// becomes the MaxPool of the uint8 data.
#ifndef KILN_COMPILER_FRONTEND_ONNX_QDQ_FUSION_H_
#define KILN_COMPILER_FRONTEND_ONNX_QDQ_FUSION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_proto.h"

namespace kiln::frontend::onnx_import {

// Rewrites the graph (of a model importing `opset`) in place; returns how many Conv, Gemm,
// MatMul and MaxPool nodes it rewrote.
int FuseQdqConvolutions(onnx::GraphProto* graph, int64_t opset);

// What the rewrite (and the quantizer, compiler/quantize) reads of a model:
// an initializer's numbers — float32, int8, uint8 or int32 with its data inside the model and
// as many values as its dims say — or nullopt;
std::optional<std::vector<double>> TensorNumbers(const onnx::TensorProto& t);
// a node's attribute called `name`, or null.
const onnx::AttributeProto* FindAttribute(const onnx::NodeProto& node, const std::string& name);

}  // namespace kiln::frontend::onnx_import

#endif  // KILN_COMPILER_FRONTEND_ONNX_QDQ_FUSION_H_
