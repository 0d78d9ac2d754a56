// End to end through real code generation: TVMScript -> lowering -> LLVM -> ld.lld -> a kernel
// library loaded from memory by the runtime, run against plain C++ references.
#include "compiler/codegen/codegen_llvm.h"

#include <elf.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "compiler/backend/toolchain.h"
#include "compiler/script/script_parser.h"
#include "compiler/tir/transform/transform.h"
#include "compiler/wire/ir_proto.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/kiln/v1/ir.pb.h"
#include "runtime/library.h"
#include "runtime/testing/serial_context.h"

namespace kiln::codegen {
namespace {

using runtime::Function;
using runtime::Tensor;
using runtime::Value;
using ::testing::HasSubstr;

constexpr const char* kKernels = R"(
@I.ir_module
class Module:
    @T.prim_func
    def add_bias(A: T.Buffer((4, 8), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((4, 8), "float32")):
        for i, j in T.grid(4, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj], B[vj])
                T.writes(C[vi, vj])
                C[vi, vj] = A[vi, vj] + B[vj]

    @T.prim_func
    def matmul(A: T.Buffer((16, 32), "float32"), B: T.Buffer((32, 8), "float32"), C: T.Buffer((16, 8), "float32")):
        for i, j, k in T.grid(16, 8, 32):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func
    def scale(a: T.handle, b: T.handle, alpha: T.float32):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in T.parallel(n):
            B[i] = A[i] * alpha

