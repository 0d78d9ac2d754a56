// ConvertBlocksToLoops alone, and through LowerTir.
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "compiler/testing/expect_pass.h"
#include "compiler/tir/transform/transform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

using pass::testing::Refuses;
using pass::testing::Transforms;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kMatmul = R"(
@I.ir_module
class Module:
    @T.prim_func
    def matmul(A: T.Buffer((4, 8), "float32"), B: T.Buffer((8, 2), "float32"), C: T.Buffer((4, 2), "float32")):
        for i, j, k in T.grid(4, 2, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.where(i < 3)
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                acc = T.alloc_buffer((1,), "float32", scope="local")
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)";

TEST(TransformsTest, BlocksBecomeGuardedLoopsWithInitOnTheFirstReductionStep) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(kMatmul);
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<ir::IRModule> lowered = LowerTir(*mod);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  std::string text = script::PrintScript(*lowered);
  EXPECT_THAT(text, Not(HasSubstr("T.block")));
  EXPECT_THAT(text, HasSubstr("if i < 3:"));
  EXPECT_THAT(text, HasSubstr("with T.decl_buffer((1,), \"float32\", scope=\"local\") as acc:"));
  EXPECT_THAT(text, HasSubstr("if k == 0:\n"));
  EXPECT_THAT(text, HasSubstr("C[i, j] = 0.0"));
  EXPECT_THAT(text, HasSubstr("C[i, j] = C[i, j] + A[i, k] * B[k, j]"));
  // Lowering is idempotent on lowered code.
  absl::StatusOr<ir::IRModule> again = LowerTir(*lowered);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(script::PrintScript(*again), text);
}

TEST(TransformsTest, MatchBufferViewsBecomeSourceAccesses) {
  const char* text = R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4, 4), "float32")):
        for i in range(4):
            with T.block("row"):
                vi = T.axis.spatial(4, i)
                T.reads(A[vi, 0:4])
                T.writes(A[vi, 0:4])
                row = T.match_buffer(A[vi, 0:4], (4,), "float32")
                row[0] = T.float32(1)
)";
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text);
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<ir::IRModule> lowered = LowerTir(*mod);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  // row[0] over A[vi, 0:4] is A[i, 0].
  EXPECT_THAT(script::PrintScript(*lowered), HasSubstr("A[i, 0] = 1.0"));
  // A view whose shape does not fit its region is an error.
  std::string bad = text;
  bad.replace(bad.find("(4,), \"float32\")"), 4, "(5,)");
  absl::StatusOr<ir::IRModule> bad_mod = script::ParseScript(bad);
  ASSERT_TRUE(bad_mod.ok()) << bad_mod.status();
  absl::StatusOr<ir::IRModule> refused = LowerTir(*bad_mod);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("match_buffer 'row' dimension 0 is 5 but its region spans 4"));
}

TEST(ConvertBlocksToLoopsTest, BlockIterVarsBecomeTheirBindings) {
  EXPECT_TRUE(Transforms(ConvertBlocksToLoopsPass(), R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((8, 4), "float32")):
        for i, j in T.grid(4, 8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.where(i < 3)
                T.reads(A[vi, vj])
                T.writes(B[vj, vi])
                B[vj, vi] = A[vi, vj]
)",
                         R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((8, 4), "float32")):
        for i, j in T.grid(4, 8):
            if i < 3:
                B[j, i] = A[i, j]
)",
                         false));
}

TEST(ConvertBlocksToLoopsTest, ABlockThatStillHasAnInitIsRefused) {
  EXPECT_TRUE(Refuses(ConvertBlocksToLoopsPass(), kMatmul,
                      "still has an init; run LowerInitBlock first", false));
}

}  // namespace
}  // namespace kiln::tir
