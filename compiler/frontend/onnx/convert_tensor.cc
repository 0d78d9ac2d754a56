// Creation operators and values known at import time: Constant, Shape, Size, Range,
// ConstantOfShape, Identity, windows, OneHot, Trilu, EyeLike, and the index operators that
// gather and scatter (GatherElements, GatherND, ScatterElements, ScatterND, ReverseSequence,
// DepthToSpace). Where the input's elements are known at import time (shape tensors), Shape,
// Range and ConstantOfShape compute their result here, so the shape arithmetic of exported models
// never reaches the compiled code. Layout operators are in convert_layout.cc.
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

// ---- Values known at import time ----

absl::StatusOr<Outputs> Constant(Context& ctx) {
  if (const onnx::TensorProto* t = ctx.TensorAttr("value")) {
    KILN_ASSIGN_OR_RETURN(Value v, ValueFromTensorProto(*t));
    return Outputs{std::move(v)};
  }
  if (ctx.HasAttr("value_int")) return Outputs{KnownInts({I64(ctx.Int("value_int", 0))}, {})};
  if (std::optional<std::vector<int64_t>> ints = ctx.Ints("value_ints")) {
    std::vector<PrimExpr> elems;
    for (int64_t x : *ints) elems.push_back(I64(x));
    return Outputs{KnownInts(std::move(elems), {static_cast<int64_t>(ints->size())})};
  }
  std::vector<double> floats;
  std::vector<int64_t> shape;
  if (ctx.HasAttr("value_float")) {
    floats = {ctx.Float("value_float", 0)};
  } else if (std::optional<std::vector<double>> f = ctx.Floats("value_floats")) {
    floats = *f;
    shape = {static_cast<int64_t>(f->size())};
  } else {
    return ctx.Unsupported("a Constant without value, value_float(s) or value_int(s)");
  }
  return One(MakeNumericConstant(DataType::Float(32), shape, floats));
}

absl::StatusOr<Outputs> GatherElements(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr indices, ctx.Tensor(1));
  return OneOf(
      ctx.Call("relax.gather_elements", {x, indices}, {{"axis", IntAttr(ctx.Int("axis", 0))}}));
}

// ScatterElements (and Scatter, its name before opset 11) and ScatterND: ONNX's reduction
// "none" is Relax's "update".
std::string ScatterReduction(Context& ctx) {
  std::string r = ctx.Str("reduction", "none");
  return r == "none" ? "update" : r;
}

absl::StatusOr<Outputs> ScatterElements(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr data, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr indices, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(Expr updates, ctx.Tensor(2));
  return OneOf(ctx.Call(
      "relax.scatter_elements", {data, indices, updates},
      {{"axis", IntAttr(ctx.Int("axis", 0))}, {"reduction", StrAttr(ScatterReduction(ctx))}}));
}

absl::StatusOr<Outputs> ScatterND(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr data, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr indices, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(Expr updates, ctx.Tensor(2));
  return OneOf(ctx.Call("relax.scatter_nd", {data, indices, updates},
                        {{"reduction", StrAttr(ScatterReduction(ctx))}}));
}

