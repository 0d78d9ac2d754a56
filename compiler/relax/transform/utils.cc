#include "compiler/relax/transform/utils.h"

#include <algorithm>

#include "compiler/ir/relax_functor.h"
#include "compiler/relax/op_registry.h"

namespace kiln::ir::relax {

std::unordered_map<const VarNode*, int> CountVarUses(const Expr& e) {
  struct Counter : ExprVisitor {
    std::unordered_map<const VarNode*, int> uses;
    void VisitExpr(const Expr& x) override {
      if (const auto* v = x.as<VarNode>()) ++uses[v];
      DefaultVisitExpr(x);
    }
  } counter;
  counter.VisitExpr(e);
  return std::move(counter.uses);
}

const char* OpName(const CallNode* call) {
  const auto* op = call != nullptr ? call->op.as<OpNode>() : nullptr;
  return op != nullptr ? op->name.c_str() : "";
}

std::string StringAttrOr(const Attrs& attrs, const char* key, const std::string& fallback) {
  ObjectRef v = GetAttr(attrs, key);
  const auto* s = v ? v.as<ir::StringImmNode>() : nullptr;
  return s ? s->value : fallback;
}

ObjectRef IntList(const std::vector<int64_t>& values) {
  std::vector<ObjectRef> items;
  for (int64_t v : values) items.push_back(IntImm(DataType::Int(64), v));
  return Make<ir::ArrayNode>(std::move(items));
}

target::ConvDescription DescribeConv(const CallNode& call, const ConstantNode& w) {
  target::ConvDescription conv;
  // OIHW or OIDHW: the output channels, then what each output sums over.
  const bool known = w.shape.size() == 4 || w.shape.size() == 5;
  conv.out_channels = known ? w.shape[0] : 0;
  conv.reduction = known ? 1 : 0;
  for (size_t d = 1; known && d < w.shape.size(); ++d) conv.reduction *= w.shape[d];
  if (ObjectRef groups = GetAttr(call.attrs, "groups")) {
    const PrimExpr g_expr = groups.as<PrimExprNode>() ? groups.as_ref<PrimExprNode>() : PrimExpr();
    const int64_t* g = g_expr ? AsConstInt(g_expr) : nullptr;
    conv.groups = g != nullptr ? *g : 0;
  }
  const auto* out = call.struct_info() ? call.struct_info().as<TensorStructInfoNode>() : nullptr;
  const std::vector<PrimExpr>* dims = out != nullptr ? out->dims() : nullptr;
  const int64_t* width =
      dims != nullptr && dims->size() == w.shape.size() ? AsConstInt(dims->back()) : nullptr;
  conv.out_width = width != nullptr ? *width : -1;
  conv.max_stride = 1;
  if (const auto* list = GetAttr(call.attrs, "strides").as<ir::ArrayNode>()) {
    for (const ObjectRef& item : list->items) {
      const PrimExpr e = item.as<PrimExprNode>() ? item.as_ref<PrimExprNode>() : PrimExpr();
      const int64_t* s = e ? AsConstInt(e) : nullptr;
      conv.max_stride = s == nullptr || conv.max_stride < 0 ? -1 : std::max(conv.max_stride, *s);
    }
  }
  conv.flat_pointwise =
      std::string(OpName(&call)) == "relax.nn.conv2d" && ops::Conv2dIsFlatPointwise(call);
  return conv;
}

}  // namespace kiln::ir::relax
