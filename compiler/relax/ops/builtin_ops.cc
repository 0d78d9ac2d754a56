// The built-in operators of the spec: calls into TIR and packed functions, shape and tuple
// helpers, and the two side-effecting debugging ops.
#include "absl/strings/str_cat.h"
#include "compiler/relax/op_registry.h"
#include "compiler/relax/struct_info.h"

namespace kiln::ir::relax {
namespace {

absl::Status ArgError(const CallNode& call, size_t index, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(call.op.as<OpNode>()->name, " argument ", index, ": ", what));
}

// The output StructInfo of a destination-passing call: one tensor or a tuple of tensors, each
// with a known shape (the caller allocates them).
absl::StatusOr<int> CheckDpsOutput(const CallNode& call) {
  const std::string& name = call.op.as<OpNode>()->name;
  if (call.sinfo_args.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " needs exactly one output StructInfo (sinfo_args), got ", call.sinfo_args.size()));
  }
  const StructInfo& out = call.sinfo_args[0];
  std::vector<StructInfo> outputs;
  if (const auto* tuple = out.as<TupleStructInfoNode>()) {
    outputs = tuple->fields;
  } else {
    outputs = {out};
  }
  for (const StructInfo& o : outputs) {
    const auto* t = o.as<TensorStructInfoNode>();
    if (t == nullptr || !t->shape || t->dtype.is_void()) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": each output must be a tensor with known shape and dtype, got ", ToString(o)));
    }
  }
  return static_cast<int>(outputs.size());
}

absl::StatusOr<int> CheckArgTuple(const CallNode& call, size_t index) {
  const auto* tuple = call.args[index]->struct_info().as<TupleStructInfoNode>();
  if (tuple == nullptr) {
    return ArgError(call, index,
                    absl::StrCat("expected a tuple of arguments, got ",
                                 ToString(call.args[index]->struct_info())));
  }
  return static_cast<int>(tuple->fields.size());
}

// relax.call_tir(gv, (args...), [tir_vars: ShapeExpr]) -> sinfo_args[0]
absl::StatusOr<StructInfo> InferCallTir(const CallNode& call, const OpInferContext& ctx) {
  if (call.args.size() != 2 && call.args.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("relax.call_tir takes (func, args) or (func, args, tir_vars), got ",
                     call.args.size(), " arguments"));
  }
  const auto* gv = call.args[0].as<GlobalVarNode>();
  if (gv == nullptr) return ArgError(call, 0, "the callee must be a GlobalVar naming a PrimFunc");
  absl::StatusOr<int> num_inputs = CheckArgTuple(call, 1);
  if (!num_inputs.ok()) return num_inputs.status();
  int num_tir_vars = 0;
  if (call.args.size() == 3) {
    const auto* shape = call.args[2]->struct_info().as<ShapeStructInfoNode>();
    if (shape == nullptr || shape->ndim < 0) {
      return ArgError(call, 2, "tir_vars must be a shape of known rank");
    }
    num_tir_vars = shape->ndim;
  }
  absl::StatusOr<int> num_outputs = CheckDpsOutput(call);
  if (!num_outputs.ok()) return num_outputs.status();
  if (ctx.module != nullptr) {
    ObjectRef callee = ctx.module->Lookup(gv->name_hint);
    if (!callee) {
      return ArgError(call, 0, absl::StrCat("no function '", gv->name_hint, "' in the module"));
    }
    const auto* prim = callee.as<PrimFuncNode>();
    if (prim == nullptr) {
      return ArgError(call, 0,
                      absl::StrCat("'", gv->name_hint,
                                   "' is a Relax function, not a "
                                   "PrimFunc; call it directly"));
    }
    int expected = *num_inputs + *num_outputs + num_tir_vars;
    if (static_cast<int>(prim->params.size()) != expected) {
      return absl::InvalidArgumentError(
          absl::StrCat("relax.call_tir: PrimFunc '", gv->name_hint, "' takes ", prim->params.size(),
                       " parameters, but the call passes ", *num_inputs, " inputs, ", *num_outputs,
                       " outputs and ", num_tir_vars, " tir_vars"));
    }
  }
  return call.sinfo_args[0];
}

