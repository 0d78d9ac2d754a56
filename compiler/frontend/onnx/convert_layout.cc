// Layout operators: Reshape, Flatten, Transpose, Concat, Split, Unsqueeze, Squeeze, Expand,
// Tile, Pad (the selections are convert_select.cc's). Where the input's elements are known at
// import time (shape tensors), Concat, Unsqueeze, Squeeze and Reshape compute their result here; a
// shape only the run knows is computed by tensor arithmetic and bound to shape variables
// (Context::DimsAtRunTime).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/frontend/onnx/convert_context.h"
#include "compiler/frontend/onnx/shape_math.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend::onnx_import {
namespace {

using ir::IntImm;
using ir::relax::MakeShape;

// Unsqueeze and Squeeze by axes computed at run time: the result's rank is known (the axes'
// count is), its dimensions computed by tensor arithmetic, and the data only reshaped. The axes
// are checked at run time to be distinct and in range, and a squeezed dimension to be 1.
absl::StatusOr<Outputs> UnsqueezeOrSqueezeAtRunTime(Context& ctx, bool squeeze) {
  ShapeMath m{ctx};
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.Shape(x));
  KILN_ASSIGN_OR_RETURN(Expr axes, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(int64_t k, m.Length(axes, "axes"));
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t out_rank = squeeze ? rank - k : rank + k;
  if (out_rank < 1) return ctx.Unsupported("a result of rank 0 from axes known only at run time");
  KILN_ASSIGN_OR_RETURN(Expr in_dims, m.Tensor(dims));
  Expr bad_axes;
  // Squeeze: positions of the input that go; Unsqueeze: positions of the result that are new.
  KILN_ASSIGN_OR_RETURN(Expr named, m.Named(axes, k, squeeze ? rank : out_rank, &bad_axes));
  KILN_ASSIGN_OR_RETURN(Expr kept, m.Call("relax.subtract", {m.I(1), named}));
  KILN_ASSIGN_OR_RETURN(Expr is_kept, m.Call("relax.equal", {named, m.I(0)}));
  // Where each kept dimension goes (squeeze), or comes from (unsqueeze): its rank among the kept.
  KILN_ASSIGN_OR_RETURN(Expr order, m.Call("relax.cumsum", {kept}, {{"axis", IntAttr(0)}}));
  KILN_ASSIGN_OR_RETURN(order, m.Call("relax.subtract", {order, m.I(1)}));
  std::vector<Expr> checks = {bad_axes};
  Expr out;
  if (squeeze) {
    KILN_ASSIGN_OR_RETURN(Expr to, m.Call("relax.where", {is_kept, order, m.I(-1)}));
    KILN_ASSIGN_OR_RETURN(out, m.Scatter(in_dims, to, rank, out_rank));
    KILN_ASSIGN_OR_RETURN(Expr not_one, m.Call("relax.not_equal", {in_dims, m.I(1)}));
    KILN_ASSIGN_OR_RETURN(not_one, m.Int64(not_one));
    KILN_ASSIGN_OR_RETURN(Expr wrong, m.Call("relax.multiply", {not_one, named}));
    KILN_ASSIGN_OR_RETURN(Expr wrongs, m.Reduce("relax.sum", wrong));
    checks.push_back(wrongs);
  } else {
    // The input's dimension j goes to the position whose rank among the kept is j.
    KILN_ASSIGN_OR_RETURN(Expr from, m.Call("relax.where", {is_kept, order, m.I(-1)}));
    KILN_ASSIGN_OR_RETURN(Expr ids, ctx.Iota(rank, {1, rank}));
    KILN_ASSIGN_OR_RETURN(Expr column, m.Column(from, out_rank));
    KILN_ASSIGN_OR_RETURN(Expr at, m.Call("relax.equal", {column, ids}));
    KILN_ASSIGN_OR_RETURN(at, m.Int64(at));
    KILN_ASSIGN_OR_RETURN(Expr row,
                          m.Call("relax.reshape", {in_dims, MakeShape({I64(1), I64(rank)})}));
    KILN_ASSIGN_OR_RETURN(Expr picked, m.Call("relax.multiply", {at, row}));
    KILN_ASSIGN_OR_RETURN(picked, m.Call("relax.sum", {picked}, {{"axis", IntsAttr({1})}}));
    KILN_ASSIGN_OR_RETURN(out, m.Call("relax.where", {is_kept, picked, m.I(1)}));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> to, ctx.DimsAtRunTime(out, checks));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.reshape", {x, MakeShape(to)}));
  return One(y);
}

// ---- Layout ----

// The target shape of Reshape: 0 copies the input dimension (unless allowzero), -1 is inferred.
absl::StatusOr<std::vector<PrimExpr>> ReshapeTarget(Context& ctx, const std::vector<PrimExpr>& from,
                                                    const std::vector<PrimExpr>& spec) {
  bool allowzero = ctx.Int("allowzero", 0) != 0;
  std::vector<PrimExpr> to;
  int infer = -1;
  PrimExpr known = I64(1);
  for (size_t k = 0; k < spec.size(); ++k) {
    const int64_t* c = ir::AsConstInt(spec[k]);
    if (c != nullptr && *c == -1) {
      if (infer >= 0) return ctx.Error("the shape has more than one -1");
      infer = static_cast<int>(k);
      to.push_back(nullptr);
      continue;
    }
    PrimExpr d = spec[k];
    if (c != nullptr && *c == 0 && !allowzero) {
      if (k >= from.size())
        return ctx.Error(absl::StrCat("shape[", k, "] = 0 copies no dimension"));
      d = from[k];
    } else if (c != nullptr && *c < 0) {
      return ctx.Error(absl::StrCat("bad dimension ", *c, " in the shape"));
    }
    to.push_back(d);
    known = known * d;
  }
  if (infer >= 0) {
    known = ctx.analyzer()->Simplify(known);
    if (const int64_t* k = ir::AsConstInt(known); k != nullptr && *k == 0)
      return ctx.Error("cannot infer a -1 dimension next to a 0");
    PrimExpr total = I64(1);
    for (const PrimExpr& d : from) total = total * d;
    to[infer] = ctx.analyzer()->Simplify(ir::FloorDiv(total, known));
  }
  for (PrimExpr& d : to) d = ctx.analyzer()->Simplify(d);
  return to;
}

// Reshape to a shape computed at run time: its 0s (copy the input's dimension, unless
// allowzero) and -1 (inferred) resolved by tensor arithmetic, then its values bound as shape
// variables, checked at run time to keep the element count and to be non-negative.
absl::StatusOr<Outputs> ReshapeAtRunTime(Context& ctx) {
  ShapeMath m{ctx};
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> from, ctx.Shape(x));
  KILN_ASSIGN_OR_RETURN(Expr spec, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(int64_t n, m.Length(spec, "a shape"));
  KILN_ASSIGN_OR_RETURN(Expr d, m.Int64(spec));
  if (ctx.Int("allowzero", 0) == 0) {
    std::vector<PrimExpr> copied;
    for (int64_t k = 0; k < n; ++k)
      copied.push_back(k < static_cast<int64_t>(from.size()) ? from[k] : I64(0));
    KILN_ASSIGN_OR_RETURN(Expr from_t, m.Tensor(copied));
    KILN_ASSIGN_OR_RETURN(Expr zero, m.Call("relax.equal", {d, m.I(0)}));
    KILN_ASSIGN_OR_RETURN(d, m.Call("relax.where", {zero, from_t, d}));
  }
  PrimExpr total = I64(1);
  for (const PrimExpr& f : from) total = total * f;
  KILN_ASSIGN_OR_RETURN(Expr total_t, m.Tensor({ctx.analyzer()->Simplify(total)}));
  KILN_ASSIGN_OR_RETURN(Expr infer, m.Call("relax.equal", {d, m.I(-1)}));
  KILN_ASSIGN_OR_RETURN(Expr others, m.Call("relax.where", {infer, m.I(1), d}));
  KILN_ASSIGN_OR_RETURN(Expr known, m.Reduce("relax.prod", others));
  KILN_ASSIGN_OR_RETURN(known, m.Call("relax.maximum", {known, m.I(1)}));
  KILN_ASSIGN_OR_RETURN(Expr inferred, m.Call("relax.floor_divide", {total_t, known}));
  KILN_ASSIGN_OR_RETURN(d, m.Call("relax.where", {infer, inferred, d}));
  // What must be 0: the element count's change, and the number of negative dimensions.
  KILN_ASSIGN_OR_RETURN(Expr count, m.Reduce("relax.prod", d));
  KILN_ASSIGN_OR_RETURN(Expr count_change, m.Call("relax.subtract", {count, total_t}));
  KILN_ASSIGN_OR_RETURN(Expr negatives, m.Negatives(d));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> to, ctx.DimsAtRunTime(d, {count_change, negatives}));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.reshape", {x, MakeShape(to)}));
  return One(y);
}

