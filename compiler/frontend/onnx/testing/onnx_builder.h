// Small ONNX graphs written with the ONNX protobuf API, for the importer's tests: typed inputs
// and outputs, initializers and nodes with attributes.
#ifndef KILN_COMPILER_FRONTEND_ONNX_TESTING_ONNX_BUILDER_H_
#define KILN_COMPILER_FRONTEND_ONNX_TESTING_ONNX_BUILDER_H_

#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_proto.h"

namespace kiln::frontend::testing {

// One attribute of a node.
onnx::AttributeProto AttrInt(const std::string& name, int64_t v);
onnx::AttributeProto AttrFloat(const std::string& name, float v);
onnx::AttributeProto AttrString(const std::string& name, const std::string& v);
onnx::AttributeProto AttrInts(const std::string& name, const std::vector<int64_t>& v);
onnx::AttributeProto AttrFloats(const std::string& name, const std::vector<float>& v);
onnx::AttributeProto AttrTensor(const std::string& name, const onnx::TensorProto& t);

onnx::TensorProto FloatTensor(const std::string& name, const std::vector<int64_t>& dims,
                              const std::vector<float>& values);
onnx::TensorProto IntTensor(const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& values);
// A uint8 tensor (raw data).
onnx::TensorProto Uint8Tensor(const std::string& name, const std::vector<int64_t>& dims,
                              const std::vector<uint8_t>& values);

class GraphBuilder {
 public:
  explicit GraphBuilder(int opset);

  // A graph input; a dimension of -1 is named by `dim_names` in order ("N", ...).
  GraphBuilder& Input(const std::string& name, int elem_type, const std::vector<int64_t>& dims,
                      const std::vector<std::string>& dim_names = {});
  GraphBuilder& Output(const std::string& name, int elem_type);
  GraphBuilder& Init(const onnx::TensorProto& t);
  GraphBuilder& Node(const std::string& op_type, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs,
                     const std::vector<onnx::AttributeProto>& attrs = {});
  // A node of another domain ("com.microsoft"), whose opset 1 the model then imports.
  GraphBuilder& DomainNode(const std::string& domain, const std::string& op_type,
                           const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs,
                           const std::vector<onnx::AttributeProto>& attrs = {});

  const onnx::ModelProto& model() const { return model_; }
  std::string Serialize() const;

 private:
  onnx::ModelProto model_;
};

}  // namespace kiln::frontend::testing

#endif  // KILN_COMPILER_FRONTEND_ONNX_TESTING_ONNX_BUILDER_H_