// relax.call_dps_packed(extern_func, (args...)) -> sinfo_args[0]
absl::StatusOr<StructInfo> InferCallDpsPacked(const CallNode& call, const OpInferContext&) {
  if (!call.args[0].as<ExternFuncNode>()) return ArgError(call, 0, "expected an ExternFunc");
  absl::StatusOr<int> num_inputs = CheckArgTuple(call, 1);
  if (!num_inputs.ok()) return num_inputs.status();
  absl::StatusOr<int> num_outputs = CheckDpsOutput(call);
  if (!num_outputs.ok()) return num_outputs.status();
  return call.sinfo_args[0];
}

// relax.call_pure_packed(extern_func, args...) -> sinfo_args[0] or Object
absl::StatusOr<StructInfo> InferCallPurePacked(const CallNode& call, const OpInferContext&) {
  if (call.args.empty() || !call.args[0].as<ExternFuncNode>()) {
    return ArgError(call, 0, "expected an ExternFunc");
  }
  if (call.sinfo_args.size() > 1) {
    return absl::InvalidArgumentError("relax.call_pure_packed takes at most one sinfo_arg");
  }
  return call.sinfo_args.empty() ? ObjectSInfo() : call.sinfo_args[0];
}

// relax.shape_of(tensor) -> the tensor's shape
absl::StatusOr<StructInfo> InferShapeOf(const CallNode& call, const OpInferContext&) {
  const auto* t = call.args[0]->struct_info().as<TensorStructInfoNode>();
  if (t == nullptr) {
    return ArgError(call, 0,
                    absl::StrCat("expected a tensor, got ", ToString(call.args[0]->struct_info())));
  }
  if (const std::vector<PrimExpr>* dims = t->dims()) return ShapeSInfo(*dims);
  if (t->shape) return t->shape->struct_info();  // a shape Var
  return ShapeSInfoUnknown(t->ndim);
}

// relax.tensor_to_shape(1-D int64 tensor) -> shape of that length
absl::StatusOr<StructInfo> InferTensorToShape(const CallNode& call, const OpInferContext&) {
  const auto* t = call.args[0]->struct_info().as<TensorStructInfoNode>();
  if (t == nullptr || t->ndim != 1 || (!t->dtype.is_void() && !t->dtype.is_integral())) {
    return ArgError(
        call, 0,
        absl::StrCat("expected a 1-D integer tensor, got ", ToString(call.args[0]->struct_info())));
  }
  const std::vector<PrimExpr>* dims = t->dims();
  const int64_t* length = dims != nullptr ? AsConstInt((*dims)[0]) : nullptr;
  return ShapeSInfoUnknown(length != nullptr ? static_cast<int>(*length) : -1);
}

// relax.shape_to_tensor(shape) -> int64 tensor of shape (ndim,)
absl::StatusOr<StructInfo> InferShapeToTensor(const CallNode& call, const OpInferContext&) {
  const auto* s = call.args[0]->struct_info().as<ShapeStructInfoNode>();
  if (s == nullptr) {
    return ArgError(call, 0,
                    absl::StrCat("expected a shape, got ", ToString(call.args[0]->struct_info())));
  }
  if (s->ndim < 0) return TensorSInfoUnknown(DataType::Int(64), 1);
  return TensorSInfo({IntImm(DataType::Int(64), s->ndim)}, DataType::Int(64));
}

absl::StatusOr<StructInfo> InferNullValue(const CallNode&, const OpInferContext&) {
  return ObjectSInfo();
}

absl::StatusOr<StructInfo> InferUnit(const CallNode&, const OpInferContext&) {
  return TupleSInfo({});
}

// relax.assert_op(condition: bool scalar, format args...) -> ()
absl::StatusOr<StructInfo> InferAssert(const CallNode& call, const OpInferContext&) {
  if (call.args.empty()) return absl::InvalidArgumentError("relax.assert_op needs a condition");
  const StructInfo& cond = call.args[0]->struct_info();
  const auto* prim = cond.as<PrimStructInfoNode>();
  const auto* tensor = cond.as<TensorStructInfoNode>();
  bool is_bool = (prim != nullptr && prim->dtype.is_bool()) ||
                 (tensor != nullptr && tensor->dtype.is_bool() && tensor->ndim == 0);
  if (!is_bool) {
    return ArgError(call, 0,
                    absl::StrCat("the condition must be a boolean scalar, got ", ToString(cond)));
  }
  return TupleSInfo({});
}

