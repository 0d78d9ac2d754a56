// The operator kernels of testdata/kernels.py, compiled with the default schedule and run on 1
// and 2 threads against plain C++ references.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>

#include "compiler/backend/toolchain.h"
#include "compiler/script/script_parser.h"
#include "gtest/gtest.h"
#include "runtime/library.h"
#include "runtime/testing/serial_context.h"

namespace kiln::codegen {
namespace {

using runtime::Tensor;
using runtime::Value;

class KernelsTest : public ::testing::TestWithParam<int> {
 protected:
  static void SetUpTestSuite() {
    std::ifstream in("compiler/codegen/testdata/kernels.py");
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<ir::IRModule> mod = script::ParseScript(text.str(), "kernels.py");
    ASSERT_TRUE(mod.ok()) << mod.status();
    absl::StatusOr<std::string> so = backend::BuildKernelLibrary(*mod, "llvm");
    ASSERT_TRUE(so.ok()) << so.status();
    lib_ = new std::shared_ptr<runtime::KernelLibrary>(
        *runtime::KernelLibrary::LoadFromMemory(*so, "kernels"));
  }
  absl::Status Run(const char* kernel, std::vector<Value> args) {
    auto pool = std::make_shared<runtime::ThreadPool>(GetParam());
    absl::StatusOr<runtime::Function> fn = (*lib_)->GetFunction(kernel, pool);
    if (!fn.ok()) return fn.status();
    return (*fn)(args).status();
  }
  template <typename T>
  static Tensor Filled(std::vector<int64_t> shape, const char* dtype, uint32_t seed, double lo,
                       double hi) {
    Tensor t = *Tensor::Empty(shape, *runtime::ParseDataType(dtype));
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> dist(lo, hi);
    for (int64_t i = 0; i < t.NumElements(); ++i)
      static_cast<T*>(t.data())[i] = static_cast<T>(dist(rng));
    return t;
  }
  template <typename T>
  static const T* P(const Tensor& t) {
    return static_cast<const T*>(t.data());
  }
  static std::shared_ptr<runtime::KernelLibrary>* lib_;
};
std::shared_ptr<runtime::KernelLibrary>* KernelsTest::lib_ = nullptr;

TEST_P(KernelsTest, Int8BroadcastAddWraps) {
  Tensor a = Filled<int8_t>({3, 5}, "int8", 1, -128, 127),
         b = Filled<int8_t>({5}, "int8", 2, -128, 127);
  Tensor c = Filled<int8_t>({3, 5}, "int8", 3, 0, 0);
  ASSERT_TRUE(Run("add_int8", {a, b, c}).ok());
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 5; ++j) {
      EXPECT_EQ(P<int8_t>(c)[i * 5 + j],
                static_cast<int8_t>(P<int8_t>(a)[i * 5 + j] + P<int8_t>(b)[j]));
    }
  }
}

TEST_P(KernelsTest, Float64MultiplyAdd) {
  Tensor a = Filled<double>({7}, "float64", 4, -3, 3), b = Filled<double>({7}, "float64", 5, -3, 3);
  Tensor c = Filled<double>({7}, "float64", 6, 0, 0);
  ASSERT_TRUE(Run("mul_f64", {a, b, c}).ok());
  for (int i = 0; i < 7; ++i)
    EXPECT_DOUBLE_EQ(P<double>(c)[i], P<double>(a)[i] * P<double>(b)[i] + 0.5);
}

TEST_P(KernelsTest, BoolOutputs) {
  Tensor a = Filled<float>({6}, "float32", 7, -1, 1), b = Filled<float>({6}, "float32", 8, -1, 1);
  Tensor c = *Tensor::Empty({6}, *runtime::ParseDataType("bool"));
  ASSERT_TRUE(Run("greater", {a, b, c}).ok());
  for (int i = 0; i < 6; ++i) {
    bool ref = P<float>(a)[i] > P<float>(b)[i] && P<float>(a)[i] > 0;
    EXPECT_EQ(P<uint8_t>(c)[i], ref ? 1 : 0) << i;
  }
}

TEST_P(KernelsTest, RowSumReduction) {
  Tensor a = Filled<float>({5, 33}, "float32", 9, -1, 1),
         s = Filled<float>({5}, "float32", 10, 5, 5);
  ASSERT_TRUE(Run("row_sum", {a, s}).ok());
  for (int i = 0; i < 5; ++i) {
    double ref = 0;
    for (int k = 0; k < 33; ++k) ref += P<float>(a)[i * 33 + k];
    EXPECT_NEAR(P<float>(s)[i], ref, 1e-5) << i;
  }
}

