// TensorIR expressions (PrimExpr): integer and floating arithmetic, comparisons, logic, buffer
// loads, vectors, lets and intrinsic calls. Shape dimensions in Relax are PrimExprs too.
//
// Constructors do not validate: IR built through the API may be malformed, and the verifiers
// (VerifyPrimFunc, the Relax well-formedness check) report that as an absl::Status.
#ifndef KILN_COMPILER_IR_TIR_EXPR_H_
#define KILN_COMPILER_IR_TIR_EXPR_H_

#include <string>
#include <vector>

#include "compiler/ir/node.h"

namespace kiln::ir {

class PrimExprNode : public Object {
 public:
  static bool Classof(NodeKind k) { return k >= NodeKind::kIntImm && k <= NodeKind::kCall; }
  PrimExprNode(NodeKind kind, DataType dtype) : Object(kind), dtype(dtype) {}
  DataType dtype;
};
using PrimExpr = Ref<PrimExprNode>;

class IntImmNode : public PrimExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kIntImm; }
  IntImmNode(DataType dtype, int64_t value)
      : PrimExprNode(NodeKind::kIntImm, dtype), value(value) {}
  void VisitFields(FieldVisitor& v) const override;
  int64_t value;
};

class FloatImmNode : public PrimExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kFloatImm; }
  FloatImmNode(DataType dtype, double value)
      : PrimExprNode(NodeKind::kFloatImm, dtype), value(value) {}
  void VisitFields(FieldVisitor& v) const override;
  double value;
};

// A string argument of an intrinsic call (dtype handle).
class StringImmNode : public PrimExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kStringImm; }
  explicit StringImmNode(std::string value)
      : PrimExprNode(NodeKind::kStringImm, DataType::Handle()), value(std::move(value)) {}
  void VisitFields(FieldVisitor& v) const override;
  std::string value;
};

// A TIR variable, compared by identity; `name` is only a hint for printing. A size var is known
// to be non-negative (a symbolic shape dimension).
class VarNode : public PrimExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kVar; }
  VarNode(std::string name, DataType dtype, bool is_size_var)
      : PrimExprNode(NodeKind::kVar, dtype), name(std::move(name)), is_size_var(is_size_var) {}
  void VisitFields(FieldVisitor& v) const override;
  std::string name;
  bool is_size_var;
};
using Var = Ref<VarNode>;

// A multi-dimensional view of memory. `data` is the handle variable of the storage; empty
// `strides` means compact row-major.
class BufferNode : public Object {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kBuffer; }
  BufferNode() : Object(NodeKind::kBuffer) {}
  void VisitFields(FieldVisitor& v) const override;
  std::string name;  // hint only
  Var data;
  DataType dtype;
  std::vector<PrimExpr> shape;
  std::vector<PrimExpr> strides;
  PrimExpr elem_offset;
  std::string scope = "global";
  int64_t data_alignment = 64;
};
using Buffer = Ref<BufferNode>;

class CastNode : public PrimExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kCast; }
  CastNode(DataType dtype, PrimExpr value) : PrimExprNode(NodeKind::kCast, dtype), value(value) {}
  void VisitFields(FieldVisitor& v) const override;
  PrimExpr value;
};

// Add .. Or: two operands. Comparisons and And/Or have a bool dtype (with the operands' lanes).
class BinaryNode : public PrimExprNode {
 public:
  static bool Classof(NodeKind k) { return k >= NodeKind::kAdd && k <= NodeKind::kOr; }
  BinaryNode(NodeKind kind, DataType dtype, PrimExpr a, PrimExpr b)
      : PrimExprNode(kind, dtype), a(std::move(a)), b(std::move(b)) {}
  void VisitFields(FieldVisitor& v) const override;
  PrimExpr a, b;
};

class NotNode : public PrimExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kNot; }
  explicit NotNode(PrimExpr a) : PrimExprNode(NodeKind::kNot, a->dtype), a(std::move(a)) {}
  void VisitFields(FieldVisitor& v) const override;
  PrimExpr a;
};

class SelectNode : public PrimExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kSelect; }
  SelectNode(PrimExpr condition, PrimExpr true_value, PrimExpr false_value)
      : PrimExprNode(NodeKind::kSelect, true_value->dtype),
        condition(std::move(condition)),
        true_value(std::move(true_value)),
        false_value(std::move(false_value)) {}
  void VisitFields(FieldVisitor& v) const override;
  PrimExpr condition, true_value, false_value;
};

class BufferLoadNode : public PrimExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kBufferLoad; }
  BufferLoadNode(DataType dtype, Buffer buffer, std::vector<PrimExpr> indices)
      : PrimExprNode(NodeKind::kBufferLoad, dtype),
        buffer(std::move(buffer)),
        indices(std::move(indices)) {}
  void VisitFields(FieldVisitor& v) const override;
  Buffer buffer;
  std::vector<PrimExpr> indices;
};

// base, base + stride, ..., base + (lanes-1)*stride.
class RampNode : public PrimExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kRamp; }
  RampNode(PrimExpr base, PrimExpr stride, int lanes)
      : PrimExprNode(NodeKind::kRamp, base->dtype.with_lanes(lanes)),
        base(std::move(base)),
        stride(std::move(stride)),
        lanes(lanes) {}
  void VisitFields(FieldVisitor& v) const override;
  PrimExpr base, stride;
  int lanes;
};

