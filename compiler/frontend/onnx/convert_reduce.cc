// Reductions (Reduce*, including the L1/L2/log-sum ones composed around a sum, over axes known
// at import time or computed at run time), ArgMax/ArgMin, Softmax, LogSoftmax, Hardmax and TopK.
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/onnx/convert_context.h"
#include "compiler/frontend/onnx/shape_math.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend::onnx_import {
namespace {

using ir::IntImm;
using ir::NodeKind;

// ---- Reductions ----

// The axes of a Reduce* node: the `axes` attribute, or the second input (ReduceSum from opset
// 13, all of them from 18). Empty means all axes unless noop_with_empty_axes.
absl::StatusOr<std::optional<std::vector<int64_t>>> ReduceAxesOf(Context& ctx) {
  if (ctx.Has(1)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.ConstInts(1));
    return std::optional<std::vector<int64_t>>(axes);
  }
  return ctx.Ints("axes");
}

// `op` over axes computed at run time (ReduceSum's input from opset 13). Each dimension in turn
// is reduced where the axes name it: reduced with keepdims and broadcast back, so that both
// choices have one shape for a select. Then index 0 of each reduced dimension is kept, and
// without keepdims those dimensions are dropped. The axes are checked at run time to be
// distinct and in range.
absl::StatusOr<Expr> ReduceAtRunTime(Context& ctx, const char* op, const Expr& x) {
  ShapeMath m{ctx};
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.Shape(x));
  const int64_t rank = static_cast<int64_t>(dims.size());
  KILN_ASSIGN_OR_RETURN(Expr axes, ctx.Tensor(1));
  KILN_ASSIGN_OR_RETURN(int64_t k, m.Length(axes, "axes"));
  const bool keepdims = ctx.Int("keepdims", 1) != 0;
  if (k == 0) {  // no axes: nothing, or everything
    if (ctx.Int("noop_with_empty_axes", 0) != 0) return x;
    return ctx.Call(op, {x}, {{"keepdims", IntAttr(keepdims)}});
  }
  Expr bad_axes;
  KILN_ASSIGN_OR_RETURN(Expr named, m.Named(axes, k, rank, &bad_axes));
  KILN_ASSIGN_OR_RETURN(Expr is_named, m.Call("relax.equal", {named, m.I(1)}));
  Expr y = x;
  for (int64_t d = 0; d < rank; ++d) {
    KILN_ASSIGN_OR_RETURN(Expr reduced,
                          m.Call(op, {y}, {{"axis", IntsAttr({d})}, {"keepdims", IntAttr(1)}}));
    KILN_ASSIGN_OR_RETURN(Expr spread,
                          m.Call("relax.broadcast_to", {reduced, ir::relax::MakeShape(dims)}));
    KILN_ASSIGN_OR_RETURN(Expr here,
                          m.Call("relax.take", {is_named, m.I(d)}, {{"axis", IntAttr(0)}}));
    KILN_ASSIGN_OR_RETURN(y, m.Call("relax.where", {here, spread, y}));
  }
  KILN_ASSIGN_OR_RETURN(Expr dim, m.Tensor(dims));
  KILN_ASSIGN_OR_RETURN(Expr kept_dims, m.Call("relax.where", {is_named, m.I(1), dim}));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> e, ctx.DimsAtRunTime(kept_dims, {bad_axes}));
  for (int64_t d = 0; d < rank; ++d) {
    KILN_ASSIGN_OR_RETURN(Expr index, m.Iota(e[d]));
    KILN_ASSIGN_OR_RETURN(y, m.Call("relax.take", {y, index}, {{"axis", IntAttr(d)}}));
  }
  if (keepdims) return y;
  if (rank == k) return m.Call("relax.reshape", {y, ir::relax::MakeShape({})});
  // The kept dimensions, in order: dimension p goes to its rank among the kept.
  KILN_ASSIGN_OR_RETURN(Expr kept, m.Call("relax.subtract", {m.I(1), named}));
  KILN_ASSIGN_OR_RETURN(Expr order, m.Call("relax.cumsum", {kept}, {{"axis", IntAttr(0)}}));
  KILN_ASSIGN_OR_RETURN(order, m.Call("relax.subtract", {order, m.I(1)}));
  KILN_ASSIGN_OR_RETURN(Expr to, m.Call("relax.where", {is_named, m.I(-1), order}));
  KILN_ASSIGN_OR_RETURN(Expr out, m.Scatter(dim, to, rank, rank - k));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> out_dims, ctx.DimsAtRunTime(out));
  return m.Call("relax.reshape", {y, ir::relax::MakeShape(out_dims)});
}