TEST_P(KernelsTest, Softmax) {
  Tensor a = Filled<float>({4, 16}, "float32", 11, -4, 4),
         y = Filled<float>({4, 16}, "float32", 12, 0, 0);
  ASSERT_TRUE(Run("softmax", {a, y}).ok());
  for (int i = 0; i < 4; ++i) {
    double m = -1e30, sum = 0;
    for (int j = 0; j < 16; ++j) m = std::max(m, static_cast<double>(P<float>(a)[i * 16 + j]));
    for (int j = 0; j < 16; ++j) sum += std::exp(P<float>(a)[i * 16 + j] - m);
    for (int j = 0; j < 16; ++j) {
      EXPECT_NEAR(P<float>(y)[i * 16 + j], std::exp(P<float>(a)[i * 16 + j] - m) / sum, 1e-6)
          << i << "," << j;
    }
  }
}

TEST_P(KernelsTest, Conv2dNchw) {
  Tensor x = Filled<float>({1, 3, 8, 8}, "float32", 13, -1, 1),
         w = Filled<float>({4, 3, 3, 3}, "float32", 14, -1, 1);
  Tensor y = Filled<float>({1, 4, 6, 6}, "float32", 15, 9, 9);
  ASSERT_TRUE(Run("conv2d_nchw", {x, w, y}).ok());
  for (int k = 0; k < 4; ++k) {
    for (int oh = 0; oh < 6; ++oh) {
      for (int ow = 0; ow < 6; ++ow) {
        double ref = 0;
        for (int c = 0; c < 3; ++c) {
          for (int r = 0; r < 3; ++r) {
            for (int s = 0; s < 3; ++s) {
              ref += static_cast<double>(P<float>(x)[(c * 8 + oh + r) * 8 + ow + s]) *
                     P<float>(w)[((k * 3 + c) * 3 + r) * 3 + s];
            }
          }
        }
        EXPECT_NEAR(P<float>(y)[(k * 6 + oh) * 6 + ow], ref, 1e-5);
      }
    }
  }
}

TEST_P(KernelsTest, MaxPool) {
  Tensor x = Filled<float>({1, 2, 8, 8}, "float32", 16, -5, 5),
         y = Filled<float>({1, 2, 4, 4}, "float32", 17, 0, 0);
  ASSERT_TRUE(Run("max_pool", {x, y}).ok());
  for (int c = 0; c < 2; ++c) {
    for (int oh = 0; oh < 4; ++oh) {
      for (int ow = 0; ow < 4; ++ow) {
        float ref = -std::numeric_limits<float>::infinity();
        for (int r = 0; r < 2; ++r) {
          for (int s = 0; s < 2; ++s)
            ref = std::max(ref, P<float>(x)[(c * 8 + oh * 2 + r) * 8 + ow * 2 + s]);
        }
        EXPECT_EQ(P<float>(y)[(c * 4 + oh) * 4 + ow], ref);
      }
    }
  }
}