    @T.prim_func
    def scale_vectorized(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in T.vectorized(n):
            B[i] = T.tanh(A[i]) + T.erf(A[i])

    @T.prim_func
    def int_ops(A: T.Buffer((9,), "int32"), D: T.Buffer((9,), "int32"), M: T.Buffer((9,), "int32")):
        for i in range(9):
            D[i] = A[i] // 4
            M[i] = A[i] % 4

    @T.prim_func
    def every_other(A: T.Buffer((4, 33), "float32"), B: T.Buffer((4, 16), "float32")):
        for i in range(4):
            for j in T.vectorized(16):
                B[i, j] = A[i, j * 2 + 1]

    @T.prim_func
    def tile_transpose(A: T.Buffer((4, 16), "float32"), B: T.Buffer((16, 4), "float32")):
        with T.decl_buffer((64,), "float32", scope="local") as L:
            for i in range(4):
                for j in T.vectorized(16):
                    L[i * 16 + j] = A[i, j]
            for c in range(16):
                for i in T.vectorized(4):
                    B[c, i] = L[i * 16 + c]

    @T.prim_func
    def rows_of_seven(A: T.Buffer((4, 7), "float32"), B: T.Buffer((4, 7), "float32")):
        for i in range(4):
            for j in T.vectorized(7):
                B[i, j] = A[i, j] * T.float32(2)

    @T.prim_func
    def small_parallel(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i in T.parallel(64):
            B[i] = A[i] + T.float32(1)
    @T.prim_func
    def large_parallel(A: T.Buffer((256, 1024), "float32"), B: T.Buffer((256, 1024), "float32")):
        for i in T.parallel(256):
            for j in range(1024):
                B[i, j] = A[i, j] + T.float32(1)
    @T.prim_func
    def once_around_parallel(A: T.Buffer((1, 256, 1024), "float32"), B: T.Buffer((1, 256, 1024), "float32")):
        for n in range(1):
            for i in T.parallel(256):
                for j in range(1024):
                    B[n, i, j] = A[n, i, j] + T.float32(1)
    @T.prim_func
    def padded_row(A: T.Buffer((3, 10), "float32"), B: T.Buffer((3, 16), "float32")):
        for i in range(3):
            for j in T.vectorized(16):
                B[i, j] = T.Select(-1 <= j - 3 and j - 3 < 12, A[i, T.min(T.max(j - 3, 0), 9)], T.float32(-1))
    @T.prim_func
    def padded_every_other(A: T.Buffer((3, 10), "float32"), B: T.Buffer((3, 2, 7), "float32")):
        for i, p in T.grid(3, 2):
            for j in T.vectorized(7):
                B[i, p, j] = T.Select(0 <= j * 2 + p - 1 and j * 2 + p - 1 < 10, A[i, T.min(T.max(j * 2 + p - 1, 0), 9)], T.float32(-1))
    @T.prim_func
    def math(A: T.Buffer((5,), "float32"), E: T.Buffer((5,), "float32"), H: T.Buffer((5,), "float32"), S: T.Buffer((5,), "float32")):
        for i in T.vectorized(5):
            E[i] = T.exp(A[i])
            H[i] = T.tanh(A[i])
            S[i] = T.sigmoid(A[i]) + T.max(A[i], T.float32(0)) * T.float32(0)
    @T.prim_func
    def dot4(A: T.Buffer((4,), "int32"), B: T.Buffer((4, 32), "int32"), C: T.Buffer((4, 32), "int32"), S: T.Buffer((4, 32), "int32")):
        for i in range(4):
            for j in T.vectorized(32):
                C[i, j] = C[i, j] + T.dot4_u8i8(A[i], B[i, j])
            for j in range(32):
                S[i, j] = T.dot4_u8i8(A[i], B[i, j])
)";

class CodegenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<ir::IRModule> mod = script::ParseScript(kKernels, "kernels.py");
    ASSERT_TRUE(mod.ok()) << mod.status();
    absl::StatusOr<std::string> so = backend::BuildKernelLibrary(*mod, "llvm");
    ASSERT_TRUE(so.ok()) << so.status();
    absl::StatusOr<std::shared_ptr<runtime::KernelLibrary>> lib =
        runtime::KernelLibrary::LoadFromMemory(*so, "kernels");
    ASSERT_TRUE(lib.ok()) << lib.status();
    library_ = new std::shared_ptr<runtime::KernelLibrary>(*lib);
  }
  Function Kernel(const char* name) {
    absl::StatusOr<Function> f = (*library_)->GetFunction(name, nullptr);
    EXPECT_TRUE(f.ok()) << f.status();
    return *f;
  }
  static Tensor Make(std::vector<int64_t> shape, const char* dtype) {
    return *Tensor::Empty(shape, *runtime::ParseDataType(dtype));
  }
  static Tensor Random(std::vector<int64_t> shape, uint32_t seed) {
    Tensor t = Make(shape, "float32");
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    float* p = static_cast<float*>(t.data());
    for (int64_t i = 0; i < t.NumElements(); ++i) p[i] = dist(rng);
    return t;
  }
  static const float* F(const Tensor& t) { return static_cast<const float*>(t.data()); }
  // The unoptimized LLVM IR of kernel `name` of kKernels (the whole module when empty).
  static std::string KernelIr(const std::string& name, const std::string& target_text = "llvm") {
    absl::StatusOr<ir::IRModule> mod = script::ParseScript(kKernels, "kernels.py");
    absl::StatusOr<ir::IRModule> lowered =
        mod.ok() ? tir::LowerTir(*mod) : absl::StatusOr<ir::IRModule>(mod.status());
    absl::StatusOr<LlvmTargetInfo> target = ParseTarget(target_text);
    absl::StatusOr<std::string> ir = lowered.ok() && target.ok()
                                         ? EmitLlvmIr(*lowered, *target)
                                         : absl::StatusOr<std::string>(lowered.status());
    EXPECT_TRUE(ir.ok()) << ir.status();
    if (!ir.ok() || name.empty()) return ir.ok() ? *ir : "";
    const size_t at = ir->find("define i32 @" + name + "(");
    EXPECT_NE(at, std::string::npos) << name;
    if (at == std::string::npos) return "";
    const std::string body = ir->substr(at);
    return body.substr(0, body.find("\n}\n"));
  }
  // What padded_every_other writes from `a` into `b`: each row's even columns, then its odd
  // ones, shifted by the padding of 1 (-1 outside the row).
  static void ExpectEveryOtherPadded(const Tensor& a, const Tensor& b) {
    for (int i = 0; i < 3; ++i) {
      for (int p = 0; p < 2; ++p) {
        for (int j = 0; j < 7; ++j) {
          const int column = j * 2 + p - 1;
          const float want = column >= 0 && column < 10 ? F(a)[i * 10 + column] : -1.0f;
          EXPECT_EQ(F(b)[(i * 2 + p) * 7 + j], want) << i << " " << p << " " << j;
        }
      }
    }
  }
  static bool HostHasAvx512() {
    absl::StatusOr<LlvmTargetInfo> host = ParseTarget("llvm");
    return host.ok() &&
           std::count(host->device_features.begin(), host->device_features.end(), "avx512f") > 0;
  }
  static std::shared_ptr<runtime::KernelLibrary>* library_;
};
std::shared_ptr<runtime::KernelLibrary>* CodegenTest::library_ = nullptr;

TEST_F(CodegenTest, BroadcastAdd) {
  Tensor a = Random({4, 8}, 1), b = Random({8}, 2), c = Make({4, 8}, "float32");
  ASSERT_TRUE(Kernel("add_bias")({Value(a), Value(b), Value(c)}).ok());
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 8; ++j) EXPECT_EQ(F(c)[i * 8 + j], F(a)[i * 8 + j] + F(b)[j]);
  }
}

