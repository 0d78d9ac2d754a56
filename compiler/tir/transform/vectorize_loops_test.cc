// VectorizeLoops alone, and through LowerTir.
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

}  // namespace
}  // namespace kiln::tir
