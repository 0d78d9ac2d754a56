// The default schedule: what untuned kernels get.
#include "compiler/tir/default_schedule.h"

#include "compiler/ir/relax_expr.h"
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "compiler/tir/transform/transform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(DefaultScheduleTest, MatmulBecomesParallelRowsWithKOutsideAVectorizedJ) {
  const char* text = R"(
@I.ir_module
class Module:
    @T.prim_func
    def matmul(A: T.Buffer((4, 8), "float32"), B: T.Buffer((8, 2), "float32"), C: T.Buffer((4, 2), "float32")):
        for i, j, k in T.grid(4, 2, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)";
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text);
  ASSERT_TRUE(mod.ok()) << mod.status();
  std::string scheduled = script::PrintScript(ApplyDefaultSchedule(*mod));
  EXPECT_THAT(scheduled, HasSubstr("for i in T.parallel(4):\n            for k in range(8):\n"
                                   "                for j in T.vectorized(2):\n"));
  // Already scheduled functions are left alone.
  std::string marked = std::string(text);
  marked.replace(marked.find("        for i, j, k"), 0,
                 "        T.func_attr({\"tir.is_scheduled\": T.bool(True)})\n");
  absl::StatusOr<ir::IRModule> kept = script::ParseScript(marked);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(script::PrintScript(ApplyDefaultSchedule(*kept)), script::PrintScript(*kept));
}

TEST(DefaultScheduleTest, LargeMatmulGetsPackedPanelsAndARegisterTile) {
  const char* text = R"(
@I.ir_module
class Module:
    @T.prim_func
    def matmul(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
        for i, j, k in T.grid(64, 64, 64):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)";
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text);
  ASSERT_TRUE(mod.ok()) << mod.status();
  std::string scheduled = script::PrintScript(ApplyDefaultSchedule(*mod));
  // B is packed into 32-column panels, read contiguously by the 4 x 32 tile.
  EXPECT_THAT(scheduled, HasSubstr("for pack_j_o in T.parallel(2):\n"
                                   "                for pack_k in range(64):\n"
                                   "                    for pack_j_i in T.vectorized(32):\n"
                                   "                        B_panels[pack_j_o, pack_k, pack_j_i] = "
                                   "B[pack_k, pack_j_o * 32 + pack_j_i]\n"));
  // The tile accumulates in a local buffer across k and is stored once.
  EXPECT_THAT(
      scheduled,
      HasSubstr("for j_o in T.parallel(2):\n"
                "                for i_o in range(16):\n"
                "                    with T.decl_buffer((4, 32), \"float32\", "
                "scope=\"local\") as C_acc:\n"
                "                        for i_i_init in T.unroll(4):\n"
                "                            for j_i_init in T.vectorized(32):\n"
                "                                C_acc[i_i_init, j_i_init] = 0.0\n"
                "                        for k in range(64):\n"
                "                            for i_i in T.unroll(4):\n"
                "                                for j_i in T.vectorized(32):\n"
                "                                    C_acc[i_i, j_i] = C_acc[i_i, j_i] + "
                "A[i_o * 4 + i_i, k] * B_panels[j_o, k, j_i]\n"
                "                        for i_i_store in T.unroll(4):\n"
                "                            for j_i_store in T.vectorized(32):\n"
                "                                C[i_o * 4 + i_i_store, j_o * 32 + j_i_store] "
                "= C_acc[i_i_store, j_i_store]\n"));
  // Lowered, the vectorized loops become 32-lane Ramp accesses.
  absl::StatusOr<ir::IRModule> lowered = LowerTir(ApplyDefaultSchedule(*mod));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  std::string text_lowered = script::PrintScript(*lowered);
  // Flattened, the panels and the accumulator are 1-D, read as contiguous 32-lane vectors.
  EXPECT_THAT(text_lowered, HasSubstr("C_acc[T.Ramp(i_i * 32, 1, 32)] = C_acc[T.Ramp(i_i * 32, 1, "
                                      "32)] + T.Broadcast(A[i_o * 4 + i_i, k], 32) * "
                                      "B_panels[T.Ramp(j_o * 2048 + k * 32, 1, 32)]"));
  EXPECT_THAT(text_lowered, Not(HasSubstr("T.vectorized")));
}

TEST(DefaultScheduleTest, ThePassSchedulesWhatIsNotScheduledAndMarksIt) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(R"(
@I.ir_module
class Module:
    @T.prim_func
    def plain(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i in range(64):
            with T.block("B"):
                vi = T.axis.spatial(64, i)
                B[vi] = A[vi] + T.float32(1)

    @T.prim_func
    def tuned(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        T.func_attr({"tir.is_scheduled": T.bool(True)})
        for i in range(64):
            with T.block("B"):
                vi = T.axis.spatial(64, i)
                B[vi] = A[vi] + T.float32(1)
)");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<ir::IRModule> out = pass::PassContext().Run(*mod, {DefaultSchedulePass()});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE((*out)->Lookup("tuned").same_as((*mod)->Lookup("tuned")));
  const auto* plain = (*out)->Lookup("plain").as<ir::PrimFuncNode>();
  ASSERT_NE(plain, nullptr);
  EXPECT_TRUE(ir::GetAttr(plain->attrs, "tir.is_scheduled").defined());
  ir::IRModuleBuilder one;
  ASSERT_TRUE(one.Add(ir::relax::MakeGlobalVar("plain"), (*out)->Lookup("plain")).ok());
  EXPECT_THAT(script::PrintScript(one.Build()), HasSubstr("for i in T.parallel(64):"));
}

}  // namespace
}  // namespace kiln::tir
