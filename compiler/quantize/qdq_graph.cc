#include "compiler/quantize/qdq_graph.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/frontend/onnx/qdq_fusion.h"

namespace kiln::quantize {
namespace {

using onnx::TensorProto;

// The default domain's opset the model imports (0 when it names none).
int64_t DefaultOpset(const onnx::ModelProto& model) {
  for (const onnx::OperatorSetIdProto& op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") return op.version();
  }
  return 0;
}

std::string NodeName(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? absl::StrCat(node.op_type(), "#", index) : node.name();
}

int64_t IntAttr(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const onnx::AttributeProto* a = frontend::onnx_import::FindAttribute(node, name);
  return a != nullptr ? a->i() : fallback;
}

float FloatAttr(const onnx::NodeProto& node, const std::string& name, float fallback) {
  const onnx::AttributeProto* a = frontend::onnx_import::FindAttribute(node, name);
  return a != nullptr ? a->f() : fallback;
}

// The graph's tensors: who makes each, who reads it, which are initializers and outputs.
struct GraphIndex {
  std::map<std::string, int> initializer;  // name -> index in graph.initializer
  std::map<std::string, int> producer;     // tensor -> node index
  std::map<std::string, std::vector<int>> consumers;
  std::set<std::string> outputs;

  explicit GraphIndex(const onnx::GraphProto& g) {
    for (int i = 0; i < g.initializer_size(); ++i) initializer[g.initializer(i).name()] = i;
    for (int i = 0; i < g.node_size(); ++i) {
      for (const std::string& in : g.node(i).input())
        if (!in.empty()) consumers[in].push_back(i);
      for (const std::string& out : g.node(i).output())
        if (!out.empty()) producer[out] = i;
    }
    for (const onnx::ValueInfoProto& o : g.output()) outputs.insert(o.name());
  }
  const std::vector<int>& Readers(const std::string& t) const {
    static const std::vector<int> kNone;
    auto it = consumers.find(t);
    return it == consumers.end() ? kNone : it->second;
  }
  bool IsInitializer(const std::string& t) const { return initializer.count(t) > 0; }
};

// A float32 initializer's values.
absl::StatusOr<std::vector<float>> Floats(const TensorProto& t) {
  if (t.data_type() != TensorProto::FLOAT)
    return absl::InvalidArgumentError(absl::StrCat("initializer '", t.name(), "' is not float32"));
  if (t.data_location() == TensorProto::EXTERNAL) {
    return absl::UnimplementedError(absl::StrCat(
        "initializer '", t.name(), "' is in an external data file, which quantize does not read"));
  }
  std::optional<std::vector<double>> v = frontend::onnx_import::TensorNumbers(t);
  if (!v) {
    return absl::InvalidArgumentError(
        absl::StrCat("initializer '", t.name(), "' holds fewer or more values than its dims say"));
  }
  return std::vector<float>(v->begin(), v->end());
}

template <typename T>
TensorProto MakeTensor(const std::string& name, const std::vector<int64_t>& dims, int data_type,
                       const std::vector<T>& values) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(data_type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
  return t;
}

std::vector<int64_t> Dims(const TensorProto& t) { return {t.dims().begin(), t.dims().end()}; }

onnx::NodeProto MakeNode(const std::string& op, std::vector<std::string> inputs,
                         const std::string& output, const std::string& name) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  for (std::string& in : inputs) n.add_input(std::move(in));
  n.add_output(output);
  return n;
}

void SetIntAttr(onnx::NodeProto& node, const std::string& name, int64_t value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

// A quantized layer's constant weight: which input, and the axis of its output channels.
struct WeightSlot {
  int input = -1;
  int axis = 0;
};

// Where a layer's weight is, or input -1 when the node is not quantized in this form.
WeightSlot WeightOf(const onnx::NodeProto& node, const GraphIndex& index,
                    const onnx::GraphProto& g) {
  auto weight_rank = [&](int input) -> int {
    if (node.input_size() <= input || !index.IsInitializer(node.input(input))) return -1;
    const TensorProto& t = g.initializer(index.initializer.at(node.input(input)));
    return t.data_type() == TensorProto::FLOAT ? t.dims_size() : -1;
  };
  const std::string& op = node.op_type();
  if (op == "Conv" && weight_rank(1) >= 3) return {1, 0};
  if (op == "Gemm" && weight_rank(1) == 2 && IntAttr(node, "transA", 0) == 0 &&
      FloatAttr(node, "alpha", 1) == 1 && FloatAttr(node, "beta", 1) == 1) {
    return {1, IntAttr(node, "transB", 0) != 0 ? 0 : 1};
  }
  if (op == "MatMul" && weight_rank(1) == 2) return {1, 1};
  return {};
}

// Drops the initializers nothing reads any more, and the graph inputs that named them (models
// before IR version 4 list initializers among the inputs).
void DropUnreadInitializers(onnx::GraphProto* g) {
  const GraphIndex index(*g);
  std::set<std::string> dropped;
  google::protobuf::RepeatedPtrField<TensorProto> inits;
  for (TensorProto& t : *g->mutable_initializer()) {
    if (index.Readers(t.name()).empty() && !index.outputs.count(t.name())) {
      dropped.insert(t.name());
    } else {
      *inits.Add() = std::move(t);
    }
  }
  g->mutable_initializer()->Swap(&inits);
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs;
  for (onnx::ValueInfoProto& in : *g->mutable_input())
    if (!dropped.count(in.name())) *inputs.Add() = std::move(in);
  g->mutable_input()->Swap(&inputs);
}

bool IsLayerOp(const std::string& op) { return op == "Conv" || op == "Gemm" || op == "MatMul"; }

}  // namespace

ActivationParams ParamsForRange(float lo, float hi) {
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  ActivationParams p;
  if (!(hi - lo > 1e-30f) || !std::isfinite(hi - lo)) return p;
  p.scale = (hi - lo) / 255.0f;
  p.zero_point = static_cast<int>(std::clamp(std::nearbyint(-lo / p.scale), 0.0f, 255.0f));
  return p;
}

std::string DequantizedName(const std::string& tensor) {
  return absl::StrCat(tensor, "_dequantized");
}

absl::StatusOr<int> FoldBatchNorms(onnx::ModelProto& model) {
  onnx::GraphProto* g = model.mutable_graph();
  GraphIndex index(*g);
  std::set<int> removed;
  int folded = 0;
  for (int i = 0; i < g->node_size(); ++i) {
    const onnx::NodeProto& bn = g->node(i);
    if (bn.op_type() != "BatchNormalization" || bn.input_size() != 5 || bn.output_size() < 1)
      continue;
    if (bn.output_size() > 1 && !bn.output(1).empty()) continue;  // training mode
    const std::string& x = bn.input(0);
    auto prod = index.producer.find(x);
    if (prod == index.producer.end() || index.Readers(x).size() != 1 || index.outputs.count(x))
      continue;
    onnx::NodeProto* conv = g->mutable_node(prod->second);
    if (conv->op_type() != "Conv" || conv->input_size() < 2 || conv->output_size() < 1 ||
        !index.IsInitializer(conv->input(1)))
      continue;
    bool constant_stats = true;
    for (int k = 1; k < 5; ++k) constant_stats = constant_stats && index.IsInitializer(bn.input(k));
    const bool has_bias = conv->input_size() > 2 && !conv->input(2).empty();
    if (!constant_stats || (has_bias && !index.IsInitializer(conv->input(2)))) continue;

    const TensorProto& w_proto = g->initializer(index.initializer.at(conv->input(1)));
    absl::StatusOr<std::vector<float>> w = Floats(w_proto);
    if (!w.ok() || w_proto.dims_size() < 1) continue;
    const int64_t channels = w_proto.dims(0);
    std::vector<std::vector<float>> stats;
    for (int k = 1; k < 5; ++k) {
      absl::StatusOr<std::vector<float>> s =
          Floats(g->initializer(index.initializer.at(bn.input(k))));
      if (!s.ok() || static_cast<int64_t>(s->size()) != channels) break;
      stats.push_back(std::move(*s));
    }
    std::vector<float> bias(static_cast<size_t>(channels), 0.0f);
    if (has_bias) {
      absl::StatusOr<std::vector<float>> b =
          Floats(g->initializer(index.initializer.at(conv->input(2))));
      if (!b.ok() || static_cast<int64_t>(b->size()) != channels) continue;
      bias = std::move(*b);
    }
    if (stats.size() != 4) continue;
    const float eps = FloatAttr(bn, "epsilon", 1e-5f);
    const int64_t per_channel = static_cast<int64_t>(w->size()) / std::max<int64_t>(channels, 1);
    for (int64_t c = 0; c < channels; ++c) {
      const float k = stats[0][c] / std::sqrt(stats[3][c] + eps);  // gamma / sqrt(var + eps)
      for (int64_t j = 0; j < per_channel; ++j) (*w)[c * per_channel + j] *= k;
      bias[c] = (bias[c] - stats[2][c]) * k + stats[1][c];
    }
    // New initializers: the Conv's old ones may be read elsewhere.
    const std::string w_name = absl::StrCat(bn.output(0), "_folded_weight");
    const std::string b_name = absl::StrCat(bn.output(0), "_folded_bias");
    *g->add_initializer() = MakeTensor(w_name, Dims(w_proto), TensorProto::FLOAT, *w);
    *g->add_initializer() = MakeTensor(b_name, {channels}, TensorProto::FLOAT, bias);
    conv->set_input(1, w_name);
    if (has_bias) {
      conv->set_input(2, b_name);
    } else {
      while (conv->input_size() < 3) conv->add_input("");
      conv->set_input(2, b_name);
    }
    conv->set_output(0, bn.output(0));
    removed.insert(i);
    ++folded;
  }
  if (folded == 0) return 0;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (int i = 0; i < g->node_size(); ++i)
    if (!removed.count(i)) *kept.Add() = std::move(*g->mutable_node(i));
  g->mutable_node()->Swap(&kept);
  DropUnreadInitializers(g);  // the unfolded weights and the statistics
  return folded;
}

absl::StatusOr<QuantizationPlan> PlanQuantization(const onnx::ModelProto& model,
                                                  const std::set<std::string>& keep_float) {
  const onnx::GraphProto& g = model.graph();
  if (DefaultOpset(model) < 10) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model imports opset ", DefaultOpset(model),
                     "; QuantizeLinear and DequantizeLinear need opset 10 or later"));
  }
  GraphIndex index(g);
  QuantizationPlan plan;
  std::set<std::string> seen_activations;
  auto add_activation = [&](const std::string& t) {
    if (!t.empty() && !index.IsInitializer(t) && seen_activations.insert(t).second)
      plan.activations.push_back(t);
  };
  std::set<std::string> matched;
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    if (!IsLayerOp(node.op_type())) continue;
    const std::string name = NodeName(node, i);
    if (node.input_size() < 2 || node.output_size() < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", name, "' (", node.op_type(), ") needs two inputs and an output"));
    }
    matched.insert(name);
    const WeightSlot weight = WeightOf(node, index, g);
    const bool activation_pair = node.op_type() == "MatMul" && node.input_size() == 2 &&
                                 !index.IsInitializer(node.input(0)) &&
                                 !index.IsInitializer(node.input(1));
    if (keep_float.count(name) || (weight.input < 0 && !activation_pair) ||
        index.IsInitializer(node.input(0))) {
      plan.float_layers.push_back(name);
      continue;
    }
    add_activation(node.input(0));
    if (activation_pair) add_activation(node.input(1));
    std::string out = node.output(0);
    const std::vector<int>& readers = index.Readers(out);
    if (readers.size() == 1 && !index.outputs.count(out)) {
      const std::string& next = g.node(readers[0]).op_type();
      if ((next == "Relu" || next == "Clip") && g.node(readers[0]).output_size() > 0)
        out = g.node(readers[0]).output(0);
    }
    if (!index.Readers(out).empty()) add_activation(out);
    plan.layers.push_back({name, node.op_type(), out});
  }
  for (const std::string& k : keep_float) {
    if (!matched.count(k)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--keep-float ", k, ": no Conv, Gemm or MatMul node is named '", k, "'"));
    }
  }
  return plan;
}

