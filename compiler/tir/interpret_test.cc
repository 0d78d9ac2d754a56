// The interpreter on lowered kernels: results against the arithmetic written out in C++ (with
// the same float32 rounding), and what it refuses — to be compiled instead — or stops with an
// error rather than undefined behaviour.
#include "compiler/tir/interpret.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "compiler/script/script_parser.h"
#include "compiler/tir/transform/transform.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

// The PrimFunc `name` of `script`, through LowerTir.
ir::PrimFunc Lowered(const char* script, const char* name = "f") {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(script);
  EXPECT_TRUE(mod.ok()) << mod.status();
  if (!mod.ok()) return nullptr;
  absl::StatusOr<ir::IRModule> lowered = LowerTir(*mod);
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  if (!lowered.ok()) return nullptr;
  return (*lowered)->Lookup(name).as_ref<ir::PrimFuncNode>();
}

template <typename T>
InterpretedBuffer Buf(std::vector<T>& v) {
  return {v.data(), static_cast<int64_t>(v.size() * sizeof(T))};
}

TEST(InterpretTest, ABatchNormScaleIsTheFloat32Arithmetic) {
  ir::PrimFunc f = Lowered(R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(gamma: T.Buffer((T.int64(5),), "float32"), var: T.Buffer((T.int64(5),), "float32"),
          out: T.Buffer((T.int64(5),), "float32")):
        for c in range(T.int64(5)):
            with T.block("scale"):
                v_c = T.axis.spatial(T.int64(5), c)
                out[v_c] = gamma[v_c] / T.sqrt(var[v_c] + T.float32(1.0000000000000001e-05))
)");
  ASSERT_TRUE(f);
  absl::StatusOr<InterpretedKernel> k = InterpretedKernel::Compile(f, 1000);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->iterations(), 5);
  std::vector<float> gamma = {1.0f, 0.5f, -2.0f, 3.25f, 0.1f};
  std::vector<float> var = {0.3f, 1.7f, 0.01f, 4.0f, 123.456f};
  std::vector<float> out(5);
  ASSERT_TRUE(k->Run({Buf(gamma), Buf(var), Buf(out)}).ok());
  for (int c = 0; c < 5; ++c) {
    const float want = gamma[c] / std::sqrt(var[c] + 1e-05f);
    EXPECT_EQ(out[c], want) << c;
  }
}

TEST(InterpretTest, ATransposeAndASumWithItsInit) {
  ir::PrimFunc f = Lowered(R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((T.int64(3), T.int64(4)), "float32"), B: T.Buffer((T.int64(4), T.int64(3)), "float32"),
          S: T.Buffer((T.int64(3),), "float32")):
        for i, j in T.grid(T.int64(4), T.int64(3)):
            with T.block("transpose"):
                v_i, v_j = T.axis.remap("SS", [i, j])
                B[v_i, v_j] = A[v_j, v_i]
        for i, k in T.grid(T.int64(3), T.int64(4)):
            with T.block("sum"):
                v_i, v_k = T.axis.remap("SR", [i, k])
                with T.init():
                    S[v_i] = T.float32(0)
                S[v_i] = S[v_i] + A[v_i, v_k]
)");
  ASSERT_TRUE(f);
  absl::StatusOr<InterpretedKernel> k = InterpretedKernel::Compile(f, 1000);
  ASSERT_TRUE(k.ok()) << k.status();
  std::vector<float> a(12), b(12, -1.0f), s(3, 99.0f);
  for (int i = 0; i < 12; ++i) a[i] = 0.25f * static_cast<float>(i) - 1.0f;
  ASSERT_TRUE(k->Run({Buf(a), Buf(b), Buf(s)}).ok());
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) EXPECT_EQ(b[i * 3 + j], a[j * 4 + i]);
  }
  for (int i = 0; i < 3; ++i) {
    float want = 0.0f;
    for (int kk = 0; kk < 4; ++kk) want += a[i * 4 + kk];
    EXPECT_EQ(s[i], want);
  }
}

TEST(InterpretTest, IntegersWrapAndDivideAsTheirTypesDo) {
  ir::PrimFunc f = Lowered(R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4,), "int32"), Q: T.Buffer((4,), "int32"), R: T.Buffer((4,), "int32"),
          N: T.Buffer((4,), "int8"), F: T.Buffer((4,), "float32"), C: T.Buffer((4,), "int32")):
        for i in range(4):
            Q[i] = T.floordiv(A[i], 3)
            R[i] = T.floormod(A[i], 3)
            N[i] = T.Cast("int8", A[i] * 100)
            C[i] = T.Cast("int32", F[i])
)");
  ASSERT_TRUE(f);
  absl::StatusOr<InterpretedKernel> k = InterpretedKernel::Compile(f, 1000);
  ASSERT_TRUE(k.ok()) << k.status();
  std::vector<int32_t> a = {-7, -1, 5, 8}, q(4), r(4), c(4);
  std::vector<int8_t> n(4);
  std::vector<float> fl = {-2.75f, 0.5f, 7.99f, -0.25f};
  ASSERT_TRUE(k->Run({Buf(a), Buf(q), Buf(r), Buf(n), Buf(fl), Buf(c)}).ok());
  EXPECT_EQ(q, (std::vector<int32_t>{-3, -1, 1, 2}));
  EXPECT_EQ(r, (std::vector<int32_t>{2, 2, 2, 2}));
  EXPECT_EQ(n, (std::vector<int8_t>{static_cast<int8_t>(-700), static_cast<int8_t>(-100),
                                    static_cast<int8_t>(500), static_cast<int8_t>(800)}));
  EXPECT_EQ(c, (std::vector<int32_t>{-2, 0, 7, 0}));
}