absl::StatusOr<Outputs> Reshape(Context& ctx) {
  std::optional<std::vector<PrimExpr>> spec = ctx.Elems(1);
  if (!spec) return ReshapeAtRunTime(ctx);
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> from, InputShape(ctx, 0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> to, ReshapeTarget(ctx, from, *spec));
  if (std::optional<std::vector<PrimExpr>> e = ctx.Elems(0)) {
    std::vector<int64_t> shape;
    for (const PrimExpr& d : to) {
      const int64_t* c = ir::AsConstInt(d);
      if (c == nullptr) break;
      shape.push_back(*c);
    }
    if (shape.size() == to.size() && NumElements(shape) == static_cast<int64_t>(e->size()))
      return Outputs{KnownInts(std::move(*e), shape, ctx.In(0).elems_dtype)};
  }
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.reshape", {x, MakeShape(to)}));
  return One(y);
}

absl::StatusOr<Outputs> Flatten(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.Shape(x));
  int64_t rank = static_cast<int64_t>(dims.size());
  int64_t axis = ctx.Int("axis", 1);
  if (axis < -rank || axis > rank)
    return ctx.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  if (axis < 0) axis += rank;
  PrimExpr outer = I64(1), inner = I64(1);
  for (int64_t k = 0; k < rank; ++k) {
    if (k < axis) {
      outer = outer * dims[k];
    } else {
      inner = inner * dims[k];
    }
  }
  KILN_ASSIGN_OR_RETURN(
      Expr y,
      ctx.Call("relax.reshape",
               {x, MakeShape({ctx.analyzer()->Simplify(outer), ctx.analyzer()->Simplify(inner)})}));
  return One(y);
}

