// Reductions over axes (sum, mean, max, min, prod, variance, argmax, argmin) and softmax /
// log_softmax. Attributes: `axis` (an integer, a list, or absent for all axes) and `keepdims`.
#include "absl/strings/str_cat.h"
#include "compiler/relax/ops/op_common.h"

namespace kiln::ir::relax::ops {
namespace {

using tir::Combiner;
using tir::Indices;
using tir::Load;

bool IsArgReduce(const std::string& name) {
  return name == "relax.argmax" || name == "relax.argmin";
}

absl::StatusOr<StructInfo> InferReduce(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  const TensorStructInfoNode& t = **x;
  const std::string& name = OpName(call);
  DataType dtype = IsArgReduce(name) ? DataType::Int(64) : t.dtype;
  if ((name == "relax.mean" || name == "relax.variance") && !t.dtype.is_void() &&
      !t.dtype.is_float()) {
    return OpError(call, absl::StrCat("needs a floating-point tensor, got ", t.dtype.ToString()));
  }
  absl::StatusOr<bool> keepdims = BoolAttr(call, "keepdims", false);
  if (!keepdims.ok()) return keepdims.status();
  if (t.ndim < 0) return TensorSInfoUnknown(dtype, -1);
  absl::StatusOr<std::vector<int>> axes = ReduceAxes(call, "axis", t.ndim);
  if (!axes.ok()) return axes.status();
  if (IsArgReduce(name) && GetAttr(call.attrs, "axis") && axes->size() != 1)
    return OpError(call, "takes one axis");
  const std::vector<PrimExpr>* dims = DimsOf(t);
  int out_ndim = *keepdims ? t.ndim : t.ndim - static_cast<int>(axes->size());
  if (dims == nullptr) return TensorSInfoUnknown(dtype, out_ndim);
  std::vector<PrimExpr> out;
  for (int i = 0; i < t.ndim; ++i) {
    bool reduced = std::find(axes->begin(), axes->end(), i) != axes->end();
    if (!reduced) {
      out.push_back((*dims)[i]);
    } else if (*keepdims) {
      out.push_back(Int64(1));
    }
  }
  return TensorSInfo(std::move(out), dtype);
}

// The input index of a reduction point: reduced axes take the reduction indices in order, the
// others the spatial ones (skipping the size-1 places keepdims leaves for reduced axes).
Indices ReduceInputIndex(int ndim, const std::vector<int>& axes, bool keepdims,
                         const Indices& spatial, const Indices& reduce) {
  Indices index;
  size_t s = 0, r = 0;
  for (int i = 0; i < ndim; ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (reduced) {
      index.push_back(reduce[r++]);
      if (keepdims) ++s;
    } else {
      index.push_back(spatial[s++]);
    }
  }
  return index;
}

absl::Status LegalizeReduce(const CallNode& call, const std::vector<Buffer>& in,
                            const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer& x = in[0];
  int ndim = static_cast<int>(x->shape.size());
  absl::StatusOr<std::vector<int>> axes = ReduceAxes(call, "axis", ndim);
  if (!axes.ok()) return axes.status();
  absl::StatusOr<bool> keepdims = BoolAttr(call, "keepdims", false);
  if (!keepdims.ok()) return keepdims.status();
  std::vector<PrimExpr> extents;
  PrimExpr count = Int64(1);
  for (int a : *axes) {
    extents.push_back(x->shape[a]);
    count = count * x->shape[a];
  }
  auto input = [&](const Indices& s, const Indices& r) {
    return Load(x, ReduceInputIndex(ndim, *axes, *keepdims, s, r));
  };
  const std::string& name = OpName(call);
  DataType t = x->dtype;
  if (name == "relax.sum" || name == "relax.max" || name == "relax.min" || name == "relax.prod") {
    Combiner c = name == "relax.sum"   ? Combiner::kSum
                 : name == "relax.max" ? Combiner::kMax
                 : name == "relax.min" ? Combiner::kMin
                                       : Combiner::kProd;
    b.Reduce(absl::StrCat(name.substr(6), "_red"), out[0], extents, c, input);
    return absl::OkStatus();
  }
  if (name == "relax.mean" || name == "relax.variance") {
    Buffer sum = b.Temp("sum", t, out[0]->shape);
    b.Reduce("sum_red", sum, extents, Combiner::kSum, input);
    PrimExpr n = Cast(t, count);
    Buffer mean = name == "relax.mean" ? out[0] : b.Temp("mean", t, out[0]->shape);
    b.Compute("mean", mean, [&](const Indices& i) { return Div(Load(sum, i), n); });
    if (name == "relax.mean") return absl::OkStatus();
    Buffer sq = b.Temp("sq_sum", t, out[0]->shape);
    b.Reduce("sq_sum_red", sq, extents, Combiner::kSum, [&](const Indices& s, const Indices& r) {
      PrimExpr d = input(s, r) - Load(mean, s);
      return d * d;
    });
    b.Compute("variance", out[0], [&](const Indices& i) { return Div(Load(sq, i), n); });
    return absl::OkStatus();
  }
  // argmax / argmin: the extreme value first, then the first flat reduction index holding it.
  bool is_max = name == "relax.argmax";
  Buffer best = b.Temp(is_max ? "max" : "min", t, out[0]->shape);
  b.Reduce(is_max ? "max_red" : "min_red", best, extents, is_max ? Combiner::kMax : Combiner::kMin,
           input);
  const PrimExpr& none = count;
  b.Reduce("index_red", out[0], extents, Combiner::kMin, [&](const Indices& s, const Indices& r) {
    PrimExpr flat = Int64(0);
    for (size_t k = 0; k < r.size(); ++k) flat = flat * extents[k] + Cast(DataType::Int(64), r[k]);
    return Select(Binary(NodeKind::kEQ, input(s, r), Load(best, s)), flat, none);
  });
  return absl::OkStatus();
}

// softmax(x, axis=-1) and log_softmax: same StructInfo as x.
absl::StatusOr<StructInfo> InferSoftmax(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  if (!(*x)->dtype.is_void() && !(*x)->dtype.is_float())
    return OpError(call,
                   absl::StrCat("needs a floating-point tensor, got ", (*x)->dtype.ToString()));
  absl::StatusOr<int64_t> axis = IntAttr(call, "axis", -1);
  if (!axis.ok()) return axis.status();
  if ((*x)->ndim >= 0) {
    absl::StatusOr<int> a = NormalizeAxis(call, *axis, (*x)->ndim);
    if (!a.ok()) return a.status();
  }
  return call.args[0]->struct_info();
}

absl::Status LegalizeSoftmax(const CallNode& call, const std::vector<Buffer>& in,
                             const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer& x = in[0];
  int ndim = static_cast<int>(x->shape.size());
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", -1);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int> axis = NormalizeAxis(call, *axis_attr, ndim);
  if (!axis.ok()) return axis.status();
  std::vector<PrimExpr> kept = x->shape;
  kept[*axis] = IntImm(x->shape[*axis]->dtype, 1);
  DataType t = x->dtype;
  std::vector<int> axes = {*axis};
  auto input = [&](const Indices& s, const Indices& r) {
    return Load(x, ReduceInputIndex(ndim, axes, true, s, r));
  };
  auto at_kept = [&](const Indices& i) {  // the reduced point of a full index
    Indices k = i;
    k[*axis] = IntImm(i[*axis]->dtype, 0);
    return k;
  };
  Buffer max = b.Temp("max", t, kept);
  b.Reduce("max_red", max, {x->shape[*axis]}, Combiner::kMax, input);
  Buffer sum = b.Temp("exp_sum", t, kept);
  b.Reduce("exp_sum_red", sum, {x->shape[*axis]}, Combiner::kSum,
           [&](const Indices& s, const Indices& r) {
             return Call(t, "exp", {input(s, r) - Load(max, s)});
           });
  bool log = OpName(call) == "relax.nn.log_softmax";
  b.Compute(log ? "log_softmax" : "softmax", out[0], [&](const Indices& i) {
    PrimExpr shifted = Load(x, i) - Load(max, at_kept(i));
    if (log) return shifted - Call(t, "log", {Load(sum, at_kept(i))});
    return Div(Call(t, "exp", {shifted}), Load(sum, at_kept(i)));
  });
  return absl::OkStatus();
}

// cumsum(x, axis, exclusive=False): running sums along axis, as TVM's relax.cumsum (the axis is
// required here: TVM's "no axis" flattens first).
absl::StatusOr<StructInfo> InferCumsum(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  if (!GetAttr(call.attrs, "axis")) return OpError(call, "needs axis=");
  absl::StatusOr<int64_t> axis = IntAttr(call, "axis", 0);
  if (!axis.ok()) return axis.status();
  if ((*x)->ndim >= 0) {
    absl::StatusOr<int> a = NormalizeAxis(call, *axis, (*x)->ndim);
    if (!a.ok()) return a.status();
  }
  return call.args[0]->struct_info();
}

// out[i] = sum of x[j] over j <= i[axis] (j < i[axis] when exclusive): a reduction over the
// whole axis masked to the prefix. Quadratic in the axis length, which sequence models keep short.
absl::Status LegalizeCumsum(const CallNode& call, const std::vector<Buffer>& in,
                            const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer& x = in[0];
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int> axis = NormalizeAxis(call, *axis_attr, static_cast<int>(x->shape.size()));
  if (!axis.ok()) return axis.status();
  absl::StatusOr<bool> exclusive = BoolAttr(call, "exclusive", false);
  if (!exclusive.ok()) return exclusive.status();
  b.Reduce("cumsum", out[0], {x->shape[*axis]}, Combiner::kSum,
           [&](const Indices& s, const Indices& r) {
             Indices src = s;
             src[*axis] = r[0];
             PrimExpr in_prefix = *exclusive ? r[0] < s[*axis] : r[0] <= s[*axis];
             return Select(in_prefix, Load(x, src), MakeConst(x->dtype, 0));
           });
  return absl::OkStatus();
}

}  // namespace

void RegisterReduceOps(std::vector<OpInfo>* ops) {
  ops->push_back({"relax.cumsum", 1, InferCumsum, true, OpPattern::kOpaque,
                  "running sums along axis (exclusive=True leaves each element out)",
                  LegalizeCumsum});
  for (const char* name :
       {"relax.sum", "relax.mean", "relax.max", "relax.min", "relax.prod", "relax.variance"}) {
    ops->push_back({name, 1, InferReduce, true, OpPattern::kCommReduce,
                    "reduction over axis=[...] (all by default), keepdims=False", LegalizeReduce});
  }
  for (const char* name : {"relax.argmax", "relax.argmin"}) {
    ops->push_back({name, 1, InferReduce, true, OpPattern::kCommReduce,
                    "index of the extreme element along axis (flat index without one), int64",
                    LegalizeReduce});
  }
  for (const char* name : {"relax.nn.softmax", "relax.nn.log_softmax"}) {
    ops->push_back({name, 1, InferSoftmax, true, OpPattern::kOpaque,
                    "softmax along axis (default -1), computed stably", LegalizeSoftmax});
  }
}

}  // namespace kiln::ir::relax::ops