// ReverseSequence: along time_axis, the first sequence_lens[b] elements of each batch entry b are
// reversed, the rest kept. A gather_elements whose index is L - 1 - t where t < L, else t.
absl::StatusOr<Outputs> ReverseSequence(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr lens, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, ctx.Shape(x));
  const int64_t time = ctx.Int("time_axis", 0), batch = ctx.Int("batch_axis", 1);
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank < 2 || (time != 0 && time != 1) || (batch != 0 && batch != 1) || time == batch)
    return ctx.Error("time_axis and batch_axis must be 0 and 1 (either way) of a rank >= 2 input");
  const int64_t* steps = ir::AsConstInt(shape[static_cast<size_t>(time)]);
  if (steps == nullptr)
    return ctx.Unsupported("ReverseSequence over a time axis of unknown length");
  // t along the time axis, L along the batch axis, both in the input's rank.
  std::vector<int64_t> t_shape(static_cast<size_t>(rank), 1);
  t_shape[static_cast<size_t>(time)] = *steps;
  KILN_ASSIGN_OR_RETURN(Expr t, ctx.Iota(*steps, t_shape));
  std::vector<int64_t> unit_axes;
  for (int64_t k = 0; k < rank; ++k) {
    if (k != batch) unit_axes.push_back(k);
  }
  if (ctx.DType(lens) != DataType::Int(64)) {
    KILN_ASSIGN_OR_RETURN(lens, ctx.Call("relax.astype", {lens}, {{"dtype", StrAttr("int64")}}));
  }
  KILN_ASSIGN_OR_RETURN(Expr l,
                        ctx.Call("relax.expand_dims", {lens}, {{"axis", IntsAttr(unit_axes)}}));
  KILN_ASSIGN_OR_RETURN(Expr inside, ctx.Call("relax.less", {t, l}));
  KILN_ASSIGN_OR_RETURN(Expr last,
                        ctx.Call("relax.subtract", {l, ctx.Scalar(DataType::Int(64), 1)}));
  KILN_ASSIGN_OR_RETURN(Expr reversed, ctx.Call("relax.subtract", {last, t}));
  KILN_ASSIGN_OR_RETURN(Expr index, ctx.Call("relax.where", {inside, reversed, t}));
  KILN_ASSIGN_OR_RETURN(index, ctx.Call("relax.broadcast_to", {index, MakeShape(shape)}));
  return OneOf(ctx.Call("relax.gather_elements", {x, index}, {{"axis", IntAttr(time)}}));
}

// DepthToSpace and SpaceToDepth on NCHW: a reshape to 6-D, a permutation and a reshape back.
// DepthToSpace's "DCR" mode takes the block offsets from the high channel bits, "CRD" from the
// low ones.
template <bool kToSpace>
absl::StatusOr<Outputs> DepthSpace(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  if (xs.size() != 4) return ctx.Error("needs an NCHW tensor");
  int64_t b = ctx.Int("blocksize", 0);
  if (b <= 0) return ctx.Error("blocksize must be positive");
  PrimExpr n = xs[0], c = xs[1], h = xs[2], w = xs[3], bb = I64(b);
  auto simplify = [&](PrimExpr e) { return ctx.analyzer()->Simplify(std::move(e)); };
  std::vector<PrimExpr> split, joined;
  std::vector<int64_t> perm;
  if (kToSpace) {
    PrimExpr c_out = simplify(ir::FloorDiv(c, I64(b * b)));
    bool crd = ctx.Str("mode", "DCR") == "CRD";
    split = crd ? std::vector<PrimExpr>{n, c_out, bb, bb, h, w}
                : std::vector<PrimExpr>{n, bb, bb, c_out, h, w};
    perm = crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
    joined = {n, c_out, simplify(h * bb), simplify(w * bb)};
  } else {
    PrimExpr h_out = simplify(ir::FloorDiv(h, bb)), w_out = simplify(ir::FloorDiv(w, bb));
    split = {n, c, h_out, bb, w_out, bb};
    perm = {0, 3, 5, 1, 2, 4};
    joined = {n, simplify(c * I64(b * b)), h_out, w_out};
  }
  KILN_ASSIGN_OR_RETURN(Expr six, ctx.Call("relax.reshape", {x, MakeShape(split)}));
  KILN_ASSIGN_OR_RETURN(Expr moved,
                        ctx.Call("relax.permute_dims", {six}, {{"axes", IntsAttr(perm)}}));
  return OneOf(ctx.Call("relax.reshape", {moved, MakeShape(joined)}));
}

