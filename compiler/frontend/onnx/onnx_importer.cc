#include "compiler/frontend/onnx/onnx_importer.h"

#include <map>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/onnx/convert_context.h"
#include "compiler/frontend/onnx/onnx_proto.h"
#include "compiler/frontend/onnx/qdq_fusion.h"
#include "compiler/relax/block_builder.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend {
namespace {

using namespace onnx_import;  // NOLINT: the importer's own internals
using ir::relax::BlockBuilder;

const ConverterTable& Converters() {
  static const ConverterTable* table = [] {
    auto* t = new ConverterTable();
    RegisterMathConverters(t);
    RegisterReduceConverters(t);
    RegisterNNConverters(t);
    RegisterNormConverters(t);
    RegisterTensorConverters(t);
    RegisterLayoutConverters(t);
    RegisterSelectConverters(t);
    RegisterEinsumConverter(t);
    RegisterQuantizeConverters(t);
    RegisterRecurrentConverters(t);
    RegisterGridSampleConverter(t);
    RegisterDftConverter(t);
    RegisterDetConverter(t);
    RegisterTrainingConverters(t);
    RegisterSequenceConverters(t);
    return t;
  }();
  return *table;
}

// Rewraps `s` with the node's identity, keeping its code.
absl::Status NodeError(const onnx::NodeProto& node, size_t index, int opset,
                       const absl::Status& s) {
  std::string who = !node.name().empty() ? absl::StrCat("'", node.name(), "'")
                    : node.output_size() > 0
                        ? absl::StrCat("#", index, " (output '", node.output(0), "')")
                        : absl::StrCat("#", index);
  return absl::Status(s.code(), absl::StrCat("ONNX node ", who, " (", node.op_type(), ", opset ",
                                             opset, "): ", s.message()));
}

class Importer {
 public:
  Importer(std::string source, int64_t max_constant_bytes, std::string external_data_dir)
      : source_(std::move(source)),
        max_constant_bytes_(max_constant_bytes),
        external_data_dir_(std::move(external_data_dir)) {}

  // Takes the initializers' data out of `model`.
  absl::StatusOr<ir::IRModule> Run(onnx::ModelProto& model) {
    KILN_RETURN_IF_ERROR(ReadOpset(model));
    onnx_import::FuseQdqConvolutions(model.mutable_graph(), opset_);
    const onnx::GraphProto& graph = model.graph();
    if (graph.sparse_initializer_size() > 0)
      return Error(absl::StatusCode::kUnimplemented, "sparse initializers are not supported");
    for (onnx::TensorProto& t : *model.mutable_graph()->mutable_initializer()) {
      const std::string name = t.name();
      if (!external_data_dir_.empty()) {
        if (absl::Status s = LoadExternalData(&t, external_data_dir_); !s.ok()) {
          return Error(s.code(), absl::StrCat("initializer ", s.message()));
        }
      }
      absl::StatusOr<Value> v = ValueFromTensorProto(std::move(t));
      if (!v.ok())
        return Error(v.status().code(), absl::StrCat("initializer ", v.status().message()));
      values_[name] = std::make_unique<Value>(std::move(*v));
    }
    std::vector<ir::relax::Var> params;
    for (const onnx::ValueInfoProto& input : graph.input()) {
      if (values_.count(input.name())) continue;  // an initializer listed as an input too
      absl::StatusOr<ir::relax::Var> param = Param(input);
      if (!param.ok()) return param.status();
      params.push_back(*param);
      auto v = std::make_unique<Value>();
      v->expr = *param;
      values_[input.name()] = std::move(v);
    }
    if (graph.output_size() == 0)
      return Error(absl::StatusCode::kInvalidArgument, "the graph has no outputs");
    std::set<std::string> output_names;
    for (const onnx::ValueInfoProto& output : graph.output()) {
      if (!output_names.insert(output.name()).second) {
        return Error(absl::StatusCode::kInvalidArgument,
                     absl::StrCat("graph output '", output.name(), "' is named twice"));
      }
    }

    builder_.BeginFunction("main", params);
    builder_.BeginDataflowBlock();
    for (int i = 0; i < graph.node_size(); ++i) {
      const onnx::NodeProto& node = graph.node(i);
      absl::Status s = Convert(node);
      if (!s.ok()) return Error(s.code(), NodeError(node, i, opset_, s).message());
    }
    std::vector<ir::relax::Expr> results;
    for (const onnx::ValueInfoProto& output : graph.output()) {
      auto it = values_.find(output.name());
      if (it == values_.end()) {
        return Error(absl::StatusCode::kInvalidArgument,
                     absl::StrCat("graph output '", output.name(), "' is produced by no node"));
      }
      absl::StatusOr<ir::relax::Expr> e = Materialize(*it->second);
      if (!e.ok()) return Error(e.status().code(), e.status().message());
      absl::StatusOr<ir::relax::Var> out = builder_.EmitOutput(*e, Identifier(output.name()));
      if (!out.ok()) return Error(out.status().code(), out.status().message());
      results.push_back(*out);
    }
    absl::StatusOr<ir::relax::BindingBlock> block = builder_.EndBlock();
    if (!block.ok()) return Error(block.status().code(), block.status().message());
    ir::relax::Expr result =
        results.size() == 1 ? results[0] : ir::relax::MakeTuple(std::move(results));
    ir::Attrs attrs = {{"global_symbol", StrAttr("main")}};
    absl::StatusOr<ir::relax::Function> func =
        builder_.EndFunction(result, nullptr, /*is_pure=*/true, attrs);
    if (!func.ok()) return Error(func.status().code(), func.status().message());
    ir::IRModuleBuilder mod;
    KILN_RETURN_IF_ERROR(mod.Add(ir::relax::MakeGlobalVar("main"), *func));
    return mod.Build();
  }

