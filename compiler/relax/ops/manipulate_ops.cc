// Layout and creation operators: expand_dims, squeeze, concat, split, strided_slice, take,
// broadcast_to, nn.pad, zeros, ones and full.
#include <functional>

#include "absl/strings/str_cat.h"
#include "compiler/ir/printer.h"
#include "compiler/relax/ops/op_common.h"
#include "compiler/relax/struct_info.h"

namespace kiln::ir::relax::ops {
namespace {

using tir::Combiner;
using tir::Indices;
using tir::Load;

absl::Status Copy(tir::ComputeBuilder& b, const char* name, const Buffer& out,
                  const std::function<Indices(const Indices&)>& source, const Buffer& x) {
  b.Compute(name, out, [&](const Indices& i) { return Load(x, source(i)); });
  return absl::OkStatus();
}

// ---- expand_dims(x, axis=[...]) / squeeze(x, axis=[...] or all unit dims) ----

absl::StatusOr<std::vector<int>> ExpandAxes(const CallNode& call, int ndim) {
  absl::StatusOr<std::optional<std::vector<int64_t>>> list = IntListAttr(call, "axis");
  if (!list.ok()) return list.status();
  if (!list->has_value()) return OpError(call, "needs axis=[...]");
  return NormalizeAxes(call, **list, ndim + static_cast<int>((*list)->size()));
}

absl::StatusOr<StructInfo> InferExpandDims(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  if ((*x)->ndim < 0) return TensorSInfoUnknown((*x)->dtype, -1);
  absl::StatusOr<std::vector<int>> axes = ExpandAxes(call, (*x)->ndim);
  if (!axes.ok()) return axes.status();
  int out_ndim = (*x)->ndim + static_cast<int>(axes->size());
  const std::vector<PrimExpr>* dims = DimsOf(**x);
  if (dims == nullptr) return TensorSInfoUnknown((*x)->dtype, out_ndim);
  std::vector<PrimExpr> out;
  for (int i = 0, k = 0; i < out_ndim; ++i) {
    bool added = std::find(axes->begin(), axes->end(), i) != axes->end();
    out.push_back(added ? Int64(1) : (*dims)[k++]);
  }
  return TensorSInfo(std::move(out), (*x)->dtype);
}

absl::StatusOr<std::vector<int>> SqueezeAxes(const CallNode& call,
                                             const std::vector<PrimExpr>& dims) {
  absl::StatusOr<std::vector<int>> axes = ReduceAxes(call, "axis", static_cast<int>(dims.size()));
  if (!axes.ok()) return axes.status();
  std::vector<int> out;
  bool all = !GetAttr(call.attrs, "axis");
  for (int a : *axes) {
    const int64_t* c = AsConstInt(dims[a]);
    if (c != nullptr && *c == 1) {
      out.push_back(a);
    } else if (!all) {
      return OpError(call, absl::StrCat("dimension ", a, " is ", DebugPrint(dims[a]), ", not 1"));
    }
  }
  return out;
}

absl::StatusOr<StructInfo> InferSqueeze(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  const std::vector<PrimExpr>* dims = DimsOf(**x);
  if (dims == nullptr) return TensorSInfoUnknown((*x)->dtype, -1);
  absl::StatusOr<std::vector<int>> axes = SqueezeAxes(call, *dims);
  if (!axes.ok()) return axes.status();
  std::vector<PrimExpr> out;
  for (int i = 0; i < static_cast<int>(dims->size()); ++i) {
    if (std::find(axes->begin(), axes->end(), i) == axes->end()) out.push_back((*dims)[i]);
  }
  return TensorSInfo(std::move(out), (*x)->dtype);
}

// expand_dims and squeeze move no data: the output index is the input's with unit axes
// inserted or dropped.
absl::Status LegalizeExpandSqueeze(const CallNode& call, const std::vector<Buffer>& in,
                                   const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer& x = in[0];
  bool expand = OpName(call) == "relax.expand_dims";
  absl::StatusOr<std::vector<int>> axes =
      expand ? ExpandAxes(call, static_cast<int>(x->shape.size())) : SqueezeAxes(call, x->shape);
  if (!axes.ok()) return axes.status();
  return Copy(
      b, expand ? "expand_dims" : "squeeze", out[0],
      [&](const Indices& i) {
        Indices src;
        if (expand) {
          for (size_t k = 0; k < i.size(); ++k) {
            if (std::find(axes->begin(), axes->end(), static_cast<int>(k)) == axes->end())
              src.push_back(i[k]);
          }
        } else {
          for (size_t k = 0, j = 0; k < x->shape.size(); ++k) {
            bool dropped =
                std::find(axes->begin(), axes->end(), static_cast<int>(k)) != axes->end();
            src.push_back(dropped ? IntImm(DataType::Int(64), 0) : i[j++]);
          }
        }
        return src;
      },
      x);
}

// ---- concat((x0, x1, ...), axis=0) ----

absl::StatusOr<StructInfo> InferConcat(const CallNode& call, const OpInferContext& ctx) {
  const auto* tuple = call.args[0]->struct_info().as<TupleStructInfoNode>();
  if (tuple == nullptr || tuple->fields.empty())
    return OpError(call, "takes a non-empty tuple of tensors");
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  std::vector<PrimExpr> out;
  DataType dtype = DataType::Void();
  int ndim = -1;
  int axis = 0;
  for (size_t f = 0; f < tuple->fields.size(); ++f) {
    const auto* t = tuple->fields[f].as<TensorStructInfoNode>();
    if (t == nullptr) return OpError(call, absl::StrCat("field ", f, " is not a tensor"));
    if (!t->dtype.is_void() && !dtype.is_void() && t->dtype != dtype)
      return OpError(call, absl::StrCat("field ", f, " has dtype ", t->dtype.ToString(), ", not ",
                                        dtype.ToString()));
    if (!t->dtype.is_void()) dtype = t->dtype;
    const std::vector<PrimExpr>* dims = DimsOf(*t);
    if (t->ndim < 0 || dims == nullptr)
      return TensorSInfoUnknown(dtype, t->ndim >= 0 ? t->ndim : ndim);
    if (ndim >= 0 && t->ndim != ndim)
      return OpError(call, absl::StrCat("field ", f, " has rank ", t->ndim, ", not ", ndim));
    ndim = t->ndim;
    absl::StatusOr<int> a = NormalizeAxis(call, *axis_attr, ndim);
    if (!a.ok()) return a.status();
    axis = *a;
    if (out.empty()) {
      out = *dims;
      continue;
    }
    for (int d = 0; d < ndim; ++d) {
      if (d == axis) {
        out[d] = ctx.analyzer->Simplify(out[d] + (*dims)[d]);
      } else if (ctx.analyzer->CanProve(Binary(NodeKind::kNE, out[d], (*dims)[d]))) {
        return OpError(call, absl::StrCat("field ", f, " differs in dimension ", d, " (",
                                          DebugPrint((*dims)[d]), " vs ", DebugPrint(out[d]), ")"));
      }
    }
  }
  return TensorSInfo(std::move(out), dtype);
}

absl::Status LegalizeConcat(const CallNode& call, const std::vector<Buffer>& in,
                            const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int> axis =
      NormalizeAxis(call, *axis_attr, static_cast<int>(out[0]->shape.size()));
  if (!axis.ok()) return axis.status();
  // One stage: each output point selects the input whose slab holds it (loads are clamped, so
  // the unselected ones stay in bounds).
  int ax = *axis;
  b.Compute("T_concat", out[0], [&](const Indices& i) {
    std::vector<PrimExpr> starts;
    PrimExpr start = IntImm(i[ax]->dtype, 0);
    for (const Buffer& x : in) {
      starts.push_back(start);
      start = start + x->shape[ax];
    }
    PrimExpr value;
    for (size_t f = in.size(); f-- > 0;) {
      Indices src = i;
      src[ax] = i[ax] - starts[f];
      PrimExpr v = GuardedLoad(in[f], src, Bool(true), MakeConst(in[f]->dtype, 0));
      value = !value ? v : Select(i[ax] < starts[f + 1], v, value);
    }
    return value;
  });
  return absl::OkStatus();
}

// ---- split(x, indices_or_sections, axis=0) -> tuple ----

// The [begin, end) of each piece along the axis of extent `dim`.
absl::StatusOr<std::vector<std::pair<PrimExpr, PrimExpr>>> SplitPieces(const CallNode& call,
                                                                       const PrimExpr& dim) {
  ObjectRef attr = GetAttr(call.attrs, "indices_or_sections");
  if (!attr) return OpError(call, "needs indices_or_sections");
  std::vector<std::pair<PrimExpr, PrimExpr>> pieces;
  if (attr.as<ArrayNode>()) {
    absl::StatusOr<std::optional<std::vector<int64_t>>> idx =
        IntListAttr(call, "indices_or_sections");
    if (!idx.ok()) return idx.status();
    PrimExpr begin = Int64(0);
    for (int64_t at : **idx) {
      pieces.emplace_back(begin, Int64(at));
      begin = Int64(at);
    }
    pieces.emplace_back(begin, dim);
    return pieces;
  }
  absl::StatusOr<int64_t> sections = IntAttr(call, "indices_or_sections", 1);
  if (!sections.ok()) return sections.status();
  if (*sections < 1) return OpError(call, "needs at least one section");
  const int64_t* d = AsConstInt(dim);
  if (d != nullptr && *d % *sections != 0)
    return OpError(call, absl::StrCat("cannot split ", *d, " into ", *sections, " equal sections"));
  PrimExpr size = d != nullptr ? Int64(*d / *sections) : FloorDiv(dim, Int64(*sections));
  for (int64_t k = 0; k < *sections; ++k) pieces.emplace_back(size * k, size * (k + 1));
  return pieces;
}

absl::StatusOr<StructInfo> InferSplit(const CallNode& call, const OpInferContext& ctx) {
  absl::StatusOr<std::vector<PrimExpr>> dims = KnownDims(call, 0);
  if (!dims.ok()) return dims.status();
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int> axis = NormalizeAxis(call, *axis_attr, static_cast<int>(dims->size()));
  if (!axis.ok()) return axis.status();
  absl::StatusOr<std::vector<std::pair<PrimExpr, PrimExpr>>> pieces =
      SplitPieces(call, (*dims)[*axis]);
  if (!pieces.ok()) return pieces.status();
  DataType dtype = call.args[0]->struct_info().as<TensorStructInfoNode>()->dtype;
  std::vector<StructInfo> fields;
  for (const auto& [begin, end] : *pieces) {
    std::vector<PrimExpr> shape = *dims;
    shape[*axis] = ctx.analyzer->Simplify(end - begin);
    const int64_t* c = AsConstInt(shape[*axis]);
    if (c != nullptr && *c < 0) return OpError(call, "split indices must be ascending");
    fields.push_back(TensorSInfo(std::move(shape), dtype));
  }
  return Make<TupleStructInfoNode>(std::move(fields));
}

absl::Status LegalizeSplit(const CallNode& call, const std::vector<Buffer>& in,
                           const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int> axis = NormalizeAxis(call, *axis_attr, static_cast<int>(in[0]->shape.size()));
  if (!axis.ok()) return axis.status();
  absl::StatusOr<std::vector<std::pair<PrimExpr, PrimExpr>>> pieces =
      SplitPieces(call, in[0]->shape[*axis]);
  if (!pieces.ok()) return pieces.status();
  for (size_t k = 0; k < out.size(); ++k) {
    const PrimExpr& begin = (*pieces)[k].first;
    b.Compute("T_split", out[k], [&](const Indices& i) {
      Indices src = i;
      src[*axis] = i[*axis] + begin;
      return Load(in[0], src);
    });
  }
  return absl::OkStatus();
}

// ---- strided_slice(x, axes=[...], begin=[...], end=[...], strides=[...]) ----

struct Slice {
  int axis;
  int64_t begin, stride, length;
};

// Slices along `axes` with NumPy semantics for negative and out-of-range bounds (static
// extents only along sliced axes).
absl::StatusOr<std::vector<Slice>> ParseSlices(const CallNode& call,
                                               const std::vector<PrimExpr>& dims) {
  absl::StatusOr<std::optional<std::vector<int64_t>>> axes = IntListAttr(call, "axes");
  absl::StatusOr<std::optional<std::vector<int64_t>>> begin = IntListAttr(call, "begin");
  absl::StatusOr<std::optional<std::vector<int64_t>>> end = IntListAttr(call, "end");
  absl::StatusOr<std::optional<std::vector<int64_t>>> strides = IntListAttr(call, "strides");
  for (const auto* s : {&axes, &begin, &end, &strides}) {
    if (!s->ok()) return s->status();
  }
  if (!axes->has_value() || !begin->has_value() || !end->has_value())
    return OpError(call, "needs axes, begin and end");
  size_t n = (*axes)->size();
  if ((*begin)->size() != n || (*end)->size() != n ||
      (strides->has_value() && (*strides)->size() != n))
    return OpError(call, "axes, begin, end and strides must have the same length");
  std::vector<Slice> slices;
  for (size_t k = 0; k < n; ++k) {
    absl::StatusOr<int> axis = NormalizeAxis(call, (**axes)[k], static_cast<int>(dims.size()));
    if (!axis.ok()) return axis.status();
    const int64_t* extent = AsConstInt(dims[*axis]);
    if (extent == nullptr)
      return OpError(call, absl::StrCat("axis ", *axis, " must have a static extent"));
    int64_t stride = strides->has_value() ? (**strides)[k] : 1;
    if (stride == 0) return OpError(call, "strides must not be 0");
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); };
    int64_t b0 = (**begin)[k], e0 = (**end)[k];
    if (b0 < 0) b0 += *extent;
    if (e0 < 0) e0 += *extent;
    int64_t first, length;
    if (stride > 0) {
      first = clamp(b0, 0, *extent);
      int64_t last = clamp(e0, 0, *extent);
      length = last > first ? (last - first + stride - 1) / stride : 0;
    } else {
      first = clamp(b0, -1, *extent - 1);
      int64_t last = clamp(e0, -1, *extent - 1);
      length = first > last ? (first - last - stride - 1) / -stride : 0;
    }
    slices.push_back({*axis, first, stride, length});
  }
  return slices;
}