// OneHot(indices, depth, values = [off, on]): a new axis of `depth` classes at `axis`; negative
// indices count from the end.
absl::StatusOr<Outputs> OneHot(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr indices, ctx.Tensor(0));
  // The depth: known at import time, or a shape variable bound at run time (checked >= 1).
  PrimExpr d;
  Expr depth_value;
  ShapeMath m{ctx};
  if (absl::StatusOr<std::vector<double>> depth = ctx.ConstFloats(1); depth.ok()) {
    if (depth->size() != 1 || !((*depth)[0] >= 1 && (*depth)[0] < 9e18))
      return ctx.Error("depth must be a positive scalar");
    d = I64(static_cast<int64_t>((*depth)[0]));
    depth_value = ctx.Scalar(DataType::Int(64), (*depth)[0]);
  } else {
    KILN_ASSIGN_OR_RETURN(Expr given, ctx.Tensor(1));
    KILN_ASSIGN_OR_RETURN(Expr one, m.One(given));
    KILN_ASSIGN_OR_RETURN(Expr below, m.Call("relax.less", {one, m.I(1)}));
    KILN_ASSIGN_OR_RETURN(Expr too_small, m.Count(below));
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.DimsAtRunTime(one, {too_small}));
    d = dims[0];
    depth_value = one;
  }
  KILN_ASSIGN_OR_RETURN(Expr values, ctx.Tensor(2));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> is, ctx.Shape(indices));
  int64_t rank = static_cast<int64_t>(is.size()) + 1;
  int64_t axis = ctx.Int("axis", -1);
  if (axis < -rank || axis >= rank)
    return ctx.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  if (axis < 0) axis += rank;
  if (ctx.DType(indices) != DataType::Int(64)) {
    KILN_ASSIGN_OR_RETURN(indices,
                          ctx.Call("relax.astype", {indices}, {{"dtype", StrAttr("int64")}}));
  }
  KILN_ASSIGN_OR_RETURN(Expr negative,
                        ctx.Call("relax.less", {indices, ctx.Scalar(DataType::Int(64), 0)}));
  KILN_ASSIGN_OR_RETURN(Expr wrapped, ctx.Call("relax.add", {indices, depth_value}));
  KILN_ASSIGN_OR_RETURN(indices, ctx.Call("relax.where", {negative, wrapped, indices}));
  KILN_ASSIGN_OR_RETURN(Expr expanded,
                        ctx.Call("relax.expand_dims", {indices}, {{"axis", IntsAttr({axis})}}));
  std::vector<PrimExpr> class_shape(static_cast<size_t>(rank), I64(1));
  class_shape[axis] = d;
  Expr ids;
  if (const int64_t* known = ir::AsConstInt(d)) {
    KILN_ASSIGN_OR_RETURN(ids, ctx.Iota(*known, std::vector<int64_t>(rank, 1)));
    KILN_ASSIGN_OR_RETURN(ids, ctx.Call("relax.reshape", {ids, MakeShape(class_shape)}));
  } else {
    KILN_ASSIGN_OR_RETURN(ids, m.Iota(d));
    KILN_ASSIGN_OR_RETURN(ids, ctx.Call("relax.reshape", {ids, MakeShape(class_shape)}));
  }
  KILN_ASSIGN_OR_RETURN(Expr hit, ctx.Call("relax.equal", {expanded, ids}));
  auto value = [&](int64_t k) {
    return ctx.Call("relax.take", {values, ctx.Scalar(DataType::Int(64), static_cast<double>(k))},
                    {{"axis", IntAttr(0)}});
  };
  KILN_ASSIGN_OR_RETURN(Expr off, value(0));
  KILN_ASSIGN_OR_RETURN(Expr on, value(1));
  return OneOf(ctx.Call("relax.where", {hit, on, off}));
}

absl::StatusOr<Outputs> GatherND(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr indices, ctx.Tensor(1));
  return OneOf(ctx.Call("relax.gather_nd", {x, indices},
                        {{"batch_dims", IntAttr(ctx.Int("batch_dims", 0))}}));
}

// Size: the element count, known at import time (possibly symbolic).
absl::StatusOr<Outputs> Size(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, InputShape(ctx, 0));
  PrimExpr n = I64(1);
  for (const PrimExpr& d : dims) n = n * d;
  return Outputs{KnownInts({ctx.analyzer()->Simplify(n)}, {})};
}

// The row and column index of every element of a (rows, cols) matrix, as int64 constants of
// shapes (rows, 1) and (1, cols): what Trilu and EyeLike compare.
absl::StatusOr<std::pair<Expr, Expr>> MatrixIndices(Context& ctx, const PrimExpr& rows,
                                                    const PrimExpr& cols) {
  const int64_t* r = ir::AsConstInt(rows);
  const int64_t* c = ir::AsConstInt(cols);
  if (r == nullptr || c == nullptr)
    return ctx.Unsupported("matrix dimensions not known at import time");
  KILN_ASSIGN_OR_RETURN(Expr row, ctx.Iota(*r, {*r, 1}));
  KILN_ASSIGN_OR_RETURN(Expr col, ctx.Iota(*c, {1, *c}));
  return std::make_pair(row, col);
}

