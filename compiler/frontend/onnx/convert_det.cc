// Det (opset 11): the determinant of each square matrix in the last two axes, for matrices of
// up to 4 x 4 known at import time, by the Leibniz formula (a signed sum over the permutations of
// products of one element per row): no pivoting, so no data-dependent control flow.
#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/onnx/convert_context.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend::onnx_import {
namespace {

constexpr int64_t kMaxOrder = 4;  // 24 products; larger orders need an LU factorization

absl::StatusOr<Outputs> Det(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  if (!ctx.DType(x).is_float()) return ctx.Error("Det needs a floating-point input");
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (rank < 2) return ctx.Error("Det needs matrices in the last two axes");
  const int64_t* rows = ir::AsConstInt(xs[rank - 2]);
  const int64_t* cols = ir::AsConstInt(xs[rank - 1]);
  if (rows == nullptr || cols == nullptr) return ctx.Unsupported("matrices of unknown size");
  if (*rows != *cols) return ctx.Error("Det needs square matrices");
  const int64_t m = *rows;
  if (m < 1 || m > kMaxOrder) {
    return ctx.Unsupported(absl::StrCat("the determinant of ", m, " x ", m, " matrices (up to ",
                                        kMaxOrder, " x ", kMaxOrder, ")"));
  }
  // element(i, j): [..., 1, 1] -> squeezed to the batch shape.
  auto element = [&](int64_t i, int64_t j) -> absl::StatusOr<Expr> {
    KILN_ASSIGN_OR_RETURN(Expr e, ctx.Call("relax.strided_slice", {x},
                                           {{"axes", IntsAttr({rank - 2, rank - 1})},
                                            {"begin", IntsAttr({i, j})},
                                            {"end", IntsAttr({i + 1, j + 1})},
                                            {"strides", IntsAttr({1, 1})}}));
    return ctx.Call("relax.squeeze", {e}, {{"axis", IntsAttr({rank - 2, rank - 1})}});
  };
  std::vector<std::vector<Expr>> a(m, std::vector<Expr>(m));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      KILN_ASSIGN_OR_RETURN(a[i][j], element(i, j));
    }
  }
  std::vector<int64_t> perm(m);
  std::iota(perm.begin(), perm.end(), 0);
  Expr sum;
  do {
    int inversions = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = i + 1; j < m; ++j) inversions += perm[i] > perm[j];
    }
    Expr term = a[0][perm[0]];
    for (int64_t i = 1; i < m; ++i) {
      KILN_ASSIGN_OR_RETURN(term, ctx.Call("relax.multiply", {term, a[i][perm[i]]}));
    }
    const bool even = inversions % 2 == 0;
    if (sum) {
      KILN_ASSIGN_OR_RETURN(sum, ctx.Call(even ? "relax.add" : "relax.subtract", {sum, term}));
    } else if (even) {
      sum = term;
    } else {
      KILN_ASSIGN_OR_RETURN(sum, ctx.Call("relax.negative", {term}));
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
  return One(sum);
}

}  // namespace

void RegisterDetConverter(ConverterTable* t) { (*t)["Det"] = Det; }

}  // namespace kiln::frontend::onnx_import