TEST_F(CodegenTest, MatmulMatchesReference) {
  Tensor a = Random({16, 32}, 3), b = Random({32, 8}, 4), c = Make({16, 8}, "float32");
  ASSERT_TRUE(Kernel("matmul")({Value(a), Value(b), Value(c)}).ok());
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 8; ++j) {
      double ref = 0;
      for (int k = 0; k < 32; ++k) ref += static_cast<double>(F(a)[i * 32 + k]) * F(b)[k * 8 + j];
      EXPECT_NEAR(F(c)[i * 8 + j], ref, 1e-4) << i << "," << j;
    }
  }
}

TEST_F(CodegenTest, SymbolicVectorizedLoopHandlesEveryTailLength) {
  // Guard pages are not needed: the tensors are exactly n long, and ASan builds catch overruns.
  for (int64_t n : {1, 15, 16, 17, 33, 1000}) {
    Tensor a = Random({n}, 9), b = Make({n}, "float32");
    ASSERT_TRUE(Kernel("scale_vectorized")({Value(a), Value(b)}).ok());
    for (int64_t i = 0; i < n; ++i) {
      double x = F(a)[i];
      ASSERT_NEAR(F(b)[i], std::tanh(x) + std::erf(x), 1e-6) << n << ":" << i;
    }
  }
}

TEST_F(CodegenTest, SymbolicSizeBoundFromTheShape) {
  for (int64_t n : {1, 7, 1000}) {
    Tensor a = Random({n}, 5), b = Make({n}, "float32");
    ASSERT_TRUE(Kernel("scale")({Value(a), Value(b), Value(0.5)}).ok());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(F(b)[i], F(a)[i] * 0.5f);
  }
  // The parallel loop on a real pool, with more iterations than tasks.
  auto pool = std::make_shared<runtime::ThreadPool>(2);
  Function parallel = *(*library_)->GetFunction("scale", pool);
  Tensor big = Random({100003}, 8), out = Make({100003}, "float32");
  ASSERT_TRUE(parallel({Value(big), Value(out), Value(2.0)}).ok());
  for (int64_t i = 0; i < 100003; ++i) ASSERT_EQ(F(out)[i], F(big)[i] * 2.0f) << i;
  // n is bound by A and checked against B.
  Tensor a = Random({4}, 6), b = Make({5}, "float32");
  EXPECT_THAT(Kernel("scale")({Value(a), Value(b), Value(1.0)}).status().message(),
              HasSubstr("scale: argument 1 (B) dimension 0 must be n"));
}

TEST_F(CodegenTest, FloorDivisionRoundsDown) {
  Tensor a = Make({9}, "int32"), d = Make({9}, "int32"), m = Make({9}, "int32");
  int32_t* pa = static_cast<int32_t*>(a.data());
  for (int i = 0; i < 9; ++i) pa[i] = i * 3 - 13;  // -13 .. 11
  ASSERT_TRUE(Kernel("int_ops")({Value(a), Value(d), Value(m)}).ok());
  for (int i = 0; i < 9; ++i) {
    int32_t x = pa[i];
    int32_t q = static_cast<int32_t>(std::floor(x / 4.0));
    EXPECT_EQ(static_cast<int32_t*>(d.data())[i], q) << x;
    EXPECT_EQ(static_cast<int32_t*>(m.data())[i], x - 4 * q) << x;
  }
}

