// VectorizeLoops alone, and through LowerTir.
#include "absl/strings/str_replace.h"
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "compiler/testing/expect_pass.h"
#include "compiler/tir/transform/transform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

using pass::testing::Transforms;
using ::testing::HasSubstr;

TEST(VectorizeTest, SymbolicExtentSplitsIntoFullVectorsAndAScalarTail) {
  const char* text = R"(
@I.ir_module
class Module:
    @T.prim_func
    def scale(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in T.vectorized(n):
            B[i] = A[i] * T.float32(2)
)";
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text);
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<ir::IRModule> lowered = LowerTir(*mod);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  std::string printed = script::PrintScript(*lowered);
  EXPECT_THAT(printed, HasSubstr("for i_vo in range(n // 16):\n"
                                 "            B[T.Ramp(i_vo * 16, T.int64(1), 16)] = "
                                 "A[T.Ramp(i_vo * 16, T.int64(1), 16)] * T.Broadcast(2.0, 16)\n"));
  EXPECT_THAT(printed,
              HasSubstr("for i_vt in range(n % 16):\n"
                        "            B[n // 16 * 16 + i_vt] = A[n // 16 * 16 + i_vt] * 2.0\n"));
}

TEST(VectorizeLoopsTest, AConstantExtentBecomesOneVector) {
  EXPECT_TRUE(Transforms(VectorizeLoopsPass(), R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in T.vectorized(8):
            B[i] = A[i] + T.float32(1)
)",
                         R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        B[T.Ramp(0, 1, 8)] = A[T.Ramp(0, 1, 8)] + T.Broadcast(T.float32(1), 8)
)",
                         false));
}

// A fused (i, j) loop vectorized by 8 indexes [ramp // 24, ramp % 24]: 8 divides 24, so no
// vector crosses a row and the row index is one scalar. By 16, vectors cross rows, but the
// buffer's rows are 24 long, so the lanes are still consecutive elements: [base // 24,
// ramp(base % 24)], the ramp running past the row. Into rows of another length (C is 4 x 32),
// the lanes are scattered and keep their per-lane division.
TEST(VectorizeLoopsTest, DivisionOfARampIsARowAccessWhereItsLanesAreConsecutive) {
  const char* text = R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4, 24), "float32"), B: T.Buffer((4, 24), "float32"), C: T.Buffer((4, 32), "float32")):
        for o in range(LANES_OUTER):
            for v in T.vectorized(LANES):
                B[(o * LANES + v) // 24, (o * LANES + v) % 24] = A[(o * LANES + v) // 24, (o * LANES + v) % 24]
                C[(o * LANES + v) // 24, (o * LANES + v) % 24] = A[(o * LANES + v) // 24, (o * LANES + v) % 24]
)";
  auto lower = [&](int lanes) {
    std::string script = absl::StrReplaceAll(
        text, {{"LANES_OUTER", std::to_string(96 / lanes)}, {"LANES", std::to_string(lanes)}});
    absl::StatusOr<ir::IRModule> mod = script::ParseScript(script);
    EXPECT_TRUE(mod.ok()) << mod.status();
    absl::StatusOr<ir::IRModule> lowered = VectorizeLoopsPass()->Run(*mod);
    EXPECT_TRUE(lowered.ok()) << lowered.status();
    return lowered.ok() ? script::PrintScript(*lowered) : std::string();
  };
  EXPECT_THAT(lower(8), HasSubstr("B[(o * 8 + 0) // 24, T.Ramp((o * 8 + 0) % 24, 1, 8)]"));
  const std::string crossing = lower(16);
  EXPECT_THAT(crossing, HasSubstr("B[(o * 16 + 0) // 24, T.Ramp((o * 16 + 0) % 24, 1, 16)]"));
  EXPECT_THAT(crossing, HasSubstr("C[T.Ramp(o * 16 + 0, 1, 16) // T.Broadcast(24, 16), "));
}

}  // namespace
}  // namespace kiln::tir