class BroadcastNode : public PrimExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kBroadcast; }
  BroadcastNode(PrimExpr value, int lanes)
      : PrimExprNode(NodeKind::kBroadcast, value->dtype.with_lanes(lanes)),
        value(std::move(value)),
        lanes(lanes) {}
  void VisitFields(FieldVisitor& v) const override;
  PrimExpr value;
  int lanes;
};

class LetNode : public PrimExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kLet; }
  LetNode(Var var, PrimExpr value, PrimExpr body)
      : PrimExprNode(NodeKind::kLet, body->dtype),
        var(std::move(var)),
        value(std::move(value)),
        body(std::move(body)) {}
  void VisitFields(FieldVisitor& v) const override;
  Var var;
  PrimExpr value, body;
};

// A call to a named intrinsic: math ("exp", "tanh", "erf", ...) or a builtin ("if_then_else").
class CallNode : public PrimExprNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kCall; }
  CallNode(DataType dtype, std::string op, std::vector<PrimExpr> args)
      : PrimExprNode(NodeKind::kCall, dtype), op(std::move(op)), args(std::move(args)) {}
  void VisitFields(FieldVisitor& v) const override;
  std::string op;
  std::vector<PrimExpr> args;
};

// ---- Construction helpers -----------------------------------------------------------------

PrimExpr IntImm(DataType dtype, int64_t value);
PrimExpr FloatImm(DataType dtype, double value);
PrimExpr Bool(bool value);
// An immediate of `dtype` (int or float) holding `value`.
PrimExpr MakeConst(DataType dtype, double value);
Var MakeVar(std::string name, DataType dtype = DataType::Int(64));
Var MakeSizeVar(std::string name, DataType dtype = DataType::Int(64));
// A compact buffer with a fresh data variable and zero offset.
Buffer MakeBuffer(std::string name, DataType dtype, std::vector<PrimExpr> shape,
                  std::string scope = "global");
// A compact buffer over the same storage (same data var) with another shape: what allocation
// compaction and flattening rewrite accesses into.
Buffer WithShape(const Buffer& buffer, std::vector<PrimExpr> shape);
PrimExpr Cast(DataType dtype, PrimExpr value);
// Binary nodes; the result dtype is `a`'s (bool for comparisons and logic).
PrimExpr Binary(NodeKind kind, PrimExpr a, PrimExpr b);
PrimExpr FloorDiv(PrimExpr a, PrimExpr b);
PrimExpr FloorMod(PrimExpr a, PrimExpr b);
PrimExpr Min(PrimExpr a, PrimExpr b);
PrimExpr Max(PrimExpr a, PrimExpr b);
PrimExpr Select(PrimExpr condition, PrimExpr true_value, PrimExpr false_value);
PrimExpr Not(PrimExpr a);
PrimExpr Call(DataType dtype, std::string op, std::vector<PrimExpr> args);

// Names of the math intrinsics CallNode::op may hold (unary float unless noted; "nearbyint"
// rounds half to even, as ONNX's QuantizeLinear does; "pow" binary,
// "fma" ternary a * b + c, rounded once; "shift_left" and "shift_right" binary on integers, the
// right shift logical on unsigned and arithmetic on signed ones; "dot4_u8i8" binary on int32
// words: per word, its four bytes of `a` as unsigned times those of `b` as signed, summed — the
// int8 dot product of VNNI's vpdpbusd and Arm's usdot, one word of each being four channels).
bool IsMathIntrinsic(absl::string_view op);
// How many arguments the math intrinsic `op` takes; 0 when `op` is none.
int MathIntrinsicArity(absl::string_view op);

// How a binary node is written in TVMScript: its Python infix operator ("+", "//", "<=", "and"),
// or null when it is written as a call; then BinaryCallName gives the callee ("T.min", "T.Div",
// "T.truncmod"). Shared by the debug and TVMScript printers.
const char* BinaryInfixSymbol(NodeKind kind);
const char* BinaryCallName(NodeKind kind);

// Arithmetic sugar for building index expressions; int immediates take the other side's dtype.
PrimExpr operator+(PrimExpr a, PrimExpr b);
PrimExpr operator-(PrimExpr a, PrimExpr b);
PrimExpr operator*(PrimExpr a, PrimExpr b);
PrimExpr operator+(PrimExpr a, int64_t b);
PrimExpr operator-(PrimExpr a, int64_t b);
PrimExpr operator*(PrimExpr a, int64_t b);
PrimExpr operator+(int64_t a, PrimExpr b);
PrimExpr operator*(int64_t a, PrimExpr b);
PrimExpr operator<(PrimExpr a, PrimExpr b);
PrimExpr operator<=(PrimExpr a, PrimExpr b);

// The value of an IntImm, or null.
const int64_t* AsConstInt(const PrimExpr& e);
// The pointer points into the node: a temporary expression would leave it dangling.
const int64_t* AsConstInt(PrimExpr&& e) = delete;

}  // namespace kiln::ir

#endif  // KILN_COMPILER_IR_TIR_EXPR_H_