absl::StatusOr<StructInfo> InferStridedSlice(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<std::vector<PrimExpr>> dims = KnownDims(call, 0);
  if (!dims.ok()) return dims.status();
  absl::StatusOr<std::vector<Slice>> slices = ParseSlices(call, *dims);
  if (!slices.ok()) return slices.status();
  std::vector<PrimExpr> out = *dims;
  for (const Slice& s : *slices) out[s.axis] = Int64(s.length);
  return TensorSInfo(std::move(out), call.args[0]->struct_info().as<TensorStructInfoNode>()->dtype);
}

absl::Status LegalizeStridedSlice(const CallNode& call, const std::vector<Buffer>& in,
                                  const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  absl::StatusOr<std::vector<Slice>> slices = ParseSlices(call, in[0]->shape);
  if (!slices.ok()) return slices.status();
  return Copy(
      b, "T_strided_slice", out[0],
      [&](const Indices& i) {
        Indices src = i;
        for (const Slice& s : *slices) src[s.axis] = i[s.axis] * s.stride + s.begin;
        return src;
      },
      in[0]);
}

// ---- take(x, indices, axis): gathers along axis; out-of-range indices are clamped ----

// An index read from a tensor, as int64, a negative one counting back from `dim` (NumPy's and
// ONNX's convention for every gather).
PrimExpr GatherIndex(const PrimExpr& loaded, const PrimExpr& dim) {
  PrimExpr at = Cast(DataType::Int(64), loaded);
  return Select(at < IntImm(DataType::Int(64), 0), at + Cast(DataType::Int(64), dim), at);
}

