// The ONNX front end: a serialized ModelProto (opsets 1 to 18 of the default domain) to a Relax
// IRModule whose `main` takes the graph inputs and returns the graph outputs.
//
// - Initializers and Constant nodes become Relax constants.
// - Integer "shape arithmetic" (Shape -> Gather -> Concat -> Reshape and the like) is evaluated
//   while importing, symbolically where an input dimension is dynamic, so reshapes get static
//   (or symbolic) target shapes and no shape tensors reach the compiled code.
// - A graph input dimension given by name (dim_param) becomes a symbolic shape variable; the
//   same name is the same variable. A dimension with neither value nor name gets a fresh one.
//
// Nothing is partial: either the whole model imports or the error names the node, its op type
// and the opset, e.g.
//   ONNX node '/layer1/Foo' (Foo, opset 13): operator Foo is not supported
#ifndef KILN_COMPILER_FRONTEND_ONNX_ONNX_IMPORTER_H_
#define KILN_COMPILER_FRONTEND_ONNX_ONNX_IMPORTER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/ir/module.h"

namespace kiln::frontend {

// Converters follow each operator's version history (attributes that became inputs, changed
// defaults) back to opset 1; tests/onnx_conformance_test runs ONNX's own cases of every version.
inline constexpr int kMinOnnxOpset = 1;
inline constexpr int kMaxOnnxOpset = 18;

// What importing may compute ahead of run time: a constant the importer makes itself (a Range of
// constant bounds) larger than this is refused, whatever the few bytes of the model ask for.
inline constexpr int64_t kDefaultMaxImportConstantBytes = int64_t{64} << 20;

// Imports the bytes of an .onnx file. `source` names it in errors. Initializers whose data is in
// external files are read from `external_data_dir` (the model file's directory); without one,
// such a model is refused naming the tensor.
absl::StatusOr<ir::IRModule> ImportOnnx(absl::string_view model_bytes, absl::string_view source,
                                        int64_t max_constant_bytes = kDefaultMaxImportConstantBytes,
                                        const std::string& external_data_dir = "");

// The bytes of a serialized TensorProto (as ONNX's backend test data and tools write tensors) as
// a Relax constant. `source` names it in errors.
absl::StatusOr<ir::relax::Expr> ReadOnnxTensor(absl::string_view tensor_bytes,
                                               absl::string_view source);

// The ONNX operator types the importer converts, sorted.
std::vector<std::string> SupportedOnnxOps();

}  // namespace kiln::frontend

#endif  // KILN_COMPILER_FRONTEND_ONNX_ONNX_IMPORTER_H_
