#include "compiler/frontend/onnx/shape_math.h"

#include "absl/strings/str_cat.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend::onnx_import {

using ir::relax::MakeShape;

absl::StatusOr<Expr> ShapeMath::Call(const char* op, std::vector<Expr> args, ir::Attrs attrs) {
  return ctx.Call(op, std::move(args), std::move(attrs));
}

Expr ShapeMath::I(int64_t v) { return ctx.Scalar(DataType::Int(64), static_cast<double>(v)); }

absl::StatusOr<Expr> ShapeMath::Tensor(const std::vector<PrimExpr>& dims) {
  return Call("relax.shape_to_tensor", {MakeShape(dims)});
}

absl::StatusOr<Expr> ShapeMath::Int64(const Expr& t) {
  if (ctx.DType(t) == DataType::Int(64)) return t;
  return Call("relax.astype", {t}, {{"dtype", StrAttr("int64")}});
}

absl::StatusOr<Expr> ShapeMath::Reduce(const char* op, const Expr& t) {
  return Call(op, {t}, {{"axis", IntsAttr({0})}, {"keepdims", IntAttr(1)}});
}

absl::StatusOr<Expr> ShapeMath::Count(const Expr& t) {
  KILN_ASSIGN_OR_RETURN(Expr ints, Int64(t));
  return Reduce("relax.sum", ints);
}

absl::StatusOr<Expr> ShapeMath::Iota(const PrimExpr& n) {
  KILN_ASSIGN_OR_RETURN(Expr ones,
                        Call("relax.full", {MakeShape({n}), I(1)}, {{"dtype", StrAttr("int64")}}));
  KILN_ASSIGN_OR_RETURN(Expr counts, Call("relax.cumsum", {ones}, {{"axis", IntAttr(0)}}));
  return Call("relax.subtract", {counts, I(1)});
}

absl::StatusOr<Expr> ShapeMath::One(const Expr& scalar) {
  KILN_ASSIGN_OR_RETURN(Expr ints, Int64(scalar));
  return Call("relax.reshape", {ints, MakeShape({I64(1)})});
}

absl::StatusOr<Expr> ShapeMath::Negatives(const Expr& d) {
  KILN_ASSIGN_OR_RETURN(Expr negative, Call("relax.less", {d, I(0)}));
  return Count(negative);
}

absl::StatusOr<int64_t> ShapeMath::Length(const Expr& t, absl::string_view what) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, ctx.Shape(t));
  const int64_t* n = shape.size() == 1 ? ir::AsConstInt(shape[0]) : nullptr;
  if (n == nullptr) return ctx.Unsupported(absl::StrCat(what, " of unknown length"));
  return *n;
}

absl::StatusOr<Expr> ShapeMath::Column(const Expr& t, int64_t n) {
  return Call("relax.reshape", {t, MakeShape({I64(n), I64(1)})});
}

absl::StatusOr<Expr> ShapeMath::Named(const Expr& axes, int64_t k, int64_t rank,
                                      Expr* repeats_or_outside) {
  KILN_ASSIGN_OR_RETURN(Expr a, Int64(axes));
  KILN_ASSIGN_OR_RETURN(Expr negative, Call("relax.less", {a, I(0)}));
  KILN_ASSIGN_OR_RETURN(Expr shifted, Call("relax.add", {a, I(rank)}));
  KILN_ASSIGN_OR_RETURN(a, Call("relax.where", {negative, shifted, a}));
  KILN_ASSIGN_OR_RETURN(Expr column, Column(a, k));
  KILN_ASSIGN_OR_RETURN(Expr positions, ctx.Iota(rank, {1, rank}));
  KILN_ASSIGN_OR_RETURN(Expr hit, Call("relax.equal", {column, positions}));
  KILN_ASSIGN_OR_RETURN(hit, Int64(hit));
  KILN_ASSIGN_OR_RETURN(Expr named, Call("relax.sum", {hit}, {{"axis", IntsAttr({0})}}));
  KILN_ASSIGN_OR_RETURN(Expr one, Call("relax.greater", {named, I(0)}));
  KILN_ASSIGN_OR_RETURN(Expr distinct, Count(one));
  KILN_ASSIGN_OR_RETURN(*repeats_or_outside, Call("relax.subtract", {I(k), distinct}));
  return Call("relax.minimum", {named, I(1)});
}

absl::StatusOr<Expr> ShapeMath::Scatter(const Expr& values, const Expr& to, int64_t n,
                                        int64_t out_n) {
  KILN_ASSIGN_OR_RETURN(Expr column, Column(to, n));
  KILN_ASSIGN_OR_RETURN(Expr positions, ctx.Iota(out_n, {1, out_n}));
  KILN_ASSIGN_OR_RETURN(Expr at, Call("relax.equal", {column, positions}));
  KILN_ASSIGN_OR_RETURN(at, Int64(at));
  KILN_ASSIGN_OR_RETURN(Expr value_column, Column(values, n));
  KILN_ASSIGN_OR_RETURN(Expr placed, Call("relax.multiply", {at, value_column}));
  return Call("relax.sum", {placed}, {{"axis", IntsAttr({0})}});
}

absl::StatusOr<Expr> ShapeMath::TruePositions(const Expr& mask, const PrimExpr& length,
                                              PrimExpr* count) {
  KILN_ASSIGN_OR_RETURN(Expr ones, Int64(mask));
  KILN_ASSIGN_OR_RETURN(Expr total, Reduce("relax.sum", ones));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> n, ctx.DimsAtRunTime(total));
  *count = n[0];
  // Position p holds the (cumsum(mask)[p] - 1)-th true element; out[q] = the p with that rank.
  KILN_ASSIGN_OR_RETURN(Expr rank, Call("relax.cumsum", {ones}, {{"axis", IntAttr(0)}}));
  KILN_ASSIGN_OR_RETURN(rank, Call("relax.subtract", {rank, I(1)}));
  KILN_ASSIGN_OR_RETURN(rank, Call("relax.where", {mask, rank, I(-1)}));
  KILN_ASSIGN_OR_RETURN(Expr rank_column,
                        Call("relax.reshape", {rank, MakeShape({length, I64(1)})}));
  KILN_ASSIGN_OR_RETURN(Expr q, Iota(*count));
  KILN_ASSIGN_OR_RETURN(q, Call("relax.reshape", {q, MakeShape({I64(1), *count})}));
  KILN_ASSIGN_OR_RETURN(Expr at, Call("relax.equal", {rank_column, q}));
  KILN_ASSIGN_OR_RETURN(at, Int64(at));
  KILN_ASSIGN_OR_RETURN(Expr p, Iota(length));
  KILN_ASSIGN_OR_RETURN(p, Call("relax.reshape", {p, MakeShape({length, I64(1)})}));
  KILN_ASSIGN_OR_RETURN(Expr placed, Call("relax.multiply", {at, p}));
  return Call("relax.sum", {placed}, {{"axis", IntsAttr({0})}});
}

}  // namespace kiln::frontend::onnx_import