TEST_F(CodegenTest, MathIntrinsics) {
  Tensor a = Random({5}, 7), e = Make({5}, "float32"), h = Make({5}, "float32"),
         s = Make({5}, "float32");
  ASSERT_TRUE(Kernel("math")({Value(a), Value(e), Value(h), Value(s)}).ok());
  for (int i = 0; i < 5; ++i) {
    float x = F(a)[i];
    EXPECT_NEAR(F(e)[i], std::exp(x), 1e-6 * std::exp(x));
    EXPECT_NEAR(F(h)[i], std::tanh(x), 1e-6);
    EXPECT_NEAR(F(s)[i], 1 / (1 + std::exp(-x)), 1e-6);
  }
}

// The int8 dot product of four channels per int32 word: unsigned bytes of A, signed of B.
int32_t Dot4Reference(int32_t a, int32_t b) {
  int32_t sum = 0;
  for (int k = 0; k < 4; ++k) {
    sum += static_cast<int32_t>(static_cast<uint8_t>(a >> (8 * k))) *
           static_cast<int32_t>(static_cast<int8_t>(b >> (8 * k)));
  }
  return sum;
}

void CheckDot4(const Function& kernel) {
  std::mt19937 rng(5);
  Tensor a = *Tensor::Empty({4}, DLDataType{kDLInt, 32, 1});
  Tensor b = *Tensor::Empty({4, 32}, DLDataType{kDLInt, 32, 1});
  Tensor c = *Tensor::Empty({4, 32}, DLDataType{kDLInt, 32, 1});
  Tensor s = *Tensor::Empty({4, 32}, DLDataType{kDLInt, 32, 1});
  auto words = [](const Tensor& t) { return static_cast<int32_t*>(t.data()); };
  for (int i = 0; i < 4; ++i) words(a)[i] = static_cast<int32_t>(rng());
  words(a)[3] = -1;  // every byte 255: the unsigned extreme
  for (int i = 0; i < 128; ++i) {
    words(b)[i] = static_cast<int32_t>(rng());
    words(c)[i] = static_cast<int32_t>(rng() % 100000) - 50000;
  }
  words(b)[96] = static_cast<int32_t>(0x80808080u);  // every byte -128: the signed extreme
  std::vector<int32_t> c0(words(c), words(c) + 128);
  ASSERT_TRUE(kernel({Value(a), Value(b), Value(c), Value(s)}).ok());
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 32; ++j) {
      const int32_t dot = Dot4Reference(words(a)[i], words(b)[i * 32 + j]);
      EXPECT_EQ(words(s)[i * 32 + j], dot) << i << ", " << j;
      EXPECT_EQ(words(c)[i * 32 + j], c0[i * 32 + j] + dot) << i << ", " << j;
    }
  }
}

TEST_F(CodegenTest, Dot4IsVpdpbusdWithVnniAndExactEverywhere) {
  CheckDot4(Kernel("dot4"));
  const bool vnni = [] {
    absl::StatusOr<LlvmTargetInfo> host = ParseTarget("llvm");
    return host.ok() && std::count(host->device_features.begin(), host->device_features.end(),
                                   "avx512_vnni") > 0;
  }();
  const std::string kernel = KernelIr("dot4");
  EXPECT_EQ(kernel.find("@llvm.x86.avx512.vpdpbusd.512") != std::string::npos, vnni);

  // Built for Haswell (AVX2, no VNNI): the portable form, the same results.
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(kKernels, "kernels.py");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<std::string> so = backend::BuildKernelLibrary(*mod, "llvm -mcpu=haswell");
  ASSERT_TRUE(so.ok()) << so.status();
  absl::StatusOr<std::shared_ptr<runtime::KernelLibrary>> lib =
      runtime::KernelLibrary::LoadFromMemory(*so, "haswell");
  ASSERT_TRUE(lib.ok()) << lib.status();
  absl::StatusOr<Function> f = (*lib)->GetFunction("dot4", nullptr);
  ASSERT_TRUE(f.ok()) << f.status();
  CheckDot4(*f);
}