// The data and index operands every gather reads: both shapes known, integer indices.
struct GatherOperands {
  std::vector<PrimExpr> data, indices;
  DataType dtype;  // the data's, which the result keeps
};

absl::StatusOr<GatherOperands> ReadGatherOperands(const CallNode& call) {
  absl::StatusOr<std::vector<PrimExpr>> dims = KnownDims(call, 0);
  if (!dims.ok()) return dims.status();
  absl::StatusOr<std::vector<PrimExpr>> idx = KnownDims(call, 1);
  if (!idx.ok()) return idx.status();
  DataType idx_type = call.args[1]->struct_info().as<TensorStructInfoNode>()->dtype;
  if (!idx_type.is_void() && !idx_type.is_integral())
    return OpError(call, absl::StrCat("indices must be integers, got ", idx_type.ToString()));
  return GatherOperands{*dims, *idx, call.args[0]->struct_info().as<TensorStructInfoNode>()->dtype};
}

absl::StatusOr<StructInfo> InferTake(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<GatherOperands> g = ReadGatherOperands(call);
  if (!g.ok()) return g.status();
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int> axis = NormalizeAxis(call, *axis_attr, static_cast<int>(g->data.size()));
  if (!axis.ok()) return axis.status();
  std::vector<PrimExpr> out(g->data.begin(), g->data.begin() + *axis);
  out.insert(out.end(), g->indices.begin(), g->indices.end());
  out.insert(out.end(), g->data.begin() + *axis + 1, g->data.end());
  return TensorSInfo(std::move(out), g->dtype);
}

