// The ONNX protobuf classes as Debian's libonnx-dev ships them (onnx-ml.proto, package `onnx`).
#ifndef KILN_COMPILER_FRONTEND_ONNX_ONNX_PROTO_H_
#define KILN_COMPILER_FRONTEND_ONNX_ONNX_PROTO_H_

#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#include "onnx/onnx_pb.h"

#endif  // KILN_COMPILER_FRONTEND_ONNX_ONNX_PROTO_H_
