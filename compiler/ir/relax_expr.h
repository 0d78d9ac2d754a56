// Relax: the graph-level language of seeds/relax_spec.md (normative). StructInfo, expressions,
// bindings and blocks, functions. Relax lives in kiln::ir::relax; TIR in kiln::ir.
#ifndef KILN_COMPILER_IR_RELAX_EXPR_H_
#define KILN_COMPILER_IR_RELAX_EXPR_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/tir_expr.h"

namespace kiln::ir::relax {

class ExprNode;
using Expr = Ref<ExprNode>;

// ---- StructInfo (spec §"Structural Information") -------------------------------------------

class StructInfoNode : public Object {
 public:
  static bool Classof(NodeKind k) {
    return k >= NodeKind::kObjectStructInfo && k <= NodeKind::kFuncStructInfo;
  }
  using Object::Object;
};
using StructInfo = Ref<StructInfoNode>;

class ObjectStructInfoNode : public StructInfoNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kObjectStructInfo; }
  ObjectStructInfoNode() : StructInfoNode(NodeKind::kObjectStructInfo) {}
  void VisitFields(FieldVisitor& v) const override;
};

class PrimStructInfoNode : public StructInfoNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kPrimStructInfo; }
  PrimStructInfoNode(DataType dtype, PrimExpr value)
      : StructInfoNode(NodeKind::kPrimStructInfo), dtype(dtype), value(std::move(value)) {}
  void VisitFields(FieldVisitor& v) const override;
  DataType dtype;
  PrimExpr value;  // optional: the known value
};

class ShapeStructInfoNode : public StructInfoNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kShapeStructInfo; }
  ShapeStructInfoNode(int ndim, std::optional<std::vector<PrimExpr>> values)
      : StructInfoNode(NodeKind::kShapeStructInfo), ndim(ndim), values(std::move(values)) {}
  void VisitFields(FieldVisitor& v) const override;
  int ndim;  // -1: unknown
  std::optional<std::vector<PrimExpr>> values;
};

class TensorStructInfoNode : public StructInfoNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kTensorStructInfo; }
  TensorStructInfoNode(Expr shape, DataType dtype, int ndim)
      : StructInfoNode(NodeKind::kTensorStructInfo),
        shape(std::move(shape)),
        dtype(dtype),
        ndim(ndim) {}
  void VisitFields(FieldVisitor& v) const override;
  Expr shape;      // optional: a ShapeExpr or a Var with ShapeStructInfo
  DataType dtype;  // void: unknown
  int ndim;        // -1: unknown
  // The dimensions when `shape` is a ShapeExpr, else null.
  const std::vector<PrimExpr>* dims() const;
};

class TupleStructInfoNode : public StructInfoNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kTupleStructInfo; }
  explicit TupleStructInfoNode(std::vector<StructInfo> fields);
  void VisitFields(FieldVisitor& v) const override;
  std::vector<StructInfo> fields;
  // Levels of tuples, this one included: 1 for a tuple of tensors (kept so that a limit on it
  // costs nothing to check).
  int nesting = 1;
};

// Closures (params + ret) or opaque packed functions (derive_func names a registered rule that
// computes the result StructInfo from a call; empty with no params means "returns ret").
class FuncStructInfoNode : public StructInfoNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kFuncStructInfo; }
  FuncStructInfoNode(std::optional<std::vector<StructInfo>> params, StructInfo ret, bool purity,
                     std::string derive_func = "")
      : StructInfoNode(NodeKind::kFuncStructInfo),
        params(std::move(params)),
        ret(std::move(ret)),
        purity(purity),
        derive_func(std::move(derive_func)) {}
  void VisitFields(FieldVisitor& v) const override;
  std::optional<std::vector<StructInfo>> params;
  StructInfo ret;
  bool purity;
  std::string derive_func;
};

StructInfo ObjectSInfo();
StructInfo PrimSInfo(DataType dtype, PrimExpr value = nullptr);
StructInfo ShapeSInfo(std::vector<PrimExpr> values);
StructInfo ShapeSInfoUnknown(int ndim = -1);
// A tensor with known dimensions (shape becomes a ShapeExpr).
StructInfo TensorSInfo(std::vector<PrimExpr> shape, DataType dtype);
// A tensor whose shape is only known by rank (-1: unknown rank).
StructInfo TensorSInfoUnknown(DataType dtype, int ndim = -1);
StructInfo TupleSInfo(std::vector<StructInfo> fields);
StructInfo FuncSInfo(std::vector<StructInfo> params, StructInfo ret, bool purity = true);

// ---- Expressions ---------------------------------------------------------------------------

