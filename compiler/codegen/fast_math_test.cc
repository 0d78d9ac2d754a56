// The float32 exp/tanh/erf/sigmoid expansions, compiled as scalar loops and as 16-lane vector
// loops, against the double-precision libm over a dense range and the special values.
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "compiler/backend/toolchain.h"
#include "compiler/script/script_parser.h"
#include "gtest/gtest.h"
#include "runtime/library.h"

namespace kiln::codegen {
namespace {

using runtime::Tensor;
using runtime::Value;

constexpr int64_t kN = 1 << 16;

// One scalar and one vectorized kernel per op; the schedule is written out, so the default
// schedule leaves them alone.
std::string KernelsScript() {
  const char* kTemplate = R"(
    @T.prim_func
    def OP_scalar(A: T.Buffer((N,), "float32"), B: T.Buffer((N,), "float32")):
        T.func_attr({"tir.is_scheduled": True})
        for i in range(N):
            B[i] = T.OP(A[i])

    @T.prim_func
    def OP_vector(A: T.Buffer((N,), "float32"), B: T.Buffer((N,), "float32")):
        T.func_attr({"tir.is_scheduled": True})
        for io in range(N // 16):
            for ii in T.vectorized(16):
                B[io * 16 + ii] = T.OP(A[io * 16 + ii])
)";
  std::string text = "@I.ir_module\nclass Module:";
  for (const char* op : {"exp", "tanh", "erf", "sigmoid"}) {
    absl::StrAppend(&text, absl::StrReplaceAll(kTemplate, {{"OP", op}, {"N", std::to_string(kN)}}));
  }
  return text;
}

double Reference(const std::string& op, double x) {
  if (op == "exp") return std::exp(x);
  if (op == "tanh") return std::tanh(x);
  if (op == "erf") return std::erf(x);
  return 1.0 / (1.0 + std::exp(-x));
}

class FastMathTest : public ::testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<ir::IRModule> mod = script::ParseScript(KernelsScript(), "fast_math.py");
    ASSERT_TRUE(mod.ok()) << mod.status();
    absl::StatusOr<std::string> so = backend::BuildKernelLibrary(*mod, "llvm");
    ASSERT_TRUE(so.ok()) << so.status();
    lib_ = new std::shared_ptr<runtime::KernelLibrary>(
        *runtime::KernelLibrary::LoadFromMemory(*so, "fast_math"));
  }
  static std::shared_ptr<runtime::KernelLibrary>* lib_;
};
std::shared_ptr<runtime::KernelLibrary>* FastMathTest::lib_ = nullptr;

TEST_P(FastMathTest, MatchesLibmScalarAndVector) {
  const std::string op = GetParam();
  Tensor a = *Tensor::Empty({kN}, *runtime::ParseDataType("float32"));
  float* x = static_cast<float*>(a.data());
  const float kSpecial[] = {0.0f,
                            -0.0f,
                            1e-30f,
                            -1e-30f,
                            1e-6f,
                            0.625f,
                            -0.625f,
                            1.0f,
                            -1.0f,
                            88.7f,
                            89.5f,
                            -87.5f,
                            -100.f,
                            -104.5f,
                            200.f,
                            -200.f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  const int64_t kSpecials = sizeof(kSpecial) / sizeof(kSpecial[0]);
  for (int64_t i = 0; i < kSpecials; ++i) x[i] = kSpecial[i];
  // A dense sweep of [-30, 30), where all four are interesting.
  for (int64_t i = kSpecials; i < kN; ++i)
    x[i] = -30.0f + 60.0f * (i - kSpecials) / (kN - kSpecials);
  for (const char* form : {"_scalar", "_vector"}) {
    SCOPED_TRACE(form);
    Tensor b = *Tensor::Empty({kN}, *runtime::ParseDataType("float32"));
    absl::StatusOr<runtime::Function> fn = (*lib_)->GetFunction(op + form, nullptr);
    ASSERT_TRUE(fn.ok()) << fn.status();
    ASSERT_TRUE((*fn)({Value(a), Value(b)}).ok());
    const float* y = static_cast<const float*>(b.data());
    double worst = 0;
    for (int64_t i = 0; i < kN; ++i) {
      double ref = Reference(op, x[i]);
      if (std::isnan(ref)) {
        EXPECT_TRUE(std::isnan(y[i])) << op << "(" << x[i] << ") = " << y[i];
        continue;
      }
      if (std::isinf(ref) || ref > std::numeric_limits<float>::max()) {
        EXPECT_EQ(y[i], static_cast<float>(ref)) << op << "(" << x[i] << ")";
        continue;
      }
      // Relative error, with an absolute floor below float's normal range.
      double err = std::abs(y[i] - ref) / std::max(std::abs(ref), 1e-37);
      if (std::abs(ref) < 1e-37) err = std::abs(y[i] - ref) / 1e-37 * 1e-7;
      worst = std::max(worst, err);
      ASSERT_LE(err, 1e-6) << op << "(" << x[i] << ") = " << y[i] << ", expected " << ref;
    }
    std::printf("%s%s: worst relative error %.3g\n", op.c_str(), form, worst);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, FastMathTest, ::testing::Values("exp", "tanh", "erf", "sigmoid"));

}  // namespace
}  // namespace kiln::codegen