absl::StatusOr<Outputs> Transpose(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  ir::Attrs attrs;
  if (std::optional<std::vector<int64_t>> perm = ctx.Ints("perm"))
    attrs.push_back({"axes", IntsAttr(*perm)});
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.permute_dims", {x}, attrs));
  return One(y);
}

absl::StatusOr<Outputs> Concat(Context& ctx) {
  if (ctx.num_inputs() == 0) return ctx.Error("needs at least one input");
  if (!ctx.HasAttr("axis")) return ctx.Error("axis is required");
  int64_t axis = ctx.Int("axis", 0);
  // Shape vectors concatenate at import time.
  std::vector<PrimExpr> joined;
  bool known = axis == 0 || axis == -1;
  for (size_t i = 0; i < ctx.num_inputs() && known; ++i) {
    std::optional<std::vector<PrimExpr>> e = ctx.Elems(i);
    known = e && ctx.In(i).elems_shape.size() == 1;
    if (known) joined.insert(joined.end(), e->begin(), e->end());
  }
  if (known) {
    int64_t n = static_cast<int64_t>(joined.size());
    return Outputs{KnownInts(std::move(joined), {n}, ctx.In(0).elems_dtype)};
  }
  std::vector<Expr> parts;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(i));
    parts.push_back(x);
  }
  KILN_ASSIGN_OR_RETURN(
      Expr y, ctx.Call("relax.concat", {ir::relax::MakeTuple(parts)}, {{"axis", IntAttr(axis)}}));
  return One(y);
}

}  // namespace