TEST(InterpretTest, Dot4SumsFourUnsignedByFourSignedBytes) {
  ir::PrimFunc f = Lowered(R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((T.int64(3),), "int32"), B: T.Buffer((T.int64(3),), "int32"),
          C: T.Buffer((T.int64(3),), "int32")):
        for i in range(T.int64(3)):
            with T.block("dot"):
                v_i = T.axis.spatial(T.int64(3), i)
                C[v_i] = C[v_i] + T.dot4_u8i8(A[v_i], B[v_i])
)");
  ASSERT_TRUE(f);
  absl::StatusOr<InterpretedKernel> k = InterpretedKernel::Compile(f, 1000);
  ASSERT_TRUE(k.ok()) << k.status();
  // Bytes little end first: a = (255, 1, 0, 2), b = (-128, 127, 5, -1).
  std::vector<int32_t> a = {static_cast<int32_t>(0x020001FFu), -1, 0x01010101};
  std::vector<int32_t> b = {static_cast<int32_t>(0xFF057F80u), static_cast<int32_t>(0x80808080u),
                            0x7F7F7F7F};
  std::vector<int32_t> c = {10, 0, -3};
  ASSERT_TRUE(k->Run({Buf(a), Buf(b), Buf(c)}).ok());
  EXPECT_EQ(c[0], 10 + 255 * -128 + 1 * 127 + 0 * 5 + 2 * -1);
  EXPECT_EQ(c[1], 4 * 255 * -128);
  EXPECT_EQ(c[2], -3 + 4 * 127);
}

TEST(InterpretTest, LetsBindIntegersAndFloats) {
  ir::PrimFunc f = Lowered(R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            j: T.int64 = T.int64(3) - T.Cast("int64", i)
            s: T.float32 = A[j] * T.float32(2)
            B[i] = s + s
)");
  ASSERT_TRUE(f);
  absl::StatusOr<InterpretedKernel> k = InterpretedKernel::Compile(f, 1000);
  ASSERT_TRUE(k.ok()) << k.status();
  std::vector<float> a = {1.5f, -2.0f, 0.25f, 8.0f}, b(4);
  ASSERT_TRUE(k->Run({Buf(a), Buf(b)}).ok());
  EXPECT_EQ(b, (std::vector<float>{32.0f, 1.0f, -8.0f, 6.0f}));
}

TEST(InterpretTest, WhatItDoesNotDoIsUnimplemented) {
  // A transcendental the compiled code approximates: its result would differ in the last bits.
  ir::PrimFunc exp = Lowered(R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            B[i] = T.exp(A[i])
)");
  ASSERT_TRUE(exp);
  EXPECT_EQ(InterpretedKernel::Compile(exp, 1000).status().code(),
            absl::StatusCode::kUnimplemented);
  // More work than it is given.
  ir::PrimFunc big = Lowered(R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32")):
        for i, j in T.grid(64, 64):
            B[i, j] = A[i, j] + T.float32(1)
)");
  ASSERT_TRUE(big);
  absl::StatusOr<InterpretedKernel> over = InterpretedKernel::Compile(big, 4095);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(over.status().message().find("4095 iterations"), std::string::npos) << over.status();
  EXPECT_TRUE(InterpretedKernel::Compile(big, 4096).ok());
  // A symbolic extent.
  ir::PrimFunc symbolic = Lowered(R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in range(n):
            B[i] = A[i]
)");
  ASSERT_TRUE(symbolic);
  EXPECT_EQ(InterpretedKernel::Compile(symbolic, 1000).status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST(InterpretTest, OutOfBoundsAndDivisionByZeroAreErrorsNotUndefinedBehaviour) {
  ir::PrimFunc f = Lowered(R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32")):
        for i in range(4):
            B[i] = T.truncdiv(A[3 - i], A[i])
)");
  ASSERT_TRUE(f);
  absl::StatusOr<InterpretedKernel> k = InterpretedKernel::Compile(f, 1000);
  ASSERT_TRUE(k.ok()) << k.status();
  std::vector<int32_t> a = {1, 2, 0, 4}, b(4);
  absl::Status zero = k->Run({Buf(a), Buf(b)});
  EXPECT_EQ(zero.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(zero.message().find("division by zero"), std::string::npos) << zero;
  // Buffers smaller than the kernel's shapes say: the access past the end is refused.
  std::vector<int32_t> small = {1, 2};
  absl::Status outside = k->Run({Buf(small), Buf(b)});
  EXPECT_EQ(outside.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(outside.message().find("outside its 8 bytes"), std::string::npos) << outside;
}

}  // namespace
}  // namespace kiln::tir
