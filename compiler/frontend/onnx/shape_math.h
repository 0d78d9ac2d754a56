// Int64 tensor arithmetic on shapes, axes and sizes that only the run knows (an ONNX input the
// graph computes): the converters that accept such inputs build their dimensions with it, then
// bind them as shape variables with Context::DimsAtRunTime. Internal to the importer.
#ifndef KILN_COMPILER_FRONTEND_ONNX_SHAPE_MATH_H_
#define KILN_COMPILER_FRONTEND_ONNX_SHAPE_MATH_H_

#include <vector>

#include "absl/strings/string_view.h"
#include "compiler/frontend/onnx/convert_context.h"

namespace kiln::frontend::onnx_import {

struct ShapeMath {
  Context& ctx;

  absl::StatusOr<Expr> Call(const char* op, std::vector<Expr> args, ir::Attrs attrs = {});
  // The int64 scalar `v`.
  Expr I(int64_t v);
  // `dims` (expressions of shape variables) as an int64 tensor [dims.size()].
  absl::StatusOr<Expr> Tensor(const std::vector<PrimExpr>& dims);
  absl::StatusOr<Expr> Int64(const Expr& t);
  // Reduces [n] to [1].
  absl::StatusOr<Expr> Reduce(const char* op, const Expr& t);
  // The number of true elements of boolean `t` [n], as an int64 tensor [1].
  absl::StatusOr<Expr> Count(const Expr& t);
  // 0, 1, ..., n - 1 as int64, n a shape variable.
  absl::StatusOr<Expr> Iota(const PrimExpr& n);
  // A scalar (any shape of one element) as int64 [1].
  absl::StatusOr<Expr> One(const Expr& scalar);
  // The number of negative values of `d` [n], as an int64 tensor [1].
  absl::StatusOr<Expr> Negatives(const Expr& d);
  // The length of 1-D tensor `t` when the import knows it.
  absl::StatusOr<int64_t> Length(const Expr& t, absl::string_view what);
  // [n] as [n, 1].
  absl::StatusOr<Expr> Column(const Expr& t, int64_t n);
  // [rank] of run-time axes: 1 where a normalized axis of `axes` ([k], counting from the end
  // when negative) names the position, else 0; `*repeats_or_outside` becomes the count of axes
  // that name no position or one another names too: k minus the positions named.
  absl::StatusOr<Expr> Named(const Expr& axes, int64_t k, int64_t rank, Expr* repeats_or_outside);
  // The positions where boolean `mask` [length] is true, in order, as int64 [*count], and
  // their number `*count`, a shape variable bound at run time.
  absl::StatusOr<Expr> TruePositions(const Expr& mask, const PrimExpr& length, PrimExpr* count);
  // out[q] = sum over p of values[p] * (to[p] == q), q < out_n: values [n] moved to positions
  // `to` [n] (each position at most once; -1 for none).
  absl::StatusOr<Expr> Scatter(const Expr& values, const Expr& to, int64_t n, int64_t out_n);
};

}  // namespace kiln::frontend::onnx_import

#endif  // KILN_COMPILER_FRONTEND_ONNX_SHAPE_MATH_H_