// `op` over the node's axes of `x` (keepdims, noop_with_empty_axes as the node says).
absl::StatusOr<Expr> ReduceOf(Context& ctx, const char* op, const Expr& x) {
  if (ctx.Has(1) && !ctx.ConstInts(1).ok()) return ReduceAtRunTime(ctx, op, x);
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, ReduceAxesOf(ctx));
  bool keepdims = ctx.Int("keepdims", 1) != 0;
  if ((!axes || axes->empty()) && ctx.Int("noop_with_empty_axes", 0) != 0) return x;
  ir::Attrs attrs = {{"keepdims", IntAttr(keepdims)}};
  if (axes && !axes->empty()) attrs.push_back({"axis", IntsAttr(*axes)});
  return ctx.Call(op, {x}, attrs);
}

template <const char* kOp>
absl::StatusOr<Outputs> Reduce(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  return OneOf(ReduceOf(ctx, kOp, x));
}

// The reductions ONNX defines as a sum between an elementwise step before and one after:
// ReduceL1 = sum |x|, ReduceL2 = sqrt(sum x^2), ReduceSumSquare = sum x^2,
// ReduceLogSum = log(sum x), ReduceLogSumExp = log(sum exp(x)).
struct SumReduction {
  const char* before;  // "relax.abs", "relax.square", "relax.exp" or null
  const char* after;   // "relax.sqrt", "relax.log" or null
};

template <const SumReduction& kSpec>
absl::StatusOr<Outputs> ReduceComposite(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  if (kSpec.before != nullptr) {
    KILN_ASSIGN_OR_RETURN(x, ctx.Call(kSpec.before, {x}));
  }
  KILN_ASSIGN_OR_RETURN(Expr y, ReduceOf(ctx, "relax.sum", x));
  if (kSpec.after != nullptr) {
    KILN_ASSIGN_OR_RETURN(y, ctx.Call(kSpec.after, {y}));
  }
  return One(y);
}

constexpr SumReduction kReduceL1 = {"relax.abs", nullptr};
constexpr SumReduction kReduceL2 = {"relax.square", "relax.sqrt"};
constexpr SumReduction kReduceSumSquare = {"relax.square", nullptr};
constexpr SumReduction kReduceLogSum = {nullptr, "relax.log"};
constexpr SumReduction kReduceLogSumExp = {"relax.exp", "relax.log"};

constexpr char kReduceMean[] = "relax.mean";
constexpr char kReduceSum[] = "relax.sum";
constexpr char kReduceMax[] = "relax.max";
constexpr char kReduceMin[] = "relax.min";
constexpr char kReduceProd[] = "relax.prod";

// ArgMax/ArgMin; select_last_index reverses the axis, so the first match from the end wins.
template <const char* kOp>
absl::StatusOr<Outputs> Arg(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, ctx.Shape(x));
  int64_t axis = ctx.Int("axis", 0);
  int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < -rank || axis >= rank)
    return ctx.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  if (axis < 0) axis += rank;
  ir::Attrs attrs = {{"axis", IntAttr(axis)}, {"keepdims", IntAttr(ctx.Int("keepdims", 1) != 0)}};
  if (ctx.Int("select_last_index", 0) == 0) return OneOf(ctx.Call(kOp, {x}, attrs));
  KILN_ASSIGN_OR_RETURN(Expr reversed,
                        ctx.Call("relax.strided_slice", {x},
                                 {{"axes", IntsAttr({axis})},
                                  {"begin", IntsAttr({-1})},
                                  {"end", IntsAttr({std::numeric_limits<int64_t>::min()})},
                                  {"strides", IntsAttr({-1})}}));
  KILN_ASSIGN_OR_RETURN(Expr index, ctx.Call(kOp, {reversed}, attrs));
  // index in the reversed axis -> (n - 1) - index
  const int64_t* n = ir::AsConstInt(shape[axis]);
  if (n == nullptr) return ctx.Unsupported("select_last_index along a symbolic axis");
  KILN_ASSIGN_OR_RETURN(Expr y,
                        ctx.Call("relax.subtract", {ctx.Scalar(DataType::Int(64), *n - 1), index}));
  return One(y);
}

constexpr char kArgMax[] = "relax.argmax";
constexpr char kArgMin[] = "relax.argmin";