// Trilu: keeps the elements with col - row >= k (upper) or <= k (lower) of the last two axes.
absl::StatusOr<Outputs> Trilu(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  if (xs.size() < 2) return ctx.Error("needs a tensor of rank 2 or more");
  // k: a constant, or a scalar tensor known only at run time.
  Expr k = ctx.Scalar(DataType::Int(64), 0);
  if (ctx.Has(1)) {
    KILN_ASSIGN_OR_RETURN(k, ctx.Tensor(1));
    if (ctx.DType(k) != DataType::Int(64)) {
      KILN_ASSIGN_OR_RETURN(k, ctx.Call("relax.astype", {k}, {{"dtype", StrAttr("int64")}}));
    }
  }
  KILN_ASSIGN_OR_RETURN(auto rc, MatrixIndices(ctx, xs[xs.size() - 2], xs.back()));
  KILN_ASSIGN_OR_RETURN(Expr diag, ctx.Call("relax.subtract", {rc.second, rc.first}));
  bool upper = ctx.Int("upper", 1) != 0;
  KILN_ASSIGN_OR_RETURN(Expr keep,
                        ctx.Call(upper ? "relax.greater_equal" : "relax.less_equal", {diag, k}));
  KILN_ASSIGN_OR_RETURN(Expr zero, ctx.Call("relax.zeros_like", {x}));
  return OneOf(ctx.Call("relax.where", {keep, x, zero}));
}

// EyeLike: ones where col - row == k, of the input's shape and the `dtype` attribute's type.
absl::StatusOr<Outputs> EyeLike(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  if (xs.size() != 2) return ctx.Error("needs a 2-D tensor");
  DataType dtype = ctx.DType(x);
  if (ctx.HasAttr("dtype")) {
    KILN_ASSIGN_OR_RETURN(dtype, DataTypeFromOnnx(static_cast<int>(ctx.Int("dtype", 0))));
  }
  KILN_ASSIGN_OR_RETURN(auto rc, MatrixIndices(ctx, xs[0], xs[1]));
  KILN_ASSIGN_OR_RETURN(Expr diag, ctx.Call("relax.subtract", {rc.second, rc.first}));
  KILN_ASSIGN_OR_RETURN(
      Expr on, ctx.Call("relax.equal", {diag, ctx.Scalar(DataType::Int(64), ctx.Int("k", 0))}));
  return OneOf(ctx.Call("relax.astype", {on}, {{"dtype", StrAttr(dtype.ToString())}}));
}

absl::StatusOr<Outputs> Shape(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, InputShape(ctx, 0));
  int64_t rank = static_cast<int64_t>(dims.size());
  int64_t start = ctx.Int("start", 0), end = ctx.Int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<PrimExpr> elems(dims.begin() + start, dims.begin() + end);
  int64_t n = static_cast<int64_t>(elems.size());
  return Outputs{KnownInts(std::move(elems), {n})};
}

absl::StatusOr<Outputs> Identity(Context& ctx) {
  if (!ctx.Has(0)) return ctx.Error("input 0 is required");
  Outputs out = {ctx.In(0)};
  if (ctx.node().op_type() == "Dropout" && ctx.node().output_size() > 1 &&
      !ctx.node().output(1).empty()) {
    KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.Shape(x));
    KILN_ASSIGN_OR_RETURN(Expr mask,
                          ctx.Call("relax.ones", {MakeShape(dims)}, {{"dtype", StrAttr("bool")}}));
    out.push_back(One(mask)[0]);
  }
  return out;
}