absl::Status LegalizeTake(const CallNode& call, const std::vector<Buffer>& in,
                          const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer &x = in[0], &idx = in[1];
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int> axis = NormalizeAxis(call, *axis_attr, static_cast<int>(x->shape.size()));
  if (!axis.ok()) return axis.status();
  size_t ni = idx->shape.size();
  b.Compute("T_take", out[0], [&](const Indices& i) {
    Indices where(i.begin() + *axis, i.begin() + *axis + ni);
    PrimExpr at = GatherIndex(Load(idx, where), x->shape[*axis]);
    Indices src(i.begin(), i.begin() + *axis);
    src.push_back(at);
    src.insert(src.end(), i.begin() + *axis + ni, i.end());
    return GuardedLoad(x, src, Bool(true), MakeConst(x->dtype, 0));
  });
  return absl::OkStatus();
}

// ---- gather_elements(x, indices, axis): out[i] = x[i with i[axis] = indices[i]] ----

absl::StatusOr<StructInfo> InferGatherElements(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<GatherOperands> g = ReadGatherOperands(call);
  if (!g.ok()) return g.status();
  if (g->indices.size() != g->data.size()) {
    return OpError(call, absl::StrCat("indices have rank ", g->indices.size(), ", the data rank ",
                                      g->data.size(), "; they must be equal"));
  }
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int> axis = NormalizeAxis(call, *axis_attr, static_cast<int>(g->data.size()));
  if (!axis.ok()) return axis.status();
  return TensorSInfo(g->indices, g->dtype);
}

// Negative indices count from the end; one still out of range reads 0.
absl::Status LegalizeGatherElements(const CallNode& call, const std::vector<Buffer>& in,
                                    const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer &x = in[0], &idx = in[1];
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int> axis = NormalizeAxis(call, *axis_attr, static_cast<int>(x->shape.size()));
  if (!axis.ok()) return axis.status();
  b.Compute("T_gather_elements", out[0], [&](const Indices& i) {
    PrimExpr at = GatherIndex(Load(idx, i), x->shape[*axis]);
    Indices src = i;
    src[*axis] = at;
    return GuardedLoad(x, src, Bool(true), MakeConst(x->dtype, 0));
  });
  return absl::OkStatus();
}

// ---- gather_nd(x, indices, batch_dims): indices' last axis holds m coordinates into x ----
// out[b..., i..., j...] = x[b..., indices[b..., i..., 0..m-1], j...] (ONNX GatherND, TVM's op).

absl::StatusOr<StructInfo> InferGatherND(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<GatherOperands> g = ReadGatherOperands(call);
  if (!g.ok()) return g.status();
  const std::vector<PrimExpr>* dims = &g->data;
  const std::vector<PrimExpr>* idx = &g->indices;
  absl::StatusOr<int64_t> batch = IntAttr(call, "batch_dims", 0);
  if (!batch.ok()) return batch.status();
  if (idx->empty()) return OpError(call, "indices need at least one axis");
  const int64_t* m = AsConstInt(idx->back());
  if (m == nullptr) return OpError(call, "the last axis of indices must have a known length");
  int64_t r = static_cast<int64_t>(dims->size()), q = static_cast<int64_t>(idx->size());
  if (*batch < 0 || *batch >= std::min(r, q) || *m < 1 || *batch + *m > r) {
    return OpError(
        call, absl::StrCat("batch_dims ", *batch, " and ", *m,
                           " coordinates do not fit data of rank ", r, " and indices of rank ", q));
  }
  std::vector<PrimExpr> out(idx->begin(), idx->end() - 1);
  out.insert(out.end(), dims->begin() + *batch + *m, dims->end());
  return TensorSInfo(std::move(out), g->dtype);
}

absl::Status LegalizeGatherND(const CallNode& call, const std::vector<Buffer>& in,
                              const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer &x = in[0], &idx = in[1];
  absl::StatusOr<int64_t> batch_attr = IntAttr(call, "batch_dims", 0);
  if (!batch_attr.ok()) return batch_attr.status();
  const size_t batch = static_cast<size_t>(*batch_attr);
  const size_t q = idx->shape.size();
  const int64_t m = *AsConstInt(idx->shape.back());
  b.Compute("T_gather_nd", out[0], [&](const Indices& i) {
    // i = [batch..., rest of indices' leading axes..., trailing axes of x...]
    Indices src(i.begin(), i.begin() + static_cast<long>(batch));
    Indices at(i.begin(), i.begin() + static_cast<long>(q - 1));
    for (int64_t k = 0; k < m; ++k) {
      at.push_back(Int64(k));
      src.push_back(GatherIndex(Load(idx, at), x->shape[batch + static_cast<size_t>(k)]));
      at.pop_back();
    }
    src.insert(src.end(), i.begin() + static_cast<long>(q - 1), i.end());
    return GuardedLoad(x, src, Bool(true), MakeConst(x->dtype, 0));
  });
  return absl::OkStatus();
}

