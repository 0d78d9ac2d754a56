// Elementwise operators: unary math and activations, binary arithmetic and comparisons with
// NumPy broadcasting, where, astype, clip and dropout (inference: identity). Each one infers its
// StructInfo and legalizes into a one-stage kernel.
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/relax/ops/op_common.h"

namespace kiln::ir::relax::ops {
namespace {

using tir::Indices;
using tir::Load;

// ---- Unary ----

// Unary ops defined on integers too; the others need floating point.
bool AcceptsIntegers(const std::string& name) {
  return name == "relax.negative" || name == "relax.abs" || name == "relax.nn.relu" ||
         name == "relax.clip" || name == "relax.floor" || name == "relax.ceil" ||
         name == "relax.round" || name == "relax.nearbyint" || name == "relax.square" ||
         name == "relax.sign";
}

// The scalar formula of a unary op at x (of dtype `t`).
PrimExpr UnaryFormula(const CallNode& call, const std::string& name, const PrimExpr& x, DataType t,
                      absl::Status* status) {
  auto c = [&](double v) { return MakeConst(t, v); };
  auto math = [&](const char* fn) { return Call(t, fn, {x}); };
  if (name == "relax.negative") return Binary(NodeKind::kSub, c(0), x);
  if (name == "relax.abs") return t.is_float() ? math("fabs") : Select(x < c(0), c(0) - x, x);
  if (name == "relax.nn.relu") return Max(x, c(0));
  if (name == "relax.logical_not") return Not(x);
  if (name == "relax.square") return x * x;
  if (name == "relax.sign") return Select(c(0) < x, c(1), Select(x < c(0), c(-1), c(0)));
  if (name == "relax.clip") {
    absl::StatusOr<double> lo = FloatAttr(call, "min", -HUGE_VAL);
    absl::StatusOr<double> hi = FloatAttr(call, "max", HUGE_VAL);
    if (!lo.ok() || !hi.ok()) {
      *status = lo.ok() ? hi.status() : lo.status();
      return nullptr;
    }
    PrimExpr v = x;
    if (std::isfinite(*lo)) v = Max(v, c(*lo));
    if (std::isfinite(*hi)) v = Min(v, c(*hi));
    return v;
  }
  if (!t.is_float()) {
    // Rounding is the identity on integers; the rest needs floating point.
    if (name == "relax.floor" || name == "relax.ceil" || name == "relax.round" ||
        name == "relax.nearbyint") {
      return x;
    }
    *status = OpError(call, absl::StrCat("needs a floating-point tensor, got ", t.ToString()));
    return nullptr;
  }
  if (name == "relax.nn.gelu") {  // x * Phi(x), with the exact (erf) form
    return c(0.5) * x * (c(1) + Call(t, "erf", {x * c(M_SQRT1_2)}));
  }
  if (name == "relax.nn.gelu_tanh") {
    PrimExpr inner = c(std::sqrt(2.0 / M_PI)) * (x + c(0.044715) * x * x * x);
    return c(0.5) * x * (c(1) + Call(t, "tanh", {inner}));
  }
  if (name == "relax.nn.silu") return x * Call(t, "sigmoid", {x});
  std::string fn = name.substr(name.rfind('.') + 1);
  if (IsMathIntrinsic(fn)) return math(fn.c_str());
  *status = OpError(call, "has no scalar formula");
  return nullptr;
}

absl::StatusOr<StructInfo> InferUnary(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  const std::string& name = OpName(call);
  if (name == "relax.logical_not") {
    if ((*x)->dtype.is_void() || (*x)->dtype.is_bool()) return call.args[0]->struct_info();
    return OpError(call, absl::StrCat("needs a bool tensor, got ", (*x)->dtype.ToString()));
  }
  if (!AcceptsIntegers(name) && !(*x)->dtype.is_void() && !(*x)->dtype.is_float()) {
    return OpError(call,
                   absl::StrCat("needs a floating-point tensor, got ", (*x)->dtype.ToString()));
  }
  return call.args[0]->struct_info();
}

absl::Status LegalizeUnary(const CallNode& call, const std::vector<Buffer>& in,
                           const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  absl::Status status;
  b.Compute("compute", out[0], [&](const Indices& i) {
    PrimExpr v = UnaryFormula(call, OpName(call), Load(in[0], i), in[0]->dtype, &status);
    return v ? v : MakeConst(out[0]->dtype, 0);
  });
  return status;
}

// relax.nn.dropout(x, rate=...) -> (x, mask): inference is the identity; the mask is all ones.
absl::StatusOr<StructInfo> InferDropout(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  return Make<TupleStructInfoNode>(
      std::vector<StructInfo>{call.args[0]->struct_info(), call.args[0]->struct_info()});
}

absl::Status LegalizeDropout(const CallNode&, const std::vector<Buffer>& in,
                             const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  b.Compute("dropout", out[0], [&](const Indices& i) { return Load(in[0], i); });
  b.Compute("dropout_mask", out[1], [&](const Indices&) { return MakeConst(out[1]->dtype, 1); });
  return absl::OkStatus();
}

// relax.astype(x, dtype="...")
absl::StatusOr<StructInfo> InferAstype(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<std::string> name = StringAttr(call, "dtype", "");
  if (!name.ok()) return name.status();
  absl::StatusOr<DataType> dtype = DataType::Parse(*name);
  if (name->empty() || !dtype.ok() || dtype->is_void())
    return OpError(call, absl::StrCat("needs dtype=\"...\", got \"", *name, "\""));
  return Make<TensorStructInfoNode>((*x)->shape, *dtype, (*x)->ndim);
}

absl::Status LegalizeAstype(const CallNode&, const std::vector<Buffer>& in,
                            const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  b.Compute("astype", out[0],
            [&](const Indices& i) { return Cast(out[0]->dtype, Load(in[0], i)); });
  return absl::OkStatus();
}

// ---- Broadcasting: binary arithmetic, comparisons, where ----

bool IsComparison(const std::string& name) {
  return name == "relax.equal" || name == "relax.not_equal" || name == "relax.less" ||
         name == "relax.less_equal" || name == "relax.greater" || name == "relax.greater_equal";
}

// Infers the broadcast of all tensor arguments; those from `same_dtype` on must share a dtype,
// which the result has unless `result` is given.
absl::StatusOr<StructInfo> InferBroadcast(const CallNode& call, const OpInferContext& ctx,
                                          size_t same_dtype, DataType result) {
  std::vector<const TensorStructInfoNode*> args;
  for (size_t i = 0; i < call.args.size(); ++i) {
    absl::StatusOr<const TensorStructInfoNode*> t = TensorArg(call, i);
    if (!t.ok()) return t.status();
    args.push_back(*t);
  }
  DataType dtype = DataType::Void();
  for (size_t i = same_dtype; i < args.size(); ++i) {
    const TensorStructInfoNode* t = args[i];
    if (t->dtype.is_void()) continue;
    if (!dtype.is_void() && dtype != t->dtype) {
      return OpError(call, absl::StrCat("operand dtypes differ (", dtype.ToString(), " vs ",
                                        t->dtype.ToString(), ")"));
    }
    dtype = t->dtype;
  }
  if (!result.is_void()) dtype = result;
  int ndim = 0;
  std::vector<const std::vector<PrimExpr>*> shapes;
  for (const TensorStructInfoNode* t : args) {
    if (t->ndim < 0) return TensorSInfoUnknown(dtype, -1);
    ndim = std::max(ndim, t->ndim);
    shapes.push_back(DimsOf(*t));
    if (shapes.back() == nullptr) return TensorSInfoUnknown(dtype, -1);
  }
  absl::StatusOr<std::optional<std::vector<PrimExpr>>> out =
      BroadcastShapes(call, shapes, ctx.analyzer);
  if (!out.ok()) return out.status();
  if (!out->has_value()) return TensorSInfoUnknown(dtype, ndim);
  return TensorSInfo(std::move(**out), dtype);
}

absl::StatusOr<StructInfo> InferBinary(const CallNode& call, const OpInferContext& ctx) {
  return InferBroadcast(call, ctx, 0,
                        IsComparison(OpName(call)) ? DataType::Bool() : DataType::Void());
}

PrimExpr BinaryFormula(const std::string& name, const PrimExpr& a, const PrimExpr& b) {
  static const std::pair<const char*, NodeKind> kKinds[] = {
      {"relax.add", NodeKind::kAdd},           {"relax.subtract", NodeKind::kSub},
      {"relax.multiply", NodeKind::kMul},      {"relax.equal", NodeKind::kEQ},
      {"relax.not_equal", NodeKind::kNE},      {"relax.less", NodeKind::kLT},
      {"relax.less_equal", NodeKind::kLE},     {"relax.greater", NodeKind::kGT},
      {"relax.greater_equal", NodeKind::kGE},  {"relax.maximum", NodeKind::kMax},
      {"relax.minimum", NodeKind::kMin},       {"relax.floor_divide", NodeKind::kFloorDiv},
      {"relax.floor_mod", NodeKind::kFloorMod}};
  for (const auto& [op, kind] : kKinds) {
    if (name == op) return Binary(kind, a, b);
  }
  if (name == "relax.divide") return Binary(NodeKind::kDiv, a, b);
  if (name == "relax.power") return Call(a->dtype, "pow", {a, b});
  if (name == "relax.left_shift") return Call(a->dtype, "shift_left", {a, b});
  if (name == "relax.right_shift") return Call(a->dtype, "shift_right", {a, b});
  return nullptr;
}

absl::Status LegalizeBinary(const CallNode& call, const std::vector<Buffer>& in,
                            const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const std::string& name = OpName(call);
  if (name == "relax.power" && !in[0]->dtype.is_float())
    return OpError(call, "needs floating-point operands");
  if ((name == "relax.floor_divide" || name == "relax.floor_mod" || name == "relax.left_shift" ||
       name == "relax.right_shift") &&
      in[0]->dtype.is_float())
    return OpError(call, "needs integer operands");
  b.Compute("T_" + name.substr(name.rfind('.') + 1), out[0], [&](const Indices& i) {
    return BinaryFormula(name, Load(in[0], BroadcastIndex(in[0], out[0], i)),
                         Load(in[1], BroadcastIndex(in[1], out[0], i)));
  });
  return absl::OkStatus();
}

// relax.where(condition, x1, x2): condition is bool; x1 and x2 share a dtype.
absl::StatusOr<StructInfo> InferWhere(const CallNode& call, const OpInferContext& ctx) {
  absl::StatusOr<const TensorStructInfoNode*> cond = TensorArg(call, 0);
  if (!cond.ok()) return cond.status();
  if (!(*cond)->dtype.is_void() && !(*cond)->dtype.is_bool())
    return OpError(call,
                   absl::StrCat("the condition must be bool, got ", (*cond)->dtype.ToString()));
  return InferBroadcast(call, ctx, 1, DataType::Void());
}

absl::Status LegalizeWhere(const CallNode&, const std::vector<Buffer>& in,
                           const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  b.Compute("T_where", out[0], [&](const Indices& i) {
    return Select(Load(in[0], BroadcastIndex(in[0], out[0], i)),
                  Load(in[1], BroadcastIndex(in[1], out[0], i)),
                  Load(in[2], BroadcastIndex(in[2], out[0], i)));
  });
  return absl::OkStatus();
}

}  // namespace

void RegisterElementwiseOps(std::vector<OpInfo>* ops) {
  for (const char* name :
       {"relax.exp",     "relax.log",   "relax.sqrt",     "relax.rsqrt",   "relax.tanh",
        "relax.sigmoid", "relax.erf",   "relax.negative", "relax.abs",     "relax.floor",
        "relax.ceil",    "relax.round", "relax.nn.relu",  "relax.nn.gelu", "relax.nn.gelu_tanh",
        "relax.nn.silu", "relax.sin",   "relax.cos",      "relax.tan",     "relax.asin",
        "relax.acos",    "relax.atan",  "relax.sinh",     "relax.cosh",    "relax.asinh",
        "relax.acosh",   "relax.atanh", "relax.square",   "relax.sign",    "relax.nearbyint"}) {
    ops->push_back(
        {name, 1, InferUnary, true, OpPattern::kElemWise, "elementwise unary math", LegalizeUnary});
  }
  ops->push_back({"relax.logical_not", 1, InferUnary, true, OpPattern::kElemWise,
                  "elementwise negation of a bool tensor", LegalizeUnary});
  ops->push_back({"relax.clip", 1, InferUnary, true, OpPattern::kElemWise,
                  "clamps to [min, max] (attributes)", LegalizeUnary});
  for (const char* name : {"relax.add", "relax.subtract", "relax.multiply", "relax.divide",
                           "relax.power", "relax.maximum", "relax.minimum", "relax.floor_divide",
                           "relax.floor_mod", "relax.left_shift", "relax.right_shift"}) {
    ops->push_back({name, 2, InferBinary, true, OpPattern::kBroadcast,
                    "elementwise arithmetic with NumPy broadcasting", LegalizeBinary});
  }
  for (const char* name : {"relax.equal", "relax.not_equal", "relax.less", "relax.less_equal",
                           "relax.greater", "relax.greater_equal"}) {
    ops->push_back({name, 2, InferBinary, true, OpPattern::kBroadcast,
                    "elementwise comparison with broadcasting (bool result)", LegalizeBinary});
  }
  ops->push_back({"relax.where", 3, InferWhere, true, OpPattern::kBroadcast,
                  "selects x1 where the condition holds, else x2 (broadcasting)", LegalizeWhere});
  ops->push_back({"relax.astype", 1, InferAstype, true, OpPattern::kElemWise,
                  "converts elements to dtype=\"...\"", LegalizeAstype});
  ops->push_back({"relax.nn.dropout", 1, InferDropout, true, OpPattern::kElemWise,
                  "dropout at inference: (x, ones mask)", LegalizeDropout});
}

}  // namespace kiln::ir::relax::ops