absl::StatusOr<Outputs> SplitAtRunTime(Context& ctx, const Expr& x, const PrimExpr& extent,
                                       int64_t axis, int64_t parts_expected) {
  ShapeMath m{ctx};
  KILN_ASSIGN_OR_RETURN(Expr sizes, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(sizes, m.Int64(sizes));
  KILN_ASSIGN_OR_RETURN(int64_t parts, m.Length(sizes, "split sizes"));
  if (parts_expected >= 0 && parts != parts_expected)
    return ctx.Error(absl::StrCat(parts, " split sizes for ", parts_expected, " outputs"));
  KILN_ASSIGN_OR_RETURN(Expr negatives, m.Negatives(sizes));
  KILN_ASSIGN_OR_RETURN(Expr total, m.Reduce("relax.sum", sizes));
  KILN_ASSIGN_OR_RETURN(Expr extent_t, m.Tensor({extent}));
  KILN_ASSIGN_OR_RETURN(Expr leftover, m.Call("relax.subtract", {total, extent_t}));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> n, ctx.DimsAtRunTime(sizes, {negatives, leftover}));
  Outputs out;
  PrimExpr offset = I64(0);
  for (int64_t j = 0; j < parts; ++j) {
    KILN_ASSIGN_OR_RETURN(Expr index, m.Iota(n[j]));
    KILN_ASSIGN_OR_RETURN(Expr start, m.Tensor({offset}));
    KILN_ASSIGN_OR_RETURN(index, m.Call("relax.add", {index, start}));
    KILN_ASSIGN_OR_RETURN(Expr part, m.Call("relax.take", {x, index}, {{"axis", IntAttr(axis)}}));
    out.push_back(One(part)[0]);
    offset = offset + n[j];
  }
  return out;
}

namespace {

absl::StatusOr<Outputs> Split(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.Shape(x));
  KILN_ASSIGN_OR_RETURN(int64_t axis, Axis(ctx, ctx.Int("axis", 0), dims.size()));
  size_t outputs = ctx.node().output_size();
  std::vector<int64_t> sizes;
  if (ctx.Has(1) && !ctx.ConstInts(1).ok()) {
    return SplitAtRunTime(ctx, x, dims[axis], axis, static_cast<int64_t>(outputs));
  }
  if (ctx.Has(1)) {
    KILN_ASSIGN_OR_RETURN(sizes, ctx.ConstInts(1));
  } else if (std::optional<std::vector<int64_t>> s = ctx.Ints("split")) {
    sizes = *s;
  }
  ir::ObjectRef sections;
  if (sizes.empty()) {
    int64_t parts = ctx.Int("num_outputs", static_cast<int64_t>(outputs));
    if (parts < 1) return ctx.Error("Split needs at least one output");
    const int64_t* extent = ir::AsConstInt(dims[axis]);
    if (extent != nullptr && *extent % parts != 0) {
      // Opset 18: the last part is smaller.
      int64_t each = (*extent + parts - 1) / parts;
      for (int64_t k = 0; k < parts; ++k) sizes.push_back(std::min(each, *extent - k * each));
    } else {
      sections = IntAttr(parts);
    }
  }
  if (!sizes.empty()) {
    if (sizes.size() != outputs)
      return ctx.Error(absl::StrCat(sizes.size(), " split sizes for ", outputs, " outputs"));
    std::vector<int64_t> indices;
    int64_t at = 0;
    for (size_t k = 0; k + 1 < sizes.size(); ++k) indices.push_back(at += sizes[k]);
    sections = IntsAttr(indices);
  }
  KILN_ASSIGN_OR_RETURN(
      Expr parts,
      ctx.Call("relax.split", {x}, {{"indices_or_sections", sections}, {"axis", IntAttr(axis)}}));
  Outputs out;
  for (size_t k = 0; k < outputs; ++k) {
    KILN_ASSIGN_OR_RETURN(
        Expr part, ctx.Emit(ir::Make<ir::relax::TupleGetItemNode>(parts, static_cast<int>(k))));
    out.push_back(One(part)[0]);
  }
  return out;
}