// ---- scatter_elements(data, indices, updates, axis, reduction) and
//      scatter_nd(data, indices, updates, reduction): TVM's ops, ONNX's semantics ----
// Written as gathers, so that every output element is computed once by one reduction: the
// updates aimed at an element are combined over the positions r of indices that name it.
// reduction "update" keeps the last one (the highest r), as ONNX's reference does; "add", "mul",
// "max" and "min" fold them into the data's element.

absl::StatusOr<Combiner> ScatterCombiner(const CallNode& call, bool* last_wins) {
  absl::StatusOr<std::string> r = StringAttr(call, "reduction", "update");
  if (!r.ok()) return r.status();
  *last_wins = *r == "update";
  if (*r == "update" || *r == "max") return Combiner::kMax;
  if (*r == "add") return Combiner::kSum;
  if (*r == "mul") return Combiner::kProd;
  if (*r == "min") return Combiner::kMin;
  return OpError(
      call, absl::StrCat("reduction \"", *r, "\" is not one of update, add, mul, max and min"));
}

absl::StatusOr<StructInfo> InferScatter(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<GatherOperands> g = ReadGatherOperands(call);
  if (!g.ok()) return g.status();
  absl::StatusOr<std::vector<PrimExpr>> updates = KnownDims(call, 2);
  if (!updates.ok()) return updates.status();
  DataType update_type = call.args[2]->struct_info().as<TensorStructInfoNode>()->dtype;
  if (update_type != g->dtype) {
    return OpError(call, absl::StrCat("updates have dtype ", update_type.ToString(), ", the data ",
                                      g->dtype.ToString()));
  }
  bool last_wins;
  if (absl::StatusOr<Combiner> c = ScatterCombiner(call, &last_wins); !c.ok()) return c.status();
  size_t r = g->data.size(), q = g->indices.size();
  if (OpName(call) == "relax.scatter_elements") {
    absl::StatusOr<int64_t> axis = IntAttr(call, "axis", 0);
    if (!axis.ok()) return axis.status();
    if (absl::StatusOr<int> a = NormalizeAxis(call, *axis, static_cast<int>(r)); !a.ok())
      return a.status();
    if (q != r || updates->size() != r) {
      return OpError(call, absl::StrCat("data, indices and updates have ranks ", r, ", ", q,
                                        " and ", updates->size(), "; they must be equal"));
    }
  } else {
    const int64_t* k = q == 0 ? nullptr : AsConstInt(g->indices.back());
    if (k == nullptr || *k < 1 || static_cast<size_t>(*k) > r)
      return OpError(call,
                     "the last axis of indices must have a known length from 1 to the "
                     "data's rank");
    if (updates->size() != q - 1 + r - static_cast<size_t>(*k)) {
      return OpError(call, absl::StrCat("updates have rank ", updates->size(), ", expected ",
                                        q - 1 + r - static_cast<size_t>(*k)));
    }
  }
  return call.args[0]->struct_info();
}

// `matches(p, r)` says whether position r of indices (and updates, read at `update_at(p, r)`)
// aims at output element p; `reduce_extents` spans r.
absl::Status LegalizeScatterAsGather(
    const CallNode& call, const Buffer& data, const Buffer& updates, const Buffer& out,
    const std::vector<PrimExpr>& reduce_extents,
    const std::function<PrimExpr(const Indices&, const Indices&)>& matches,
    const std::function<Indices(const Indices&, const Indices&)>& update_at,
    tir::ComputeBuilder& b) {
  bool last_wins;
  absl::StatusOr<Combiner> combiner = ScatterCombiner(call, &last_wins);
  if (!combiner.ok()) return combiner.status();
  const DataType i64 = DataType::Int(64);
  if (last_wins) {
    // The highest position aimed at each element, or -1: then that update, else the data.
    Buffer last = b.Temp("scatter_last", i64, out->shape);
    b.Reduce("scatter_last", last, reduce_extents, Combiner::kMax,
             [&](const Indices& p, const Indices& r) {
               PrimExpr flat = Int64(0);
               for (size_t k = 0; k < r.size(); ++k)
                 flat = flat * Cast(i64, reduce_extents[k]) + Cast(i64, r[k]);
               return Select(matches(p, r), flat, Int64(-1));
             });
    b.Compute("T_scatter", out, [&](const Indices& p) {
      PrimExpr flat = Load(last, p);
      Indices r(reduce_extents.size());
      PrimExpr rest = Select(flat < Int64(0), Int64(0), flat);
      for (size_t k = reduce_extents.size(); k-- > 0;) {
        r[k] = FloorMod(rest, Cast(i64, reduce_extents[k]));
        rest = FloorDiv(rest, Cast(i64, reduce_extents[k]));
      }
      return Select(flat < Int64(0), Load(data, p), Load(updates, update_at(p, r)));
    });
    return absl::OkStatus();
  }
  Buffer folded = b.Temp("scatter_folded", out->dtype, out->shape);
  PrimExpr identity = tir::ReduceIdentity(*combiner, out->dtype);
  b.Reduce("scatter_folded", folded, reduce_extents, *combiner,
           [&](const Indices& p, const Indices& r) {
             return Select(matches(p, r), Load(updates, update_at(p, r)), identity);
           });
  b.Compute("T_scatter", out, [&](const Indices& p) {
    PrimExpr x = Load(data, p), u = Load(folded, p);
    switch (*combiner) {
      case Combiner::kSum:
        return x + u;
      case Combiner::kProd:
        return x * u;
      case Combiner::kMax:
        return Max(x, u);
      case Combiner::kMin:
        return Min(x, u);
    }
    return x;
  });
  return absl::OkStatus();
}