absl::StatusOr<Outputs> ConstantOfShape(Context& ctx) {
  std::vector<PrimExpr> shape;
  if (std::optional<std::vector<PrimExpr>> known = ctx.Elems(0)) {
    shape = *known;
  } else {  // a shape computed at run time, checked to have no negative dimension
    ShapeMath m{ctx};
    KILN_ASSIGN_OR_RETURN(Expr given, ctx.Tensor(0));
    KILN_ASSIGN_OR_RETURN(Expr d, m.Int64(given));
    KILN_ASSIGN_OR_RETURN(Expr negatives, m.Negatives(d));
    KILN_ASSIGN_OR_RETURN(shape, ctx.DimsAtRunTime(d, {negatives}));
  }
  DataType dtype = DataType::Float(32);
  double value = 0;
  if (const onnx::TensorProto* t = ctx.TensorAttr("value")) {
    KILN_ASSIGN_OR_RETURN(Value v, ValueFromTensorProto(*t));
    dtype = ctx.DType(v.expr);
    std::vector<double> values = ConstantNumbers(*v.expr.as<ir::relax::ConstantNode>());
    if (values.size() != 1) return ctx.Error("value must hold one element");
    value = values[0];
  }
  std::vector<int64_t> dims;
  for (const PrimExpr& d : shape) {
    const int64_t* c = ir::AsConstInt(d);
    if (c != nullptr && *c < 0) {  // issue 52, finding 8: [-1, 5] compiled
      return ctx.Error(absl::StrCat("shape dimension ", dims.size(), " is ", *c,
                                    ": a dimension is never negative"));
    }
    dims.push_back(c != nullptr ? *c : -1);
  }
  bool known = std::find(dims.begin(), dims.end(), -1) == dims.end();
  if (known && dtype.is_integral() && !dtype.is_bool() && NumElements(dims) <= kMaxKnownElems) {
    std::vector<PrimExpr> elems(NumElements(dims), I64(static_cast<int64_t>(value)));
    return Outputs{KnownInts(std::move(elems), dims, dtype)};
  }
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.full", {MakeShape(shape), ctx.Scalar(dtype, value)},
                                         {{"dtype", StrAttr(dtype.ToString())}}));
  return One(y);
}

// Range of start, limit and delta computed at run time: max(ceil((limit - start) / delta), 0)
// elements (delta checked not 0), start + k * delta.
absl::StatusOr<Outputs> RangeAtRunTime(Context& ctx) {
  ShapeMath m{ctx};
  KILN_ASSIGN_OR_RETURN(Expr start, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr limit, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(Expr delta, ctx.Tensor(2));
  const DataType dtype = ctx.DType(start);
  auto wide = [&](const Expr& v) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(Expr f, m.Call("relax.astype", {v}, {{"dtype", StrAttr("float64")}}));
    return m.Call("relax.reshape", {f, MakeShape({I64(1)})});
  };
  KILN_ASSIGN_OR_RETURN(Expr s0, wide(start));
  KILN_ASSIGN_OR_RETURN(Expr s1, wide(limit));
  KILN_ASSIGN_OR_RETURN(Expr step, wide(delta));
  KILN_ASSIGN_OR_RETURN(Expr span, m.Call("relax.subtract", {s1, s0}));
  KILN_ASSIGN_OR_RETURN(Expr zero_step,
                        m.Call("relax.equal", {step, ctx.Scalar(DataType::Float(64), 0)}));
  KILN_ASSIGN_OR_RETURN(Expr zero_steps, m.Count(zero_step));
  KILN_ASSIGN_OR_RETURN(
      Expr safe_step, m.Call("relax.where", {zero_step, ctx.Scalar(DataType::Float(64), 1), step}));
  KILN_ASSIGN_OR_RETURN(Expr count, m.Call("relax.divide", {span, safe_step}));
  KILN_ASSIGN_OR_RETURN(count, m.Call("relax.ceil", {count}));
  KILN_ASSIGN_OR_RETURN(count,
                        m.Call("relax.maximum", {count, ctx.Scalar(DataType::Float(64), 0)}));
  KILN_ASSIGN_OR_RETURN(count, m.Int64(count));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> n, ctx.DimsAtRunTime(count, {zero_steps}));
  KILN_ASSIGN_OR_RETURN(Expr k, m.Iota(n[0]));
  KILN_ASSIGN_OR_RETURN(k, m.Call("relax.astype", {k}, {{"dtype", StrAttr(dtype.ToString())}}));
  KILN_ASSIGN_OR_RETURN(Expr scaled, m.Call("relax.multiply", {k, delta}));
  KILN_ASSIGN_OR_RETURN(Expr y, m.Call("relax.add", {scaled, start}));
  return One(y);
}