// Register-tiled reductions (tir/default_schedule.cc): packed panels of B (and of a transposed
// weight), a batch dimension, accumulation onto the output's old value, and a conv.
TEST_P(KernelsTest, RegisterTiledMatmuls) {
  auto check = [](const Tensor& c, int64_t batch, int64_t m, int64_t n,
                  const std::function<double(int64_t, int64_t, int64_t)>& ref) {
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          ASSERT_NEAR(P<float>(c)[(b * m + i) * n + j], ref(b, i, j), 1e-4)
              << b << "," << i << "," << j;
        }
      }
    }
  };
  {
    Tensor a = Filled<float>({64, 48}, "float32", 40, -1, 1),
           b = Filled<float>({48, 64}, "float32", 41, -1, 1);
    Tensor c = Filled<float>({64, 64}, "float32", 42, 5, 5);
    SCOPED_TRACE("matmul_packed");
    ASSERT_TRUE(Run("matmul_packed", {a, b, c}).ok());
    check(c, 1, 64, 64, [&](int64_t, int64_t i, int64_t j) {
      double sum = 0;
      for (int k = 0; k < 48; ++k) sum += double(P<float>(a)[i * 48 + k]) * P<float>(b)[k * 64 + j];
      return sum;
    });
  }
  {
    Tensor a = Filled<float>({32, 24}, "float32", 43, -1, 1),
           w = Filled<float>({48, 24}, "float32", 44, -1, 1);
    Tensor c = Filled<float>({32, 48}, "float32", 45, 5, 5);
    SCOPED_TRACE("dense");
    ASSERT_TRUE(Run("dense", {a, w, c}).ok());
    check(c, 1, 32, 48, [&](int64_t, int64_t i, int64_t j) {
      double sum = 0;
      for (int k = 0; k < 24; ++k) sum += double(P<float>(a)[i * 24 + k]) * P<float>(w)[j * 24 + k];
      return sum;
    });
  }
  {
    Tensor a = Filled<float>({2, 16, 24}, "float32", 46, -1, 1),
           b = Filled<float>({2, 24, 32}, "float32", 47, -1, 1);
    Tensor c = Filled<float>({2, 16, 32}, "float32", 48, 5, 5);
    SCOPED_TRACE("batch_matmul");
    ASSERT_TRUE(Run("batch_matmul", {a, b, c}).ok());
    check(c, 2, 16, 32, [&](int64_t bi, int64_t i, int64_t j) {
      double sum = 0;
      for (int k = 0; k < 24; ++k)
        sum += double(P<float>(a)[(bi * 16 + i) * 24 + k]) * P<float>(b)[(bi * 24 + k) * 32 + j];
      return sum;
    });
  }
  {
    Tensor a = Filled<float>({20, 8}, "float32", 49, -1, 1),
           b = Filled<float>({8, 8}, "float32", 50, -1, 1);
    Tensor c = Filled<float>({20, 8}, "float32", 51, -1, 1);
    Tensor before = Filled<float>({20, 8}, "float32", 51, -1, 1);
    SCOPED_TRACE("matmul_accumulate");
    ASSERT_TRUE(Run("matmul_accumulate", {a, b, c}).ok());
    check(c, 1, 20, 8, [&](int64_t, int64_t i, int64_t j) {
      double sum = P<float>(before)[i * 8 + j];
      for (int k = 0; k < 8; ++k) sum += double(P<float>(a)[i * 8 + k]) * P<float>(b)[k * 8 + j];
      return sum;
    });
  }
  {
    Tensor x = Filled<float>({1, 4, 10, 18}, "float32", 52, -1, 1),
           w = Filled<float>({8, 4, 3, 3}, "float32", 53, -1, 1);
    Tensor y = Filled<float>({1, 8, 8, 16}, "float32", 54, 5, 5);
    SCOPED_TRACE("conv2d_tiled");
    ASSERT_TRUE(Run("conv2d_tiled", {x, w, y}).ok());
    check(y, 8, 8, 16, [&](int64_t co, int64_t oh, int64_t ow) {
      double sum = 0;
      for (int c = 0; c < 4; ++c) {
        for (int r = 0; r < 3; ++r) {
          for (int s = 0; s < 3; ++s) {
            sum += double(P<float>(x)[(c * 10 + oh + r) * 18 + ow + s]) *
                   P<float>(w)[((co * 4 + c) * 3 + r) * 3 + s];
          }
        }
      }
      return sum;
    });
  }
}

// An intermediate compacted to one row per iteration (tir/compact_allocations.cc).
TEST_P(KernelsTest, CompactedIntermediate) {
  Tensor a = Filled<float>({32, 64}, "float32", 55, -1, 1),
         b = Filled<float>({32, 64}, "float32", 56, 0, 0);
  ASSERT_TRUE(Run("row_temp", {a, b}).ok());
  for (int i = 0; i < 32; ++i) {
    for (int j = 0; j < 64; ++j) {
      ASSERT_EQ(P<float>(b)[i * 64 + j],
                P<float>(a)[i * 64 + j] * 2 + P<float>(a)[i * 64 + 63 - j] * 2);
    }
  }
}

// With tir.noalias: the buffers carry LLVM alias scopes.
TEST_P(KernelsTest, NoaliasMatmul) {
  Tensor a = Filled<float>({8, 16}, "float32", 18, -1, 1),
         b = Filled<float>({16, 64}, "float32", 19, -1, 1);
  Tensor c = Filled<float>({8, 64}, "float32", 20, 3, 3);
  ASSERT_TRUE(Run("matmul_tiled", {a, b, c}).ok());
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 64; ++j) {
      double ref = 0;
      for (int k = 0; k < 16; ++k)
        ref += static_cast<double>(P<float>(a)[i * 16 + k]) * P<float>(b)[k * 64 + j];
      EXPECT_NEAR(P<float>(c)[i * 64 + j], ref, 1e-5) << i << "," << j;
    }
  }
}

// Explicit vectors: contiguous Ramp loads/stores, a strided gather, vector math.
TEST_P(KernelsTest, RampAndBroadcast) {
  Tensor a = Filled<float>({64}, "float32", 21, -2, 2),
         b = Filled<float>({64}, "float32", 22, 0, 0);
  Tensor g = Filled<float>({16}, "float32", 23, 0, 0);
  ASSERT_TRUE(Run("vector_ops", {a, b, g}).ok());
  for (int j = 0; j < 64; ++j)
    EXPECT_NEAR(P<float>(b)[j], std::exp(P<float>(a)[j]) + 1.0f,
                1e-5f * (1 + std::exp(P<float>(a)[j])));
  for (int i = 0; i < 4; ++i) {
    for (int l = 0; l < 4; ++l) EXPECT_EQ(P<float>(g)[i * 4 + l], P<float>(a)[i + 16 * l]);
  }
}

