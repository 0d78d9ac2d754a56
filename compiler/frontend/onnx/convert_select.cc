// Selection operators: Slice, Gather, Compress, NonZero. Where the input's elements are known at
// import time (shape tensors), Gather and Slice compute their result here; a selection only the
// run knows is computed by tensor arithmetic and its size bound to shape variables
// (Context::DimsAtRunTime).
#include "absl/strings/str_cat.h"
#include "compiler/frontend/onnx/convert_context.h"
#include "compiler/frontend/onnx/shape_math.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend::onnx_import {
namespace {

using ir::IntImm;
using ir::relax::MakeShape;

// Slice by starts, ends, axes or steps computed at run time: per dimension of x, its start,
// step and count resolved by tensor arithmetic as ONNX defines them (negative values count from
// the end, then clamped; an axis not named keeps all of itself), the counts bound as shape
// variables (steps checked not 0, axes distinct and in range), and x gathered along each
// dimension at start + k * step.
absl::StatusOr<Outputs> SliceAtRunTime(Context& ctx) {
  ShapeMath m{ctx};
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.Shape(x));
  const int64_t rank = static_cast<int64_t>(dims.size());
  KILN_ASSIGN_OR_RETURN(Expr starts, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(starts, m.Int64(starts));
  KILN_ASSIGN_OR_RETURN(Expr ends, ctx.Tensor(2));
  KILN_ASSIGN_OR_RETURN(ends, m.Int64(ends));
  KILN_ASSIGN_OR_RETURN(int64_t k, m.Length(starts, "starts"));
  Expr axes, steps;
  if (ctx.Has(3)) {
    KILN_ASSIGN_OR_RETURN(axes, ctx.Tensor(3));
  } else {
    KILN_ASSIGN_OR_RETURN(axes, ctx.Iota(k, {k}));
  }
  if (ctx.Has(4)) {
    KILN_ASSIGN_OR_RETURN(steps, ctx.Tensor(4));
    KILN_ASSIGN_OR_RETURN(steps, m.Int64(steps));
  } else {
    KILN_ASSIGN_OR_RETURN(steps, ctx.Call("relax.full", {MakeShape({I64(k)}), m.I(1)},
                                          {{"dtype", StrAttr("int64")}}));
  }
  // Per dimension: whether it is sliced, and its start, end and step (the value of the entry
  // naming it, moved there by a one-hot [k, rank] product).
  Expr bad_axes;
  KILN_ASSIGN_OR_RETURN(Expr named, m.Named(axes, k, rank, &bad_axes));
  KILN_ASSIGN_OR_RETURN(Expr a, m.Int64(axes));
  KILN_ASSIGN_OR_RETURN(Expr negative_axis, m.Call("relax.less", {a, m.I(0)}));
  KILN_ASSIGN_OR_RETURN(Expr shifted, m.Call("relax.add", {a, m.I(rank)}));
  KILN_ASSIGN_OR_RETURN(a, m.Call("relax.where", {negative_axis, shifted, a}));
  KILN_ASSIGN_OR_RETURN(Expr is_named, m.Call("relax.equal", {named, m.I(1)}));
  auto per_dim = [&](const Expr& values, const Expr& unnamed) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(Expr moved, m.Scatter(values, a, k, rank));
    return m.Call("relax.where", {is_named, moved, unnamed});
  };
  KILN_ASSIGN_OR_RETURN(Expr dim, m.Tensor(dims));
  KILN_ASSIGN_OR_RETURN(Expr start, per_dim(starts, m.I(0)));
  KILN_ASSIGN_OR_RETURN(Expr end, per_dim(ends, dim));
  KILN_ASSIGN_OR_RETURN(Expr step, per_dim(steps, m.I(1)));
  // Negative positions count from the end; then clamped to [0, dim] going forward and to
  // [-1, dim - 1] going backward.
  for (Expr* v : {&start, &end}) {
    KILN_ASSIGN_OR_RETURN(Expr below, m.Call("relax.less", {*v, m.I(0)}));
    KILN_ASSIGN_OR_RETURN(Expr from_end, m.Call("relax.add", {*v, dim}));
    KILN_ASSIGN_OR_RETURN(*v, m.Call("relax.where", {below, from_end, *v}));
  }
  KILN_ASSIGN_OR_RETURN(Expr backward, m.Call("relax.less", {step, m.I(0)}));
  KILN_ASSIGN_OR_RETURN(Expr low, m.Call("relax.where", {backward, m.I(-1), m.I(0)}));
  KILN_ASSIGN_OR_RETURN(Expr last, m.Call("relax.subtract", {dim, m.I(1)}));
  KILN_ASSIGN_OR_RETURN(Expr high, m.Call("relax.where", {backward, last, dim}));
  for (Expr* v : {&start, &end}) {
    KILN_ASSIGN_OR_RETURN(*v, m.Call("relax.maximum", {*v, low}));
    KILN_ASSIGN_OR_RETURN(*v, m.Call("relax.minimum", {*v, high}));
  }
  // count = max(ceil((end - start) / step), 0), in float64 (the clamped values are small).
  KILN_ASSIGN_OR_RETURN(Expr zero_step, m.Call("relax.equal", {step, m.I(0)}));
  KILN_ASSIGN_OR_RETURN(Expr zero_steps, m.Count(zero_step));
  KILN_ASSIGN_OR_RETURN(Expr safe_step, m.Call("relax.where", {zero_step, m.I(1), step}));
  auto wide = [&](const Expr& v) {
    return m.Call("relax.astype", {v}, {{"dtype", StrAttr("float64")}});
  };
  KILN_ASSIGN_OR_RETURN(Expr span, m.Call("relax.subtract", {end, start}));
  KILN_ASSIGN_OR_RETURN(span, wide(span));
  KILN_ASSIGN_OR_RETURN(Expr step_f, wide(safe_step));
  KILN_ASSIGN_OR_RETURN(Expr count, m.Call("relax.divide", {span, step_f}));
  KILN_ASSIGN_OR_RETURN(count, m.Call("relax.ceil", {count}));
  KILN_ASSIGN_OR_RETURN(count,
                        m.Call("relax.maximum", {count, ctx.Scalar(DataType::Float(64), 0)}));
  KILN_ASSIGN_OR_RETURN(count, m.Int64(count));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> n, ctx.DimsAtRunTime(count, {zero_steps, bad_axes}));
  Expr y = x;
  for (int64_t d = 0; d < rank; ++d) {
    auto element = [&](const Expr& v) {
      return m.Call("relax.take", {v, ctx.Scalar(DataType::Int(64), static_cast<double>(d))},
                    {{"axis", IntAttr(0)}});
    };
    KILN_ASSIGN_OR_RETURN(Expr first, element(start));
    KILN_ASSIGN_OR_RETURN(Expr stride, element(safe_step));
    KILN_ASSIGN_OR_RETURN(Expr index, m.Iota(n[d]));
    KILN_ASSIGN_OR_RETURN(index, m.Call("relax.multiply", {index, stride}));
    KILN_ASSIGN_OR_RETURN(index, m.Call("relax.add", {index, first}));
    KILN_ASSIGN_OR_RETURN(y, m.Call("relax.take", {y, index}, {{"axis", IntAttr(d)}}));
  }
  return One(y);
}

