// Simplify alone, and through LowerTir.
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

TEST(SimplifyTest, IndexArithmeticFoldsWithLoopRanges) {
  const char* text = R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((128,), "float32"), B: T.Buffer((4, 32), "float32")):
        for i, j in T.grid(4, 32):
            B[(i * 32 + j) // 32, (i * 32 + j) % 32] = A[i * 32 + j + 0 * i]
)";
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text);
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<ir::IRModule> lowered = LowerTir(*mod);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_THAT(script::PrintScript(*lowered), HasSubstr("B[i, j] = A[i * 32 + j]"));
}

TEST(SimplifyTest, IndicesFoldAloneWithTheLoopRanges) {
  EXPECT_TRUE(Transforms(SimplifyPass(), R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((128,), "float32"), B: T.Buffer((4, 32), "float32")):
        for i, j in T.grid(4, 32):
            B[(i * 32 + j) // 32, (i * 32 + j) % 32] = A[i * 32 + j + 0 * i]
)",
                         R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((128,), "float32"), B: T.Buffer((4, 32), "float32")):
        for i, j in T.grid(4, 32):
            B[i, j] = A[i * 32 + j]
)",
                         false));
}

}  // namespace
}  // namespace kiln::tir
