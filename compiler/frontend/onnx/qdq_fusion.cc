#include "compiler/frontend/onnx/qdq_fusion.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kiln::frontend::onnx_import {

using onnx::NodeProto;
using onnx::TensorProto;

std::optional<std::vector<double>> TensorNumbers(const TensorProto& t) {
  if (t.data_location() == TensorProto::EXTERNAL) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  size_t width = 0;
  switch (t.data_type()) {
    case TensorProto::FLOAT:
    case TensorProto::INT32:
      width = 4;
      break;
    case TensorProto::INT8:
    case TensorProto::UINT8:
      width = 1;
      break;
    default:
      return std::nullopt;
  }
  std::vector<double> v(static_cast<size_t>(n));
  if (t.has_raw_data()) {
    if (t.raw_data().size() != static_cast<size_t>(n) * width) return std::nullopt;
    const char* p = t.raw_data().data();
    for (int64_t i = 0; i < n; ++i) {
      switch (t.data_type()) {
        case TensorProto::FLOAT: {
          float f;
          std::memcpy(&f, p + 4 * i, 4);
          v[i] = f;
          break;
        }
        case TensorProto::INT32: {
          int32_t x;
          std::memcpy(&x, p + 4 * i, 4);
          v[i] = x;
          break;
        }
        case TensorProto::INT8:
          v[i] = static_cast<int8_t>(p[i]);
          break;
        default:
          v[i] = static_cast<uint8_t>(p[i]);
      }
    }
    return v;
  }
  if (t.data_type() == TensorProto::FLOAT) {
    if (t.float_data_size() != n) return std::nullopt;
    std::copy(t.float_data().begin(), t.float_data().end(), v.begin());
  } else {
    if (t.int32_data_size() != n) return std::nullopt;
    std::copy(t.int32_data().begin(), t.int32_data().end(), v.begin());
  }
  return v;
}