TEST_F(CodegenTest, Dot4IsUsdotWithI8mmAndUdotWithTheArmDotProduct) {
  // Run under qemu by tests:edge_e2e_test (an int8 model on boards with each); here, the form.
  const std::string arm = "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72";
  const std::string i8mm = KernelIr("dot4", arm + " -mattr=+i8mm,+dotprod");
  EXPECT_NE(i8mm.find("@llvm.aarch64.neon.usdot.v4i32.v16i8"), std::string::npos) << i8mm;
  EXPECT_EQ(i8mm.find("@llvm.aarch64.neon.udot"), std::string::npos);
  const std::string dotprod = KernelIr("dot4", arm + " -mattr=+dotprod");
  EXPECT_NE(dotprod.find("@llvm.aarch64.neon.udot.v4i32.v16i8"), std::string::npos) << dotprod;
  EXPECT_EQ(KernelIr("dot4", arm).find("@llvm.aarch64.neon"), std::string::npos);
}

TEST_F(CodegenTest, AStrideTwoVectorLoadIsOneLoadAndAShuffle) {
  // A stride-2 convolution reads its input row this way: every other element.
  Tensor a = Random({4, 33}, 9), b = Make({4, 16}, "float32");
  ASSERT_TRUE(Kernel("every_other")({a, b}).ok());
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 16; ++j) EXPECT_EQ(F(b)[i * 16 + j], F(a)[i * 33 + j * 2 + 1]);
  }
  // The 31 elements the lanes span: one masked load of 32 where the target has AVX-512.
  const std::string kernel = KernelIr("every_other");
  EXPECT_THAT(kernel,
              HasSubstr(HostHasAvx512() ? "@llvm.masked.load.v32f32" : "load <31 x float>"));
  EXPECT_THAT(kernel, ::testing::Not(HasSubstr("gather")));
}

TEST_F(CodegenTest, LanesAcrossAnAccumulatorTileAreElementLoadsNotAGather) {
  // A packed convolution's write-back: each output channel's row segment read 16 apart in the
  // local tile, which LLVM keeps in registers.
  Tensor a = Random({4, 16}, 13), b = Make({16, 4}, "float32");
  ASSERT_TRUE(Kernel("tile_transpose")({a, b}).ok());
  for (int c = 0; c < 16; ++c) {
    for (int i = 0; i < 4; ++i) EXPECT_EQ(F(b)[c * 4 + i], F(a)[i * 16 + c]) << c << ", " << i;
  }
  EXPECT_THAT(KernelIr("tile_transpose"), ::testing::Not(HasSubstr("gather")));
}

TEST_F(CodegenTest, AnOddLengthVectorIsOneMaskedAccessWithAvx512) {
  // A 7-wide row (a 7x7 feature map's): the last row's eighth lane would be past both buffers.
  Tensor a = Random({4, 7}, 12), b = Make({4, 7}, "float32");
  ASSERT_TRUE(Kernel("rows_of_seven")({a, b}).ok());
  for (int i = 0; i < 28; ++i) EXPECT_EQ(F(b)[i], F(a)[i] * 2.0f) << i;
  const std::string kernel = KernelIr("rows_of_seven");
  if (HostHasAvx512()) {
    EXPECT_THAT(kernel, HasSubstr("@llvm.masked.load.v8f32"));
    EXPECT_THAT(kernel, HasSubstr("@llvm.masked.store.v8f32"));
  } else {
    EXPECT_THAT(kernel, HasSubstr("load <7 x float>"));
  }
}