// The Softmax family's axis: from opset 13 a plain axis (default -1); before, (default 1) the
// input is seen as 2-D, flattened at `axis`. `along(in, axis)` computes on the tensor it is given
// (the matrix, along axis 1, when flattening matters) and the result takes x's shape back.
using AlongAxis = std::function<absl::StatusOr<Expr>(const Expr& in, int64_t axis)>;
absl::StatusOr<Expr> SoftmaxFamily(Context& ctx, const Expr& x, const AlongAxis& along) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, ctx.Shape(x));
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = ctx.Int("axis", ctx.opset() >= 13 ? -1 : 1);
  if (axis < -rank || axis >= rank)
    return ctx.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  if (axis < 0) axis += rank;
  if (ctx.opset() >= 13 || axis == rank - 1) return along(x, axis);
  PrimExpr outer = I64(1), inner = I64(1);
  for (int64_t k = 0; k < rank; ++k)
    (k < axis ? outer : inner) = (k < axis ? outer : inner) * shape[k];
  KILN_ASSIGN_OR_RETURN(
      Expr flat,
      ctx.Call("relax.reshape", {x, ir::relax::MakeShape({ctx.analyzer()->Simplify(outer),
                                                          ctx.analyzer()->Simplify(inner)})}));
  KILN_ASSIGN_OR_RETURN(Expr y, along(flat, 1));
  return ctx.Call("relax.reshape", {y, ir::relax::MakeShape(shape)});
}

// Softmax/LogSoftmax.
template <const char* kOp>
absl::StatusOr<Outputs> Softmax(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  return OneOf(SoftmaxFamily(ctx, x, [&](const Expr& in, int64_t axis) {
    return ctx.Call(kOp, {in}, {{"axis", IntAttr(axis)}});
  }));
}

// Hardmax: 1 at the first maximum along the axis, 0 elsewhere (the Softmax family's axis).
absl::StatusOr<Outputs> Hardmax(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  return OneOf(SoftmaxFamily(ctx, x, [&](const Expr& in, int64_t axis) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> in_shape, ctx.Shape(in));
    const int64_t* n = ir::AsConstInt(in_shape[axis]);
    if (n == nullptr) return ctx.Unsupported("Hardmax along an axis not known at import time");
    KILN_ASSIGN_OR_RETURN(Expr arg, ctx.Call("relax.argmax", {in},
                                             {{"axis", IntAttr(axis)}, {"keepdims", IntAttr(1)}}));
    std::vector<int64_t> ids_shape(in_shape.size(), 1);
    ids_shape[axis] = *n;
    KILN_ASSIGN_OR_RETURN(Expr ids, ctx.Iota(*n, ids_shape));
    KILN_ASSIGN_OR_RETURN(Expr hit, ctx.Call("relax.equal", {arg, ids}));
    return ctx.Call("relax.astype", {hit}, {{"dtype", StrAttr(ctx.DType(x).ToString())}});
  }));
}

constexpr char kSoftmax[] = "relax.nn.softmax";
constexpr char kLogSoftmax[] = "relax.nn.log_softmax";

}  // namespace