class ExprNode : public Object {
 public:
  static bool Classof(NodeKind k) { return k >= NodeKind::kConstant && k <= NodeKind::kOp; }
  using Object::Object;
  // The StructInfo of this expression: a Var's annotation, or what the normalizer inferred.
  // Null until known. Written at most once, by construction or by the normalizer.
  const StructInfo& struct_info() const { return struct_info_; }
  void SetStructInfoOnce(StructInfo sinfo) const;

 private:
  mutable StructInfo struct_info_;
};

// A tensor constant; weights travel as raw bytes (row-major, `dtype` elements).
class ConstantNode : public ExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kConstant; }
  ConstantNode(DataType dtype, std::vector<int64_t> shape, std::shared_ptr<const std::string> bytes)
      : ExprNode(NodeKind::kConstant),
        dtype(dtype),
        shape(std::move(shape)),
        bytes(std::move(bytes)) {}
  void VisitFields(FieldVisitor& v) const override;
  DataType dtype;
  std::vector<int64_t> shape;
  std::shared_ptr<const std::string> bytes;
};

// Var and DataflowVar (kind kRelaxVar / kDataflowVar). Compared by binding position; the name
// is a hint. The StructInfo annotation is part of the variable.
class VarNode : public ExprNode {
 public:
  static bool Classof(NodeKind k) {
    return k == NodeKind::kRelaxVar || k == NodeKind::kDataflowVar;
  }
  VarNode(NodeKind kind, std::string name_hint) : ExprNode(kind), name_hint(std::move(name_hint)) {}
  void VisitFields(FieldVisitor& v) const override;
  bool is_dataflow() const { return kind() == NodeKind::kDataflowVar; }
  std::string name_hint;
};
using Var = Ref<VarNode>;
Var MakeVar(std::string name, StructInfo annotation);
Var MakeDataflowVar(std::string name, StructInfo annotation);

class GlobalVarNode : public ExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kGlobalVar; }
  explicit GlobalVarNode(std::string name_hint)
      : ExprNode(NodeKind::kGlobalVar), name_hint(std::move(name_hint)) {}
  void VisitFields(FieldVisitor& v) const override;
  std::string name_hint;
};
using GlobalVar = Ref<GlobalVarNode>;
GlobalVar MakeGlobalVar(std::string name);

class TupleNode : public ExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kTuple; }
  explicit TupleNode(std::vector<Expr> fields)
      : ExprNode(NodeKind::kTuple), fields(std::move(fields)) {}
  void VisitFields(FieldVisitor& v) const override;
  std::vector<Expr> fields;
};

class PrimValueNode : public ExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kPrimValue; }
  explicit PrimValueNode(PrimExpr value)
      : ExprNode(NodeKind::kPrimValue), value(std::move(value)) {}
  void VisitFields(FieldVisitor& v) const override;
  PrimExpr value;
};

class StringImmNode : public ExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kRelaxStringImm; }
  explicit StringImmNode(std::string value)
      : ExprNode(NodeKind::kRelaxStringImm), value(std::move(value)) {}
  void VisitFields(FieldVisitor& v) const override;
  std::string value;
};

class DataTypeImmNode : public ExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kDataTypeImm; }
  explicit DataTypeImmNode(DataType value) : ExprNode(NodeKind::kDataTypeImm), value(value) {}
  void VisitFields(FieldVisitor& v) const override;
  DataType value;
};

class ShapeExprNode : public ExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kShapeExpr; }
  explicit ShapeExprNode(std::vector<PrimExpr> values)
      : ExprNode(NodeKind::kShapeExpr), values(std::move(values)) {}
  void VisitFields(FieldVisitor& v) const override;
  std::vector<PrimExpr> values;
};

class ExternFuncNode : public ExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kExternFunc; }
  explicit ExternFuncNode(std::string global_symbol)
      : ExprNode(NodeKind::kExternFunc), global_symbol(std::move(global_symbol)) {}
  void VisitFields(FieldVisitor& v) const override;
  std::string global_symbol;
};

// A built-in operator, interned by name: Op("relax.call_tir") always returns the same node.
class OpNode : public ExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kOp; }
  explicit OpNode(std::string name) : ExprNode(NodeKind::kOp), name(std::move(name)) {}
  void VisitFields(FieldVisitor& v) const override;
  std::string name;
};
Expr GetOp(const std::string& name);

class CallNode : public ExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kRelaxCall; }
  CallNode(Expr op, std::vector<Expr> args, Attrs attrs, std::vector<StructInfo> sinfo_args)
      : ExprNode(NodeKind::kRelaxCall),
        op(std::move(op)),
        args(std::move(args)),
        attrs(CanonicalAttrs(std::move(attrs))),
        sinfo_args(std::move(sinfo_args)) {}
  void VisitFields(FieldVisitor& v) const override;
  Expr op;
  std::vector<Expr> args;
  Attrs attrs;
  std::vector<StructInfo> sinfo_args;
};