absl::StatusOr<Outputs> Slice(Context& ctx) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() >= 10 && ctx.num_inputs() >= 3) {
    for (size_t i = 1; i < 5; ++i) {
      if (ctx.Has(i) && !ctx.ConstInts(i).ok()) return SliceAtRunTime(ctx);
    }
    KILN_ASSIGN_OR_RETURN(starts, ctx.ConstInts(1));
    KILN_ASSIGN_OR_RETURN(ends, ctx.ConstInts(2));
    if (ctx.Has(3)) {
      KILN_ASSIGN_OR_RETURN(axes, ctx.ConstInts(3));
    }
    if (ctx.Has(4)) {
      KILN_ASSIGN_OR_RETURN(steps, ctx.ConstInts(4));
    }
  } else {
    starts = ctx.Ints("starts").value_or(std::vector<int64_t>());
    ends = ctx.Ints("ends").value_or(std::vector<int64_t>());
    axes = ctx.Ints("axes").value_or(std::vector<int64_t>());
  }
  if (starts.size() != ends.size()) return ctx.Error("starts and ends differ in length");
  if (axes.empty()) {
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    return ctx.Error("starts, ends, axes and steps differ in length");
  // A slice of a known vector is taken here.
  if (std::optional<std::vector<PrimExpr>> e = ctx.Elems(0);
      e && ctx.In(0).elems_shape.size() == 1 && starts.size() == 1) {
    int64_t n = static_cast<int64_t>(e->size());
    int64_t b = starts[0], en = ends[0], s = steps[0];
    if (s == 0) return ctx.Error("steps must not be 0");
    if (b < 0) b += n;
    if (en < 0) en += n;
    std::vector<PrimExpr> out;
    if (s > 0) {
      for (int64_t k = std::clamp<int64_t>(b, 0, n); k < std::clamp<int64_t>(en, 0, n); k += s)
        out.push_back((*e)[k]);
    } else {
      for (int64_t k = std::clamp<int64_t>(b, -1, n - 1); k > std::clamp<int64_t>(en, -1, n - 1);
           k += s)
        out.push_back((*e)[k]);
    }
    int64_t m = static_cast<int64_t>(out.size());
    return Outputs{KnownInts(std::move(out), {m}, ctx.In(0).elems_dtype)};
  }
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.strided_slice", {x},
                                         {{"axes", IntsAttr(axes)},
                                          {"begin", IntsAttr(starts)},
                                          {"end", IntsAttr(ends)},
                                          {"strides", IntsAttr(steps)}}));
  return One(y);
}

