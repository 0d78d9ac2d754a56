#include "compiler/relax/transform/utils.h"

#include "compiler/ir/relax_functor.h"

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

}  // namespace kiln::ir::relax