// The axes of Unsqueeze/Squeeze: the second input from opset 13, an attribute before.
absl::StatusOr<std::optional<std::vector<int64_t>>> AxesOf(Context& ctx) {
  if (ctx.Has(1)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.ConstInts(1));
    return std::optional<std::vector<int64_t>>(axes);
  }
  return ctx.Ints("axes");
}

absl::StatusOr<Outputs> Unsqueeze(Context& ctx) {
  if (ctx.Has(1) && !ctx.Elems(1)) return UnsqueezeOrSqueezeAtRunTime(ctx, /*squeeze=*/false);
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, AxesOf(ctx));
  if (!axes) return ctx.Error("axes are required");
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, InputShape(ctx, 0));
  int64_t rank = static_cast<int64_t>(dims.size() + axes->size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    KILN_ASSIGN_OR_RETURN(int64_t k, Axis(ctx, a, rank));
    if (inserted[k]) return ctx.Error(absl::StrCat("axis ", a, " is repeated"));
    inserted[k] = true;
  }
  if (std::optional<std::vector<PrimExpr>> e = ctx.Elems(0)) {
    std::vector<int64_t> shape;
    size_t next = 0;
    for (int64_t k = 0; k < rank; ++k)
      shape.push_back(inserted[k] ? 1 : ctx.In(0).elems_shape[next++]);
    return Outputs{KnownInts(std::move(*e), shape, ctx.In(0).elems_dtype)};
  }
  std::vector<int64_t> sorted;
  for (int64_t k = 0; k < rank; ++k) {
    if (inserted[k]) sorted.push_back(k);
  }
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.expand_dims", {x}, {{"axis", IntsAttr(sorted)}}));
  return One(y);
}

absl::StatusOr<Outputs> Squeeze(Context& ctx) {
  if (ctx.Has(1) && !ctx.Elems(1)) return UnsqueezeOrSqueezeAtRunTime(ctx, /*squeeze=*/true);
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, AxesOf(ctx));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, InputShape(ctx, 0));
  int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<bool> dropped(rank, false);
  if (axes) {
    for (int64_t a : *axes) {
      KILN_ASSIGN_OR_RETURN(int64_t k, Axis(ctx, a, rank));
      const int64_t* c = ir::AsConstInt(dims[k]);
      if (c != nullptr && *c != 1)
        return ctx.Error(absl::StrCat("axis ", a, " has extent ", *c, ", not 1"));
      dropped[k] = true;
    }
  } else {
    for (int64_t k = 0; k < rank; ++k) {
      const int64_t* c = ir::AsConstInt(dims[k]);
      dropped[k] = c != nullptr && *c == 1;
    }
  }
  if (std::optional<std::vector<PrimExpr>> e = ctx.Elems(0)) {
    std::vector<int64_t> shape;
    for (int64_t k = 0; k < rank; ++k) {
      if (!dropped[k]) shape.push_back(ctx.In(0).elems_shape[k]);
    }
    return Outputs{KnownInts(std::move(*e), shape, ctx.In(0).elems_dtype)};
  }
  std::vector<int64_t> list;
  for (int64_t k = 0; k < rank; ++k) {
    if (dropped[k]) list.push_back(k);
  }
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.squeeze", {x}, {{"axis", IntsAttr(list)}}));
  return One(y);
}

