#include "compiler/ir/relax_expr.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace kiln::ir::relax {

void ObjectStructInfoNode::VisitFields(FieldVisitor& /*v*/) const {}
void PrimStructInfoNode::VisitFields(FieldVisitor& v) const {
  v.Visit("dtype", dtype);
  v.Visit("value", value);
}
void ShapeStructInfoNode::VisitFields(FieldVisitor& v) const {
  v.Visit("ndim", ndim);
  v.Visit("has_values", values.has_value());
  if (values) v.Visit("values", *values);
}
void TensorStructInfoNode::VisitFields(FieldVisitor& v) const {
  v.Visit("shape", shape);
  v.Visit("dtype", dtype);
  v.Visit("ndim", ndim);
}
const std::vector<PrimExpr>* TensorStructInfoNode::dims() const {
  const ShapeExprNode* s = shape.as<ShapeExprNode>();
  return s != nullptr ? &s->values : nullptr;
}
void TupleStructInfoNode::VisitFields(FieldVisitor& v) const { v.Visit("fields", fields); }
void FuncStructInfoNode::VisitFields(FieldVisitor& v) const {
  v.Visit("has_params", params.has_value());
  if (params) v.Visit("params", *params);
  v.Visit("ret", ret);
  v.Visit("purity", purity);
  v.Visit("derive_func", derive_func);
}

StructInfo ObjectSInfo() { return Make<ObjectStructInfoNode>(); }
StructInfo PrimSInfo(DataType dtype, PrimExpr value) {
  return Make<PrimStructInfoNode>(dtype, std::move(value));
}
StructInfo ShapeSInfo(std::vector<PrimExpr> values) {
  int ndim = static_cast<int>(values.size());
  return Make<ShapeStructInfoNode>(ndim, std::move(values));
}
StructInfo ShapeSInfoUnknown(int ndim) { return Make<ShapeStructInfoNode>(ndim, std::nullopt); }
StructInfo TensorSInfo(std::vector<PrimExpr> shape, DataType dtype) {
  int ndim = static_cast<int>(shape.size());
  return Make<TensorStructInfoNode>(MakeShape(std::move(shape)), dtype, ndim);
}
StructInfo TensorSInfoUnknown(DataType dtype, int ndim) {
  return Make<TensorStructInfoNode>(nullptr, dtype, ndim);
}
TupleStructInfoNode::TupleStructInfoNode(std::vector<StructInfo> fields)
    : StructInfoNode(NodeKind::kTupleStructInfo), fields(std::move(fields)) {
  for (const StructInfo& f : this->fields) {
    if (const auto* t = f.as<TupleStructInfoNode>()) nesting = std::max(nesting, t->nesting + 1);
  }
}

StructInfo TupleSInfo(std::vector<StructInfo> fields) {
  return Make<TupleStructInfoNode>(std::move(fields));
}
StructInfo FuncSInfo(std::vector<StructInfo> params, StructInfo ret, bool purity) {
  return Make<FuncStructInfoNode>(std::move(params), std::move(ret), purity);
}

void ExprNode::SetStructInfoOnce(StructInfo sinfo) const {
  if (!struct_info_.defined()) struct_info_ = std::move(sinfo);
}

void ConstantNode::VisitFields(FieldVisitor& v) const {
  v.Visit("dtype", dtype);
  v.Visit("ndim", static_cast<int64_t>(shape.size()));
  for (int64_t dim : shape) v.Visit("dim", dim);
  static const std::string kEmpty;
  v.Visit("bytes", bytes != nullptr ? *bytes : kEmpty);
}
void VarNode::VisitFields(FieldVisitor& v) const { v.Visit("struct_info", struct_info()); }
void GlobalVarNode::VisitFields(FieldVisitor& v) const { v.Visit("name_hint", name_hint); }
void TupleNode::VisitFields(FieldVisitor& v) const { v.Visit("fields", fields); }
void PrimValueNode::VisitFields(FieldVisitor& v) const { v.Visit("value", value); }
void StringImmNode::VisitFields(FieldVisitor& v) const { v.Visit("value", value); }
void DataTypeImmNode::VisitFields(FieldVisitor& v) const { v.Visit("value", value); }
void ShapeExprNode::VisitFields(FieldVisitor& v) const { v.Visit("values", values); }
void ExternFuncNode::VisitFields(FieldVisitor& v) const { v.Visit("global_symbol", global_symbol); }
void OpNode::VisitFields(FieldVisitor& v) const { v.Visit("name", name); }
void CallNode::VisitFields(FieldVisitor& v) const {
  v.Visit("op", op);
  v.Visit("args", args);
  v.Visit("attrs", attrs);
  v.Visit("sinfo_args", sinfo_args);
}
void TupleGetItemNode::VisitFields(FieldVisitor& v) const {
  v.Visit("tuple", tuple);
  v.Visit("index", index);
}
void IfNode::VisitFields(FieldVisitor& v) const {
  v.Visit("cond", cond);
  v.Visit("true_branch", true_branch);
  v.Visit("false_branch", false_branch);
}
void VarBindingNode::VisitFields(FieldVisitor& v) const {
  v.VisitDef("var", var);
  v.Visit("value", value);
}
void MatchCastNode::VisitFields(FieldVisitor& v) const {
  v.Visit("value", value);
  v.Visit("struct_info", struct_info);
  v.VisitDef("var", var);
}
void BindingBlockNode::VisitFields(FieldVisitor& v) const { v.Visit("bindings", bindings); }
void SeqExprNode::VisitFields(FieldVisitor& v) const {
  v.Visit("blocks", blocks);
  v.Visit("body", body);
}
void FunctionNode::VisitFields(FieldVisitor& v) const {
  v.VisitDef("params", params);
  v.Visit("ret_struct_info", ret_struct_info);
  v.Visit("is_pure", is_pure);
  v.Visit("attrs", attrs);
  v.Visit("body", body);
}