TEST_F(CodegenTest, AGuardedRowLoadIsOneMaskedLoad) {
  // A padded row: lanes past the row's ends take the clamped element where the guard holds
  // (j = 2, 13, 14) and the fill where it does not; the rest is one contiguous masked load.
  Tensor a = Random({3, 10}, 10), b = Make({3, 16}, "float32");
  ASSERT_TRUE(Kernel("padded_row")({a, b}).ok());
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 16; ++j) {
      const int src = j - 3;
      const float want = src >= -1 && src < 12 ? F(a)[i * 10 + std::min(std::max(src, 0), 9)] : -1;
      EXPECT_EQ(F(b)[i * 16 + j], want) << i << ", " << j;
    }
  }
  const std::string kernel = KernelIr("padded_row");
  EXPECT_THAT(kernel, HasSubstr("llvm.masked.load"));
  EXPECT_THAT(kernel, ::testing::Not(HasSubstr("gather")));
}

// The deinterleaved, padded rows of a stride-2 depthwise convolution: every other element of a
// guarded row is one masked load and a shuffle, not a gather.
TEST_F(CodegenTest, AGuardedStrideTwoRowLoadIsOneMaskedLoadAndAShuffle) {
  const std::string kernel = KernelIr("padded_every_other");
  EXPECT_THAT(kernel, HasSubstr("llvm.masked.load"));
  EXPECT_THAT(kernel, HasSubstr("shufflevector"));
  EXPECT_THAT(kernel, ::testing::Not(HasSubstr("gather")));
  Tensor a = Random({3, 10}, 16), b = Make({3, 2, 7}, "float32");
  ASSERT_TRUE(Kernel("padded_every_other")({a, b}).ok());
  ExpectEveryOtherPadded(a, b);
}

// The same for AVX2, which masks loads of 8 lanes only: masked loads of 8, each pair
// deinterleaved (a masked load of the whole 13-element span became scalar code).
TEST_F(CodegenTest, AGuardedStrideTwoRowLoadForAvx2IsMaskedLoadsOfEightLanes) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(kKernels, "kernels.py");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<ir::IRModule> lowered = tir::LowerTir(*mod);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  absl::StatusOr<LlvmTargetInfo> haswell = ParseTarget("llvm -mcpu=haswell");
  ASSERT_TRUE(haswell.ok()) << haswell.status();
  absl::StatusOr<std::string> ir = EmitLlvmIr(*lowered, *haswell);
  ASSERT_TRUE(ir.ok()) << ir.status();
  const std::string kernel = ir->substr(ir->find("define i32 @padded_every_other("));
  EXPECT_THAT(kernel.substr(0, kernel.find("\n}\n")), HasSubstr("@llvm.masked.load.v8f32"));
  absl::StatusOr<std::string> so = backend::BuildKernelLibrary(*mod, "llvm -mcpu=haswell");
  ASSERT_TRUE(so.ok()) << so.status();
  absl::StatusOr<std::shared_ptr<runtime::KernelLibrary>> lib =
      runtime::KernelLibrary::LoadFromMemory(*so, "haswell_kernels");
  ASSERT_TRUE(lib.ok()) << lib.status();
  absl::StatusOr<Function> f = (*lib)->GetFunction("padded_every_other", nullptr);
  ASSERT_TRUE(f.ok()) << f.status();
  Tensor a = Random({3, 10}, 17), b = Make({3, 2, 7}, "float32");
  ASSERT_TRUE((*f)({a, b}).ok());
  ExpectEveryOtherPadded(a, b);
}

TEST_F(CodegenTest, AParallelLoopTooSmallToPayForThreadsRunsSerially) {
  // 64 additions are no work for a second thread; 256K are.
  const std::string ir = KernelIr("");
  EXPECT_THAT(ir, ::testing::Not(HasSubstr("@small_parallel_parallel")));
  EXPECT_THAT(ir, HasSubstr("@large_parallel_parallel"));
  Tensor a = Random({64}, 11), b = Make({64}, "float32");
  ASSERT_TRUE(Kernel("small_parallel")({a, b}).ok());
  for (int i = 0; i < 64; ++i) EXPECT_EQ(F(b)[i], F(a)[i] + 1.0f);
  // A symbolic extent over one element per iteration: the pool is used from 32768 iterations
  // on, decided at run time (SymbolicSizeBoundFromTheShape runs both sides).
  const std::string scale = KernelIr("scale");
  EXPECT_THAT(ir, HasSubstr("@scale_parallel"));
  EXPECT_THAT(scale, HasSubstr(", 32768"));
}

