// PackConstantWeights (transform.h).
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/ir/relax_functor.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/op_registry.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/relax/transform/utils.h"

namespace kiln::ir::relax {
namespace {

// What a variable is bound to.
using Bindings = std::unordered_map<const VarNode*, Expr>;

// A float32 constant with whole data.
bool IsF32(const ConstantNode* c) {
  if (c == nullptr || c->dtype != DataType::Float(32)) return false;
  int64_t n = 1;
  for (int64_t d : c->shape) n *= d;
  return static_cast<int64_t>(c->bytes->size()) == n * 4;
}

// Row-major float32 data `src` of `rows` x `cols` (element (r, c) at src[r * cols + c]), as
// [rows / block, cols, block]: rows in blocks, each block's rows innermost.
std::string BlockRows(const float* src, int64_t rows, int64_t cols, int64_t block) {
  std::string bytes(static_cast<size_t>(rows * cols) * 4, '\0');
  auto* dst = reinterpret_cast<float*>(bytes.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c)
      dst[((r / block) * cols + c) * block + r % block] = src[r * cols + c];
  }
  return bytes;
}

const float* Data(const ConstantNode& c) { return reinterpret_cast<const float*>(c.bytes->data()); }

// conv2d(x, W [O, I, H, W]) -> conv2d(x, W as [O / b, I, H, W, b], kernel_layout="OIHW<b>o"),
// and conv3d's OIDHW alike ("OIDHW<b>o").
Expr PackConv(const CallNode& call, const target::CpuPolicy& policy) {
  const bool three_d = std::string(OpName(&call)) == "relax.nn.conv3d";
  const std::string data_layout = three_d ? "NCDHW" : "NCHW";
  const std::string kernel_layout = three_d ? "OIDHW" : "OIHW";
  const auto* w = call.args[1].as<ConstantNode>();
  if (!IsF32(w) || w->shape.size() != kernel_layout.size()) return Expr();
  if (StringAttrOr(call.attrs, "data_layout", data_layout) != data_layout ||
      StringAttrOr(call.attrs, "kernel_layout", kernel_layout) != kernel_layout) {
    return Expr();
  }
  const int64_t block = target::NchwWeightBlock(DescribeConv(call, *w), policy);
  if (block == 0) return Expr();
  const int64_t o = w->shape[0];
  std::vector<int64_t> shape = w->shape;
  shape[0] = o / block;
  shape.push_back(block);
  Expr packed =
      MakeConstant(w->dtype, shape,
                   BlockRows(Data(*w), o, static_cast<int64_t>(w->bytes->size()) / 4 / o, block));
  Attrs attrs = WithAttr(call.attrs, "kernel_layout",
                         Make<ir::StringImmNode>(absl::StrCat(kernel_layout, block, "o")));
  return MakeCall(call.op, {call.args[0], packed}, call.sinfo_args, attrs);
}

// matmul(x, W [K, N]) or matmul(x, permute_dims(W [N, K])) (a PyTorch Linear's weight) ->
// matmul(x, W as [N / b, K, b], b_layout="NK<b>n") with b the policy's block, for x of rank 2 or
// more. Where b does not divide N (1000 classes), W gets zero columns up to the next multiple of
// b, and `*padded_to` says how many: the caller slices the product back to N columns (a few
// hundred bytes per row, against half-vector blocks that stream at half the rate).
Expr PackMatmul(const CallNode& call, const Bindings& bound, const target::CpuPolicy& policy,
                int64_t* padded_to) {
  const auto* x = call.args[0]->struct_info().as<TensorStructInfoNode>();
  if (x == nullptr || x->ndim < 2 || GetAttr(call.attrs, "b_layout")) return Expr();
  // Through the variables the weight (or its transpose) is bound to.
  auto value = [&](const Expr& e) {
    const auto* v = e.as<VarNode>();
    auto it = v != nullptr ? bound.find(v) : bound.end();
    return it == bound.end() ? e : it->second;
  };
  Expr weight = value(call.args[1]);
  const auto* w = weight.as<ConstantNode>();
  bool transposed = false;
  if (const auto* t = weight.as<CallNode>();
      t && std::string(OpName(t)) == "relax.permute_dims" && t->args.size() == 1) {
    // No axes, or [1, 0]: a transpose.
    if (ObjectRef axes = GetAttr(t->attrs, "axes")) {
      const auto* list = axes.as<ir::ArrayNode>();
      if (list == nullptr || list->items.size() != 2 || !list->items[0].as<PrimExprNode>())
        return Expr();
      PrimExpr first = list->items[0].as_ref<PrimExprNode>();
      if (AsConstInt(first) == nullptr || *AsConstInt(first) != 1) return Expr();
    }
    w = value(t->args[0]).as<ConstantNode>();
    transposed = true;
  }
  if (!IsF32(w) || w->shape.size() != 2) return Expr();
  const int64_t n = transposed ? w->shape[0] : w->shape[1];
  const int64_t k = transposed ? w->shape[1] : w->shape[0];
  // Below one block of columns there is nothing to stream.
  const int64_t block = policy.channel_block;
  if (n < block) return Expr();
  const int64_t padded = (n + block - 1) / block * block;
  // W as [padded, K], rows past N zero.
  std::vector<float> rows(static_cast<size_t>(padded * k), 0.0f);
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t c = 0; c < n; ++c)
      rows[c * k + r] = transposed ? Data(*w)[c * k + r] : Data(*w)[r * n + c];
  }
  Expr packed =
      MakeConstant(w->dtype, {padded / block, k, block}, BlockRows(rows.data(), padded, k, block));
  *padded_to = padded == n ? 0 : padded;
  Attrs attrs =
      WithAttr(call.attrs, "b_layout", Make<ir::StringImmNode>(absl::StrCat("NK", block, "n")));
  return MakeCall(call.op, {call.args[0], packed}, call.sinfo_args, attrs);
}

