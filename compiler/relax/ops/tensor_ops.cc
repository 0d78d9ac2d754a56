// Matrix product and the reshaping operators (flatten, reshape, permute_dims), with symbolic
// StructInfo inference and their kernels.
#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "compiler/ir/printer.h"
#include "compiler/relax/ops/op_common.h"
#include "compiler/relax/struct_info.h"

namespace kiln::ir::relax {
namespace {

using ops::DimsOf;
using ops::Product;
using ops::TensorArg;
using tir::Combiner;
using tir::Indices;
using tir::Load;

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
// b_layout="NK<b>n": the second operand is a matrix [K, N] stored as [N / b, K, b], columns in
// blocks of b innermost (PackConstantWeights gives constant weights this layout, so that b
// columns are one contiguous vector load and a block's K rows one stream). 0: plain.
absl::StatusOr<int64_t> BlockedB(const CallNode& call) {
  const auto* layout = GetAttr(call.attrs, "b_layout").as<ir::StringImmNode>();
  if (layout == nullptr) return 0;
  const std::string& l = layout->value;
  int64_t block = 0;
  if (l.size() < 4 || l.rfind("NK", 0) != 0 || l.back() != 'n' ||
      !absl::SimpleAtoi(l.substr(2, l.size() - 3), &block) || block < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("relax.matmul: b_layout \"", l, "\" is not supported (NK<b>n)"));
  }
  return block;
}

absl::StatusOr<StructInfo> InferMatmul(const CallNode& call, const OpInferContext& ctx) {
  absl::StatusOr<int64_t> blocked = BlockedB(call);
  if (!blocked.ok()) return blocked.status();
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
  if (*blocked) {
    if (y.size() != 3 || x.size() < 2)
      return absl::InvalidArgumentError(
          "relax.matmul: a blocked b_layout takes a matrix [N / b, K, b] and x of rank >= 2");
    y = {y[1], ctx.analyzer->Simplify(y[0] * *blocked)};
  }
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
      PrimExpr axis = item.as_ref<PrimExprNode>();
      const int64_t* v = AsConstInt(axis);
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

// out[...] = x[unravel(ravel(out index))]: the row-major element order is kept.
Indices Unravel(const Buffer& x, const Buffer& out, const Indices& i) {
  PrimExpr flat = IntImm(DataType::Int(64), 0);
  for (size_t k = 0; k < i.size(); ++k) flat = flat * out->shape[k] + Cast(DataType::Int(64), i[k]);
  Indices src(x->shape.size());
  for (size_t k = x->shape.size(); k-- > 0;) {
    PrimExpr dim = Cast(DataType::Int(64), x->shape[k]);
    src[k] = k == 0 ? flat : FloorMod(flat, dim);
    flat = FloorDiv(flat, dim);
  }
  return src;
}

absl::Status LegalizeReshape(const CallNode&, const std::vector<Buffer>& in,
                             const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  b.Compute("T_reshape", out[0],
            [&](const Indices& i) { return Load(in[0], Unravel(in[0], out[0], i)); });
  return absl::OkStatus();
}

absl::Status LegalizePermuteDims(const CallNode& call, const std::vector<Buffer>& in,
                                 const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  int ndim = static_cast<int>(in[0]->shape.size());
  absl::StatusOr<std::optional<std::vector<int64_t>>> axes = ops::IntListAttr(call, "axes");
  if (!axes.ok()) return axes.status();
  std::vector<int> perm;
  for (int k = 0; k < ndim; ++k) {
    perm.push_back(axes->has_value() ? static_cast<int>(((**axes)[k] + ndim) % ndim)
                                     : ndim - 1 - k);
  }
  b.Compute("T_transpose", out[0], [&](const Indices& i) {
    Indices src(ndim);
    for (int k = 0; k < ndim; ++k) src[perm[k]] = i[k];
    return Load(in[0], src);
  });
  return absl::OkStatus();
}

// out[batch..., i, j] = sum_k a[batch_a..., i, k] * b[batch_b..., k, j], batch dimensions
// broadcast; a vector operand has no i (or j) axis.
absl::Status LegalizeMatmul(const CallNode& call, const std::vector<Buffer>& in,
                            const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer &x = in[0], &y = in[1];
  bool vec_x = x->shape.size() == 1, vec_y = y->shape.size() == 1;
  PrimExpr k = x->shape.back();
  DataType t = out[0]->dtype;
  absl::StatusOr<int64_t> blocked = BlockedB(call);
  if (!blocked.ok()) return blocked.status();
  if (*blocked) {
    // Accumulated in [batch..., N / b, M, b] (a vector of b columns, rows inside column blocks:
    // the rules run the rows of one weight block serially while it is in cache, and spread the
    // blocks over threads), then stored to [batch..., M, N] by a block iterating that layout,
    // which the rules fold into the accumulator's write-back.
    const std::vector<PrimExpr>& os = out[0]->shape;
    const size_t batch = os.size() - 2;
    std::vector<PrimExpr> packed_shape(os.begin(), os.begin() + batch);
    packed_shape.insert(packed_shape.end(), {y->shape[0], os[batch], y->shape[2]});
    Buffer packed = b.Temp("matmul_packed", t, packed_shape);
    b.Reduce("matmul", packed, {k}, Combiner::kSum, [&](const Indices& s, const Indices& r) {
      Indices xi;
      const size_t nb = x->shape.size() - 2;
      for (size_t d = 0; d < nb; ++d) {
        const int64_t* c = AsConstInt(x->shape[d]);
        const PrimExpr& o = s[batch - nb + d];
        xi.push_back(c != nullptr && *c == 1 ? IntImm(o->dtype, 0) : o);
      }
      xi.push_back(s[batch + 1]);
      xi.push_back(r[0]);
      return Cast(t, Load(x, xi)) * Cast(t, Load(y, {s[batch], r[0], s[batch + 2]}));
    });
    b.ComputeOver(
        "matmul_unpack", out[0], packed->shape,
        [&](const Indices& i) {
          Indices at(i.begin(), i.begin() + batch);
          at.push_back(i[batch + 1]);
          at.push_back(i[batch] * *blocked + i[batch + 2]);
          return at;
        },
        [&](const Indices& i) { return Load(packed, i); });
    return absl::OkStatus();
  }
  b.Reduce("matmul", out[0], {k}, Combiner::kSum, [&](const Indices& s, const Indices& r) {
    size_t batch = s.size() - (vec_x ? 0 : 1) - (vec_y ? 0 : 1);
    Indices bi(s.begin(), s.begin() + batch);
    Indices xi, yi;
    if (!vec_x) {
      size_t nb = x->shape.size() - 2;
      for (size_t d = 0; d < nb; ++d) {
        const int64_t* c = AsConstInt(x->shape[d]);
        const PrimExpr& o = bi[batch - nb + d];
        xi.push_back(c != nullptr && *c == 1 ? IntImm(o->dtype, 0) : o);
      }
      xi.push_back(s[batch]);
    }
    xi.push_back(r[0]);
    if (!vec_y) {
      size_t nb = y->shape.size() - 2;
      for (size_t d = 0; d < nb; ++d) {
        const int64_t* c = AsConstInt(y->shape[d]);
        const PrimExpr& o = bi[batch - nb + d];
        yi.push_back(c != nullptr && *c == 1 ? IntImm(o->dtype, 0) : o);
      }
    }
    yi.push_back(r[0]);
    if (!vec_y) yi.push_back(s.back());
    return Cast(t, Load(x, xi)) * Cast(t, Load(y, yi));
  });
  return absl::OkStatus();
}

}  // namespace

void RegisterTensorOps(std::vector<OpInfo>* ops) {
  ops->push_back({"relax.flatten", 1, InferFlatten, true, OpPattern::kInjective,
                  "flattens a tensor to one dimension", LegalizeReshape});
  ops->push_back({"relax.reshape", 2, InferReshape, true, OpPattern::kInjective,
                  "reshapes a tensor to a shape with the same element count", LegalizeReshape});
  ops->push_back({"relax.permute_dims", 1, InferPermuteDims, true, OpPattern::kInjective,
                  "transposes a tensor (axes=[...], reversed by default)", LegalizePermuteDims});
  ops->push_back({"relax.matmul", 2, InferMatmul, true, OpPattern::kOutEWiseFusable,
                  "matrix product with NumPy batch broadcasting", LegalizeMatmul});
}

}  // namespace kiln::ir::relax