TEST_F(CodegenTest, ConstantShapesGiveAParallelTaskConstantStrides) {
  // The closure carries the context, the task's range and each buffer's data pointer; the
  // buffers' strides (1024 floats a row) stay constants that fold into addressing, not values
  // loaded from the closure (a stride in a register became a chain of dependent adds).
  const std::string ir = KernelIr("");
  EXPECT_NE(ir.find("alloca { ptr, i64, i64, ptr, ptr }"), std::string::npos)
      << "the closure of large_parallel carries more than its buffers' data pointers";
  Tensor a = Random({256, 1024}, 14), b = Make({256, 1024}, "float32");
  ASSERT_TRUE(Kernel("large_parallel")({a, b}).ok());
  for (int i = 0; i < 256 * 1024; i += 1021) EXPECT_EQ(F(b)[i], F(a)[i] + 1.0f) << i;
}

TEST_F(CodegenTest, ALoopThatRunsOnceIsItsIndexAConstantEvenInAParallelTask) {
  // The batch loop of extent 1 around a parallel loop: no loop is emitted, and the task gets its
  // index as the constant 0, not a value from the closure (an accumulator tile indexed by such a
  // value stayed in memory, each multiply-add loading and storing it).
  const std::string kernel = KernelIr("once_around_parallel");
  EXPECT_THAT(kernel, ::testing::Not(HasSubstr("%n = phi")));
  EXPECT_THAT(kernel, HasSubstr("alloca { ptr, i64, i64, ptr, ptr }"))
      << "the closure carries the index of the loop that runs once";
  Tensor a = Random({1, 256, 1024}, 15), b = Make({1, 256, 1024}, "float32");
  ASSERT_TRUE(Kernel("once_around_parallel")({a, b}).ok());
  for (int i = 0; i < 256 * 1024; i += 1021) EXPECT_EQ(F(b)[i], F(a)[i] + 1.0f) << i;
}

TEST_F(CodegenTest, EveryWrongArgumentIsAClearError) {
  Function add = Kernel("add_bias");
  Tensor a = Random({4, 8}, 1), b = Random({8}, 2), c = Make({4, 8}, "float32");
  auto message = [&](std::vector<Value> args) { return std::string(add(args).status().message()); };
  EXPECT_THAT(message({Value(a), Value(b)}), HasSubstr("add_bias: expected 3 arguments"));
  EXPECT_THAT(message({Value(a), Value(int64_t{1}), Value(c)}),
              HasSubstr("argument 1 (B) must be a tensor"));
  EXPECT_THAT(message({Value(Random({32}, 1)), Value(b), Value(c)}),
              HasSubstr("argument 0 (A) must have 2 dimensions"));
  EXPECT_THAT(message({Value(Make({4, 8}, "float64")), Value(b), Value(c)}),
              HasSubstr("argument 0 (A) must have dtype float32"));
  EXPECT_THAT(message({Value(Random({4, 9}, 1)), Value(b), Value(c)}),
              HasSubstr("argument 0 (A) dimension 1 must be 8"));
  EXPECT_THAT(message({Value(a), Value(Random({7}, 1)), Value(c)}),
              HasSubstr("argument 1 (B) dimension 0 must be 8"));
  // A null data pointer and non-compact strides, through the C ABI directly.
  absl::StatusOr<KilnKernelFn> raw = (*library_)->Lookup("add_bias");
  ASSERT_TRUE(raw.ok());
  DLTensor ta = a.dl(), tb = b.dl(), tc = c.dl();
  KilnValue values[3];
  values[0].v_tensor = &ta;
  values[1].v_tensor = &tb;
  values[2].v_tensor = &tc;
  int32_t kinds[3] = {KILN_ARG_TENSOR, KILN_ARG_TENSOR, KILN_ARG_TENSOR};
  runtime::testing::SerialContext state;
  ta.data = nullptr;
  EXPECT_EQ(state.Call(*raw, values, kinds, 3), 1);
  EXPECT_THAT(state.error, HasSubstr("argument 0 (A) has no data"));
  ta = a.dl();
  int64_t strides[2] = {16, 1};  // rows 16 apart: not compact
  ta.strides = strides;
  EXPECT_EQ(state.Call(*raw, values, kinds, 3), 1);
  EXPECT_THAT(state.error, HasSubstr("argument 0 (A) must be compact"));
  int64_t compact[2] = {8, 1};
  ta.strides = compact;
  EXPECT_EQ(state.Call(*raw, values, kinds, 3), 0);
  ta.byte_offset = 2;  // float32 data at an odd address
  EXPECT_EQ(state.Call(*raw, values, kinds, 3), 1);
  EXPECT_THAT(state.error, HasSubstr("argument 0 (A) must be aligned to 64 bytes"));
  ta.byte_offset = 16;  // naturally aligned, but not to the buffer's declared 64 bytes
  EXPECT_EQ(state.Call(*raw, values, kinds, 3), 1);
  EXPECT_THAT(state.error, HasSubstr("argument 0 (A) must be aligned to 64 bytes"));
}

