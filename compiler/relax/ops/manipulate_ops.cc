// Layout and creation operators: expand_dims, squeeze, concat, split, strided_slice,
// broadcast_to, nn.pad, tile, zeros, ones and full. The index operators (take, gathers,
// scatters) are in index_ops.cc.
#include <functional>

#include "absl/strings/str_cat.h"
#include "compiler/arith/analyzer.h"
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
  PrimExpr begin;
  int64_t stride;
  PrimExpr length;
};

// An `end` this large means "to the end" (ONNX exporters write INT64_MAX).
constexpr int64_t kToTheEnd = int64_t{1} << 62;

// Slices along `axes` with NumPy semantics for negative and out-of-range bounds. A constant
// extent gives constant bounds; a symbolic one (Swin's padded windows, a decoder's sequence)
// gives bounds clamped by min and max, simplified knowing the extent is not negative.
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
  arith::Analyzer ana;
  for (size_t k = 0; k < n; ++k) {
    absl::StatusOr<int> axis = NormalizeAxis(call, (**axes)[k], static_cast<int>(dims.size()));
    if (!axis.ok()) return axis.status();
    int64_t stride = strides->has_value() ? (**strides)[k] : 1;
    if (stride == 0) return OpError(call, "strides must not be 0");
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); };
    int64_t b0 = (**begin)[k], e0 = (**end)[k];
    const int64_t* extent = AsConstInt(dims[*axis]);
    if (extent != nullptr) {
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
      slices.push_back({*axis, Int64(first), stride, Int64(length)});
      continue;
    }
    // A symbolic extent d: a bound v < 0 counts from the end (v + d), and each is clamped to
    // [0, d] going forward, [-1, d - 1] going backward.
    const PrimExpr d = dims[*axis];
    auto bound = [&](int64_t v, int64_t lo_offset, const PrimExpr& hi) -> PrimExpr {
      if (v >= kToTheEnd) return hi;
      if (v <= -kToTheEnd) return Int64(lo_offset);
      PrimExpr at = v < 0 ? d + Int64(v) : Int64(v);
      return ir::Min(ir::Max(at, Int64(lo_offset)), hi);
    };
    PrimExpr first, length;
    if (stride > 0) {
      first = ana.Simplify(bound(b0, 0, d));
      PrimExpr last = ana.Simplify(bound(e0, 0, d));
      length = ana.Simplify(
          ir::FloorDiv(ir::Max(last - first, Int64(0)) + Int64(stride - 1), Int64(stride)));
    } else {
      const PrimExpr top = d - Int64(1);
      first = ana.Simplify(b0 >= kToTheEnd ? top : bound(b0, -1, top));
      PrimExpr last = ana.Simplify(e0 <= -kToTheEnd ? Int64(-1) : bound(e0, -1, top));
      length = ana.Simplify(
          ir::FloorDiv(ir::Max(first - last, Int64(0)) + Int64(-stride - 1), Int64(-stride)));
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
  for (const Slice& s : *slices) out[s.axis] = s.length;
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
        for (const Slice& s : *slices) {
          const int64_t* c = AsConstInt(s.begin);
          src[s.axis] = c != nullptr ? i[s.axis] * s.stride + *c : i[s.axis] * s.stride + s.begin;
        }
        return src;
      },
      in[0]);
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
  for (size_t k = 0; k < dims->size(); ++k) {
    // Widths past 2^63 in all wrapped to a negative dimension (issue 52): refused instead.
    int64_t widths = 0, padded = 0;
    const int64_t* n = AsConstInt((*dims)[k]);
    if (__builtin_add_overflow((*w)[2 * k], (*w)[2 * k + 1], &widths) ||
        (n != nullptr && __builtin_add_overflow(*n, widths, &padded))) {
      return OpError(call, absl::StrCat("pad_width of axis ", k, " (", (*w)[2 * k], ", ",
                                        (*w)[2 * k + 1], ") makes it larger than 2^63"));
    }
    out.push_back(ctx.analyzer->Simplify((*dims)[k] + widths));
  }
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
