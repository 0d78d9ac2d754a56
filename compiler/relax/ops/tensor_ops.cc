// Tensor operators with symbolic StructInfo inference: elementwise, broadcasting binary
// arithmetic, reshape and flatten. (The full operator set arrives with the Relax op library.)
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler/ir/printer.h"
#include "compiler/relax/op_registry.h"
#include "compiler/relax/struct_info.h"

namespace kiln::ir::relax {
namespace {

absl::StatusOr<const TensorStructInfoNode*> TensorArg(const CallNode& call, size_t index) {
  const auto* t = call.args[index]->struct_info().as<TensorStructInfoNode>();
  if (t == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(call.op.as<OpNode>()->name, " argument ", index,
                                                   ": expected a tensor, got ",
                                                   ToString(call.args[index]->struct_info())));
  }
  return t;
}

// The dimensions of `t` if known: a ShapeExpr's, or a shape Var's known values.
const std::vector<PrimExpr>* DimsOf(const TensorStructInfoNode& t) {
  if (const std::vector<PrimExpr>* dims = t.dims()) return dims;
  if (t.shape) {
    if (const auto* s = t.shape->struct_info().as<ShapeStructInfoNode>()) {
      return s->values ? &*s->values : nullptr;
    }
  }
  return nullptr;
}

PrimExpr Product(const std::vector<PrimExpr>& dims, arith::Analyzer* ana) {
  PrimExpr product = IntImm(DataType::Int(64), 1);
  for (const PrimExpr& d : dims) product = product * d;
  return ana->Simplify(product);
}

// exp, negative, sqrt, ...: same StructInfo as the input.
absl::StatusOr<StructInfo> InferUnaryElementwise(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  return call.args[0]->struct_info();
}

// NumPy broadcasting over symbolic dimensions: a dimension of 1 stretches; equal dimensions
// (provably) stay; anything else unprovable leaves the output dimension unknown.
absl::StatusOr<StructInfo> InferBroadcastBinary(const CallNode& call, const OpInferContext& ctx) {
  const std::string& name = call.op.as<OpNode>()->name;
  absl::StatusOr<const TensorStructInfoNode*> lhs_or = TensorArg(call, 0);
  if (!lhs_or.ok()) return lhs_or.status();
  absl::StatusOr<const TensorStructInfoNode*> rhs_or = TensorArg(call, 1);
  if (!rhs_or.ok()) return rhs_or.status();
  const TensorStructInfoNode& lhs = **lhs_or;
  const TensorStructInfoNode& rhs = **rhs_or;
  DataType dtype = DataType::Void();
  if (!lhs.dtype.is_void() && !rhs.dtype.is_void()) {
    if (lhs.dtype != rhs.dtype) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": operand dtypes differ (",
                                                     lhs.dtype.ToString(), " vs ",
                                                     rhs.dtype.ToString(), ")"));
    }
    dtype = lhs.dtype;
  }
  if (lhs.ndim < 0 || rhs.ndim < 0) return TensorSInfoUnknown(dtype, -1);
  int ndim = std::max(lhs.ndim, rhs.ndim);
  const std::vector<PrimExpr>* a = DimsOf(lhs);
  const std::vector<PrimExpr>* b = DimsOf(rhs);
  if (a == nullptr || b == nullptr) return TensorSInfoUnknown(dtype, ndim);
  std::vector<PrimExpr> out(ndim);
  for (int i = 0; i < ndim; ++i) {
    // Align from the right.
    int ia = static_cast<int>(a->size()) - ndim + i;
    int ib = static_cast<int>(b->size()) - ndim + i;
    if (ia < 0) {
      out[i] = (*b)[ib];
      continue;
    }
    if (ib < 0) {
      out[i] = (*a)[ia];
      continue;
    }
    const PrimExpr& da = (*a)[ia];
    const PrimExpr& db = (*b)[ib];
    const int64_t* ca = AsConstInt(da);
    const int64_t* cb = AsConstInt(db);
    if (ca != nullptr && *ca == 1) {
      out[i] = db;
    } else if (cb != nullptr && *cb == 1) {
      out[i] = da;
    } else if (da == db || ctx.analyzer->CanProveEqual(da, db)) {
      out[i] = da;
    } else if (ca != nullptr && cb != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": cannot broadcast dimension ", i, " (", *ca, " vs ", *cb, ")"));
    } else {
      return TensorSInfoUnknown(dtype, ndim);
    }
  }
  return TensorSInfo(std::move(out), dtype);
}

// relax.flatten(x) -> 1-D tensor of prod(shape) elements: (n, 4) -> (n*4,)
absl::StatusOr<StructInfo> InferFlatten(const CallNode& call, const OpInferContext& ctx) {
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  const std::vector<PrimExpr>* dims = DimsOf(**x);
  if (dims == nullptr) return TensorSInfoUnknown((*x)->dtype, 1);
  return TensorSInfo({Product(*dims, ctx.analyzer)}, (*x)->dtype);
}

// relax.reshape(x, shape) -> tensor of `shape`; the element counts must not provably differ.
absl::StatusOr<StructInfo> InferReshape(const CallNode& call, const OpInferContext& ctx) {
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  const auto* shape = call.args[1]->struct_info().as<ShapeStructInfoNode>();
  if (shape == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "relax.reshape argument 1: expected a shape, got ", ToString(call.args[1]->struct_info())));
  }
  const std::vector<PrimExpr>* from = DimsOf(**x);
  if (shape->values && from != nullptr) {
    PrimExpr before = Product(*from, ctx.analyzer);
    PrimExpr after = Product(*shape->values, ctx.analyzer);
    const int64_t* b = AsConstInt(before);
    const int64_t* a = AsConstInt(after);
    bool differ = (a != nullptr && b != nullptr && *a != *b) ||
                  ctx.analyzer->CanProve(Binary(NodeKind::kNE, before, after));
    if (differ) {
      return absl::InvalidArgumentError(absl::StrCat(
          "relax.reshape: cannot reshape ", ToString(call.args[0]->struct_info()), " (",
          DebugPrint(before), " elements) to ", ToString(call.args[1]->struct_info()), " (",
          DebugPrint(after), " elements)"));
    }
  }
  if (shape->values) return TensorSInfo(*shape->values, (*x)->dtype);
  // A shape variable without known values: refer to it.
  if (call.args[1].as<VarNode>()) {
    return Make<TensorStructInfoNode>(call.args[1], (*x)->dtype, shape->ndim);
  }
  return TensorSInfoUnknown((*x)->dtype, shape->ndim);
}

}  // namespace

void RegisterTensorOps(std::vector<OpInfo>* ops) {
  for (const char* name : {"relax.add", "relax.subtract", "relax.multiply", "relax.divide"}) {
    ops->push_back({name, 2, InferBroadcastBinary, true, OpPattern::kBroadcast,
                    "elementwise arithmetic with NumPy broadcasting"});
  }
  for (const char* name : {"relax.exp", "relax.negative", "relax.sqrt", "relax.nn.relu"}) {
    ops->push_back(
        {name, 1, InferUnaryElementwise, true, OpPattern::kElemWise, "elementwise unary math"});
  }
  ops->push_back({"relax.flatten", 1, InferFlatten, true, OpPattern::kInjective,
                  "flattens a tensor to one dimension"});
  ops->push_back({"relax.reshape", 2, InferReshape, true, OpPattern::kInjective,
                  "reshapes a tensor to a shape with the same element count"});
}

}  // namespace kiln::ir::relax
