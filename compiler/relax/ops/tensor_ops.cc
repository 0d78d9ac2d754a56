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

// relax.matmul(a, b, out_dtype=...): (..., M, K) x (..., K, N) -> (..., M, N), batch dims
// broadcast; a 1-D operand is a vector (NumPy semantics).
absl::StatusOr<StructInfo> InferMatmul(const CallNode& call, const OpInferContext& ctx) {
  absl::StatusOr<const TensorStructInfoNode*> a_or = TensorArg(call, 0);
  if (!a_or.ok()) return a_or.status();
  absl::StatusOr<const TensorStructInfoNode*> b_or = TensorArg(call, 1);
  if (!b_or.ok()) return b_or.status();
  const TensorStructInfoNode& a = **a_or;
  const TensorStructInfoNode& b = **b_or;
  DataType dtype = a.dtype.is_void() ? b.dtype : a.dtype;
  if (!a.dtype.is_void() && !b.dtype.is_void() && a.dtype != b.dtype) {
    return absl::InvalidArgumentError(absl::StrCat("relax.matmul: operand dtypes differ (",
                                                   a.dtype.ToString(), " vs ", b.dtype.ToString(),
                                                   ")"));
  }
  if (const auto* out = GetAttr(call.attrs, "out_dtype").as<ir::StringImmNode>()) {
    absl::StatusOr<DataType> parsed = DataType::Parse(out->value);
    if (!parsed.ok()) return absl::InvalidArgumentError("relax.matmul: bad out_dtype");
    if (!parsed->is_void()) dtype = *parsed;
  }
  if (a.ndim == 0 || b.ndim == 0)
    return absl::InvalidArgumentError("relax.matmul: operands must have rank >= 1");
  const std::vector<PrimExpr>* ad = DimsOf(a);
  const std::vector<PrimExpr>* bd = DimsOf(b);
  if (ad == nullptr || bd == nullptr) {
    int ndim = a.ndim < 0 || b.ndim < 0
                   ? -1
                   : std::max(a.ndim, b.ndim) - (a.ndim == 1 || b.ndim == 1 ? 1 : 0);
    return TensorSInfoUnknown(dtype, ndim);
  }
  std::vector<PrimExpr> x = *ad, y = *bd;
  bool vec_a = x.size() == 1, vec_b = y.size() == 1;
  if (vec_a) x.insert(x.begin(), IntImm(DataType::Int(64), 1));
  if (vec_b) y.push_back(IntImm(DataType::Int(64), 1));
  const PrimExpr& k1 = x.back();
  const PrimExpr& k2 = y[y.size() - 2];
  const int64_t* c1 = AsConstInt(k1);
  const int64_t* c2 = AsConstInt(k2);
  if ((c1 != nullptr && c2 != nullptr && *c1 != *c2) ||
      ctx.analyzer->CanProve(Binary(NodeKind::kNE, k1, k2))) {
    return absl::InvalidArgumentError(absl::StrCat("relax.matmul: reduction dimensions differ (",
                                                   DebugPrint(k1), " vs ", DebugPrint(k2), ")"));
  }
  // Broadcast the batch dimensions.
  std::vector<PrimExpr> xb(x.begin(), x.end() - 2), yb(y.begin(), y.end() - 2);
  size_t batch = std::max(xb.size(), yb.size());
  std::vector<PrimExpr> out;
  for (size_t i = 0; i < batch; ++i) {
    int ia = static_cast<int>(xb.size()) - static_cast<int>(batch) + static_cast<int>(i);
    int ib = static_cast<int>(yb.size()) - static_cast<int>(batch) + static_cast<int>(i);
    if (ia < 0) {
      out.push_back(yb[ib]);
      continue;
    }
    if (ib < 0) {
      out.push_back(xb[ia]);
      continue;
    }
    const int64_t* p = AsConstInt(xb[ia]);
    const int64_t* q = AsConstInt(yb[ib]);
    if (p != nullptr && *p == 1) {
      out.push_back(yb[ib]);
    } else if ((q != nullptr && *q == 1) || ctx.analyzer->CanProveEqual(xb[ia], yb[ib])) {
      out.push_back(xb[ia]);
    } else if (p != nullptr && q != nullptr) {
      return absl::InvalidArgumentError("relax.matmul: batch dimensions cannot broadcast");
    } else {
      return TensorSInfoUnknown(dtype, static_cast<int>(batch + 2 - vec_a - vec_b));
    }
  }
  if (!vec_a) out.push_back(x[x.size() - 2]);
  if (!vec_b) out.push_back(y.back());
  return TensorSInfo(std::move(out), dtype);
}

// relax.permute_dims(x, axes=[...]): axes default to reversed.
absl::StatusOr<StructInfo> InferPermuteDims(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  const TensorStructInfoNode& t = **x;
  std::vector<int64_t> axes;
  ObjectRef attr = GetAttr(call.attrs, "axes");
  if (const auto* list = attr.as<ArrayNode>()) {
    for (const ObjectRef& item : list->items) {
      const int64_t* v = AsConstInt(item.as_ref<PrimExprNode>());
      if (v == nullptr)
        return absl::InvalidArgumentError("relax.permute_dims: axes must be integers");
      axes.push_back(*v);
    }
  } else if (attr) {
    return absl::InvalidArgumentError("relax.permute_dims: axes must be a list");
  }
  if (t.ndim < 0) return TensorSInfoUnknown(t.dtype, attr ? static_cast<int>(axes.size()) : -1);
  if (!attr) {
    for (int i = t.ndim - 1; i >= 0; --i) axes.push_back(i);
  }
  if (static_cast<int>(axes.size()) != t.ndim) {
    return absl::InvalidArgumentError(
        absl::StrCat("relax.permute_dims: ", axes.size(), " axes for a tensor of rank ", t.ndim));
  }
  std::vector<bool> seen(t.ndim, false);
  for (int64_t& a : axes) {
    if (a < 0) a += t.ndim;
    if (a < 0 || a >= t.ndim || seen[a])
      return absl::InvalidArgumentError("relax.permute_dims: axes must be a permutation");
    seen[a] = true;
  }
  const std::vector<PrimExpr>* dims = DimsOf(t);
  if (dims == nullptr) return TensorSInfoUnknown(t.dtype, t.ndim);
  std::vector<PrimExpr> out;
  for (int64_t a : axes) out.push_back((*dims)[a]);
  return TensorSInfo(std::move(out), t.dtype);
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
  ops->push_back({"relax.permute_dims", 1, InferPermuteDims, true, OpPattern::kInjective,
                  "transposes a tensor (axes=[...], reversed by default)"});
  ops->push_back({"relax.matmul", 2, InferMatmul, true, OpPattern::kOutEWiseFusable,
                  "matrix product with NumPy batch broadcasting"});
}

}  // namespace kiln::ir::relax