const onnx::AttributeProto* FindAttribute(const NodeProto& node, const std::string& name) {
  for (const onnx::AttributeProto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

namespace {

TensorProto Scalar(const std::string& name, int data_type, double value) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(data_type);
  if (data_type == TensorProto::FLOAT) {
    t.add_float_data(static_cast<float>(value));
  } else {
    t.add_int32_data(static_cast<int32_t>(value));
  }
  return t;
}

class Fusion {
 public:
  Fusion(onnx::GraphProto* g, int64_t opset) : g_(g), opset_(opset) {
    for (const TensorProto& t : g->initializer()) inits_[t.name()] = &t;
    for (int i = 0; i < g->node_size(); ++i) {
      // A Constant node's tensor is as good as an initializer (exporters write Clip's bounds so).
      const NodeProto& n = g->node(i);
      if (n.op_type() == "Constant" && n.output_size() == 1 && n.attribute_size() == 1 &&
          n.attribute(0).name() == "value" && n.attribute(0).has_t()) {
        inits_[n.output(0)] = &n.attribute(0).t();
      }
    }
    for (int i = 0; i < g->node_size(); ++i) {
      for (const std::string& in : g->node(i).input())
        if (!in.empty()) readers_[in].push_back(i);
      for (const std::string& out : g->node(i).output()) producer_[out] = i;
    }
    for (const onnx::ValueInfoProto& o : g->output()) outputs_.insert(o.name());
  }

  int Run() {
    int fused = 0;
    for (int i = 0; i < g_->node_size(); ++i) {
      const std::string& op = g_->node(i).op_type();
      if (op == "Conv" && TryConv(i)) ++fused;
      if ((op == "Gemm" || op == "MatMul") && TryDense(i)) ++fused;
      if (op == "MaxPool" && TryMaxPool(i)) ++fused;
    }
    if (fused == 0) return 0;
    google::protobuf::RepeatedPtrField<NodeProto> nodes;
    for (int i = 0; i < g_->node_size(); ++i) {
      if (!removed_.count(i)) *nodes.Add() = std::move(*g_->mutable_node(i));
      auto it = inserted_.find(i);
      if (it != inserted_.end())
        for (NodeProto& n : it->second) *nodes.Add() = std::move(n);
    }
    g_->mutable_node()->Swap(&nodes);
    for (TensorProto& t : new_inits_) *g_->add_initializer() = std::move(t);
    return fused;
  }

 private:
  const TensorProto* Init(const std::string& name) const {
    auto it = inits_.find(name);
    return it == inits_.end() ? nullptr : it->second;
  }
  // The node producing `tensor` when it is `op_type` with its first two inputs (the
  // DequantizeLinear's data and scale), else null: nothing here reads past a node's inputs.
  const NodeProto* Producer(const std::string& tensor, const char* op_type) const {
    auto it = producer_.find(tensor);
    if (it == producer_.end()) return nullptr;
    const NodeProto& n = g_->node(it->second);
    return n.op_type() == op_type && n.input_size() >= 2 ? &n : nullptr;
  }
  // The one node reading `tensor` (which is no graph output), or -1.
  int OnlyReader(const std::string& tensor) const {
    auto it = readers_.find(tensor);
    if (it == readers_.end() || it->second.size() != 1 || outputs_.count(tensor)) return -1;
    return it->second[0];
  }
  // Input `k` of `n` as an initializer's numbers, when it is one (`absent` when not given).
  std::optional<std::vector<double>> InitNumbers(const NodeProto& n, int k, int data_type) const {
    if (n.input_size() <= k || n.input(k).empty()) return std::nullopt;
    const TensorProto* t = Init(n.input(k));
    if (t == nullptr || t->data_type() != data_type) return std::nullopt;
    return TensorNumbers(*t);
  }
  bool ZeroPointIs(const NodeProto& n, int data_type, bool must_be_zero) const {
    if (n.input_size() <= 2 || n.input(2).empty())
      return data_type == TensorProto::UINT8 || must_be_zero;
    std::optional<std::vector<double>> zp = InitNumbers(n, 2, data_type);
    if (!zp) return false;
    for (double v : *zp)
      if (must_be_zero && v != 0) return false;
    return true;
  }
  std::string ZeroPointName(const NodeProto& n, int data_type, const std::string& base) {
    if (n.input_size() > 2 && !n.input(2).empty()) return n.input(2);
    new_inits_.push_back(Scalar(base, data_type, 0));
    return base;
  }

  bool TryConv(int index) {
    const NodeProto& conv = g_->node(index);
    if (conv.input_size() < 2 || conv.output_size() < 1) return false;
    // uint8 data, dequantized per tensor.
    const NodeProto* dx = Producer(conv.input(0), "DequantizeLinear");
    if (dx == nullptr || Init(dx->input(0)) != nullptr) return false;
    std::optional<std::vector<double>> x_scale = InitNumbers(*dx, 1, TensorProto::FLOAT);
    if (!x_scale || x_scale->size() != 1 || !ZeroPointIs(*dx, TensorProto::UINT8, false))
      return false;
    // Constant int8 weights, symmetric, per tensor or per output channel.
    const NodeProto* dw = Producer(conv.input(1), "DequantizeLinear");
    if (dw == nullptr) return false;
    const TensorProto* w = Init(dw->input(0));
    if (w == nullptr || w->data_type() != TensorProto::INT8 || w->dims_size() != 4) return false;
    const int64_t out_c = w->dims(0);
    // One group, or one channel per group (depthwise).
    const onnx::AttributeProto* group = FindAttribute(conv, "group");
    if (group != nullptr && group->i() != 1 && (group->i() != out_c || w->dims(1) != 1))
      return false;
    std::optional<std::vector<double>> w_scale = InitNumbers(*dw, 1, TensorProto::FLOAT);
    if (!w_scale || (w_scale->size() != 1 && static_cast<int64_t>(w_scale->size()) != out_c) ||
        !ZeroPointIs(*dw, TensorProto::INT8, true))
      return false;
    const onnx::AttributeProto* w_axis = FindAttribute(*dw, "axis");
    if (w_scale->size() != 1 && (w_axis == nullptr || w_axis->i() != 0)) return false;
    // The bias: dequantized int32 or float, one per output channel.
    std::optional<std::vector<double>> bias;
    if (conv.input_size() > 2 && !conv.input(2).empty()) {
      bias = DequantizedBias(conv.input(2), out_c);
      if (!bias) return false;
    }
    // conv -> [Relu | Clip] -> QuantizeLinear to uint8, per tensor.
    int next = OnlyReader(conv.output(0));
    if (next < 0) return false;
    const NodeProto* act = nullptr;
    if (g_->node(next).op_type() == "Relu" || g_->node(next).op_type() == "Clip") {
      if (opset_ < 12 || g_->node(next).output_size() < 1) return false;  // uint8 Clip: opset 12
      act = &g_->node(next);
      next = OnlyReader(act->output(0));
      if (next < 0) return false;
    }
    const NodeProto& q = g_->node(next);
    if (q.op_type() != "QuantizeLinear" || q.input_size() < 2 || q.output_size() < 1) return false;
    std::optional<std::vector<double>> y_scale = InitNumbers(q, 1, TensorProto::FLOAT);
    if (!y_scale || y_scale->size() != 1 || !ZeroPointIs(q, TensorProto::UINT8, false))
      return false;
    double y_zp = 0;
    if (q.input_size() > 2 && !q.input(2).empty())
      y_zp = (*InitNumbers(q, 2, TensorProto::UINT8))[0];
    double lo = -INFINITY, hi = INFINITY;
    if (act != nullptr && !ActivationRange(*act, &lo, &hi)) return false;

    const std::string base = (conv.name().empty() ? conv.output(0) : conv.name()) + "_kiln_";
    NodeProto qconv;
    qconv.set_op_type("QLinearConv");
    qconv.set_name(conv.name());
    for (const std::string& in :
         {dx->input(0), dx->input(1), ZeroPointName(*dx, TensorProto::UINT8, base + "x_zero_point"),
          dw->input(0), dw->input(1), ZeroPointName(*dw, TensorProto::INT8, base + "w_zero_point"),
          q.input(1), ZeroPointName(q, TensorProto::UINT8, base + "y_zero_point")}) {
      qconv.add_input(in);
    }
    if (bias) {
      // At the accumulator's scale, x_scale × w_scale[o].
      TensorProto b;
      b.set_name(base + "bias");
      b.set_data_type(TensorProto::INT32);
      b.add_dims(out_c);
      for (int64_t o = 0; o < out_c; ++o) {
        const double scale = (*x_scale)[0] * (*w_scale)[w_scale->size() == 1 ? 0 : o];
        const double v = scale > 0 ? std::nearbyint((*bias)[o] / scale) : 0;
        b.add_int32_data(static_cast<int32_t>(std::clamp(v, -2147483647.0, 2147483647.0)));
      }
      new_inits_.push_back(std::move(b));
      qconv.add_input(base + "bias");
    }
    for (const onnx::AttributeProto& a : conv.attribute()) *qconv.add_attribute() = a;
    std::vector<NodeProto> added;
    if (act == nullptr) {
      qconv.add_output(q.output(0));
      added.push_back(std::move(qconv));
    } else {
      // Clip commutes with quantization: clamp the uint8 result to the bounds' quantized values.
      auto quantized = [&](double v) {
        return std::clamp(std::nearbyint(v / (*y_scale)[0]) + y_zp, 0.0, 255.0);
      };
      qconv.add_output(base + "uint8");
      added.push_back(std::move(qconv));
      new_inits_.push_back(
          Scalar(base + "min", TensorProto::UINT8, std::isinf(lo) ? 0 : quantized(lo)));
      new_inits_.push_back(
          Scalar(base + "max", TensorProto::UINT8, std::isinf(hi) ? 255 : quantized(hi)));
      NodeProto clip;
      clip.set_op_type("Clip");
      clip.set_name(act->name());
      clip.add_input(base + "uint8");
      clip.add_input(base + "min");
      clip.add_input(base + "max");
      clip.add_output(q.output(0));
      added.push_back(std::move(clip));
    }
    removed_.insert(index);
    removed_.insert(next);
    if (act != nullptr) removed_.insert(producer_.at(act->output(0)));
    inserted_[next] = std::move(added);
    return true;
  }

  // DequantizeLinear(x) -> MaxPool -> QuantizeLinear at the same scale and zero point: a MaxPool
  // of the uint8 x. The maximum commutes with the monotone dequantization; a padded tap, which
  // reads -inf in float, reads 0 in uint8, which no tap's maximum is below; and requantizing a
  // dequantized value at its own scale gives the value back.
  bool TryMaxPool(int index) {
    const NodeProto& pool = g_->node(index);
    if (pool.input_size() != 1 || pool.output_size() != 1) return false;  // no Indices output
    const NodeProto* dx = Producer(pool.input(0), "DequantizeLinear");
    if (dx == nullptr || Init(dx->input(0)) != nullptr) return false;
    std::optional<std::vector<double>> x_scale = InitNumbers(*dx, 1, TensorProto::FLOAT);
    if (!x_scale || x_scale->size() != 1 || !ZeroPointIs(*dx, TensorProto::UINT8, false))
      return false;
    const int next = OnlyReader(pool.output(0));
    if (next < 0) return false;
    const NodeProto& q = g_->node(next);
    if (q.op_type() != "QuantizeLinear" || q.input_size() < 2) return false;
    std::optional<std::vector<double>> y_scale = InitNumbers(q, 1, TensorProto::FLOAT);
    auto zero_point = [&](const NodeProto& n) -> std::optional<std::vector<double>> {
      if (n.input_size() <= 2 || n.input(2).empty()) return std::vector<double>{0};
      return InitNumbers(n, 2, TensorProto::UINT8);
    };
    const std::optional<std::vector<double>> x_zp = zero_point(*dx), y_zp = zero_point(q);
    if (!y_scale || *y_scale != *x_scale || !x_zp || !y_zp || *x_zp != *y_zp) return false;
    NodeProto pooled = pool;
    pooled.set_input(0, dx->input(0));
    pooled.set_output(0, q.output(0));
    removed_.insert(index);
    removed_.insert(next);
    inserted_[next] = {std::move(pooled)};
    return true;
  }

  // DequantizeLinear(x) × DequantizeLinear(int8 constant) (+ bias), a Gemm or MatMul whatever
  // reads its float result: MatMulInteger of the quantized operands, then its int32 scaled to
  // float per column (x_scale × w_scale) and the bias added — the converter makes the integer
  // product one int8 kernel, and fusion applies the rest as it stores it.
  bool TryDense(int index) {
    const NodeProto& node = g_->node(index);
    const bool gemm = node.op_type() == "Gemm";
    if (node.input_size() < 2 || node.output_size() < 1) return false;
    if (gemm) {
      const onnx::AttributeProto* alpha = FindAttribute(node, "alpha");
      const onnx::AttributeProto* beta = FindAttribute(node, "beta");
      const onnx::AttributeProto* trans_a = FindAttribute(node, "transA");
      if ((alpha && alpha->f() != 1) || (beta && beta->f() != 1) || (trans_a && trans_a->i() != 0))
        return false;
    }
    const onnx::AttributeProto* trans_b_attr = gemm ? FindAttribute(node, "transB") : nullptr;
    const bool trans_b = trans_b_attr != nullptr && trans_b_attr->i() != 0;
    const NodeProto* dx = Producer(node.input(0), "DequantizeLinear");
    if (dx == nullptr || Init(dx->input(0)) != nullptr) return false;
    std::optional<std::vector<double>> x_scale = InitNumbers(*dx, 1, TensorProto::FLOAT);
    if (!x_scale || x_scale->size() != 1 || !ZeroPointIs(*dx, TensorProto::UINT8, false))
      return false;
    const NodeProto* dw = Producer(node.input(1), "DequantizeLinear");
    if (dw == nullptr) return false;
    const TensorProto* w = Init(dw->input(0));
    if (w == nullptr || w->data_type() != TensorProto::INT8 || w->dims_size() != 2) return false;
    const int64_t k = trans_b ? w->dims(1) : w->dims(0), n = trans_b ? w->dims(0) : w->dims(1);
    std::optional<std::vector<double>> w_scale = InitNumbers(*dw, 1, TensorProto::FLOAT);
    if (!w_scale || (w_scale->size() != 1 && static_cast<int64_t>(w_scale->size()) != n) ||
        !ZeroPointIs(*dw, TensorProto::INT8, true))
      return false;
    if (w_scale->size() != 1) {  // per output column: axis 0 of [N, K], 1 of [K, N]
      const onnx::AttributeProto* axis = FindAttribute(*dw, "axis");
      const int64_t a = axis == nullptr ? 1 : axis->i();
      if (a != (trans_b ? 0 : 1) && a != (trans_b ? -2 : -1)) return false;
    }
    std::optional<std::vector<double>> bias;
    if (gemm && node.input_size() > 2 && !node.input(2).empty()) {
      bias = DequantizedBias(node.input(2), n);
      if (!bias) return false;
    }
    std::optional<std::vector<double>> wv = TensorNumbers(*w);
    if (!wv) return false;

    const std::string base = (node.name().empty() ? node.output(0) : node.name()) + "_kiln_";
    std::string w_name = dw->input(0);
    if (trans_b) {  // MatMulInteger takes [K, N]
      TensorProto t;
      t.set_name(base + "weight");
      t.set_data_type(TensorProto::INT8);
      t.add_dims(k);
      t.add_dims(n);
      std::string bytes(static_cast<size_t>(k * n), '\0');
      for (int64_t r = 0; r < k; ++r)
        for (int64_t c = 0; c < n; ++c)
          bytes[r * n + c] = static_cast<char>(static_cast<int8_t>((*wv)[c * k + r]));
      t.set_raw_data(std::move(bytes));
      new_inits_.push_back(std::move(t));
      w_name = base + "weight";
    }
    std::vector<NodeProto> added;
    NodeProto mm;
    mm.set_op_type("MatMulInteger");
    mm.set_name(node.name());
    mm.add_input(dx->input(0));
    mm.add_input(w_name);
    mm.add_input(ZeroPointName(*dx, TensorProto::UINT8, base + "x_zero_point"));
    mm.add_output(base + "int32");
    added.push_back(std::move(mm));
    NodeProto cast;
    cast.set_op_type("Cast");
    cast.add_input(base + "int32");
    cast.add_output(base + "float");
    onnx::AttributeProto* to = cast.add_attribute();
    to->set_name("to");
    to->set_type(onnx::AttributeProto::INT);
    to->set_i(TensorProto::FLOAT);
    added.push_back(std::move(cast));
    TensorProto scale;
    scale.set_name(base + "scale");
    scale.set_data_type(TensorProto::FLOAT);
    if (w_scale->size() != 1) scale.add_dims(n);
    for (double ws : *w_scale)
      scale.add_float_data(static_cast<float>((*x_scale)[0]) * static_cast<float>(ws));
    new_inits_.push_back(std::move(scale));
    NodeProto mul;
    mul.set_op_type("Mul");
    mul.add_input(base + "float");
    mul.add_input(base + "scale");
    mul.add_output(bias ? base + "scaled" : node.output(0));
    added.push_back(std::move(mul));
    if (bias) {
      TensorProto b;
      b.set_name(base + "bias");
      b.set_data_type(TensorProto::FLOAT);
      b.add_dims(n);
      for (double v : *bias) b.add_float_data(static_cast<float>(v));
      new_inits_.push_back(std::move(b));
      NodeProto add;
      add.set_op_type("Add");
      add.add_input(base + "scaled");
      add.add_input(base + "bias");
      add.add_output(node.output(0));
      added.push_back(std::move(add));
    }
    removed_.insert(index);
    inserted_[index] = std::move(added);
    return true;
  }

  // A bias input: DequantizeLinear of an int32 constant, or a float constant; its real values.
  std::optional<std::vector<double>> DequantizedBias(const std::string& tensor, int64_t n) const {
    if (const TensorProto* t = Init(tensor)) {
      if (t->data_type() != TensorProto::FLOAT || t->dims_size() != 1 || t->dims(0) != n)
        return std::nullopt;
      return TensorNumbers(*t);
    }
    const NodeProto* db = Producer(tensor, "DequantizeLinear");
    if (db == nullptr) return std::nullopt;
    const TensorProto* b = Init(db->input(0));
    if (b == nullptr || b->data_type() != TensorProto::INT32 || b->dims_size() != 1 ||
        b->dims(0) != n || !ZeroPointIs(*db, TensorProto::INT32, true))
      return std::nullopt;
    std::optional<std::vector<double>> q = TensorNumbers(*b);
    std::optional<std::vector<double>> scale = InitNumbers(*db, 1, TensorProto::FLOAT);
    if (!q || !scale || (scale->size() != 1 && static_cast<int64_t>(scale->size()) != n))
      return std::nullopt;
    for (int64_t o = 0; o < n; ++o) (*q)[o] *= (*scale)[scale->size() == 1 ? 0 : o];
    return q;
  }

  // A Relu's or a constant Clip's bounds.
  bool ActivationRange(const NodeProto& act, double* lo, double* hi) const {
    if (act.op_type() == "Relu") {
      *lo = 0;
      return true;
    }
    for (int k = 1; k <= 2; ++k) {
      if (act.input_size() <= k || act.input(k).empty()) continue;
      std::optional<std::vector<double>> v = InitNumbers(act, k, TensorProto::FLOAT);
      if (!v || v->size() != 1) return false;
      (k == 1 ? *lo : *hi) = (*v)[0];
    }
    return *lo <= *hi;
  }

  onnx::GraphProto* g_;
  int64_t opset_;
  std::map<std::string, const TensorProto*> inits_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> readers_;
  std::set<std::string> outputs_;
  std::set<int> removed_;
  std::map<int, std::vector<NodeProto>> inserted_;
  std::vector<TensorProto> new_inits_;
};

}  // namespace

int FuseQdqConvolutions(onnx::GraphProto* graph, int64_t opset) {
  // Every ONNX import passes here: a model without DequantizeLinear costs one scan, no index.
  const bool qdq = std::any_of(graph->node().begin(), graph->node().end(), [](const NodeProto& n) {
    return n.op_type() == "DequantizeLinear";
  });
  if (opset < 10 || !qdq) return 0;
  return Fusion(graph, opset).Run();
}

}  // namespace kiln::frontend::onnx_import
