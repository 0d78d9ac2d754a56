// DFT (opset 17): the discrete Fourier transform along one axis of a signal whose last dimension
// holds real (1) or real and imaginary (2) parts, as matmuls with constant cosine and sine
// matrices of the (import-time) signal length: for n-th input and k-th output,
//   forward: re_k = sum re_n cos(2 pi kn / N) + im_n sin(...), im_k = sum im_n cos - re_n sin;
//   inverse: the signs of the sines flip and the sums are divided by N.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/onnx/convert_context.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend::onnx_import {
namespace {

absl::StatusOr<Outputs> Dft(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  DataType t = ctx.DType(x);
  if (!t.is_float()) return ctx.Error("the signal must be floating-point");
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> xs, ctx.Shape(x));
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (rank < 3) return ctx.Error("the signal must be [batch, ..., length, 1 or 2]");
  const int64_t* parts = ir::AsConstInt(xs.back());
  if (parts == nullptr || (*parts != 1 && *parts != 2)) {
    return ctx.Error("the last dimension must be 1 (real) or 2 (complex)");
  }
  int64_t axis = ctx.Int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 1 || axis >= rank - 1) return ctx.Error(absl::StrCat("axis ", axis, " out of range"));
  const int64_t* length = ir::AsConstInt(xs[axis]);
  if (length == nullptr) return ctx.Unsupported("a signal length not known at import time");
  if (ctx.Has(1)) {
    absl::StatusOr<std::vector<int64_t>> n = ctx.ConstInts(1);
    if (!n.ok() || n->size() != 1) return ctx.Unsupported("a dft_length known only at run time");
    if ((*n)[0] != *length) return ctx.Unsupported("a dft_length other than the signal's");
  }
  const bool inverse = ctx.Int("inverse", 0) != 0;
  const bool onesided = ctx.Int("onesided", 0) != 0;
  if (onesided && inverse) return ctx.Unsupported("an inverse one-sided DFT");
  const int64_t n = *length;
  const int64_t k_count = onesided ? n / 2 + 1 : n;
  // Two k_count x n matrices: bounded like every constant the import makes.
  const double matrix_bytes =
      2.0 * static_cast<double>(k_count) * static_cast<double>(n) * static_cast<double>(t.bytes());
  if (matrix_bytes > static_cast<double>(ctx.max_constant_bytes())) {
    return ctx.Unsupported(absl::StrCat("a DFT of length ", n, ": its matrices (", matrix_bytes,
                                        " bytes) exceed the limit on constants (",
                                        ctx.max_constant_bytes(), " bytes)"));
  }
  // Move the signal axis next to the parts: [..., N, parts].
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d) {
    if (d != axis) perm.push_back(d);
  }
  perm.push_back(axis);
  perm.push_back(rank - 1);
  std::vector<int64_t> inverse_perm(rank);
  for (int64_t d = 0; d < rank; ++d) inverse_perm[perm[d]] = d;
  KILN_ASSIGN_OR_RETURN(Expr moved,
                        ctx.Call("relax.permute_dims", {x}, {{"axes", IntsAttr(perm)}}));
  auto part = [&](int64_t p) {
    return ctx.Call("relax.strided_slice", {moved},
                    {{"axes", IntsAttr({rank - 1})},
                     {"begin", IntsAttr({p})},
                     {"end", IntsAttr({p + 1})},
                     {"strides", IntsAttr({1})}});
  };
  KILN_ASSIGN_OR_RETURN(Expr re, part(0));  // [..., N, 1]
  Expr im;
  if (*parts == 2) {
    KILN_ASSIGN_OR_RETURN(im, part(1));
  }
  const double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
  const double sign = inverse ? -1.0 : 1.0;  // of the sine terms
  std::vector<double> cos_m, sin_m;
  for (int64_t k = 0; k < k_count; ++k) {
    for (int64_t j = 0; j < n; ++j) {
      const double angle = 2.0 * M_PI * static_cast<double>((k * j) % n) / static_cast<double>(n);
      cos_m.push_back(std::cos(angle) * scale);
      sin_m.push_back(sign * std::sin(angle) * scale);
    }
  }
  Expr c = MakeNumericConstant(t, {k_count, n}, cos_m);
  Expr s = MakeNumericConstant(t, {k_count, n}, sin_m);
  KILN_ASSIGN_OR_RETURN(Expr out_re, ctx.Call("relax.matmul", {c, re}));
  KILN_ASSIGN_OR_RETURN(Expr sr, ctx.Call("relax.matmul", {s, re}));
  KILN_ASSIGN_OR_RETURN(Expr out_im, ctx.Call("relax.negative", {sr}));
  if (im) {
    KILN_ASSIGN_OR_RETURN(Expr si, ctx.Call("relax.matmul", {s, im}));
    KILN_ASSIGN_OR_RETURN(out_re, ctx.Call("relax.add", {out_re, si}));
    KILN_ASSIGN_OR_RETURN(Expr ci, ctx.Call("relax.matmul", {c, im}));
    KILN_ASSIGN_OR_RETURN(out_im, ctx.Call("relax.add", {out_im, ci}));
  }
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.concat", {ir::relax::MakeTuple({out_re, out_im})},
                                         {{"axis", IntAttr(rank - 1)}}));
  return OneOf(ctx.Call("relax.permute_dims", {y}, {{"axes", IntsAttr(inverse_perm)}}));
}

}  // namespace

void RegisterDftConverter(ConverterTable* t) { (*t)["DFT"] = Dft; }

}  // namespace kiln::frontend::onnx_import