// Expand: bidirectional broadcasting of the input against `shape`.
absl::StatusOr<Outputs> Expand(Context& ctx) {
  std::optional<std::vector<PrimExpr>> shape = ctx.Elems(1);
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.Shape(x));
  if (!shape) {
    // A shape computed at run time: the result's dimensions are max(input's, shape's) of the
    // two right-aligned (one of them is 1 where they differ), checked at run time to broadcast
    // and to be non-negative.
    ShapeMath m{ctx};
    KILN_ASSIGN_OR_RETURN(Expr given, ctx.Tensor(1));
    KILN_ASSIGN_OR_RETURN(int64_t n, m.Length(given, "a shape"));
    KILN_ASSIGN_OR_RETURN(Expr d, m.Int64(given));
    const int64_t rank = std::max<int64_t>(n, static_cast<int64_t>(dims.size()));
    std::vector<PrimExpr> input_dims(rank, I64(1)), ones(rank - n, I64(1));
    std::copy(dims.begin(), dims.end(), input_dims.end() - static_cast<int64_t>(dims.size()));
    if (!ones.empty()) {
      KILN_ASSIGN_OR_RETURN(Expr lead, m.Tensor(ones));
      KILN_ASSIGN_OR_RETURN(
          d, m.Call("relax.concat", {ir::relax::MakeTuple({lead, d})}, {{"axis", IntAttr(0)}}));
    }
    KILN_ASSIGN_OR_RETURN(Expr input_t, m.Tensor(input_dims));
    KILN_ASSIGN_OR_RETURN(d, m.Call("relax.maximum", {d, input_t}));
    KILN_ASSIGN_OR_RETURN(Expr negatives, m.Negatives(d));
    // Dimensions that do not broadcast: the input's is not 1 and differs from the result's.
    KILN_ASSIGN_OR_RETURN(Expr not_one, m.Call("relax.not_equal", {input_t, m.I(1)}));
    KILN_ASSIGN_OR_RETURN(Expr differs, m.Call("relax.not_equal", {d, input_t}));
    KILN_ASSIGN_OR_RETURN(not_one, m.Int64(not_one));
    KILN_ASSIGN_OR_RETURN(differs, m.Int64(differs));
    KILN_ASSIGN_OR_RETURN(Expr clash, m.Call("relax.multiply", {not_one, differs}));
    KILN_ASSIGN_OR_RETURN(Expr clashes, m.Reduce("relax.sum", clash));
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> out, ctx.DimsAtRunTime(d, {negatives, clashes}));
    KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.broadcast_to", {x, MakeShape(out)}));
    return One(y);
  }
  size_t rank = std::max(dims.size(), shape->size());
  std::vector<PrimExpr> out(rank);
  for (size_t k = 0; k < rank; ++k) {
    PrimExpr a = k + dims.size() >= rank ? dims[k + dims.size() - rank] : I64(1);
    PrimExpr b = k + shape->size() >= rank ? (*shape)[k + shape->size() - rank] : I64(1);
    const int64_t* ca = ir::AsConstInt(a);
    const int64_t* cb = ir::AsConstInt(b);
    if (cb != nullptr && *cb == 1) {
      out[k] = a;
    } else if (ca != nullptr && *ca == 1) {
      out[k] = b;
    } else if (ca != nullptr && cb != nullptr && *ca != *cb) {
      return ctx.Error(absl::StrCat("cannot expand dimension ", *ca, " to ", *cb));
    } else {
      out[k] = a;
    }
  }
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.broadcast_to", {x, MakeShape(out)}));
  return One(y);
}

// Tile by repeats computed at run time: x as [1, d0, 1, d1, ...] broadcast to
// [r0, d0, r1, d1, ...], then merged to [r0 * d0, r1 * d1, ...] (repeats checked >= 0).
absl::StatusOr<Outputs> TileAtRunTime(Context& ctx) {
  ShapeMath m{ctx};
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.Shape(x));
  KILN_ASSIGN_OR_RETURN(Expr given, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(Expr repeats, m.Int64(given));
  KILN_ASSIGN_OR_RETURN(Expr negatives, m.Negatives(repeats));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> r, ctx.DimsAtRunTime(repeats, {negatives}));
  if (r.size() != dims.size()) return ctx.Error("repeats must have one value per dimension");
  std::vector<PrimExpr> spread, target, merged;
  for (size_t k = 0; k < dims.size(); ++k) {
    spread.insert(spread.end(), {I64(1), dims[k]});
    target.insert(target.end(), {r[k], dims[k]});
    merged.push_back(r[k] * dims[k]);
  }
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.reshape", {x, MakeShape(spread)}));
  KILN_ASSIGN_OR_RETURN(y, ctx.Call("relax.broadcast_to", {y, MakeShape(target)}));
  KILN_ASSIGN_OR_RETURN(y, ctx.Call("relax.reshape", {y, MakeShape(merged)}));
  return One(y);
}