absl::Status LegalizeScatterElements(const CallNode& call, const std::vector<Buffer>& in,
                                     const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer &data = in[0], &idx = in[1], &updates = in[2];
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int> axis = NormalizeAxis(call, *axis_attr, static_cast<int>(data->shape.size()));
  if (!axis.ok()) return axis.status();
  const size_t a = static_cast<size_t>(*axis);
  // Indices may be smaller than the data on every axis: only elements inside their extent on the
  // other axes can be aimed at.
  auto update_at = [&](const Indices& p, const Indices& r) {
    Indices at = p;
    at[a] = r[0];
    return at;
  };
  auto matches = [&](const Indices& p, const Indices& r) {
    PrimExpr inside = Bool(true);
    for (size_t k = 0; k < p.size(); ++k) {
      if (k != a) inside = Binary(NodeKind::kAnd, inside, p[k] < idx->shape[k]);
    }
    PrimExpr target = GuardedLoad(idx, update_at(p, r), inside, MakeConst(idx->dtype, 0));
    return Binary(
        NodeKind::kAnd, inside,
        Binary(NodeKind::kEQ, GatherIndex(target, data->shape[a]), Cast(DataType::Int(64), p[a])));
  };
  auto guarded_update_at = [&](const Indices& p, const Indices& r) {
    Indices at = update_at(p, r);
    for (size_t k = 0; k < at.size(); ++k) {
      if (k != a) at[k] = Min(at[k], idx->shape[k] - MakeConst(idx->shape[k]->dtype, 1));
    }
    return at;
  };
  return LegalizeScatterAsGather(call, data, updates, out[0], {idx->shape[a]}, matches,
                                 guarded_update_at, b);
}

absl::Status LegalizeScatterND(const CallNode& call, const std::vector<Buffer>& in,
                               const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer &data = in[0], &idx = in[1], &updates = in[2];
  const size_t k = static_cast<size_t>(*AsConstInt(idx->shape.back()));
  std::vector<PrimExpr> positions(idx->shape.begin(), idx->shape.end() - 1);
  auto matches = [&](const Indices& p, const Indices& r) {
    PrimExpr all = Bool(true);
    Indices at = r;
    for (size_t j = 0; j < k; ++j) {
      at.push_back(Int64(static_cast<int64_t>(j)));
      all = Binary(NodeKind::kAnd, all,
                   Binary(NodeKind::kEQ, GatherIndex(Load(idx, at), data->shape[j]),
                          Cast(DataType::Int(64), p[j])));
      at.pop_back();
    }
    return all;
  };
  auto update_at = [&](const Indices& p, const Indices& r) {
    Indices at = r;
    at.insert(at.end(), p.begin() + static_cast<long>(k), p.end());
    return at;
  };
  return LegalizeScatterAsGather(call, data, updates, out[0], positions, matches, update_at, b);
}

// ---- broadcast_to(x, shape) ----

absl::StatusOr<StructInfo> InferBroadcastTo(const CallNode& call, const OpInferContext& ctx) {
  absl::StatusOr<std::vector<PrimExpr>> dims = KnownDims(call, 0);
  if (!dims.ok()) return dims.status();
  const std::vector<PrimExpr>* shape = ShapeArg(call, 1);
  if (shape == nullptr) return OpError(call, "argument 1 must be a shape with known values");
  if (shape->size() < dims->size())
    return OpError(call, "the target shape has fewer dimensions than the tensor");
  for (size_t k = 0; k < dims->size(); ++k) {
    const PrimExpr& from = (*dims)[k];
    const PrimExpr& to = (*shape)[shape->size() - dims->size() + k];
    const int64_t* c = AsConstInt(from);
    if ((c == nullptr || *c != 1) && ctx.analyzer->CanProve(Binary(NodeKind::kNE, from, to))) {
      return OpError(call, absl::StrCat("cannot broadcast dimension ", k, " (", DebugPrint(from),
                                        ") to ", DebugPrint(to)));
    }
  }
  return TensorSInfo(*shape, call.args[0]->struct_info().as<TensorStructInfoNode>()->dtype);
}

absl::Status LegalizeBroadcastTo(const CallNode&, const std::vector<Buffer>& in,
                                 const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  return Copy(
      b, "T_broadcast_to", out[0],
      [&](const Indices& i) { return BroadcastIndex(in[0], out[0], i); }, in[0]);
}

// ---- nn.pad(x, pad_width=[before0, after0, ...], pad_value=0) ----

absl::StatusOr<std::vector<int64_t>> PadWidth(const CallNode& call, size_t ndim) {
  absl::StatusOr<std::optional<std::vector<int64_t>>> w = IntListAttr(call, "pad_width");
  if (!w.ok()) return w.status();
  if (!w->has_value() || (*w)->size() != 2 * ndim)
    return OpError(call,
                   absl::StrCat("needs pad_width with 2 values per dimension (", 2 * ndim, ")"));
  for (int64_t v : **w) {
    if (v < 0) return OpError(call, "pad_width must be >= 0");
  }
  return **w;
}

absl::StatusOr<StructInfo> InferPad(const CallNode& call, const OpInferContext& ctx) {
  absl::StatusOr<std::vector<PrimExpr>> dims = KnownDims(call, 0);
  if (!dims.ok()) return dims.status();
  absl::StatusOr<std::vector<int64_t>> w = PadWidth(call, dims->size());
  if (!w.ok()) return w.status();
  std::vector<PrimExpr> out;
  for (size_t k = 0; k < dims->size(); ++k)
    out.push_back(ctx.analyzer->Simplify((*dims)[k] + ((*w)[2 * k] + (*w)[2 * k + 1])));
  return TensorSInfo(std::move(out), call.args[0]->struct_info().as<TensorStructInfoNode>()->dtype);
}