// TopK along an axis of static length n: each element's rank is the number of elements that
// come before it (greater, or smaller when largest=0; an equal one at a lower index first), and
// output position p takes the element ranked p. O(n^2) comparisons, no sort kernel: for the
// short axes TopK sees in models. K may be known only at run time (checked to be 0 to n).
absl::StatusOr<Outputs> TopK(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  const int64_t rank = static_cast<int64_t>(xs.size());
  int64_t axis = ctx.Int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return ctx.Error("axis out of range");
  const int64_t* n = ir::AsConstInt(xs[axis]);
  if (n == nullptr) return ctx.Unsupported("TopK along an axis whose length is not known");
  const bool largest = ctx.Int("largest", 1) != 0;
  ShapeMath m{ctx};
  // K: known, or bound at run time.
  PrimExpr k;
  if (absl::StatusOr<std::vector<int64_t>> known = ctx.ConstInts(1); known.ok()) {
    if (known->size() != 1 || (*known)[0] < 0 || (*known)[0] > *n) {
      return ctx.Error(absl::StrCat("K must be one value from 0 to ", *n));
    }
    k = I64((*known)[0]);
  } else {
    KILN_ASSIGN_OR_RETURN(Expr given, ctx.Tensor(1));
    KILN_ASSIGN_OR_RETURN(Expr k_t, m.Int64(given));
    KILN_ASSIGN_OR_RETURN(k_t, m.Call("relax.reshape", {k_t, ir::relax::MakeShape({I64(1)})}));
    KILN_ASSIGN_OR_RETURN(Expr below, m.Negatives(k_t));
    KILN_ASSIGN_OR_RETURN(Expr n_t, m.Tensor({I64(*n)}));
    KILN_ASSIGN_OR_RETURN(Expr room, m.Call("relax.subtract", {n_t, k_t}));
    KILN_ASSIGN_OR_RETURN(Expr above, m.Negatives(room));
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.DimsAtRunTime(k_t, {below, above}));
    k = dims[0];
  }
  // An index along a new axis at `at` of a rank + 1 tensor: [1, ..., len, ..., 1].
  auto index_along = [&](const PrimExpr& len, int64_t at) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(Expr iota, m.Iota(len));
    std::vector<PrimExpr> shape(static_cast<size_t>(rank + 1), I64(1));
    shape[static_cast<size_t>(at)] = len;
    return m.Call("relax.reshape", {iota, ir::relax::MakeShape(shape)});
  };
  auto expand = [&](const Expr& e, int64_t at) {
    return m.Call("relax.expand_dims", {e}, {{"axis", IntsAttr({at})}});
  };
  // Element i along `axis`, element j along axis + 1.
  KILN_ASSIGN_OR_RETURN(Expr xi, expand(x, axis + 1));
  KILN_ASSIGN_OR_RETURN(Expr xj, expand(x, axis));
  KILN_ASSIGN_OR_RETURN(Expr before, m.Call(largest ? "relax.greater" : "relax.less", {xj, xi}));
  KILN_ASSIGN_OR_RETURN(Expr equal, m.Call("relax.equal", {xj, xi}));
  KILN_ASSIGN_OR_RETURN(Expr ii, index_along(I64(*n), axis));
  KILN_ASSIGN_OR_RETURN(Expr jj, index_along(I64(*n), axis + 1));
  KILN_ASSIGN_OR_RETURN(Expr lower, m.Call("relax.less", {jj, ii}));
  KILN_ASSIGN_OR_RETURN(Expr tie, m.Call("relax.where", {equal, lower, equal}));  // and
  KILN_ASSIGN_OR_RETURN(before, m.Call("relax.where", {before, before, tie}));    // or
  KILN_ASSIGN_OR_RETURN(before, m.Int64(before));
  KILN_ASSIGN_OR_RETURN(Expr ranks,
                        m.Call("relax.sum", {before}, {{"axis", IntsAttr({axis + 1})}}));
  // Position p (along axis + 1) takes the element (along axis) ranked p.
  KILN_ASSIGN_OR_RETURN(Expr ranked, expand(ranks, axis + 1));
  KILN_ASSIGN_OR_RETURN(Expr p, index_along(k, axis + 1));
  KILN_ASSIGN_OR_RETURN(Expr at, m.Call("relax.equal", {ranked, p}));
  KILN_ASSIGN_OR_RETURN(Expr picked, m.Call("relax.where", {at, xi, ctx.Scalar(ctx.DType(x), 0)}));
  KILN_ASSIGN_OR_RETURN(Expr values, m.Call("relax.sum", {picked}, {{"axis", IntsAttr({axis})}}));
  KILN_ASSIGN_OR_RETURN(Expr where_i, m.Call("relax.where", {at, ii, m.I(0)}));
  KILN_ASSIGN_OR_RETURN(Expr indices, m.Call("relax.sum", {where_i}, {{"axis", IntsAttr({axis})}}));
  Outputs out = One(values);
  out.push_back(One(indices)[0]);
  return out;
}

void RegisterReduceConverters(ConverterTable* t) {
  (*t)["Hardmax"] = Hardmax;
  (*t)["ReduceMean"] = Reduce<kReduceMean>;
  (*t)["ReduceSum"] = Reduce<kReduceSum>;
  (*t)["ReduceMax"] = Reduce<kReduceMax>;
  (*t)["ReduceMin"] = Reduce<kReduceMin>;
  (*t)["ReduceProd"] = Reduce<kReduceProd>;
  (*t)["ReduceL1"] = ReduceComposite<kReduceL1>;
  (*t)["ReduceL2"] = ReduceComposite<kReduceL2>;
  (*t)["ReduceSumSquare"] = ReduceComposite<kReduceSumSquare>;
  (*t)["ReduceLogSum"] = ReduceComposite<kReduceLogSum>;
  (*t)["ReduceLogSumExp"] = ReduceComposite<kReduceLogSumExp>;
  (*t)["ArgMax"] = Arg<kArgMax>;
  (*t)["TopK"] = TopK;
  (*t)["ArgMin"] = Arg<kArgMin>;
  (*t)["Softmax"] = Softmax<kSoftmax>;
  (*t)["LogSoftmax"] = Softmax<kLogSoftmax>;
}

}  // namespace kiln::frontend::onnx_import