// HannWindow, HammingWindow and BlackmanWindow (opset 17): sum over j of a_j cos(2 pi j k / N')
// for k < size, N' = size when periodic, else size - 1; the size known at import time or not.
template <const double* kA>
absl::StatusOr<Outputs> CosineWindow(Context& ctx) {
  ShapeMath m{ctx};
  KILN_ASSIGN_OR_RETURN(Expr size, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr n, m.One(size));
  KILN_ASSIGN_OR_RETURN(Expr negatives, m.Negatives(n));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> length, ctx.DimsAtRunTime(n, {negatives}));
  KILN_ASSIGN_OR_RETURN(Expr k, m.Iota(length[0]));
  const DataType f32 = DataType::Float(32);
  auto as_float = [&](const Expr& v) {
    return m.Call("relax.astype", {v}, {{"dtype", StrAttr("float32")}});
  };
  KILN_ASSIGN_OR_RETURN(k, as_float(k));
  KILN_ASSIGN_OR_RETURN(Expr period, as_float(n));
  if (ctx.Int("periodic", 1) == 0) {
    KILN_ASSIGN_OR_RETURN(period, m.Call("relax.subtract", {period, ctx.Scalar(f32, 1)}));
  }
  KILN_ASSIGN_OR_RETURN(Expr phase, m.Call("relax.multiply", {k, ctx.Scalar(f32, 2 * M_PI)}));
  KILN_ASSIGN_OR_RETURN(phase, m.Call("relax.divide", {phase, period}));
  Expr y = ctx.Scalar(f32, kA[0]);
  for (int j = 1; j < 3 && kA[j] != 0; ++j) {
    KILN_ASSIGN_OR_RETURN(Expr angle, m.Call("relax.multiply", {phase, ctx.Scalar(f32, j)}));
    KILN_ASSIGN_OR_RETURN(Expr term, m.Call("relax.cos", {angle}));
    KILN_ASSIGN_OR_RETURN(term, m.Call("relax.multiply", {term, ctx.Scalar(f32, kA[j])}));
    KILN_ASSIGN_OR_RETURN(y, m.Call("relax.add", {y, term}));
  }
  KILN_ASSIGN_OR_RETURN(
      DataType out,
      DataTypeFromOnnx(static_cast<int>(ctx.Int("output_datatype", onnx::TensorProto::FLOAT))));
  if (out != f32) {
    KILN_ASSIGN_OR_RETURN(y, m.Call("relax.astype", {y}, {{"dtype", StrAttr(out.ToString())}}));
  }
  return One(y);
}
constexpr double kHann[] = {0.5, -0.5, 0};
constexpr double kHamming[] = {25.0 / 46, -21.0 / 46, 0};
constexpr double kBlackman[] = {0.42, -0.5, 0.08};

// Range(start, limit, delta) of integers whose start or limit depends on a symbolic dimension (a
// decoder's positions: Range(0, seq), or Range(past, past + seq) with a cache): its extent is
// that expression, max(ceil((limit - start) / delta), 0), so the positions line up with the
// tensors of the same sequence. Nullopt for any other Range.
std::optional<PrimExpr> SymbolicRangeExtent(Context& ctx) {
  std::optional<std::vector<PrimExpr>> start = ctx.Elems(0);
  std::optional<std::vector<PrimExpr>> limit = ctx.Elems(1);
  absl::StatusOr<std::vector<int64_t>> delta = ctx.ConstInts(2);
  if (!start || !limit || !delta.ok() || start->size() != 1 || limit->size() != 1 ||
      delta->size() != 1 || (*delta)[0] == 0 ||
      (ir::AsConstInt((*start)[0]) != nullptr && ir::AsConstInt((*limit)[0]) != nullptr)) {
    return std::nullopt;
  }
  const int64_t step = (*delta)[0];
  const PrimExpr span = step > 0 ? (*limit)[0] - (*start)[0] : (*start)[0] - (*limit)[0];
  const int64_t magnitude = step > 0 ? step : -step;
  return ctx.analyzer()->Simplify(
      ir::Max(ir::FloorDiv(span + I64(magnitude - 1), I64(magnitude)), I64(0)));
}