// A module from the wire may call a math intrinsic with any number of arguments: code generation
// refuses a wrong count with a message (it read args[0] of an empty call before).
TEST(CodegenErrorTest, AMathIntrinsicWithTheWrongArgumentCountIsAnError) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            B[i] = T.pow(A[i], A[i])
)",
                                                         "pow.py");
  ASSERT_TRUE(mod.ok()) << mod.status();
  kiln::v1::IRModuleProto proto;
  ASSERT_TRUE(proto.ParseFromString(wire::SerializeModule(*mod)));
  int renamed = 0;
  for (kiln::v1::IRNodeProto& node : *proto.mutable_nodes()) {
    for (kiln::v1::IRFieldProto& field : *node.mutable_fields()) {
      if (node.kind() == "Call" && field.has_bytes_value() && field.bytes_value() == "pow") {
        field.set_bytes_value("exp");
        ++renamed;
      }
    }
  }
  ASSERT_EQ(renamed, 1);
  absl::StatusOr<ir::IRModule> wrong = wire::DeserializeModule(proto.SerializeAsString());
  ASSERT_TRUE(wrong.ok()) << wrong.status();
  absl::StatusOr<std::string> so = backend::BuildKernelLibrary(*wrong, "llvm");
  ASSERT_FALSE(so.ok());
  EXPECT_THAT(so.status().message(), HasSubstr("exp takes 1 arguments, got 2"));
}

TEST(CodegenCrossTest, BuildsAnAarch64SharedLibrary) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(kKernels, "kernels.py");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<std::string> so =
      backend::BuildKernelLibrary(*mod, "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72");
  ASSERT_TRUE(so.ok()) << so.status();
  ASSERT_GE(so->size(), sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, so->data(), sizeof(eh));
  EXPECT_EQ(std::memcmp(eh.e_ident, ELFMAG, SELFMAG), 0);
  EXPECT_EQ(eh.e_machine, EM_AARCH64);
  EXPECT_EQ(eh.e_type, ET_DYN);
  // The exported kernels and the ABI version are in the dynamic symbol table's strings.
  for (const char* symbol : {"add_bias", "matmul", "scale", "kiln_abi_version"}) {
    EXPECT_NE(so->find(std::string(symbol) + '\0'), std::string::npos) << symbol;
  }
  // And this x86-64 host refuses to load it, clearly.
  EXPECT_THAT(runtime::KernelLibrary::LoadFromMemory(*so, "arm").status().message(),
              HasSubstr("machine type 183"));
}

TEST(CodegenTargetTest, ParsesTargets) {
  EXPECT_TRUE(ParseTarget("llvm").ok());
  absl::StatusOr<LlvmTargetInfo> arm =
      ParseTarget("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72");
  ASSERT_TRUE(arm.ok()) << arm.status();
  EXPECT_EQ(arm->cpu, "cortex-a72");
  EXPECT_THAT(ParseTarget("cuda").status().message(), HasSubstr("unknown target 'cuda'"));
  EXPECT_THAT(ParseTarget("llvm -mfloat-abi=hard").status().message(),
              HasSubstr("unknown option '-mfloat-abi=hard'"));
}

}  // namespace
}  // namespace kiln::codegen