class WeightPacker : public ExprMutator {
 public:
  explicit WeightPacker(const target::CpuPolicy& policy) : policy_(policy) {}

  Expr VisitExpr(const Expr& e) override {
    Expr visited = DefaultVisitExpr(e);
    const auto* call = visited.as<CallNode>();
    if (call == nullptr || call->args.size() != 2) return visited;
    const std::string op = OpName(call);
    int64_t padded_to = 0;
    Expr packed = op == "relax.nn.conv2d" || op == "relax.nn.conv3d" ? PackConv(*call, policy_)
                  : op == "relax.matmul" ? PackMatmul(*call, bound_, policy_, &padded_to)
                                         : Expr();
    if (packed && padded_to) padded_[packed.get()] = padded_to;
    return packed ? packed : visited;
  }

  Binding VisitBinding(const Binding& b) override {
    Binding out = ExprMutator::VisitBinding(b);
    if (out && out->var && out.as<VarBindingNode>()) bound_[out->var.get()] = out->value;
    return out;
  }

  // A matmul whose weight got zero columns binds the wide product to a variable of its own,
  // and the original variable to its first N columns.
  BindingBlock VisitBindingBlock(const BindingBlock& block) override {
    if (!block) return block;
    std::vector<Binding> bindings;
    bool changed = false;
    for (const Binding& b : block->bindings) {
      Binding out = VisitBinding(b);
      changed |= out != b;
      auto it = out && out.as<VarBindingNode>() ? padded_.find(out->value.get()) : padded_.end();
      const auto* sinfo =
          out && out->var ? out->var->struct_info().as<TensorStructInfoNode>() : nullptr;
      const std::vector<PrimExpr>* dims = sinfo != nullptr ? sinfo->dims() : nullptr;
      if (it == padded_.end() || dims == nullptr || dims->empty()) {
        bindings.push_back(out);
        continue;
      }
      std::vector<PrimExpr> wide_dims = *dims;
      const PrimExpr n = wide_dims.back();
      wide_dims.back() = IntImm(n->dtype, it->second);
      StructInfo wide_sinfo = TensorSInfo(wide_dims, sinfo->dtype);
      Var wide = block->is_dataflow() ? MakeDataflowVar(out->var->name_hint + "_wide", wide_sinfo)
                                      : MakeVar(out->var->name_hint + "_wide", wide_sinfo);
      bindings.push_back(MakeBinding(wide, out->value));
      Attrs attrs = {
          {"axes", IntList({-1})}, {"begin", IntList({0})}, {"end", IntList({*AsConstInt(n)})}};
      bindings.push_back(
          MakeBinding(out->var, MakeCall(GetOp("relax.strided_slice"), {wide}, {}, attrs)));
    }
    if (!changed) return block;
    return Make<BindingBlockNode>(block->is_dataflow(), std::move(bindings));
  }

 private:
  const target::CpuPolicy& policy_;
  Bindings bound_;  // the transposed weight stays bound; DeadCodeElimination drops it
  std::unordered_map<const Object*, int64_t> padded_;  // packed matmuls: their padded width
};

}  // namespace

absl::StatusOr<IRModule> PackConstantWeights(const IRModule& mod, const target::CpuPolicy& policy) {
  IRModuleBuilder out(mod);
  for (const auto& [name, entry] : mod->functions) {
    const auto* f = entry.second.as<FunctionNode>();
    if (f == nullptr) continue;
    Expr body = WeightPacker(policy).VisitExpr(f->body);
    out.Update(entry.first,
               MakeFunction(f->params, body, f->ret_struct_info, f->is_pure, f->attrs));
  }
  return NormalizeModule(out.Build());
}

}  // namespace kiln::ir::relax