 private:
  absl::Status Error(absl::StatusCode code, absl::string_view what) const {
    return absl::Status(code, absl::StrCat(source_, ": ", what));
  }

  absl::Status ReadOpset(const onnx::ModelProto& model) {
    opset_ = -1;
    bool training = false;
    for (const onnx::OperatorSetIdProto& id : model.opset_import()) {
      if (id.domain().empty() || id.domain() == "ai.onnx") {
        // Read whole: 2^32 + 13 is not opset 13.
        if (id.version() < 0 || id.version() > kMaxOnnxOpset) {
          return Error(absl::StatusCode::kUnimplemented,
                       absl::StrCat("opset ", id.version(), " is not supported (", kMinOnnxOpset,
                                    " to ", kMaxOnnxOpset, ")"));
        }
        opset_ = static_cast<int>(id.version());
      }
      training = training || id.domain() == kTrainingDomain;
    }
    // A model of training operators alone needs no default-domain opset.
    if (opset_ < 0 && training) opset_ = kMaxOnnxOpset;
    if (opset_ < 0)
      return Error(absl::StatusCode::kInvalidArgument, "the model imports no default-domain opset");
    if (opset_ < kMinOnnxOpset || opset_ > kMaxOnnxOpset) {
      return Error(absl::StatusCode::kUnimplemented,
                   absl::StrCat("opset ", opset_, " is not supported (", kMinOnnxOpset, " to ",
                                kMaxOnnxOpset, ")"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<ir::relax::Var> Param(const onnx::ValueInfoProto& input) {
    auto error = [&](absl::string_view what) {
      return Error(absl::StatusCode::kInvalidArgument,
                   absl::StrCat("graph input '", input.name(), "': ", what));
    };
    if (!input.type().has_tensor_type()) return error("only tensor inputs are supported");
    const onnx::TypeProto::Tensor& t = input.type().tensor_type();
    absl::StatusOr<ir::DataType> dtype = DataTypeFromOnnx(t.elem_type());
    if (!dtype.ok()) return error(dtype.status().message());
    if (!t.has_shape()) return error("the rank is not given");
    std::vector<ir::PrimExpr> dims;
    for (const onnx::TensorShapeProto::Dimension& d : t.shape().dim()) {
      if (d.has_dim_value()) {
        if (d.dim_value() < 0) return error(absl::StrCat("negative dimension ", d.dim_value()));
        dims.push_back(ir::IntImm(ir::DataType::Int(64), d.dim_value()));
        continue;
      }
      std::string name = d.has_dim_param() && !d.dim_param().empty()
                             ? Identifier(d.dim_param())
                             : absl::StrCat("d", unnamed_dims_++);
      auto [it, fresh] = dim_vars_.emplace(name, ir::PrimExpr());
      if (fresh) it->second = ir::MakeSizeVar(name);
      dims.push_back(it->second);
    }
    return ir::relax::MakeVar(Identifier(input.name()),
                              ir::relax::TensorSInfo(std::move(dims), *dtype));
  }

  absl::Status Convert(const onnx::NodeProto& node) {
    const bool training = node.domain() == kTrainingDomain;
    // ONNX Runtime's operators: the quantized ones its quantizer writes (convert_quant.cc).
    const bool microsoft = node.domain() == kMicrosoftDomain;
    if (!node.domain().empty() && node.domain() != "ai.onnx" && !training && !microsoft) {
      return absl::UnimplementedError(
          absl::StrCat("operators of domain '", node.domain(), "' are not supported"));
    }
    const std::string op =
        training || microsoft ? absl::StrCat(node.domain(), ".", node.op_type()) : node.op_type();
    auto it = Converters().find(op);
    if (it == Converters().end()) {
      return absl::UnimplementedError(absl::StrCat("operator ", op, " is not supported"));
    }
    std::vector<const Value*> inputs;
    for (const std::string& name : node.input()) {
      if (name.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      auto v = values_.find(name);
      if (v == values_.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", name, "' is not a graph input, an initializer or an earlier node's output"));
      }
      inputs.push_back(v->second.get());
    }
    Context ctx(node, opset_, std::move(inputs), &builder_, max_constant_bytes_);
    absl::StatusOr<Outputs> outputs = it->second(ctx);
    if (!ctx.status().ok()) return ctx.status();
    if (!outputs.ok()) return outputs.status();
    for (int k = 0; k < node.output_size(); ++k) {
      if (node.output(k).empty()) continue;
      if (static_cast<size_t>(k) >= outputs->size()) {
        return absl::UnimplementedError(
            absl::StrCat("output ", k, " ('", node.output(k), "') is not supported"));
      }
      values_[node.output(k)] = std::make_unique<Value>(std::move((*outputs)[k]));
    }
    return absl::OkStatus();
  }

  std::string source_;
  int64_t max_constant_bytes_;
  int opset_ = -1;
  BlockBuilder builder_;
  std::map<std::string, std::unique_ptr<Value>> values_;
  std::map<std::string, ir::PrimExpr> dim_vars_;
  int unnamed_dims_ = 0;
  std::string external_data_dir_;
};

}  // namespace

absl::StatusOr<ir::IRModule> ImportOnnx(absl::string_view model_bytes, absl::string_view source,
                                        int64_t max_constant_bytes,
                                        const std::string& external_data_dir) {
  onnx::ModelProto model;
  if (model_bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(model_bytes.data(), static_cast<int>(model_bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not an ONNX model (the protobuf does not parse)"));
  }
  if (!model.has_graph() || model.opset_import_size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not an ONNX model (no graph or no opset_import)"));
  }
  return Importer(std::string(source), max_constant_bytes, external_data_dir).Run(model);
}

absl::StatusOr<ir::relax::Expr> ReadOnnxTensor(absl::string_view tensor_bytes,
                                               absl::string_view source) {
  onnx::TensorProto proto;
  if (tensor_bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !proto.ParseFromArray(tensor_bytes.data(), static_cast<int>(tensor_bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not an ONNX tensor (the protobuf does not parse)"));
  }
  absl::StatusOr<Value> v = ValueFromTensorProto(proto);
  if (!v.ok())
    return absl::Status(v.status().code(), absl::StrCat(source, ": ", v.status().message()));
  return Materialize(*v);
}

std::vector<std::string> SupportedOnnxOps() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : Converters()) names.push_back(name);
  return names;
}

}  // namespace kiln::frontend
