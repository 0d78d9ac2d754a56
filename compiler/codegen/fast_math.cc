#include "compiler/codegen/fast_math.h"

#include <cmath>

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"

namespace kiln::codegen {
namespace {

// Builds the expansions for one float type (scalar or vector).
class FastMath {
 public:
  FastMath(llvm::IRBuilderBase& b, llvm::Type* t) : b_(b), t_(t) {
    llvm::Type* i32 = b.getInt32Ty();
    auto* vt = llvm::dyn_cast<llvm::VectorType>(t);
    it_ = vt ? llvm::VectorType::get(i32, vt->getElementCount()) : i32;
  }

  // exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2]; exp(r) by a
  // degree-7 polynomial. 2^n is applied as two factors so that n from -150 to 128 (denormal
  // results and the top of the range) needs no special case; beyond, the product saturates to
  // 0 or inf by itself.
  llvm::Value* Exp(llvm::Value* x) {
    llvm::Value* xc = b_.CreateMinNum(b_.CreateMaxNum(x, F(-104.0)), F(89.0));
    llvm::Value* n = Unary(llvm::Intrinsic::floor, Fma(xc, F(1.44269504088896341), F(0.5)));
    // ln 2 split in a part exact in float and a correction, so that n * ln2 loses nothing.
    llvm::Value* r = Fma(n, F(-0.693359375), xc);
    r = Fma(n, F(2.12194440e-4), r);
    llvm::Value* p = Horner(r, {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                                1.6666665459e-1, 5.0000001201e-1});
    llvm::Value* y = b_.CreateFAdd(Fma(p, b_.CreateFMul(r, r), r), F(1.0));
    llvm::Value* ni = b_.CreateFPToSI(n, it_);
    llvm::Value* n1 = b_.CreateAShr(ni, I(1));
    llvm::Value* n2 = b_.CreateSub(ni, n1);
    y = b_.CreateFMul(y, Pow2(n1));
    y = b_.CreateFMul(y, Pow2(n2));
    return KeepNaN(x, y);
  }

  // Small |x|: odd polynomial; elsewhere 1 - 2 / (exp(2|x|) + 1), which is exactly 1 once exp
  // overflows.
  llvm::Value* Tanh(llvm::Value* x) {
    llvm::Value* ax = Unary(llvm::Intrinsic::fabs, x);
    llvm::Value* z = b_.CreateFMul(x, x);
    llvm::Value* p = Horner(z, {-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2,
                                1.33314422036e-1, -3.33332819422e-1});
    llvm::Value* small = Fma(b_.CreateFMul(p, z), x, x);
    llvm::Value* e = Exp(b_.CreateFMul(ax, F(2.0)));
    llvm::Value* large = b_.CreateFSub(F(1.0), b_.CreateFDiv(F(2.0), b_.CreateFAdd(e, F(1.0))));
    large = CopySign(large, x);
    return KeepNaN(x, b_.CreateSelect(b_.CreateFCmpOLT(ax, F(0.625)), small, large));
  }

  // |x| < 1: the Maclaurin series 2/sqrt(pi) * sum (-1)^k x^(2k+1) / (k! (2k+1)), 11 terms
  // (the first dropped term is below 1.3e-8). Elsewhere Abramowitz & Stegun 7.1.26,
  // 1 - (a1 t + ... + a5 t^5) exp(-x^2) with t = 1 / (1 + p |x|), absolute error <= 1.5e-7.
  llvm::Value* Erf(llvm::Value* x) {
    std::vector<double> series;
    double factorial = 1.0;
    for (int k = 0; k <= 10; ++k) {
      if (k > 0) factorial *= k;
      double sign = k % 2 == 0 ? 1.0 : -1.0;
      series.insert(series.begin(), sign * 2.0 / std::sqrt(M_PI) / (factorial * (2 * k + 1)));
    }
    llvm::Value* ax = Unary(llvm::Intrinsic::fabs, x);
    llvm::Value* z = b_.CreateFMul(x, x);
    llvm::Value* small = b_.CreateFMul(HornerFull(z, series), x);
    llvm::Value* t = b_.CreateFDiv(F(1.0), Fma(ax, F(0.3275911), F(1.0)));
    llvm::Value* poly = b_.CreateFMul(
        HornerFull(t, {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592}), t);
    llvm::Value* large = b_.CreateFSub(F(1.0), b_.CreateFMul(poly, Exp(b_.CreateFNeg(z))));
    large = CopySign(large, x);
    return KeepNaN(x, b_.CreateSelect(b_.CreateFCmpOLT(ax, F(1.0)), small, large));
  }

  llvm::Value* Sigmoid(llvm::Value* x) {
    return b_.CreateFDiv(F(1.0), b_.CreateFAdd(F(1.0), Exp(b_.CreateFNeg(x))));
  }

 private:
  llvm::Value* F(double v) { return llvm::ConstantFP::get(t_, v); }
  llvm::Value* I(int v) { return llvm::ConstantInt::get(it_, v); }
  llvm::Value* Fma(llvm::Value* a, llvm::Value* b, llvm::Value* c) {
    // fmuladd: fused where the target has FMA, never a libcall where it has not.
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {t_}, {a, b, c});
  }
  llvm::Value* Unary(llvm::Intrinsic::ID id, llvm::Value* v) {
    return b_.CreateUnaryIntrinsic(id, v);
  }
  llvm::Value* CopySign(llvm::Value* mag, llvm::Value* sign) {
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, mag, sign);
  }
  // 2^n for n in [-126, 127], built from the exponent bits.
  llvm::Value* Pow2(llvm::Value* n) {
    return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(n, I(127)), I(23)), t_);
  }
  llvm::Value* KeepNaN(llvm::Value* x, llvm::Value* y) {
    return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, y);
  }
  // c[0] z^(m-1) + ... + c[m-1].
  llvm::Value* HornerFull(llvm::Value* z, const std::vector<double>& c) {
    llvm::Value* acc = F(c[0]);
    for (size_t i = 1; i < c.size(); ++i) acc = Fma(acc, z, F(c[i]));
    return acc;
  }
  llvm::Value* Horner(llvm::Value* z, std::initializer_list<double> c) {
    return HornerFull(z, std::vector<double>(c));
  }

  llvm::IRBuilderBase& b_;
  llvm::Type* t_;
  llvm::Type* it_;
};

}  // namespace

bool HasFastMath(absl::string_view op) {
  return op == "exp" || op == "tanh" || op == "erf" || op == "sigmoid";
}

llvm::Value* EmitFastMath(llvm::IRBuilderBase& b, absl::string_view op, llvm::Value* x) {
  FastMath m(b, x->getType());
  if (op == "exp") return m.Exp(x);
  if (op == "tanh") return m.Tanh(x);
  if (op == "erf") return m.Erf(x);
  if (op == "sigmoid") return m.Sigmoid(x);
  return nullptr;
}

}  // namespace kiln::codegen