absl::StatusOr<Outputs> Tile(Context& ctx) {
  if (!ctx.Elems(1)) return TileAtRunTime(ctx);
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, ctx.ConstInts(1));
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.tile", {x}, {{"repeats", IntsAttr(repeats)}}));
  return One(y);
}

// Pad by amounts computed at run time (every axis; pads checked non-negative): each output
// position along a dimension reads the input at its position minus the leading pad, clamped
// (edge), reflected (reflect) or clamped and then replaced by the value where it falls outside
// (constant).
absl::StatusOr<Outputs> PadAtRunTime(Context& ctx, const std::string& mode) {
  ShapeMath m{ctx};
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.Shape(x));
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (ctx.Has(3)) return ctx.Unsupported("Pad by amounts computed at run time for some axes");
  KILN_ASSIGN_OR_RETURN(Expr pads, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(pads, m.Int64(pads));
  KILN_ASSIGN_OR_RETURN(int64_t n, m.Length(pads, "pads"));
  if (n != 2 * rank) return ctx.Error(absl::StrCat(n, " pads for rank ", rank));
  auto half = [&](int64_t from) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(Expr at, ctx.Iota(rank, {rank}));
    KILN_ASSIGN_OR_RETURN(at, m.Call("relax.add", {at, m.I(from)}));
    return m.Call("relax.take", {pads, at}, {{"axis", IntAttr(0)}});
  };
  KILN_ASSIGN_OR_RETURN(Expr begin, half(0));
  KILN_ASSIGN_OR_RETURN(Expr end, half(rank));
  KILN_ASSIGN_OR_RETURN(Expr dim, m.Tensor(dims));
  KILN_ASSIGN_OR_RETURN(Expr out, m.Call("relax.add", {dim, begin}));
  KILN_ASSIGN_OR_RETURN(out, m.Call("relax.add", {out, end}));
  KILN_ASSIGN_OR_RETURN(Expr negatives, m.Negatives(pads));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> o, ctx.DimsAtRunTime(out, {negatives}));
  Expr y = x, inside;
  for (int64_t d = 0; d < rank; ++d) {
    KILN_ASSIGN_OR_RETURN(Expr lead, m.Call("relax.take", {begin, m.I(d)}, {{"axis", IntAttr(0)}}));
    KILN_ASSIGN_OR_RETURN(Expr last, m.Tensor({dims[d] - 1}));
    KILN_ASSIGN_OR_RETURN(Expr src, m.Iota(o[d]));
    KILN_ASSIGN_OR_RETURN(src, m.Call("relax.subtract", {src, lead}));
    Expr index;
    if (mode == "reflect") {  // -1 -> 1, dim -> dim - 2 (pads below the extent, as ONNX requires)
      KILN_ASSIGN_OR_RETURN(Expr mirrored, m.Call("relax.abs", {src}));
      KILN_ASSIGN_OR_RETURN(Expr twice_last, m.Call("relax.add", {last, last}));
      KILN_ASSIGN_OR_RETURN(Expr folded, m.Call("relax.subtract", {twice_last, mirrored}));
      KILN_ASSIGN_OR_RETURN(Expr past, m.Call("relax.greater", {mirrored, last}));
      KILN_ASSIGN_OR_RETURN(index, m.Call("relax.where", {past, folded, mirrored}));
    } else {
      KILN_ASSIGN_OR_RETURN(index, m.Call("relax.maximum", {src, m.I(0)}));
      KILN_ASSIGN_OR_RETURN(index, m.Call("relax.minimum", {index, last}));
    }
    KILN_ASSIGN_OR_RETURN(y, m.Call("relax.take", {y, index}, {{"axis", IntAttr(d)}}));
    if (mode != "constant") continue;
    // 1 where this dimension's position falls inside x, shaped to broadcast along d.
    KILN_ASSIGN_OR_RETURN(Expr here, m.Call("relax.equal", {index, src}));
    KILN_ASSIGN_OR_RETURN(here, m.Int64(here));
    std::vector<PrimExpr> shape(rank, I64(1));
    shape[d] = o[d];
    KILN_ASSIGN_OR_RETURN(here, m.Call("relax.reshape", {here, MakeShape(shape)}));
    if (inside) {
      KILN_ASSIGN_OR_RETURN(inside, m.Call("relax.multiply", {inside, here}));
    } else {
      inside = here;
    }
  }
  if (mode != "constant") return One(y);
  Expr value = ctx.Scalar(ctx.DType(x), 0);
  if (ctx.Has(2)) {
    KILN_ASSIGN_OR_RETURN(value, ctx.Tensor(2));
  }
  KILN_ASSIGN_OR_RETURN(Expr keep, m.Call("relax.equal", {inside, m.I(1)}));
  return OneOf(m.Call("relax.where", {keep, y, value}));
}

