// QDQ fusion, before conversion: a QDQ model (quantize's output, ONNX Runtime's quantizer's)
// writes each int8 layer as float arithmetic between DequantizeLinear and QuantizeLinear nodes.
// Where a Conv (one group, or one channel per group) reads dequantized uint8 data and dequantized
// constant int8 weights (and bias) and its output — after an optional Relu or Clip — is quantized
// to uint8, the three nodes become the QLinearConv they mean (and a Clip of its uint8 output for
// the activation: clamping commutes with the monotone quantization), so that the converter can emit
// one int8 kernel. Exact: the rewrite computes what ONNX defines for the pattern, up to the float
// rounding of the bias rescaled to the accumulator's scale.
#ifndef KILN_COMPILER_FRONTEND_ONNX_QDQ_FUSION_H_
#define KILN_COMPILER_FRONTEND_ONNX_QDQ_FUSION_H_

#include <cstdint>

#include "compiler/frontend/onnx/onnx_proto.h"

namespace kiln::frontend::onnx_import {

// Rewrites the graph (of a model importing `opset`) in place; returns how many Conv nodes became
// QLinearConv.
int FuseQdqConvolutions(onnx::GraphProto* graph, int64_t opset);

}  // namespace kiln::frontend::onnx_import

#endif  // KILN_COMPILER_FRONTEND_ONNX_QDQ_FUSION_H_