absl::Status LegalizePad(const CallNode& call, const std::vector<Buffer>& in,
                         const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer& x = in[0];
  absl::StatusOr<std::vector<int64_t>> w = PadWidth(call, x->shape.size());
  if (!w.ok()) return w.status();
  absl::StatusOr<double> fill = FloatAttr(call, "pad_value", 0);
  if (!fill.ok()) return fill.status();
  absl::StatusOr<std::string> mode = StringAttr(call, "pad_mode", "constant");
  if (!mode.ok()) return mode.status();
  if (*mode == "reflect" || *mode == "edge") {
    // The source index folds back into [0, n): mirrored without repeating the border
    // (reflect), or clamped to it (edge).
    bool reflect = *mode == "reflect";
    for (size_t k = 0; k < x->shape.size(); ++k) {
      const int64_t* n = AsConstInt(x->shape[k]);
      if (reflect && ((*w)[2 * k] > 0 || (*w)[2 * k + 1] > 0) &&
          (n == nullptr || (*w)[2 * k] >= *n || (*w)[2 * k + 1] >= *n))
        return OpError(call, "reflect padding must be smaller than a static extent");
    }
    return Copy(
        b, "T_pad", out[0],
        [&](const Indices& i) {
          Indices src;
          for (size_t k = 0; k < i.size(); ++k) {
            PrimExpr s = i[k] - (*w)[2 * k];
            PrimExpr zero = IntImm(s->dtype, 0), last = x->shape[k] - 1;
            if (reflect) {
              s = Select(s < zero, zero - s, s);
              s = Select(last < s, last - (s - last), s);
            }
            src.push_back(Min(Max(s, zero), last));
          }
          return src;
        },
        x);
  }
  if (*mode != "constant")
    return OpError(call, absl::StrCat("pad_mode \"", *mode, "\" (constant, reflect, edge)"));
  b.Compute("T_pad", out[0], [&](const Indices& i) {
    Indices src;
    PrimExpr inside = Bool(true);
    for (size_t k = 0; k < i.size(); ++k) {
      PrimExpr s = i[k] - (*w)[2 * k];
      src.push_back(s);
      inside = Binary(NodeKind::kAnd, inside,
                      Binary(NodeKind::kAnd, IntImm(s->dtype, 0) <= s, s < x->shape[k]));
    }
    return GuardedLoad(x, src, inside, MakeConst(x->dtype, *fill));
  });
  return absl::OkStatus();
}

// ---- tile(x, repeats=[...]): x repeated along each axis (NumPy tile, len(repeats) == ndim) ----

absl::StatusOr<std::vector<int64_t>> TileRepeats(const CallNode& call, size_t ndim) {
  absl::StatusOr<std::optional<std::vector<int64_t>>> r = IntListAttr(call, "repeats");
  if (!r.ok()) return r.status();
  if (!r->has_value() || (*r)->size() != ndim)
    return OpError(call, absl::StrCat("needs repeats with one value per dimension (", ndim, ")"));
  for (int64_t v : **r) {
    if (v < 0) return OpError(call, "repeats must be >= 0");
  }
  return **r;
}

absl::StatusOr<StructInfo> InferTile(const CallNode& call, const OpInferContext& ctx) {
  absl::StatusOr<std::vector<PrimExpr>> dims = KnownDims(call, 0);
  if (!dims.ok()) return dims.status();
  absl::StatusOr<std::vector<int64_t>> r = TileRepeats(call, dims->size());
  if (!r.ok()) return r.status();
  std::vector<PrimExpr> out;
  for (size_t k = 0; k < dims->size(); ++k)
    out.push_back(ctx.analyzer->Simplify((*dims)[k] * (*r)[k]));
  return TensorSInfo(std::move(out), call.args[0]->struct_info().as<TensorStructInfoNode>()->dtype);
}

absl::Status LegalizeTile(const CallNode&, const std::vector<Buffer>& in,
                          const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  return Copy(
      b, "T_tile", out[0],
      [&](const Indices& i) {
        Indices src;
        for (size_t k = 0; k < i.size(); ++k) src.push_back(FloorMod(i[k], in[0]->shape[k]));
        return src;
      },
      in[0]);
}

// ---- zeros(shape, dtype) / ones(shape, dtype) / full(shape, fill_value, dtype) ----

absl::StatusOr<StructInfo> InferFill(const CallNode& call, const OpInferContext&) {
  bool full = OpName(call) == "relax.full";
  if (call.args.size() != (full ? 2u : 1u))
    return OpError(call, full ? "takes (shape, fill_value)" : "takes (shape)");
  const std::vector<PrimExpr>* shape = ShapeArg(call, 0);
  if (shape == nullptr) return OpError(call, "argument 0 must be a shape with known values");
  absl::StatusOr<std::string> name = StringAttr(call, "dtype", "");
  if (!name.ok()) return name.status();
  DataType dtype = DataType::Float(32);
  if (full) {
    absl::StatusOr<const TensorStructInfoNode*> v = TensorArg(call, 1);
    if (!v.ok()) return v.status();
    if ((*v)->ndim > 0) return OpError(call, "fill_value must be a scalar tensor");
    if (!(*v)->dtype.is_void()) dtype = (*v)->dtype;
  }
  if (!name->empty()) {
    absl::StatusOr<DataType> parsed = DataType::Parse(*name);
    if (!parsed.ok() || parsed->is_void())
      return OpError(call, absl::StrCat("bad dtype \"", *name, "\""));
    dtype = *parsed;
  }
  return TensorSInfo(*shape, dtype);
}

