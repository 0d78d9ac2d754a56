#include "compiler/ir/tir_expr.h"

#include "compiler/ir/tir_stmt.h"

namespace kiln::ir {

void IntImmNode::VisitFields(FieldVisitor& v) const {
  v.Visit("dtype", dtype);
  v.Visit("value", value);
}
void FloatImmNode::VisitFields(FieldVisitor& v) const {
  v.Visit("dtype", dtype);
  v.Visit("value", value);
}
void StringImmNode::VisitFields(FieldVisitor& v) const { v.Visit("value", value); }
// A variable's name is a hint and not part of its structure; its dtype is.
void VarNode::VisitFields(FieldVisitor& v) const {
  v.Visit("dtype", dtype);
  v.Visit("is_size_var", is_size_var);
}
void CastNode::VisitFields(FieldVisitor& v) const {
  v.Visit("dtype", dtype);
  v.Visit("value", value);
}
void BinaryNode::VisitFields(FieldVisitor& v) const {
  v.Visit("dtype", dtype);
  v.Visit("a", a);
  v.Visit("b", b);
}
void NotNode::VisitFields(FieldVisitor& v) const { v.Visit("a", a); }
void SelectNode::VisitFields(FieldVisitor& v) const {
  v.Visit("condition", condition);
  v.Visit("true_value", true_value);
  v.Visit("false_value", false_value);
}
void BufferLoadNode::VisitFields(FieldVisitor& v) const {
  v.Visit("dtype", dtype);
  v.Visit("buffer", buffer);
  v.Visit("indices", indices);
}
void RampNode::VisitFields(FieldVisitor& v) const {
  v.Visit("base", base);
  v.Visit("stride", stride);
  v.Visit("lanes", lanes);
}
void BroadcastNode::VisitFields(FieldVisitor& v) const {
  v.Visit("value", value);
  v.Visit("lanes", lanes);
}
void LetNode::VisitFields(FieldVisitor& v) const {
  v.Visit("value", value);
  v.VisitDef("var", var);
  v.Visit("body", body);
}
void CallNode::VisitFields(FieldVisitor& v) const {
  v.Visit("dtype", dtype);
  v.Visit("op", op);
  v.Visit("args", args);
}

PrimExpr IntImm(DataType dtype, int64_t value) { return Make<IntImmNode>(dtype, value); }
PrimExpr FloatImm(DataType dtype, double value) { return Make<FloatImmNode>(dtype, value); }
PrimExpr Bool(bool value) { return IntImm(DataType::Bool(), value ? 1 : 0); }
PrimExpr MakeConst(DataType dtype, double value) {
  if (dtype.is_float()) return FloatImm(dtype, value);
  return IntImm(dtype, static_cast<int64_t>(value));
}
Var MakeVar(std::string name, DataType dtype) {
  return Make<VarNode>(std::move(name), dtype, /*is_size_var=*/false);
}
Var MakeSizeVar(std::string name, DataType dtype) {
  return Make<VarNode>(std::move(name), dtype, /*is_size_var=*/true);
}
PrimExpr Cast(DataType dtype, PrimExpr value) { return Make<CastNode>(dtype, std::move(value)); }

namespace {
bool IsBoolResult(NodeKind kind) { return kind >= NodeKind::kEQ && kind <= NodeKind::kOr; }
}  // namespace

PrimExpr Binary(NodeKind kind, PrimExpr a, PrimExpr b) {
  DataType dtype = IsBoolResult(kind) ? DataType::Bool(a->dtype.lanes()) : a->dtype;
  return Make<BinaryNode>(kind, dtype, std::move(a), std::move(b));
}
PrimExpr FloorDiv(PrimExpr a, PrimExpr b) { return Binary(NodeKind::kFloorDiv, a, b); }
PrimExpr FloorMod(PrimExpr a, PrimExpr b) { return Binary(NodeKind::kFloorMod, a, b); }
PrimExpr Min(PrimExpr a, PrimExpr b) { return Binary(NodeKind::kMin, a, b); }
PrimExpr Max(PrimExpr a, PrimExpr b) { return Binary(NodeKind::kMax, a, b); }
PrimExpr Select(PrimExpr c, PrimExpr t, PrimExpr f) {
  return Make<SelectNode>(std::move(c), std::move(t), std::move(f));
}
PrimExpr Not(PrimExpr a) { return Make<NotNode>(std::move(a)); }
PrimExpr Call(DataType dtype, std::string op, std::vector<PrimExpr> args) {
  return Make<CallNode>(dtype, std::move(op), std::move(args));
}

int MathIntrinsicArity(absl::string_view op) {
  static constexpr const char* kUnary[] = {
      "exp",  "exp2",  "log",  "log2",  "log1p", "sqrt",  "rsqrt", "tanh",     "erf", "sigmoid",
      "fabs", "floor", "ceil", "round", "trunc", "sin",   "cos",   "isnan",    "tan", "asin",
      "acos", "atan",  "sinh", "cosh",  "asinh", "acosh", "atanh", "nearbyint"};
  for (const char* name : kUnary) {
    if (op == name) return 1;
  }
  if (op == "pow" || op == "shift_left" || op == "shift_right" || op == "dot4_u8i8") return 2;
  if (op == "fma") return 3;
  return 0;
}

bool IsMathIntrinsic(absl::string_view op) { return MathIntrinsicArity(op) > 0; }

const char* BinaryInfixSymbol(NodeKind k) {
  switch (k) {
    case NodeKind::kAdd:
      return "+";
    case NodeKind::kSub:
      return "-";
    case NodeKind::kMul:
      return "*";
    case NodeKind::kFloorDiv:
      return "//";
    case NodeKind::kFloorMod:
      return "%";
    case NodeKind::kEQ:
      return "==";
    case NodeKind::kNE:
      return "!=";
    case NodeKind::kLT:
      return "<";
    case NodeKind::kLE:
      return "<=";
    case NodeKind::kGT:
      return ">";
    case NodeKind::kGE:
      return ">=";
    case NodeKind::kAnd:
      return "and";
    case NodeKind::kOr:
      return "or";
    default:
      return nullptr;  // printed as calls
  }
}

const char* BinaryCallName(NodeKind k) {
  switch (k) {
    case NodeKind::kDiv:
      return "T.Div";
    case NodeKind::kMod:
      return "T.truncmod";
    case NodeKind::kMin:
      return "T.min";
    case NodeKind::kMax:
      return "T.max";
    default:
      return "T.?";
  }
}

const int64_t* AsConstInt(const PrimExpr& e) {
  const IntImmNode* imm = e.as<IntImmNode>();
  return imm != nullptr ? &imm->value : nullptr;
}

namespace {
PrimExpr ConstLike(const PrimExpr& like, int64_t value) { return IntImm(like->dtype, value); }
}  // namespace

PrimExpr operator+(PrimExpr a, PrimExpr b) { return Binary(NodeKind::kAdd, a, b); }
PrimExpr operator-(PrimExpr a, PrimExpr b) { return Binary(NodeKind::kSub, a, b); }
PrimExpr operator*(PrimExpr a, PrimExpr b) { return Binary(NodeKind::kMul, a, b); }
PrimExpr operator+(PrimExpr a, int64_t b) { return a + ConstLike(a, b); }
PrimExpr operator-(PrimExpr a, int64_t b) { return a - ConstLike(a, b); }
PrimExpr operator*(PrimExpr a, int64_t b) { return a * ConstLike(a, b); }
PrimExpr operator+(int64_t a, PrimExpr b) { return ConstLike(b, a) + b; }
PrimExpr operator*(int64_t a, PrimExpr b) { return ConstLike(b, a) * b; }
PrimExpr operator<(PrimExpr a, PrimExpr b) { return Binary(NodeKind::kLT, a, b); }
PrimExpr operator<=(PrimExpr a, PrimExpr b) { return Binary(NodeKind::kLE, a, b); }

}  // namespace kiln::ir