// A 512 KB intermediate lives on the heap (freed on every exit) and is shared by parallel tasks.
TEST_P(KernelsTest, LargeIntermediateOnTheHeap) {
  Tensor a = Filled<float>({131072}, "float32", 24, -1, 1),
         b = Filled<float>({131072}, "float32", 25, 0, 0);
  for (int repeat = 0; repeat < 20; ++repeat) ASSERT_TRUE(Run("big_scratch", {a, b}).ok());
  for (int i = 0; i < 131072; ++i) ASSERT_EQ(P<float>(b)[i], P<float>(a)[i] * 2 + 1) << i;
  Tensor wrong = Filled<float>({7}, "float32", 26, 0, 0);
  EXPECT_FALSE(Run("big_scratch", {a, wrong}).ok());  // the failure exit frees the scratch too
}

// A buffer that declares strides reads a strided view (the left half of a 4 x 16 array), and
// refuses a compact tensor.
TEST_P(KernelsTest, DeclaredStrides) {
  Tensor storage = Filled<float>({4, 16}, "float32", 27, -1, 1),
         b = Filled<float>({4, 8}, "float32", 28, 0, 0);
  DLTensor view = storage.dl();
  int64_t shape[2] = {4, 8}, strides[2] = {16, 1};
  view.shape = shape;
  view.strides = strides;
  DLTensor out = b.dl();
  KilnValue values[2];
  values[0].v_tensor = &view;
  values[1].v_tensor = &out;
  int32_t kinds[2] = {KILN_ARG_TENSOR, KILN_ARG_TENSOR};
  runtime::testing::SerialContext state;
  KilnKernelFn fn = *(*lib_)->Lookup("strided_copy");
  ASSERT_EQ(state.Call(fn, values, kinds, 2), 0) << state.error;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 8; ++j) EXPECT_EQ(P<float>(b)[i * 8 + j], P<float>(storage)[i * 16 + j]);
  }
  Tensor compact = Filled<float>({4, 8}, "float32", 29, 0, 0);
  absl::Status refused = Run("strided_copy", {compact, b});
  EXPECT_NE(std::string(refused.message()).find("argument 0 (A) must have strides (16, 1)"),
            std::string::npos)
      << refused;
}

// A scratch buffer sized by a symbolic dimension lives on the heap for its scope.
TEST_P(KernelsTest, SymbolicSizeScratch) {
  for (int64_t n : {1, 5, 100000}) {
    Tensor a = Filled<float>({n}, "float32", 30, -1, 1),
           b = Filled<float>({n}, "float32", 31, 0, 0);
    ASSERT_TRUE(Run("dyn_scratch", {a, b}).ok());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(P<float>(b)[i], P<float>(a)[n - 1 - i] * 3) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, KernelsTest, ::testing::Values(1, 2));

// A kernel past 20,000 LLVM instructions is compiled without LLVM's superlinear optimizations
// (codegen_llvm.cc): still the same results. 5,000 branches: B[i] is the first k > A[i].
TEST(HugeKernelTest, ComputesWhatItSays) {
  constexpr int kBranches = 5000;
  std::string text =
      "@I.ir_module\nclass Module:\n    @T.prim_func\n"
      "    def f(A: T.Buffer((4,), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
      "        for i in range(4):\n"
      "            if A[i] < T.float32(0):\n                B[i] = T.float32(0)\n";
  for (int k = 1; k <= kBranches; ++k) {
    text += "            elif A[i] < T.float32(" + std::to_string(k) + "):\n" +
            "                B[i] = T.float32(" + std::to_string(k) + ")\n";
  }
  text += "            else:\n                B[i] = A[i]\n";
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text, "huge.py");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<std::string> so = backend::BuildKernelLibrary(*mod, "llvm");
  ASSERT_TRUE(so.ok()) << so.status();
  absl::StatusOr<std::shared_ptr<runtime::KernelLibrary>> lib =
      runtime::KernelLibrary::LoadFromMemory(*so, "huge");
  ASSERT_TRUE(lib.ok()) << lib.status();
  absl::StatusOr<runtime::Function> fn =
      (*lib)->GetFunction("f", std::make_shared<runtime::ThreadPool>(1));
  ASSERT_TRUE(fn.ok()) << fn.status();
  Tensor a = *Tensor::Empty({4}, *runtime::ParseDataType("float32"));
  Tensor b = *Tensor::Empty({4}, *runtime::ParseDataType("float32"));
  const float in[4] = {-1.0f, 0.5f, 2500.5f, 7000.0f};
  std::copy(in, in + 4, static_cast<float*>(a.data()));
  ASSERT_TRUE((*fn)({a, b}).ok());
  const float want[4] = {0.0f, 1.0f, 2501.0f, 7000.0f};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(static_cast<const float*>(b.data())[i], want[i]) << i;
}

}  // namespace
}  // namespace kiln::codegen
