// CompactAllocations after ConvertBlocksToLoops, and through LowerTir.
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "compiler/testing/expect_pass.h"
#include "compiler/tir/transform/transform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

using ::testing::HasSubstr;

TEST(CompactAllocationsTest, IntermediateSinksIntoTheRowLoopAndShrinksToOneRow) {
  const char* text = R"(
@I.ir_module
class Module:
    @T.prim_func
    def rows(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32")):
        with T.block("root"):
            T.reads()
            T.writes()
            tmp = T.alloc_buffer((64, 64), "float32")
            win = T.alloc_buffer((66,), "float32")
            for i in range(32):
                for j in range(64):
                    with T.block("t"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        T.reads(A[vi, vj])
                        T.writes(tmp[vi, vj])
                        tmp[vi, vj] = A[vi, vj] * T.float32(2)
                for j in range(64):
                    with T.block("b"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        T.reads(tmp[vi, vj], tmp[vi, 63 - vj])
                        T.writes(B[vi, vj])
                        B[vi, vj] = tmp[vi, vj] + tmp[vi, 63 - vj]
            for i in range(32):
                for r in range(3):
                    win[i + r] = A[0, i + r]
                B[32 + i, 0] = win[i] + win[i + 2]
)";
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text);
  ASSERT_TRUE(mod.ok()) << mod.status();
  ir::IRModuleBuilder builder(*mod);
  const auto& entry = (*mod)->functions.begin()->second;
  absl::StatusOr<ir::PrimFunc> loops =
      ConvertBlocksToLoops(LowerInitBlock(entry.second.as_ref<ir::PrimFuncNode>()));
  ASSERT_TRUE(loops.ok()) << loops.status();
  builder.Update(entry.first, CompactAllocations(*loops));
  std::string printed = script::PrintScript(builder.Build());
  // Each iteration of i owns row i of tmp: one row is allocated per iteration.
  EXPECT_THAT(printed, HasSubstr("for i in range(32):\n"
                                 "            with T.decl_buffer((1, 64), \"float32\") as tmp:\n"
                                 "                for j in range(64):\n"
                                 "                    tmp[0, j] = A[i, j] * 2.0\n"));
  EXPECT_THAT(printed, HasSubstr("B[i, j_1] = tmp[0, j_1] + tmp[0, 63 - j_1]"));
  // The sliding window overlaps between iterations: it stays outside i, cut to the 34 used.
  EXPECT_THAT(printed, HasSubstr("with T.decl_buffer((34,), \"float32\") as win:\n"));
  // Then FlattenBuffers makes the row 1-D.
  absl::StatusOr<ir::IRModule> lowered = LowerTir(*mod);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_THAT(script::PrintScript(*lowered), HasSubstr("B[i, j_1] = tmp[j_1] + tmp[0 - j_1 + 63]"));
}

}  // namespace
}  // namespace kiln::tir
