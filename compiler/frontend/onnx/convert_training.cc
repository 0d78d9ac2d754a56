// The optimizers of ONNX's training domain (ai.onnx.preview.training): Adagrad, Momentum (and
// Nesterov's) and Adam, each one update step of n tensors at once, elementwise, with the
// learning rate R and the update count T as run-time scalars. The formulas are ONNX's.
#include "absl/strings/str_cat.h"
#include "compiler/frontend/onnx/convert_context.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend::onnx_import {
namespace {

// Elementwise arithmetic in one dtype, scalars made of that dtype.
struct Elementwise {
  Context& ctx;
  DataType dtype;

  Expr C(double v) const { return ctx.Scalar(dtype, v); }
  absl::StatusOr<Expr> Op(const char* op, Expr a, Expr b) { return ctx.Call(op, {a, b}); }
  absl::StatusOr<Expr> Add(Expr a, Expr b) { return Op("relax.add", a, b); }
  absl::StatusOr<Expr> Sub(Expr a, Expr b) { return Op("relax.subtract", a, b); }
  absl::StatusOr<Expr> Mul(Expr a, Expr b) { return Op("relax.multiply", a, b); }
  absl::StatusOr<Expr> Div(Expr a, Expr b) { return Op("relax.divide", a, b); }
  absl::StatusOr<Expr> Sqrt(Expr a) { return ctx.Call("relax.sqrt", {a}); }
  absl::StatusOr<Expr> As(Expr a) {
    if (ctx.DType(a) == dtype) return a;
    return ctx.Call("relax.astype", {a}, {{"dtype", StrAttr(dtype.ToString())}});
  }
  // norm_coefficient * X + G: the gradient with its L2 regularization.
  absl::StatusOr<Expr> Regularized(double norm, Expr x, Expr g) {
    if (norm == 0) return g;
    KILN_ASSIGN_OR_RETURN(Expr nx, Mul(C(norm), x));
    return Add(nx, g);
  }
};

// Inputs R, T, then `groups` runs of n tensors each (X..., G..., and the optimizer's states);
// the number n.
absl::StatusOr<size_t> TensorsPerGroup(Context& ctx, size_t groups, const char* layout) {
  const size_t inputs = ctx.num_inputs();
  if (inputs < 2 + groups || (inputs - 2) % groups != 0) {
    return ctx.Error(absl::StrCat("takes R, T, then ", layout, " for each tensor updated"));
  }
  return (inputs - 2) / groups;
}

absl::StatusOr<Outputs> Adagrad(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(size_t n, TensorsPerGroup(ctx, 3, "X, G and H"));
  KILN_ASSIGN_OR_RETURN(Expr r, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr t, ctx.Tensor(1));
  const double decay = ctx.Float("decay_factor", 0);
  const double epsilon = ctx.Float("epsilon", 1e-6);
  const double norm = ctx.Float("norm_coefficient", 0);
  Outputs xs, hs;
  for (size_t i = 0; i < n; ++i) {
    KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(2 + i));
    KILN_ASSIGN_OR_RETURN(Expr g, ctx.Tensor(2 + n + i));
    KILN_ASSIGN_OR_RETURN(Expr h, ctx.Tensor(2 + 2 * n + i));
    Elementwise e{ctx, ctx.DType(x)};
    // r = R / (1 + T * decay_factor)
    KILN_ASSIGN_OR_RETURN(Expr tf, e.As(t));
    KILN_ASSIGN_OR_RETURN(Expr rate, e.As(r));
    KILN_ASSIGN_OR_RETURN(Expr decayed, e.Mul(tf, e.C(decay)));
    KILN_ASSIGN_OR_RETURN(decayed, e.Add(e.C(1), decayed));
    KILN_ASSIGN_OR_RETURN(rate, e.Div(rate, decayed));
    KILN_ASSIGN_OR_RETURN(Expr reg, e.Regularized(norm, x, g));
    KILN_ASSIGN_OR_RETURN(Expr squared, e.Mul(reg, reg));
    KILN_ASSIGN_OR_RETURN(Expr h_new, e.Add(h, squared));
    KILN_ASSIGN_OR_RETURN(Expr adaptive, e.Sqrt(h_new));
    KILN_ASSIGN_OR_RETURN(adaptive, e.Add(adaptive, e.C(epsilon)));
    KILN_ASSIGN_OR_RETURN(Expr step, e.Mul(rate, reg));
    KILN_ASSIGN_OR_RETURN(step, e.Div(step, adaptive));
    KILN_ASSIGN_OR_RETURN(Expr x_new, e.Sub(x, step));
    xs.push_back(One(x_new)[0]);
    hs.push_back(One(h_new)[0]);
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

absl::StatusOr<Outputs> Momentum(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(size_t n, TensorsPerGroup(ctx, 3, "X, G and V"));
  KILN_ASSIGN_OR_RETURN(Expr r, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr t, ctx.Tensor(1));
  if (!ctx.HasAttr("alpha") || !ctx.HasAttr("beta") || !ctx.HasAttr("mode") ||
      !ctx.HasAttr("norm_coefficient")) {
    return ctx.Error("alpha, beta, mode and norm_coefficient are required");
  }
  const double alpha = ctx.Float("alpha", 0), beta = ctx.Float("beta", 0);
  const double norm = ctx.Float("norm_coefficient", 0);
  const std::string mode = ctx.Str("mode", "standard");
  if (mode != "standard" && mode != "nesterov") {
    return ctx.Error(absl::StrCat("mode \"", mode, "\" (standard, nesterov)"));
  }
  Outputs xs, vs;
  for (size_t i = 0; i < n; ++i) {
    KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(2 + i));
    KILN_ASSIGN_OR_RETURN(Expr g, ctx.Tensor(2 + n + i));
    KILN_ASSIGN_OR_RETURN(Expr v, ctx.Tensor(2 + 2 * n + i));
    Elementwise e{ctx, ctx.DType(x)};
    KILN_ASSIGN_OR_RETURN(Expr rate, e.As(r));
    KILN_ASSIGN_OR_RETURN(Expr reg, e.Regularized(norm, x, g));
    // The first update (T = 0) takes the gradient whole: beta applies from the second on.
    KILN_ASSIGN_OR_RETURN(Expr started,
                          ctx.Call("relax.greater", {t, ctx.Scalar(ctx.DType(t), 0)}));
    KILN_ASSIGN_OR_RETURN(Expr beta_t, ctx.Call("relax.where", {started, e.C(beta), e.C(1)}));
    KILN_ASSIGN_OR_RETURN(Expr kept, e.Mul(e.C(alpha), v));
    KILN_ASSIGN_OR_RETURN(Expr pushed, e.Mul(beta_t, reg));
    KILN_ASSIGN_OR_RETURN(Expr v_new, e.Add(kept, pushed));
    Expr direction = v_new;
    if (mode == "nesterov") {
      KILN_ASSIGN_OR_RETURN(Expr ahead, e.Mul(e.C(alpha), v_new));
      KILN_ASSIGN_OR_RETURN(direction, e.Add(reg, ahead));
    }
    KILN_ASSIGN_OR_RETURN(Expr step, e.Mul(rate, direction));
    KILN_ASSIGN_OR_RETURN(Expr x_new, e.Sub(x, step));
    xs.push_back(One(x_new)[0]);
    vs.push_back(One(v_new)[0]);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

absl::StatusOr<Outputs> Adam(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(size_t n, TensorsPerGroup(ctx, 4, "X, G, V and H"));
  KILN_ASSIGN_OR_RETURN(Expr r, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(Expr t, ctx.Tensor(1));
  const double alpha = ctx.Float("alpha", 0.9), beta = ctx.Float("beta", 0.999);
  const double epsilon = ctx.Float("epsilon", 1e-6);
  const double norm = ctx.Float("norm_coefficient", 0);
  const double norm_post = ctx.Float("norm_coefficient_post", 0);
  Outputs xs, vs, hs;
  for (size_t i = 0; i < n; ++i) {
    KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(2 + i));
    KILN_ASSIGN_OR_RETURN(Expr g, ctx.Tensor(2 + n + i));
    KILN_ASSIGN_OR_RETURN(Expr v, ctx.Tensor(2 + 2 * n + i));
    KILN_ASSIGN_OR_RETURN(Expr h, ctx.Tensor(2 + 3 * n + i));
    Elementwise e{ctx, ctx.DType(x)};
    KILN_ASSIGN_OR_RETURN(Expr rate, e.As(r));
    KILN_ASSIGN_OR_RETURN(Expr tf, e.As(t));
    KILN_ASSIGN_OR_RETURN(Expr reg, e.Regularized(norm, x, g));
    // Moving averages of the gradient and of its square.
    KILN_ASSIGN_OR_RETURN(Expr v_kept, e.Mul(e.C(alpha), v));
    KILN_ASSIGN_OR_RETURN(Expr v_added, e.Mul(e.C(1 - alpha), reg));
    KILN_ASSIGN_OR_RETURN(Expr v_new, e.Add(v_kept, v_added));
    KILN_ASSIGN_OR_RETURN(Expr squared, e.Mul(reg, reg));
    KILN_ASSIGN_OR_RETURN(Expr h_kept, e.Mul(e.C(beta), h));
    KILN_ASSIGN_OR_RETURN(Expr h_added, e.Mul(e.C(1 - beta), squared));
    KILN_ASSIGN_OR_RETURN(Expr h_new, e.Add(h_kept, h_added));
    KILN_ASSIGN_OR_RETURN(Expr h_sqrt, e.Sqrt(h_new));
    KILN_ASSIGN_OR_RETURN(h_sqrt, e.Add(h_sqrt, e.C(epsilon)));
    // Bias correction once T > 0: R * sqrt(1 - beta^T) / (1 - alpha^T).
    KILN_ASSIGN_OR_RETURN(Expr beta_t, ctx.Call("relax.power", {e.C(beta), tf}));
    KILN_ASSIGN_OR_RETURN(Expr alpha_t, ctx.Call("relax.power", {e.C(alpha), tf}));
    KILN_ASSIGN_OR_RETURN(Expr num, e.Sub(e.C(1), beta_t));
    KILN_ASSIGN_OR_RETURN(num, e.Sqrt(num));
    KILN_ASSIGN_OR_RETURN(Expr den, e.Sub(e.C(1), alpha_t));
    KILN_ASSIGN_OR_RETURN(Expr corrected, e.Mul(rate, num));
    KILN_ASSIGN_OR_RETURN(corrected, e.Div(corrected, den));
    KILN_ASSIGN_OR_RETURN(Expr started,
                          ctx.Call("relax.greater", {t, ctx.Scalar(ctx.DType(t), 0)}));
    KILN_ASSIGN_OR_RETURN(rate, ctx.Call("relax.where", {started, corrected, rate}));
    KILN_ASSIGN_OR_RETURN(Expr step, e.Mul(rate, v_new));
    KILN_ASSIGN_OR_RETURN(step, e.Div(step, h_sqrt));
    KILN_ASSIGN_OR_RETURN(Expr x_new, e.Sub(x, step));
    if (norm_post != 0) {
      KILN_ASSIGN_OR_RETURN(x_new, e.Mul(e.C(1 - norm_post), x_new));
    }
    xs.push_back(One(x_new)[0]);
    vs.push_back(One(v_new)[0]);
    hs.push_back(One(h_new)[0]);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

}  // namespace

void RegisterTrainingConverters(ConverterTable* t) {
  (*t)[std::string(kTrainingDomain) + ".Adagrad"] = Adagrad;
  (*t)[std::string(kTrainingDomain) + ".Momentum"] = Momentum;
  (*t)[std::string(kTrainingDomain) + ".Adam"] = Adam;
}

}  // namespace kiln::frontend::onnx_import