// zeros_like(x) / ones_like(x) / full_like(x, fill_value), dtype="..." ("void" or absent: x's).
absl::StatusOr<StructInfo> InferFillLike(const CallNode& call, const OpInferContext&) {
  bool full = OpName(call) == "relax.full_like";
  if (call.args.size() != (full ? 2u : 1u))
    return OpError(call, full ? "takes (x, fill_value)" : "takes (x)");
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  if (full) {
    absl::StatusOr<const TensorStructInfoNode*> v = TensorArg(call, 1);
    if (!v.ok()) return v.status();
    if ((*v)->ndim > 0) return OpError(call, "fill_value must be a scalar tensor");
  }
  absl::StatusOr<std::string> name = StringAttr(call, "dtype", "");
  if (!name.ok()) return name.status();
  DataType dtype = (*x)->dtype;
  if (!name->empty()) {
    absl::StatusOr<DataType> parsed = DataType::Parse(*name);
    if (!parsed.ok()) return OpError(call, absl::StrCat("bad dtype \"", *name, "\""));
    if (!parsed->is_void()) dtype = *parsed;
  }
  if (const std::vector<PrimExpr>* dims = (*x)->dims()) return TensorSInfo(*dims, dtype);
  return TensorSInfoUnknown(dtype, (*x)->ndim);
}

absl::Status LegalizeFill(const CallNode& call, const std::vector<Buffer>& in,
                          const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const std::string& name = OpName(call);
  DataType t = out[0]->dtype;
  b.Compute("T_full", out[0], [&](const Indices&) {
    if (name == "relax.full") return Cast(t, Load(in[0], {}));
    if (name == "relax.full_like") return Cast(t, Load(in[1], {}));
    bool one = name == "relax.ones" || name == "relax.ones_like";
    return MakeConst(t, one ? 1 : 0);
  });
  return absl::OkStatus();
}

}  // namespace

void RegisterManipulateOps(std::vector<OpInfo>* ops) {
  ops->push_back({"relax.expand_dims", 1, InferExpandDims, true, OpPattern::kInjective,
                  "inserts unit axes at axis=[...]", LegalizeExpandSqueeze});
  ops->push_back({"relax.squeeze", 1, InferSqueeze, true, OpPattern::kInjective,
                  "drops unit axes (axis=[...] or all)", LegalizeExpandSqueeze});
  ops->push_back({"relax.concat", 1, InferConcat, true, OpPattern::kInjective,
                  "joins a tuple of tensors along axis", LegalizeConcat});
  ops->push_back({"relax.split", 1, InferSplit, true, OpPattern::kInjective,
                  "splits along axis at indices_or_sections (a count or a list of indices)",
                  LegalizeSplit});
  ops->push_back({"relax.strided_slice", 1, InferStridedSlice, true, OpPattern::kInjective,
                  "slices axes=[...] from begin to end by strides (NumPy bounds)",
                  LegalizeStridedSlice});
  ops->push_back({"relax.take", 2, InferTake, true, OpPattern::kInjective,
                  "gathers along axis by integer indices", LegalizeTake});
  ops->push_back({"relax.gather_elements", 2, InferGatherElements, true, OpPattern::kInjective,
                  "gathers x along axis at an index per output element (ONNX GatherElements)",
                  LegalizeGatherElements});
  ops->push_back({"relax.gather_nd", 2, InferGatherND, true, OpPattern::kInjective,
                  "gathers slices of x at coordinate tuples in indices' last axis (batch_dims)",
                  LegalizeGatherND});
  ops->push_back({"relax.scatter_elements", 3, InferScatter, true, OpPattern::kOpaque,
                  "writes updates into a copy of data along axis at per-element indices "
                  "(reduction update, add, mul, max or min; ONNX ScatterElements)",
                  LegalizeScatterElements});
  ops->push_back({"relax.scatter_nd", 3, InferScatter, true, OpPattern::kOpaque,
                  "writes update slices into a copy of data at coordinate tuples in indices' "
                  "last axis (reduction as scatter_elements; ONNX ScatterND)",
                  LegalizeScatterND});
  ops->push_back({"relax.broadcast_to", 2, InferBroadcastTo, true, OpPattern::kBroadcast,
                  "broadcasts a tensor to a shape", LegalizeBroadcastTo});
  ops->push_back({"relax.nn.pad", 1, InferPad, true, OpPattern::kInjective,
                  "pads by pad_width=[before, after, ...]; pad_mode constant (pad_value), "
                  "reflect or edge",
                  LegalizePad});
  ops->push_back({"relax.tile", 1, InferTile, true, OpPattern::kInjective,
                  "repeats a tensor along each axis (repeats=[...])", LegalizeTile});
  for (const char* name : {"relax.zeros", "relax.ones"}) {
    ops->push_back({name, 1, InferFill, true, OpPattern::kElemWise,
                    "a tensor of shape filled with 0 or 1 (dtype=...)", LegalizeFill});
  }
  ops->push_back({"relax.full", 2, InferFill, true, OpPattern::kElemWise,
                  "a tensor of shape filled with a scalar tensor's value", LegalizeFill});
  for (const char* name : {"relax.zeros_like", "relax.ones_like"}) {
    ops->push_back({name, 1, InferFillLike, true, OpPattern::kElemWise,
                    "a tensor of x's shape filled with 0 or 1 (dtype=..., else x's)",
                    LegalizeFill});
  }
  ops->push_back({"relax.full_like", 2, InferFillLike, true, OpPattern::kElemWise,
                  "a tensor of x's shape filled with a scalar tensor's value", LegalizeFill});
}

}  // namespace kiln::ir::relax::ops