// start + k * delta for k < extent, in the start's type.
absl::StatusOr<Outputs> RangeOfExtent(Context& ctx, const PrimExpr& extent) {
  ShapeMath m{ctx};
  KILN_ASSIGN_OR_RETURN(Expr k, m.Iota(extent));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> delta, ctx.ConstInts(2));
  KILN_ASSIGN_OR_RETURN(Expr scaled, m.Call("relax.multiply", {k, m.I(delta[0])}));
  KILN_ASSIGN_OR_RETURN(Expr start, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(start, m.Int64(start));
  KILN_ASSIGN_OR_RETURN(Expr y, m.Call("relax.add", {scaled, start}));
  const DataType dtype = ctx.In(0).elems_dtype;
  if (dtype == DataType::Int(64)) return One(y);
  return OneOf(m.Call("relax.astype", {y}, {{"dtype", StrAttr(dtype.ToString())}}));
}

absl::StatusOr<Outputs> Range(Context& ctx) {
  if (std::optional<PrimExpr> extent = SymbolicRangeExtent(ctx)) return RangeOfExtent(ctx, *extent);
  if (!ctx.ConstFloats(0).ok() || !ctx.ConstFloats(1).ok() || !ctx.ConstFloats(2).ok())
    return RangeAtRunTime(ctx);
  KILN_ASSIGN_OR_RETURN(std::vector<double> start, ctx.ConstFloats(0));
  KILN_ASSIGN_OR_RETURN(std::vector<double> limit, ctx.ConstFloats(1));
  KILN_ASSIGN_OR_RETURN(std::vector<double> delta, ctx.ConstFloats(2));
  if (start.size() != 1 || limit.size() != 1 || delta.size() != 1)
    return ctx.Error("start, limit and delta must be scalars");
  if (delta[0] == 0) return ctx.Error("delta must not be 0");
  KILN_ASSIGN_OR_RETURN(Expr first, ctx.Tensor(0));
  DataType dtype = ctx.DType(first);
  // Kiln computes a Range at import time: its size is checked before anything is made.
  double count = std::max(0.0, std::ceil((limit[0] - start[0]) / delta[0]));
  double bytes = count * ((dtype.bits() + 7) / 8);
  if (!(bytes <= static_cast<double>(ctx.max_constant_bytes()))) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "Range of ", count < 9e18 ? absl::StrCat(static_cast<int64_t>(count)) : "too many",
        " elements (", static_cast<int64_t>(std::min(bytes, 9e18) / (1 << 20)),
        " MiB) is larger than the ", ctx.max_constant_bytes() >> 20,
        " MiB a constant computed while importing may be (--max-constant-mb)"));
  }
  int64_t n = static_cast<int64_t>(count);
  if (dtype.is_integral() && n <= kMaxKnownElems) {
    std::vector<PrimExpr> elems;
    for (int64_t k = 0; k < n; ++k)
      elems.push_back(I64(static_cast<int64_t>(start[0]) + k * static_cast<int64_t>(delta[0])));
    Value v = KnownInts(std::move(elems), {n}, dtype);
    KILN_ASSIGN_OR_RETURN(v.expr, Materialize(v));
    return Outputs{std::move(v)};
  }
  std::vector<double> values;
  for (int64_t k = 0; k < n; ++k) values.push_back(start[0] + static_cast<double>(k) * delta[0]);
  return One(MakeNumericConstant(dtype, {n}, values));
}

}  // namespace

void RegisterTensorConverters(ConverterTable* t) {
  (*t)["Constant"] = Constant;
  (*t)["Shape"] = Shape;
  (*t)["Size"] = Size;
  (*t)["DepthToSpace"] = DepthSpace<true>;
  (*t)["SpaceToDepth"] = DepthSpace<false>;
  (*t)["OneHot"] = OneHot;
  (*t)["GatherElements"] = GatherElements;
  (*t)["GatherND"] = GatherND;
  (*t)["ScatterElements"] = ScatterElements;
  (*t)["Scatter"] = ScatterElements;
  (*t)["ScatterND"] = ScatterND;
  (*t)["ReverseSequence"] = ReverseSequence;
  (*t)["Trilu"] = Trilu;
  (*t)["EyeLike"] = EyeLike;
  (*t)["Identity"] = Identity;
  (*t)["Dropout"] = Identity;
  (*t)["ConstantOfShape"] = ConstantOfShape;
  (*t)["Range"] = Range;
  (*t)["HannWindow"] = CosineWindow<kHann>;
  (*t)["HammingWindow"] = CosineWindow<kHamming>;
  (*t)["BlackmanWindow"] = CosineWindow<kBlackman>;
}

}  // namespace kiln::frontend::onnx_import
