#include "compiler/tir/transforms.h"

#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "compiler/tir/default_schedule.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

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