Var MakeVar(std::string name, StructInfo annotation) {
  Var var = Make<VarNode>(NodeKind::kRelaxVar, std::move(name));
  if (annotation) var->SetStructInfoOnce(std::move(annotation));
  return var;
}
Var MakeDataflowVar(std::string name, StructInfo annotation) {
  Var var = Make<VarNode>(NodeKind::kDataflowVar, std::move(name));
  if (annotation) var->SetStructInfoOnce(std::move(annotation));
  return var;
}
GlobalVar MakeGlobalVar(std::string name) { return Make<GlobalVarNode>(std::move(name)); }

Expr GetOp(const std::string& name) {
  static std::mutex mu;
  static auto* ops = new std::map<std::string, Expr>();
  std::lock_guard<std::mutex> lock(mu);
  Expr& op = (*ops)[name];
  if (!op) op = Make<OpNode>(name);
  return op;
}

Expr MakeTuple(std::vector<Expr> fields) { return Make<TupleNode>(std::move(fields)); }
Expr MakeShape(std::vector<PrimExpr> values) { return Make<ShapeExprNode>(std::move(values)); }
Expr MakeCall(Expr op, std::vector<Expr> args, std::vector<StructInfo> sinfo_args, Attrs attrs) {
  return Make<CallNode>(std::move(op), std::move(args), std::move(attrs), std::move(sinfo_args));
}
Expr MakeConstant(DataType dtype, std::vector<int64_t> shape, std::string bytes) {
  return Make<ConstantNode>(dtype, std::move(shape),
                            std::make_shared<const std::string>(std::move(bytes)));
}
Binding MakeBinding(Var var, Expr value) {
  return Make<VarBindingNode>(std::move(var), std::move(value));
}
Binding MakeMatchCast(Var var, Expr value, StructInfo struct_info) {
  return Make<MatchCastNode>(std::move(var), std::move(value), std::move(struct_info));
}
BindingBlock MakeBlock(std::vector<Binding> bindings) {
  return Make<BindingBlockNode>(false, std::move(bindings));
}
BindingBlock MakeDataflowBlock(std::vector<Binding> bindings) {
  return Make<BindingBlockNode>(true, std::move(bindings));
}
Expr MakeSeq(std::vector<BindingBlock> blocks, Expr body) {
  return Make<SeqExprNode>(std::move(blocks), std::move(body));
}
Function MakeFunction(std::vector<Var> params, Expr body, StructInfo ret, bool is_pure,
                      Attrs attrs) {
  return Make<FunctionNode>(std::move(params), std::move(body), std::move(ret), is_pure,
                            std::move(attrs));
}

bool IsLeaf(const Expr& e) {
  switch (e->kind()) {
    case NodeKind::kRelaxVar:
    case NodeKind::kDataflowVar:
    case NodeKind::kGlobalVar:
    case NodeKind::kConstant:
    case NodeKind::kShapeExpr:
    case NodeKind::kPrimValue:
    case NodeKind::kRelaxStringImm:
    case NodeKind::kDataTypeImm:
    case NodeKind::kTuple:
    case NodeKind::kOp:
    case NodeKind::kExternFunc:
      return true;
    default:
      return false;
  }
}

}  // namespace kiln::ir::relax