class TupleGetItemNode : public ExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kTupleGetItem; }
  TupleGetItemNode(Expr tuple, int index)
      : ExprNode(NodeKind::kTupleGetItem), tuple(std::move(tuple)), index(index) {}
  void VisitFields(FieldVisitor& v) const override;
  Expr tuple;
  int index;
};

class IfNode : public ExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kIf; }
  IfNode(Expr cond, Expr true_branch, Expr false_branch)
      : ExprNode(NodeKind::kIf),
        cond(std::move(cond)),
        true_branch(std::move(true_branch)),
        false_branch(std::move(false_branch)) {}
  void VisitFields(FieldVisitor& v) const override;
  Expr cond, true_branch, false_branch;
};

// ---- Bindings and blocks -------------------------------------------------------------------

class BindingNode : public Object {
 public:
  static bool Classof(NodeKind k) {
    return k == NodeKind::kVarBinding || k == NodeKind::kMatchCast;
  }
  BindingNode(NodeKind kind, Var var, Expr value)
      : Object(kind), var(std::move(var)), value(std::move(value)) {}
  Var var;  // may be null only for MatchCast
  Expr value;
};
using Binding = Ref<BindingNode>;

class VarBindingNode : public BindingNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kVarBinding; }
  VarBindingNode(Var var, Expr value)
      : BindingNode(NodeKind::kVarBinding, std::move(var), std::move(value)) {}
  void VisitFields(FieldVisitor& v) const override;
};

// Checks `value` against `struct_info` at run time, binding new shape variables.
class MatchCastNode : public BindingNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kMatchCast; }
  MatchCastNode(Var var, Expr value, StructInfo struct_info)
      : BindingNode(NodeKind::kMatchCast, std::move(var), std::move(value)),
        struct_info(std::move(struct_info)) {}
  void VisitFields(FieldVisitor& v) const override;
  StructInfo struct_info;
};

// BindingBlock and DataflowBlock (kinds kBindingBlock / kDataflowBlock).
class BindingBlockNode : public Object {
 public:
  static bool Classof(NodeKind k) {
    return k == NodeKind::kBindingBlock || k == NodeKind::kDataflowBlock;
  }
  BindingBlockNode(bool is_dataflow, std::vector<Binding> bindings)
      : Object(is_dataflow ? NodeKind::kDataflowBlock : NodeKind::kBindingBlock),
        bindings(std::move(bindings)) {}
  void VisitFields(FieldVisitor& v) const override;
  bool is_dataflow() const { return kind() == NodeKind::kDataflowBlock; }
  std::vector<Binding> bindings;
};
using BindingBlock = Ref<BindingBlockNode>;

class SeqExprNode : public ExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kSeqExpr; }
  SeqExprNode(std::vector<BindingBlock> blocks, Expr body)
      : ExprNode(NodeKind::kSeqExpr), blocks(std::move(blocks)), body(std::move(body)) {}
  void VisitFields(FieldVisitor& v) const override;
  std::vector<BindingBlock> blocks;
  Expr body;
};

class FunctionNode : public ExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kFunction; }
  FunctionNode(std::vector<Var> params, Expr body, StructInfo ret_struct_info, bool is_pure,
               Attrs attrs)
      : ExprNode(NodeKind::kFunction),
        params(std::move(params)),
        body(std::move(body)),
        ret_struct_info(std::move(ret_struct_info)),
        is_pure(is_pure),
        attrs(CanonicalAttrs(std::move(attrs))) {}
  void VisitFields(FieldVisitor& v) const override;
  std::vector<Var> params;
  Expr body;
  StructInfo ret_struct_info;  // optional annotation
  bool is_pure;
  Attrs attrs;
};
using Function = Ref<FunctionNode>;

// Short constructors.
Expr MakeTuple(std::vector<Expr> fields);
Expr MakeShape(std::vector<PrimExpr> values);
Expr MakeCall(Expr op, std::vector<Expr> args, std::vector<StructInfo> sinfo_args = {},
              Attrs attrs = {});
Expr MakeConstant(DataType dtype, std::vector<int64_t> shape, std::string bytes);
Binding MakeBinding(Var var, Expr value);
Binding MakeMatchCast(Var var, Expr value, StructInfo struct_info);
BindingBlock MakeBlock(std::vector<Binding> bindings);
BindingBlock MakeDataflowBlock(std::vector<Binding> bindings);
Expr MakeSeq(std::vector<BindingBlock> blocks, Expr body);
Function MakeFunction(std::vector<Var> params, Expr body, StructInfo ret = nullptr,
                      bool is_pure = true, Attrs attrs = {});

// Leaf expressions of the normal form: variables, constants, shapes, immediates and tuples.
bool IsLeaf(const Expr& e);

}  // namespace kiln::ir::relax

#endif  // KILN_COMPILER_IR_RELAX_EXPR_H_