// Pad (opset 11+): pads as an input [begin_0, ..., begin_n, end_0, ..., end_n], an optional
// constant value, and (opset 18) the axes they apply to.
absl::StatusOr<Outputs> Pad(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.Shape(x));
  size_t rank = dims.size();
  std::vector<int64_t> pads;
  const std::string pad_mode = ctx.Str("mode", "constant");
  if (ctx.Has(1) && !ctx.ConstInts(1).ok() &&
      (pad_mode == "constant" || pad_mode == "reflect" || pad_mode == "edge")) {
    return PadAtRunTime(ctx, pad_mode);
  }
  if (ctx.Has(1)) {
    KILN_ASSIGN_OR_RETURN(pads, ctx.ConstInts(1));
  } else {
    pads = ctx.Ints("pads").value_or(std::vector<int64_t>());
  }
  std::vector<int64_t> axes;
  if (ctx.Has(3)) {
    KILN_ASSIGN_OR_RETURN(axes, ctx.ConstInts(3));
  } else {
    for (size_t k = 0; k < rank; ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (pads.size() != 2 * axes.size())
    return ctx.Error(absl::StrCat(pads.size(), " pads for ", axes.size(), " axes"));
  std::vector<int64_t> width(2 * rank, 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(int64_t a, Axis(ctx, axes[k], rank));
    if (pads[k] < 0 || pads[k + axes.size()] < 0)
      return ctx.Unsupported("negative pads (cropping)");
    width[2 * a] = pads[k];
    width[2 * a + 1] = pads[k + axes.size()];
  }
  double value = 0;
  if (ctx.Has(2)) {
    KILN_ASSIGN_OR_RETURN(std::vector<double> v, ctx.ConstFloats(2));
    if (v.size() != 1) return ctx.Error("constant_value must be a scalar");
    value = v[0];
  } else {
    value = ctx.Float("value", 0);
  }
  std::string mode = ctx.Str("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return ctx.Unsupported(absl::StrCat("Pad mode \"", mode, "\" (constant, reflect, edge)"));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.nn.pad", {x},
                                         {{"pad_width", IntsAttr(width)},
                                          {"pad_value", FloatAttr(value)},
                                          {"pad_mode", StrAttr(mode)}}));
  return One(y);
}

}  // namespace

void RegisterLayoutConverters(ConverterTable* t) {
  (*t)["Reshape"] = Reshape;
  (*t)["Flatten"] = Flatten;
  (*t)["Transpose"] = Transpose;
  (*t)["Concat"] = Concat;
  (*t)["Split"] = Split;
  (*t)["Unsqueeze"] = Unsqueeze;
  (*t)["Squeeze"] = Squeeze;
  (*t)["Expand"] = Expand;
  (*t)["Tile"] = Tile;
  (*t)["Pad"] = Pad;
}

}  // namespace kiln::frontend::onnx_import
