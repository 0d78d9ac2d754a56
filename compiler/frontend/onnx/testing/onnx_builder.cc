#include "compiler/frontend/onnx/testing/onnx_builder.h"

namespace kiln::frontend::testing {

onnx::AttributeProto AttrInt(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

onnx::AttributeProto AttrFloat(const std::string& name, float v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

onnx::AttributeProto AttrString(const std::string& name, const std::string& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(v);
  return a;
}

onnx::AttributeProto AttrInts(const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

onnx::AttributeProto AttrFloats(const std::string& name, const std::vector<float>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOATS);
  for (float x : v) a.add_floats(x);
  return a;
}

onnx::AttributeProto AttrTensor(const std::string& name, const onnx::TensorProto& t) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::TENSOR);
  *a.mutable_t() = t;
  return a;
}

onnx::TensorProto FloatTensor(const std::string& name, const std::vector<int64_t>& dims,
                              const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

onnx::TensorProto IntTensor(const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

GraphBuilder::GraphBuilder(int opset) {
  model_.set_ir_version(8);
  model_.set_producer_name("kiln-tests");
  onnx::OperatorSetIdProto* id = model_.add_opset_import();
  id->set_domain("");
  id->set_version(opset);
  model_.mutable_graph()->set_name("case");
}

GraphBuilder& GraphBuilder::Input(const std::string& name, int elem_type,
                                  const std::vector<int64_t>& dims,
                                  const std::vector<std::string>& dim_names) {
  onnx::ValueInfoProto* v = model_.mutable_graph()->add_input();
  v->set_name(name);
  onnx::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  onnx::TensorShapeProto* shape = t->mutable_shape();
  size_t named = 0;
  for (int64_t d : dims) {
    onnx::TensorShapeProto::Dimension* dim = shape->add_dim();
    if (d >= 0) {
      dim->set_dim_value(d);
    } else if (named < dim_names.size()) {
      dim->set_dim_param(dim_names[named++]);
    }
  }
  return *this;
}

GraphBuilder& GraphBuilder::Output(const std::string& name, int elem_type) {
  onnx::ValueInfoProto* v = model_.mutable_graph()->add_output();
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
  return *this;
}

GraphBuilder& GraphBuilder::Init(const onnx::TensorProto& t) {
  *model_.mutable_graph()->add_initializer() = t;
  return *this;
}

GraphBuilder& GraphBuilder::Node(const std::string& op_type, const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs,
                                 const std::vector<onnx::AttributeProto>& attrs) {
  onnx::NodeProto* n = model_.mutable_graph()->add_node();
  n->set_op_type(op_type);
  n->set_name(op_type + "_" + std::to_string(model_.graph().node_size()));
  for (const std::string& i : inputs) n->add_input(i);
  for (const std::string& o : outputs) n->add_output(o);
  for (const onnx::AttributeProto& a : attrs) *n->add_attribute() = a;
  return *this;
}

GraphBuilder& GraphBuilder::DomainNode(const std::string& domain, const std::string& op_type,
                                       const std::vector<std::string>& inputs,
                                       const std::vector<std::string>& outputs,
                                       const std::vector<onnx::AttributeProto>& attrs) {
  bool imported = false;
  for (const onnx::OperatorSetIdProto& id : model_.opset_import())
    imported = imported || id.domain() == domain;
  if (!imported) {
    onnx::OperatorSetIdProto* id = model_.add_opset_import();
    id->set_domain(domain);
    id->set_version(1);
  }
  Node(op_type, inputs, outputs, attrs);
  model_.mutable_graph()->mutable_node(model_.graph().node_size() - 1)->set_domain(domain);
  return *this;
}

onnx::TensorProto Uint8Tensor(const std::string& name, const std::vector<int64_t>& dims,
                              const std::vector<uint8_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::UINT8);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(values.begin(), values.end()));
  return t;
}

std::string GraphBuilder::Serialize() const {
  std::string bytes;
  model_.SerializeToString(&bytes);
  return bytes;
}

}  // namespace kiln::frontend::testing