// The (shape, dtype) arguments at `index`, `index + 1` of an allocation: a tensor StructInfo.
absl::StatusOr<StructInfo> AllocatedTensor(const CallNode& call, size_t index) {
  const auto* shape = call.args[index].as<ShapeExprNode>();
  const auto* dtype = call.args[index + 1].as<DataTypeImmNode>();
  if (shape == nullptr) return ArgError(call, index, "the shape must be a shape literal");
  if (dtype == nullptr) return ArgError(call, index + 1, "the dtype must be a dtype literal");
  return TensorSInfo(shape->values, dtype->value);
}

// relax.builtin.alloc_tensor(shape, dtype, device_index) -> Tensor(shape, dtype)
absl::StatusOr<StructInfo> InferBuiltinAllocTensor(const CallNode& call, const OpInferContext&) {
  return AllocatedTensor(call, 0);
}

// relax.memory.alloc_storage(size, device_index, scope, dtype) -> Object
absl::StatusOr<StructInfo> InferAllocStorage(const CallNode& call, const OpInferContext&) {
  const auto* size = call.args[0].as<ShapeExprNode>();
  if (size == nullptr || size->values.size() != 1 || !AsConstInt(size->values[0]))
    return ArgError(call, 0, "the size must be a one-dimensional constant shape (bytes)");
  return ObjectSInfo();
}

// relax.memory.alloc_tensor(storage, offset, shape, dtype) -> Tensor(shape, dtype)
absl::StatusOr<StructInfo> InferMemoryAllocTensor(const CallNode& call, const OpInferContext&) {
  const auto* offset = call.args[1].as<PrimValueNode>();
  if (offset == nullptr || !AsConstInt(offset->value))
    return ArgError(call, 1, "the offset must be a constant (bytes)");
  return AllocatedTensor(call, 2);
}

}  // namespace

void RegisterBuiltinOps(std::vector<OpInfo>* ops) {
  ops->push_back({"relax.call_tir", -1, InferCallTir, true, OpPattern::kOpaque,
                  "calls a PrimFunc in destination-passing style, allocating its outputs"});
  ops->push_back({"relax.call_dps_packed", 2, InferCallDpsPacked, true, OpPattern::kOpaque,
                  "calls a packed function in destination-passing style"});
  ops->push_back({"relax.call_pure_packed", -1, InferCallPurePacked, true, OpPattern::kOpaque,
                  "calls a packed function the caller asserts is pure"});
  ops->push_back(
      {"relax.shape_of", 1, InferShapeOf, true, OpPattern::kOpaque, "the shape of a tensor"});
  ops->push_back({"relax.tensor_to_shape", 1, InferTensorToShape, true, OpPattern::kOpaque,
                  "a 1-D integer tensor as a shape value"});
  ops->push_back({"relax.shape_to_tensor", 1, InferShapeToTensor, true, OpPattern::kOpaque,
                  "a shape value as a 1-D int64 tensor"});
  ops->push_back(
      {"relax.null_value", 0, InferNullValue, true, OpPattern::kOpaque, "the null object"});
  ops->push_back({"relax.print", -1, InferUnit, false, OpPattern::kOpaque,
                  "prints its arguments (a side effect)"});
  ops->push_back({"relax.assert_op", -1, InferAssert, false, OpPattern::kOpaque,
                  "aborts with a message when the condition is false"});
  // What CallTIRRewrite and StaticPlanBlockMemory lower call_tir's implicit outputs to.
  ops->push_back({"relax.builtin.alloc_tensor", 3, InferBuiltinAllocTensor, true,
                  OpPattern::kOpaque, "allocates a tensor on its own"});
  ops->push_back({"relax.memory.alloc_storage", 4, InferAllocStorage, true, OpPattern::kOpaque,
                  "allocates a block of storage (size in bytes)"});
  ops->push_back({"relax.memory.alloc_tensor", 4, InferMemoryAllocTensor, true, OpPattern::kOpaque,
                  "a tensor view at a byte offset of a storage"});
}

}  // namespace kiln::ir::relax