absl::Status WriteQdqModel(onnx::ModelProto& model, const QuantizationPlan& plan,
                           const std::map<std::string, ActivationParams>& params) {
  onnx::GraphProto* g = model.mutable_graph();
  const bool per_channel = DefaultOpset(model) >= 13;
  GraphIndex index(*g);
  std::set<std::string> float_layers(plan.float_layers.begin(), plan.float_layers.end());
  std::set<std::string> quantized_layers;
  for (const QuantizedLayer& l : plan.layers) quantized_layers.insert(l.name);

  std::vector<onnx::NodeProto> leading;               // weight and bias DequantizeLinear nodes
  std::map<int, std::vector<onnx::NodeProto>> after;  // activation pairs, after their producer
  std::vector<TensorProto> new_initializers;

  // Activations: a uint8 pair each; the readers not kept in float read the dequantized value.
  for (const std::string& t : plan.activations) {
    auto p = params.find(t);
    if (p == params.end())
      return absl::InternalError(absl::StrCat("no calibration range for tensor '", t, "'"));
    const std::string scale = t + "_scale", zp = t + "_zero_point", q = t + "_quantized";
    new_initializers.push_back(MakeTensor<float>(scale, {}, TensorProto::FLOAT, {p->second.scale}));
    new_initializers.push_back(MakeTensor<uint8_t>(zp, {}, TensorProto::UINT8,
                                                   {static_cast<uint8_t>(p->second.zero_point)}));
    auto prod = index.producer.find(t);
    std::vector<onnx::NodeProto>& at = prod == index.producer.end() ? leading : after[prod->second];
    at.push_back(MakeNode("QuantizeLinear", {t, scale, zp}, q, t + "_QuantizeLinear"));
    at.push_back(
        MakeNode("DequantizeLinear", {q, scale, zp}, DequantizedName(t), t + "_DequantizeLinear"));
  }
  // Weights: int8, symmetric, per output channel; biases: int32 at input scale × weight scale.
  std::map<std::string, std::vector<float>> weight_scales;  // by float weight name
  for (int i = 0; i < g->node_size(); ++i) {
    onnx::NodeProto* node = g->mutable_node(i);
    if (!quantized_layers.count(NodeName(*node, i))) continue;
    const WeightSlot slot = WeightOf(*node, index, *g);
    if (slot.input < 0) continue;  // a MatMul of two activations
    const std::string w_name = node->input(slot.input);
    const TensorProto& w_proto = g->initializer(index.initializer.at(w_name));
    const std::vector<int64_t> dims = Dims(w_proto);
    const int64_t channels = per_channel ? dims[slot.axis] : 1;
    if (!weight_scales.count(w_name)) {
      absl::StatusOr<std::vector<float>> w = Floats(w_proto);
      if (!w.ok()) return w.status();
      // Element e's channel: (e / inner) % channels, inner = the product of dims after axis.
      int64_t inner = 1;
      for (size_t d = slot.axis + 1; d < dims.size(); ++d) inner *= dims[d];
      auto channel_of = [&](int64_t e) { return per_channel ? (e / inner) % channels : 0; };
      std::vector<float> amax(static_cast<size_t>(channels), 0.0f);
      for (int64_t e = 0; e < static_cast<int64_t>(w->size()); ++e)
        amax[channel_of(e)] = std::max(amax[channel_of(e)], std::fabs((*w)[e]));
      std::vector<float> scales(amax.size());
      for (size_t c = 0; c < amax.size(); ++c) scales[c] = amax[c] > 0 ? amax[c] / 127.0f : 1.0f;
      std::vector<int8_t> q(w->size());
      for (int64_t e = 0; e < static_cast<int64_t>(w->size()); ++e) {
        q[e] = static_cast<int8_t>(
            std::clamp(std::nearbyint((*w)[e] / scales[channel_of(e)]), -127.0f, 127.0f));
      }
      const std::vector<int64_t> param_dims =
          per_channel ? std::vector<int64_t>{channels} : std::vector<int64_t>{};
      new_initializers.push_back(MakeTensor(w_name + "_quantized", dims, TensorProto::INT8, q));
      new_initializers.push_back(
          MakeTensor(w_name + "_scale", param_dims, TensorProto::FLOAT, scales));
      new_initializers.push_back(MakeTensor(w_name + "_zero_point", param_dims, TensorProto::INT8,
                                            std::vector<int8_t>(scales.size(), 0)));
      onnx::NodeProto dq = MakeNode(
          "DequantizeLinear", {w_name + "_quantized", w_name + "_scale", w_name + "_zero_point"},
          DequantizedName(w_name), w_name + "_DequantizeLinear");
      if (per_channel) SetIntAttr(dq, "axis", slot.axis);
      leading.push_back(std::move(dq));
      weight_scales[w_name] = std::move(scales);
    }
    node->set_input(slot.input, DequantizedName(w_name));

    // A bias of one value per output channel, when the input's scale is known.
    const std::string& x_float = node->input(0);  // activations are rewired below
    if (node->input_size() < 3 || node->input(2).empty() || !index.IsInitializer(node->input(2)) ||
        !params.count(x_float)) {
      continue;
    }
    const TensorProto& b_proto = g->initializer(index.initializer.at(node->input(2)));
    absl::StatusOr<std::vector<float>> b = Floats(b_proto);
    const int64_t n = dims[slot.axis];
    if (!b.ok() || b_proto.dims_size() != 1 || static_cast<int64_t>(b->size()) != n) continue;
    const std::vector<float>& ws = weight_scales[w_name];
    const float x_scale = params.at(x_float).scale;
    std::vector<float> scales(per_channel ? n : 1);
    for (size_t c = 0; c < scales.size(); ++c) scales[c] = x_scale * ws[per_channel ? c : 0];
    std::vector<int32_t> q(b->size());
    for (int64_t c = 0; c < n; ++c) {
      const double v = std::nearbyint(double{(*b)[c]} / scales[per_channel ? c : 0]);
      q[c] = static_cast<int32_t>(std::clamp(v, -2147483647.0, 2147483647.0));
    }
    const std::string base = node->output(0) + "_bias";
    const std::vector<int64_t> param_dims =
        per_channel ? std::vector<int64_t>{n} : std::vector<int64_t>{};
    new_initializers.push_back(MakeTensor(base + "_quantized", {n}, TensorProto::INT32, q));
    new_initializers.push_back(MakeTensor(base + "_scale", param_dims, TensorProto::FLOAT, scales));
    new_initializers.push_back(MakeTensor(base + "_zero_point", param_dims, TensorProto::INT32,
                                          std::vector<int32_t>(scales.size(), 0)));
    onnx::NodeProto dq =
        MakeNode("DequantizeLinear", {base + "_quantized", base + "_scale", base + "_zero_point"},
                 DequantizedName(base), base + "_DequantizeLinear");
    if (per_channel) SetIntAttr(dq, "axis", 0);
    leading.push_back(std::move(dq));
    node->set_input(2, DequantizedName(base));
  }

  std::set<std::string> quantized(plan.activations.begin(), plan.activations.end());
  for (int i = 0; i < g->node_size(); ++i) {
    onnx::NodeProto* node = g->mutable_node(i);
    if (float_layers.count(NodeName(*node, i))) continue;
    for (int k = 0; k < node->input_size(); ++k)
      if (quantized.count(node->input(k))) node->set_input(k, DequantizedName(node->input(k)));
  }

  // The new node order: the leading DequantizeLinear nodes, then each node followed by the
  // pairs of what it produces.
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (onnx::NodeProto& n : leading) *nodes.Add() = std::move(n);
  for (int i = 0; i < g->node_size(); ++i) {
    *nodes.Add() = std::move(*g->mutable_node(i));
    auto it = after.find(i);
    if (it != after.end())
      for (onnx::NodeProto& n : it->second) *nodes.Add() = std::move(n);
  }
  g->mutable_node()->Swap(&nodes);
  for (TensorProto& t : new_initializers) *g->add_initializer() = std::move(t);

  DropUnreadInitializers(g);  // the float weights
  return absl::OkStatus();
}

std::vector<std::string> ExposeTensors(onnx::ModelProto& model,
                                       const std::vector<std::string>& tensors) {
  onnx::GraphProto* g = model.mutable_graph();
  std::vector<std::string> names;
  std::set<std::string> have;
  for (const onnx::ValueInfoProto& o : g->output()) {
    names.push_back(o.name());
    have.insert(o.name());
  }
  for (const std::string& t : tensors) {
    if (!have.insert(t).second) continue;
    onnx::ValueInfoProto* o = g->add_output();
    o->set_name(t);
    o->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
    names.push_back(t);
  }
  return names;
}

std::vector<std::string> GraphInputs(const onnx::ModelProto& model) {
  std::set<std::string> inits;
  for (const TensorProto& t : model.graph().initializer()) inits.insert(t.name());
  std::vector<std::string> names;
  for (const onnx::ValueInfoProto& in : model.graph().input())
    if (!inits.count(in.name())) names.push_back(in.name());
  return names;
}

}  // namespace kiln::quantize