absl::StatusOr<Outputs> Gather(Context& ctx) {
  int64_t axis = ctx.Int("axis", 0);
  std::optional<std::vector<PrimExpr>> data = ctx.Elems(0);
  std::optional<std::vector<PrimExpr>> index = ctx.Elems(1);
  if (data && index && ctx.In(0).elems_shape.size() == 1) {
    int64_t n = static_cast<int64_t>(data->size());
    std::vector<PrimExpr> out;
    for (const PrimExpr& i : *index) {
      const int64_t* c = ir::AsConstInt(i);
      if (c == nullptr) return ctx.Unsupported("Gather from a shape at a symbolic index");
      int64_t k = *c < 0 ? *c + n : *c;
      if (k < 0 || k >= n) return ctx.Error(absl::StrCat("index ", *c, " is out of range"));
      out.push_back((*data)[k]);
    }
    return Outputs{KnownInts(std::move(out), ctx.In(1).elems_shape, ctx.In(0).elems_dtype)};
  }
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr indices, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.take", {x, indices}, {{"axis", IntAttr(axis)}}));
  return One(y);
}

// Compress: the slices of x along axis (x flattened without one) where condition is true; as
// many as the run finds, gathered at their positions.
absl::StatusOr<Outputs> Compress(Context& ctx) {
  ShapeMath m{ctx};
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.Shape(x));
  int64_t axis = 0;
  if (ctx.HasAttr("axis")) {
    KILN_ASSIGN_OR_RETURN(axis, Axis(ctx, ctx.Int("axis", 0), dims.size()));
  } else {
    PrimExpr total = I64(1);
    for (const PrimExpr& d : dims) total = total * d;
    KILN_ASSIGN_OR_RETURN(
        x, ctx.Call("relax.reshape", {x, MakeShape({ctx.analyzer()->Simplify(total)})}));
  }
  KILN_ASSIGN_OR_RETURN(Expr condition, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> length, ctx.Shape(condition));
  if (length.size() != 1) return ctx.Error("condition must be 1-D");
  PrimExpr count;
  KILN_ASSIGN_OR_RETURN(Expr positions, m.TruePositions(condition, length[0], &count));
  return OneOf(ctx.Call("relax.take", {x, positions}, {{"axis", IntAttr(axis)}}));
}

// NonZero: the coordinates [rank, count] of x's nonzero elements, in row-major order.
absl::StatusOr<Outputs> NonZero(Context& ctx) {
  ShapeMath m{ctx};
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.Shape(x));
  PrimExpr total = I64(1);
  for (const PrimExpr& d : dims) total = total * d;
  total = ctx.analyzer()->Simplify(total);
  KILN_ASSIGN_OR_RETURN(Expr flat, ctx.Call("relax.reshape", {x, MakeShape({total})}));
  KILN_ASSIGN_OR_RETURN(Expr nonzero,
                        ctx.Call("relax.not_equal", {flat, ctx.Scalar(ctx.DType(x), 0)}));
  PrimExpr count;
  KILN_ASSIGN_OR_RETURN(Expr positions, m.TruePositions(nonzero, total, &count));
  std::vector<Expr> rows;
  PrimExpr stride = total;
  for (const PrimExpr& d : dims) {
    stride = ctx.analyzer()->Simplify(ir::FloorDiv(stride, d));
    KILN_ASSIGN_OR_RETURN(Expr stride_t, m.Tensor({stride}));
    KILN_ASSIGN_OR_RETURN(Expr dim_t, m.Tensor({d}));
    KILN_ASSIGN_OR_RETURN(Expr row, ctx.Call("relax.floor_divide", {positions, stride_t}));
    KILN_ASSIGN_OR_RETURN(row, ctx.Call("relax.floor_mod", {row, dim_t}));
    KILN_ASSIGN_OR_RETURN(row, ctx.Call("relax.reshape", {row, MakeShape({I64(1), count})}));
    rows.push_back(row);
  }
  return OneOf(ctx.Call("relax.concat", {ir::relax::MakeTuple(rows)}, {{"axis", IntAttr(0)}}));
}

}  // namespace

void RegisterSelectConverters(ConverterTable* t) {
  (*t)["Slice"] = Slice;
  (*t)["Gather"] = Gather;
  (*t)["Compress"] = Compress;
  (*t)["NonZero"] = NonZero;
}

}  // namespace kiln::frontend::onnx_import
