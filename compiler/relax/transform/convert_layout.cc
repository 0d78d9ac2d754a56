// ConvertConvLayout (transform.h): NCHW convolutions with constant weights computed in NHWC,
// and the elementwise code between them following, so that the layout changes only where the
// graph leaves the convolutions.
#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/ir/relax_functor.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/op_registry.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/relax/transform/utils.h"

namespace kiln::ir::relax {
namespace {

const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};
const std::vector<int64_t> kToNchw = {0, 3, 1, 2};

// The constant integers of a list attribute; false when it is absent or not constant.
bool IntsOf(const Attrs& attrs, const char* key, std::vector<int64_t>* out) {
  ObjectRef v = GetAttr(attrs, key);
  const auto* list = v ? v.as<ir::ArrayNode>() : nullptr;
  if (list == nullptr) return false;
  out->clear();
  for (const ObjectRef& item : list->items) {
    if (!item.as<PrimExprNode>()) return false;
    const PrimExpr e = item.as_ref<PrimExprNode>();
    const int64_t* c = AsConstInt(e);
    if (c == nullptr) return false;
    out->push_back(*c);
  }
  return true;
}

// The static shape of a tensor-typed expression, or empty.
std::vector<int64_t> StaticShape(const Expr& e) {
  const auto* t = e->struct_info() ? e->struct_info().as<TensorStructInfoNode>() : nullptr;
  const std::vector<PrimExpr>* dims = t != nullptr ? t->dims() : nullptr;
  std::vector<int64_t> shape;
  if (dims == nullptr) return shape;
  for (const PrimExpr& d : *dims) {
    const int64_t* c = AsConstInt(d);
    if (c == nullptr) return {};
    shape.push_back(*c);
  }
  return shape;
}

// `bytes` of a row-major tensor of `shape` (elements of `size` bytes), its axes permuted: output
// axis k is input axis perm[k]. The source offset is stepped as the output index counts up (a
// ResNet-18's weights, 45 MB, took a tenth of its compile when each element's source was
// recomputed and copied by memcpy).
std::string Permute(const std::string& bytes, const std::vector<int64_t>& shape,
                    const std::vector<int64_t>& perm, size_t size) {
  const size_t rank = shape.size();
  std::vector<int64_t> in_strides(rank, 1), out_shape(rank), step(rank);
  for (size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * shape[d];
  int64_t n = 1;
  for (size_t k = 0; k < rank; ++k) {
    out_shape[k] = shape[perm[k]];
    step[k] = in_strides[perm[k]];
    n *= out_shape[k];
  }
  std::string out(bytes.size(), '\0');
  std::vector<int64_t> index(rank, 0);  // the output element's index
  int64_t src = 0;                      // its element in the input
  auto copy = [&](int64_t to, int64_t from) {
    if (size == 4) {
      uint32_t v;
      std::memcpy(&v, &bytes[from * 4], 4);
      std::memcpy(&out[to * 4], &v, 4);
    } else {
      std::memcpy(&out[to * size], &bytes[from * size], size);
    }
  };
  for (int64_t flat = 0; flat < n; ++flat) {
    copy(flat, src);
    for (size_t k = rank; k-- > 0;) {
      if (++index[k] < out_shape[k]) {
        src += step[k];
        break;
      }
      src -= (out_shape[k] - 1) * step[k];
      index[k] = 0;
    }
  }
  return out;
}

class LayoutRewriter {
 public:
  LayoutRewriter(const IRModule& mod, const target::CpuPolicy& policy)
      : bb_(mod), policy_(policy) {}

  BindingBlock Rewrite(const BindingBlock& block) {
    dataflow_ = block->is_dataflow();
    out_.clear();
    nhwc_.clear();  // a twin is a variable of the block that bound it
    for (const Binding& b : block->bindings) {
      const auto* vb = b.as<VarBindingNode>();
      if (vb != nullptr) bound_[vb->var.get()] = vb->value;
      if (vb == nullptr || !Convert(vb->var, vb->value)) {
        MaterializeUses(b);
        Expr split = vb != nullptr ? SplitColumns(vb->value) : Expr();
        out_.push_back(split ? MakeBinding(vb->var, split) : b);
      }
    }
    return Make<BindingBlockNode>(block->is_dataflow(), out_);
  }

 private:
  // Rewrites `var = value` in NHWC when it can: returns false to keep it as it is.
  bool Convert(const Var& var, const Expr& value) {
    const auto* call = value.as<CallNode>();
    if (call == nullptr) return false;
    const std::string op = OpName(call);
    Var twin;
    if (op == "relax.nn.conv2d") {
      twin = ConvertConv(*call, var);
    } else if (op == "relax.qnn.conv2d_int8" || op == "relax.qnn.depthwise_conv2d_int8") {
      twin = ConvertInt8Conv(*call, var, op == "relax.qnn.depthwise_conv2d_int8");
    } else if (op == "relax.mean") {
      return ConvertMean(var, *call);
    } else if (op == "relax.nn.max_pool2d" || op == "relax.nn.avg_pool2d") {
      twin = ConvertPool(*call, var);
    } else if (const OpInfo* info = LookupOp(op);
               info != nullptr && info->pattern <= OpPattern::kBroadcast) {
      twin = ConvertElementwise(*call, var);
    }
    if (!twin) return false;
    nhwc_[var.get()] = twin;
    // A value the block exports is needed as it was.
    if (!var->is_dataflow()) Materialize(var);
    return true;
  }

  // var = conv2d(x, W), NCHW data and a constant OIHW weight, where the CPU policy runs it in
  // NHWC (target::ConvRunsInNhwc) -> conv2d(x or its twin, W as OHWI<b>o or HWIO), an NHWC
  // result: its twin.
  Var ConvertConv(const CallNode& call, const Var& var) {
    if (call.args.size() != 2 || StringAttrOr(call.attrs, "data_layout", "NCHW") != "NCHW" ||
        StringAttrOr(call.attrs, "kernel_layout", "OIHW") != "OIHW" ||
        !StringAttrOr(call.attrs, "out_dtype", "").empty()) {
      return Var();
    }
    const ConstantNode* w = ConstantOf(call.args[1]);
    const std::vector<int64_t> out = StaticShape(var);
    if (w == nullptr || w->shape.size() != 4 || StaticShape(call.args[0]).size() != 4 ||
        out.size() != 4) {
      return Var();
    }
    // NHWC data where it is already; else the NCHW data is read as it is (each input value is
    // a broadcast) and only the output is NHWC: no transpose.
    const auto* v = call.args[0].as<VarNode>();
    auto twin = v != nullptr ? nhwc_.find(v) : nhwc_.end();
    const bool nhwc_in = twin != nhwc_.end();
    target::ConvDescription conv = DescribeConv(call, *w);
    conv.input_nhwc = nhwc_in;
    if (!target::ConvRunsInNhwc(conv, policy_)) return Var();
    Expr x = nhwc_in ? Expr(twin->second) : call.args[0];
    const size_t size = w->dtype.bytes();
    if (size == 0 || w->bytes->size() != size * static_cast<size_t>(Elements(w->shape)))
      return Var();
    // OIHW -> HWIO (output axis k is input axis {2, 3, 1, 0}[k]), or blocked as OHWI<b>o,
    // [O / b, H, W, I, b].
    const int64_t o = w->shape[0], block = target::NhwcWeightBlock(conv, policy_);
    const bool blocked = block != 0;
    Expr weight;
    std::string layout = "HWIO";
    if (blocked) {
      // OIHW -> [O / b, b, H, W, I] -> [O / b, H, W, I, b]
      const std::vector<int64_t> split = {o / block, block, w->shape[2], w->shape[3], w->shape[1]};
      std::string ohwi = Permute(*w->bytes, w->shape, {0, 2, 3, 1}, size);
      weight = MakeConstant(w->dtype, {o / block, w->shape[2], w->shape[3], w->shape[1], block},
                            Permute(ohwi, split, {0, 2, 3, 4, 1}, size));
      layout = absl::StrCat("OHWI", block, "o");
    } else {
      weight = MakeConstant(w->dtype, {w->shape[2], w->shape[3], w->shape[1], w->shape[0]},
                            Permute(*w->bytes, w->shape, {2, 3, 1, 0}, size));
    }
    Attrs attrs =
        WithAttr(call.attrs, "data_layout", Make<ir::StringImmNode>(nhwc_in ? "NHWC" : "NCHW"));
    attrs = WithAttr(attrs, "kernel_layout", Make<ir::StringImmNode>(layout));
    attrs = WithAttr(attrs, "out_layout", Make<ir::StringImmNode>("NHWC"));
    return Emit(MakeCall(call.op, {x, weight}, call.sinfo_args, attrs), var->name_hint + "_nhwc");
  }

  // var = qnn.conv2d_int8(x, W, bias, multiplier) or qnn.depthwise_conv2d_int8, NCHW, where the
  // policy runs it in NHWC (target::Int8ConvRunsInNhwc) -> the same operator in NHWC on x's twin:
  // a pixel's channels side by side, so that the packed input words are its bytes as they lie and
  // the requantized lanes are stored as one vector; NCHW data a dense one reads as it is, into an
  // NHWC result. The dense weight is packed by output channel either way; the depthwise one
  // becomes [KH, KW, C].
  Var ConvertInt8Conv(const CallNode& call, const Var& var, bool depthwise) {
    if (call.args.size() != 4 || StringAttrOr(call.attrs, "data_layout", "NCHW") != "NCHW" ||
        StringAttrOr(call.attrs, "out_layout", "NCHW") != "NCHW")
      return Var();
    const std::vector<int64_t> in = StaticShape(call.args[0]), out = StaticShape(var);
    const auto* v = call.args[0].as<VarNode>();
    if (in.size() != 4 || out.size() != 4 || v == nullptr) return Var();
    auto twin = nhwc_.find(v);
    target::ConvDescription conv;
    conv.out_channels = out[1];
    conv.groups = depthwise ? in[1] : 1;
    conv.out_width = out[3];
    conv.input_nhwc = twin != nhwc_.end();
    if (!target::Int8ConvRunsInNhwc(conv, policy_)) return Var();
    Expr weight = call.args[1];
    if (depthwise) {
      const ConstantNode* w = ConstantOf(call.args[1]);
      if (w == nullptr || w->shape.size() != 3 ||
          w->bytes->size() != w->dtype.bytes() * static_cast<size_t>(Elements(w->shape)))
        return Var();
      weight = MakeConstant(w->dtype, {w->shape[1], w->shape[2], w->shape[0]},
                            Permute(*w->bytes, w->shape, {1, 2, 0}, w->dtype.bytes()));
    }
    // NCHW data is packed into pixel-major words as it is read: no transpose.
    Expr x = conv.input_nhwc ? Expr(twin->second) : call.args[0];
    Attrs attrs = WithAttr(call.attrs, "data_layout",
                           Make<ir::StringImmNode>(conv.input_nhwc ? "NHWC" : "NCHW"));
    attrs = WithAttr(attrs, "out_layout", Make<ir::StringImmNode>("NHWC"));
    return Emit(MakeCall(call.op, {x, weight, call.args[2], call.args[3]}, call.sinfo_args, attrs),
                var->name_hint + "_nhwc");
  }

  // conv2d(x, W) as it stays in NCHW, marked split_columns where the policy has a depthwise
  // convolution striding 2 along the rows read its input deinterleaved; null to keep it.
  Expr SplitColumns(const Expr& value) {
    const auto* call = value.as<CallNode>();
    if (call == nullptr || std::string(OpName(call)) != "relax.nn.conv2d" ||
        call->args.size() != 2 || StringAttrOr(call->attrs, "data_layout", "NCHW") != "NCHW" ||
        StringAttrOr(call->attrs, "kernel_layout", "OIHW") != "OIHW" ||
        StringAttrOr(call->attrs, "out_layout", "NCHW") != "NCHW") {
      return Expr();
    }
    const ConstantNode* w = ConstantOf(call->args[1]);
    std::vector<int64_t> strides;
    if (w == nullptr || w->shape.size() != 4 || StaticShape(call->args[0]).size() != 4)
      return Expr();
    if (!IntsOf(call->attrs, "strides", &strides)) strides = {1, 1};
    if (strides.empty() ||
        !target::SplitsColumns(DescribeConv(*call, *w), strides.back(), policy_)) {
      return Expr();
    }
    Attrs attrs = WithAttr(call->attrs, "split_columns", Bool(true));
    absl::StatusOr<Expr> normalized =
        bb_.Normalize(MakeCall(call->op, call->args, call->sinfo_args, attrs));
    return normalized.ok() ? *normalized : Expr();
  }

  // An elementwise or broadcast operator of a rank-4 result, reading at least one value that
  // has an NHWC twin. Its other tensors are transposed too: constants at compile time (a bias
  // [C, 1, 1] becomes [1, 1, 1, C]); other values of static shape by a reshape to rank 4 and a
  // transpose that FoldConstant computes when they derive from constants (a batch norm's scale,
  // sqrt and divide of its parameters) and the kernel does otherwise (a residual connection
  // from NCHW code, whose transpose would else be of the twin, the code after it NCHW).
  Var ConvertElementwise(const CallNode& call, const Var& var) {
    const std::vector<int64_t> shape = StaticShape(var);
    if (shape.size() != 4) return Var();
    bool any_twin = false;
    for (const Expr& arg : call.args) {
      const auto* v = arg.as<VarNode>();
      if (v != nullptr && nhwc_.count(v)) {
        any_twin = true;
        continue;
      }
      const auto* t = arg->struct_info() ? arg->struct_info().as<TensorStructInfoNode>() : nullptr;
      if (t == nullptr) continue;  // a PrimValue operand, a shape: kept
      const std::vector<int64_t> s = StaticShape(arg);
      if ((s.empty() && t->ndim != 0) || s.size() > 4) return Var();
    }
    if (!any_twin) return Var();
    std::vector<Expr> args;
    for (const Expr& arg : call.args) {
      Expr converted = BroadcastOperand(arg, shape);
      if (!converted) return Var();
      args.push_back(converted);
    }
    return Emit(MakeCall(call.op, args, call.sinfo_args, call.attrs), var->name_hint + "_nhwc");
  }

  // An operand of a broadcast against an NCHW value of `shape`, as it broadcasts against NHWC.
  Expr BroadcastOperand(const Expr& arg, const std::vector<int64_t>& shape) {
    const auto* v = arg.as<VarNode>();
    if (v != nullptr && nhwc_.count(v)) return nhwc_.at(v);
    const auto* t = arg->struct_info() ? arg->struct_info().as<TensorStructInfoNode>() : nullptr;
    if (t == nullptr) return arg;
    std::vector<int64_t> s = StaticShape(arg);
    if (Elements(s) == 1) return arg;  // a scalar broadcasts alike
    if (Expr c = BroadcastConstant(arg)) return c;
    if (v == nullptr) return Expr();
    if (s == shape) {  // transposed once, and the twin of what it transposes
      Var twin = Emit(Transpose(arg), v->name_hint + "_nhwc");
      if (twin) {
        nhwc_[v] = twin;
        materialized_.insert(v);  // the NCHW value exists already
      }
      return twin;
    }
    Expr x = arg;
    if (s.size() < 4) {
      while (s.size() < 4) s.insert(s.begin(), 1);
      std::vector<PrimExpr> dims;
      for (int64_t d : s) dims.push_back(IntImm(DataType::Int(64), d));
      x = Emit(MakeCall(GetOp("relax.reshape"), {arg, MakeShape(dims)}), v->name_hint + "_4d");
      if (!x) return Expr();
    }
    return Emit(Transpose(x), v->name_hint + "_nhwc");
  }

  static Expr Transpose(const Expr& x, const std::vector<int64_t>& axes = kToNhwc) {
    return MakeCall(GetOp("relax.permute_dims"), {x}, {}, {{"axes", IntList(axes)}});
  }

  // A pooling of an NHWC twin (a ResNet's max pool after its first convolution): the same
  // pooling in NHWC, rather than the twin transposed back for it.
  Var ConvertPool(const CallNode& call, const Var& var) {
    const auto* v = call.args.size() == 1 ? call.args[0].as<VarNode>() : nullptr;
    auto it = v != nullptr ? nhwc_.find(v) : nhwc_.end();
    if (it == nhwc_.end() || StringAttrOr(call.attrs, "layout", "NCHW") != "NCHW") return Var();
    Attrs attrs = WithAttr(call.attrs, "layout", Make<ir::StringImmNode>("NHWC"));
    return Emit(MakeCall(call.op, {it->second}, call.sinfo_args, attrs), var->name_hint + "_nhwc");
  }

  // mean(x, axis=[2, 3]) of an NHWC twin: mean over [1, 2], reshaped to the NCHW result (its
  // spatial dimensions are gone or 1, so the data's order is the same).
  bool ConvertMean(const Var& var, const CallNode& call) {
    const auto* v = call.args.size() == 1 ? call.args[0].as<VarNode>() : nullptr;
    auto it = v != nullptr ? nhwc_.find(v) : nhwc_.end();
    std::vector<int64_t> axes;
    if (it == nhwc_.end() || !IntsOf(call.attrs, "axis", &axes) || axes.size() != 2) return false;
    for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
    if (!((axes[0] == 2 && axes[1] == 3) || (axes[0] == 3 && axes[1] == 2))) return false;
    const std::vector<int64_t> shape = StaticShape(var);
    if (shape.empty()) return false;
    Attrs attrs = WithAttr(call.attrs, "axis", IntList({1, 2}));
    Var mean =
        Emit(MakeCall(call.op, {it->second}, call.sinfo_args, attrs), var->name_hint + "_nhwc");
    if (!mean) return false;
    std::vector<PrimExpr> dims;
    for (int64_t d : shape) dims.push_back(IntImm(DataType::Int(64), d));
    return Bind(var, MakeCall(GetOp("relax.reshape"), {mean, MakeShape(dims)}));
  }

  // A constant operand of a broadcast (a bias [C, 1, 1], a scalar) as it broadcasts against
  // NHWC: right-aligned to rank 4, then transposed. Null when the operand is not constant.
  Expr BroadcastConstant(const Expr& arg) {
    const ConstantNode* c = ConstantOf(arg);
    std::vector<int64_t> shape = StaticShape(arg);
    if (c == nullptr || shape.size() > 4 ||
        c->bytes->size() != static_cast<size_t>(c->dtype.bytes() * Elements(shape)))
      return Expr();
    if (Elements(shape) == 1) return MakeConstant(c->dtype, shape, *c->bytes);
    while (shape.size() < 4) shape.insert(shape.begin(), 1);
    return MakeConstant(c->dtype, {shape[0], shape[2], shape[3], shape[1]},
                        Permute(*c->bytes, shape, kToNhwc, c->dtype.bytes()));
  }

  // The constant an expression holds: a Constant, or a variable bound to one or to a reshape of
  // one (ONNX's bias as [C, 1, 1]).
  const ConstantNode* ConstantOf(const Expr& e) const {
    if (const auto* c = e.as<ConstantNode>()) return c;
    const auto* v = e.as<VarNode>();
    auto it = v != nullptr ? bound_.find(v) : bound_.end();
    if (it == bound_.end()) return nullptr;
    if (const auto* c = it->second.as<ConstantNode>()) return c;
    const auto* call = it->second.as<CallNode>();
    if (call != nullptr && std::string(OpName(call)) == "relax.reshape" && !call->args.empty())
      return call->args[0].as<ConstantNode>();
    return nullptr;
  }

  static int64_t Elements(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }

  // Binds a normalized `call` to a new variable of this block; null on failure.
  Var Emit(const Expr& call, const std::string& name) {
    absl::StatusOr<Expr> normalized = bb_.Normalize(call);
    if (!normalized.ok()) return Var();
    StructInfo sinfo = (*normalized)->struct_info();
    Var var = dataflow_ ? MakeDataflowVar(name, sinfo) : MakeVar(name, sinfo);
    out_.push_back(MakeBinding(var, *normalized));
    return var;
  }

  // Binds the existing `var` to the normalized `value`; false on failure.
  bool Bind(const Var& var, const Expr& value) {
    absl::StatusOr<Expr> normalized = bb_.Normalize(value);
    if (normalized.ok()) out_.push_back(MakeBinding(var, *normalized));
    return normalized.ok();
  }

  // Binds `var` to its NHWC twin transposed back, once.
  void Materialize(const Var& var) {
    auto it = nhwc_.find(var.get());
    if (it == nhwc_.end() || !materialized_.insert(var.get()).second) return;
    Bind(var, Transpose(it->second, kToNchw));
  }

  // Every variable `b` reads that so far exists only as a twin is bound before it.
  void MaterializeUses(const Binding& b) {
    class Uses : public ExprVisitor {
     public:
      void VisitExpr(const Expr& e) override {
        if (e.as<VarNode>()) vars.push_back(e.as_ref<VarNode>());
        DefaultVisitExpr(e);
      }
      std::vector<Var> vars;
    } uses;
    uses.VisitExpr(b->value);
    for (const Var& v : uses.vars) Materialize(v);
  }

  BlockBuilder bb_;
  const target::CpuPolicy& policy_;
  bool dataflow_ = false;
  std::unordered_map<const VarNode*, Expr> bound_;   // what each variable is bound to
  std::unordered_map<const VarNode*, Var> nhwc_;     // an NCHW value's NHWC twin
  std::unordered_set<const VarNode*> materialized_;  // twins bound back to their NCHW variable
  std::vector<Binding> out_;
};

}  // namespace

absl::StatusOr<IRModule> ConvertConvLayout(const IRModule& mod, const target::CpuPolicy& policy) {
  IRModuleBuilder out(mod);
  for (const auto& [name, entry] : mod->functions) {
    const auto* f = entry.second.as<FunctionNode>();
    const auto* seq = f != nullptr ? f->body.as<SeqExprNode>() : nullptr;
    if (seq == nullptr) continue;
    LayoutRewriter rewriter(mod, policy);
    std::vector<BindingBlock> blocks;
    for (const BindingBlock& block : seq->blocks) blocks.push_back(rewriter.Rewrite(block));
    out.Update(entry.first, MakeFunction(f->params, MakeSeq(blocks, seq->body), f->ret_struct_info,
                                         f->is_pure, f->attrs));
  }
  return NormalizeModule(out.Build());
}

}  // namespace kiln::ir::relax
