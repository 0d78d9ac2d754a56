// MultiLevelTiling: a reduction with reuse tiled into a register tile of the target's accumulators,
// operands packed into panels, the epilogue folded into the write-back. Through DefaultSchedule:
// the rules with heuristic decisions, the AVX-512 policy's unless a test says otherwise, each
// schedule checked to compute what the unscheduled function does.
#include "compiler/ir/relax_expr.h"
#include "compiler/ir/structural.h"
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "compiler/testing/expect_schedule.h"
#include "compiler/testing/schedule_workloads.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/schedule/trace.h"
#include "compiler/tir/schedule_rules/schedule_rules.h"
#include "compiler/tir/transform/transform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const target::CpuPolicy kAvx512 = target::PolicyFor(target::Avx512Znver4());

absl::StatusOr<ir::IRModule> Matmul64() {
  return testing::Parse(testing::MatmulScript(64, 64, 64));
}

TEST(MultiLevelTilingTest, LargeMatmulGetsPackedPanelsAndARegisterTile) {
  absl::StatusOr<ir::IRModule> mod = Matmul64();
  ASSERT_TRUE(mod.ok()) << mod.status();
  std::string scheduled = script::PrintScript(ApplyDefaultSchedule(*mod, kAvx512));
  // B is packed into 32-column panels (parallel over the panels), read by a 4 x 32 tile: the
  // column panels run in parallel, the 16 row tiles of each inside, k outside the tile.
  EXPECT_THAT(scheduled, HasSubstr("B_global = T.alloc_buffer((2, 64, 32), \"float32\")"));
  EXPECT_THAT(scheduled, HasSubstr("for ax1_0 in T.parallel(2):"));
  EXPECT_THAT(scheduled, HasSubstr("for j_0 in T.parallel(2):\n"
                                   "                for i_1, j_1 in T.grid(16, 1):"));
  EXPECT_THAT(scheduled, HasSubstr("for i_3 in T.unroll(4):\n"));
  EXPECT_THAT(scheduled, HasSubstr("for j_3 in T.vectorized(32):\n"));
  // Lowered: the accumulator is the 4 x 32 tile in a local buffer inside the row loop, and both
  // it and the panels are read as contiguous 32-lane vectors.
  absl::StatusOr<ir::IRModule> lowered = LowerTir(ApplyDefaultSchedule(*mod, kAvx512));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  std::string text_lowered = script::PrintScript(*lowered);
  EXPECT_THAT(text_lowered, HasSubstr("for i_1, j_1 in T.grid(16, 1):\n"
                                      "                        with T.decl_buffer((128,), "
                                      "\"float32\", scope=\"local\") as C_local:"));
  EXPECT_THAT(text_lowered, HasSubstr("B_global[T.Ramp(j_0 * 2048 + j_1 * 2048 + j_2 * 2048 + "
                                      "k_0 * 32 + k_1 * 32, 1, 32)]"));
  EXPECT_THAT(text_lowered, Not(HasSubstr("T.vectorized")));
  EXPECT_THAT(text_lowered, Not(HasSubstr("//")));  // no div/mod left in any index
}

TEST(MultiLevelTilingTest, TheEpilogueIsFoldedIntoTheAccumulatorsWriteBack) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(R"(
@I.ir_module
class Module:
    @T.prim_func
    def dense_relu(A: T.Buffer((16, 32), "float32"), B: T.Buffer((32, 48), "float32"), D: T.Buffer((16, 48), "float32")):
        with T.block("root"):
            C = T.alloc_buffer((16, 48), "float32")
            for i, j, k in T.grid(16, 48, 32):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    T.reads(A[vi, vk], B[vk, vj])
                    T.writes(C[vi, vj])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
            for i, j in T.grid(16, 48):
                with T.block("D"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    T.reads(C[vi, vj])
                    T.writes(D[vi, vj])
                    D[vi, vj] = T.max(C[vi, vj], T.float32(0))
)");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<ir::IRModule> lowered = LowerTir(ApplyDefaultSchedule(*mod, kAvx512));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  std::string text = script::PrintScript(*lowered);
  // C is never materialized: the tile accumulates locally and is stored through the ReLU.
  EXPECT_THAT(text, Not(HasSubstr(" as C:")));
  EXPECT_THAT(text, HasSubstr("scope=\"local\") as C_local:"));
  EXPECT_THAT(text, HasSubstr("D[i_0 * 16 + i_1 * 8 + ax0_2, T.Ramp("));
  EXPECT_THAT(text, HasSubstr("T.max(C_local[T.Ramp("));
}

// A convolution accumulated in blocks of 16 output channels (PackConstantWeights' layout) and
// unpacked into NCHW: its write-back stores whole row segments of each channel plane, not one
// lane per plane (a scatter), and reads the lanes across the accumulator tile.
TEST(MultiLevelTilingTest, APackedConvolutionWritesBackRowsNotScatteredLanes) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(R"(
@I.ir_module
class Module:
    @T.prim_func
    def conv1x1(X: T.Buffer((1, 8, 8, 16), "float32"), W: T.Buffer((2, 8, 16), "float32"), Y: T.Buffer((1, 32, 8, 16), "float32")):
        with T.block("root"):
            P = T.alloc_buffer((1, 2, 8, 16, 16), "float32")
            for n, o, h, w, b, k in T.grid(1, 2, 8, 16, 16, 8):
                with T.block("conv2d"):
                    vn, vo, vh, vw, vb, vk = T.axis.remap("SSSSSR", [n, o, h, w, b, k])
                    T.reads(X[vn, vk, vh, vw], W[vo, vk, vb])
                    T.writes(P[vn, vo, vh, vw, vb])
                    with T.init():
                        P[vn, vo, vh, vw, vb] = T.float32(0)
                    P[vn, vo, vh, vw, vb] = P[vn, vo, vh, vw, vb] + X[vn, vk, vh, vw] * W[vo, vk, vb]
            for n, o, h, w, b in T.grid(1, 2, 8, 16, 16):
                with T.block("conv2d_unpack"):
                    vn, vo, vh, vw, vb = T.axis.remap("SSSSS", [n, o, h, w, b])
                    T.reads(P[vn, vo, vh, vw, vb])
                    T.writes(Y[vn, vo * 16 + vb, vh, vw])
                    Y[vn, vo * 16 + vb, vh, vw] = P[vn, vo, vh, vw, vb]
)");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<ir::IRModule> lowered = LowerTir(ApplyDefaultSchedule(*mod, kAvx512));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  std::string text = script::PrintScript(*lowered);
  // Each channel (ax2_1, a scalar index) stores a 4-wide segment of its row; the lanes are read
  // 16 apart in the accumulator tile. The write-back is unrolled whole (32 stores), so that
  // every access to the accumulators is at a constant offset.
  EXPECT_THAT(text, HasSubstr("for ax0_1 in T.unroll(2):\n"));
  EXPECT_THAT(text, HasSubstr("for ax2_1 in T.unroll(16):\n"));
  EXPECT_THAT(text, HasSubstr("Y[n_0 + n_1, o_0 * 16 + o_1 * 16 + b_0 * 16 + b_1 * 16 + ax2_1, "
                              "h_0 * 2 + h_1 * 2 + ax0_1, T.Ramp(w_0 * 16 + w_1 * 4, 1, 4)] = "
                              "P_local[T.Ramp("));
  EXPECT_THAT(text, HasSubstr(", 16, 4)]\n"));
}

// An NHWC 3x3 convolution over a 7x7 image: the register tile is a whole row of 7 pixels by two
// vectors of output channels (no divisor of 7 fits the budget of 4 rows), and the pixel loops
// iterate inside each parallel block of output channels, which reads its weights from cache
// for every row rather than streaming all of them once per row.
// An NHWC 3x3 convolution over a 7x7 image, 64 channels in and out.
constexpr char kNhwcConv7x7[] = R"(
@I.ir_module
class Module:
    @T.prim_func
    def conv3x3(X: T.Buffer((1, 9, 9, 64), "float32"), W: T.Buffer((3, 3, 64, 64), "float32"), Y: T.Buffer((1, 7, 7, 64), "float32")):
        for n, h, w, c, k, kh, kw in T.grid(1, 7, 7, 64, 64, 3, 3):
            with T.block("conv2d"):
                vn, vh, vw, vc, vk, vkh, vkw = T.axis.remap("SSSSRRR", [n, h, w, c, k, kh, kw])
                T.reads(X[vn, vh + vkh, vw + vkw, vk], W[vkh, vkw, vk, vc])
                T.writes(Y[vn, vh, vw, vc])
                with T.init():
                    Y[vn, vh, vw, vc] = T.float32(0)
                Y[vn, vh, vw, vc] = Y[vn, vh, vw, vc] + X[vn, vh + vkh, vw + vkw, vk] * W[vkh, vkw, vk, vc]
)";

TEST(MultiLevelTilingTest, AConvolutionsPixelsIterateInsideEachBlockOfOutputChannels) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(kNhwcConv7x7);
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<Schedule> sch = DefaultSchedule(*mod, "conv3x3", kAvx512);
  ASSERT_TRUE(sch.ok()) << sch.status();
  const std::string scheduled = script::PrintScript(sch->mod());
  EXPECT_THAT(scheduled, HasSubstr("for c_0 in T.parallel(2):"));
  EXPECT_THAT(scheduled, HasSubstr("for n_1, h_1, w_1, c_1 in T.grid(1, 7, 1, 1):"));
  EXPECT_THAT(scheduled, HasSubstr("for w_3 in T.unroll(7):"));
  EXPECT_THAT(scheduled, HasSubstr("for c_3 in T.vectorized(32):"));
  testing::ExpectSameNumbers(*mod, *sch);
}

// A network's first convolution: 3 input channels read through a stride-2 window, each strided
// input vector shared by every output channel. The window loops go innermost (R1), inside a
// block of 16 output channels (S2), so that the shuffled vectors are built once per input
// channel for the block. The padding is computed once, outside the parallel loop over channel
// blocks, its rows in parallel, and only as far as the window reads (33 of the 34 padded rows
// and columns: no lane of the copy tests an upper bound).
TEST(MultiLevelTilingTest, AStrideTwoImageIsShuffledOncePerInputChannelForABlockOfChannels) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(R"(
@I.ir_module
class Module:
    @T.prim_func
    def conv_s2(X: T.Buffer((1, 3, 32, 32), "float32"), W: T.Buffer((32, 3, 3, 3), "float32"), Y: T.Buffer((1, 32, 16, 16), "float32")):
        with T.block("root"):
            pad_temp = T.alloc_buffer((1, 3, 34, 34), "float32")
            for n, c, h, w in T.grid(1, 3, 34, 34):
                with T.block("pad_temp"):
                    vn, vc, vh, vw = T.axis.remap("SSSS", [n, c, h, w])
                    T.reads(X[vn, vc, vh - 1, vw - 1])
                    T.writes(pad_temp[vn, vc, vh, vw])
                    pad_temp[vn, vc, vh, vw] = T.if_then_else(1 <= vh and vh < 33 and 1 <= vw and vw < 33, X[vn, vc, vh - 1, vw - 1], T.float32(0))
            for n, o, h, w, k, kh, kw in T.grid(1, 32, 16, 16, 3, 3, 3):
                with T.block("conv2d"):
                    vn, vo, vh, vw, vk, vkh, vkw = T.axis.remap("SSSSRRR", [n, o, h, w, k, kh, kw])
                    T.reads(pad_temp[vn, vk, vh * 2 + vkh, vw * 2 + vkw], W[vo, vk, vkh, vkw])
                    T.writes(Y[vn, vo, vh, vw])
                    with T.init():
                        Y[vn, vo, vh, vw] = T.float32(0)
                    Y[vn, vo, vh, vw] = Y[vn, vo, vh, vw] + pad_temp[vn, vk, vh * 2 + vkh, vw * 2 + vkw] * W[vo, vk, vkh, vkw]
)");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<Schedule> sch = DefaultSchedule(*mod, "conv_s2", kAvx512);
  ASSERT_TRUE(sch.ok()) << sch.status();
  const std::string scheduled = script::PrintScript(sch->mod());
  EXPECT_THAT(scheduled, HasSubstr("for ax0_ax1_fused in T.parallel(99):\n"
                                   "                for ax2 in T.vectorized(33):"));
  EXPECT_THAT(scheduled, HasSubstr("for o_0 in T.parallel(2):"));
  EXPECT_THAT(scheduled, HasSubstr("for k_0, kh_0, kw_0, n_2, o_2, h_2, w_2 in "
                                   "T.grid(3, 1, 1, 1, 16, 1, 1):"));
  EXPECT_THAT(scheduled, HasSubstr("for kh_1 in T.unroll(3):"));
  EXPECT_THAT(scheduled, HasSubstr("for kw_1 in T.unroll(3):"));
  EXPECT_THAT(scheduled, HasSubstr("for h_3 in T.unroll(2):"));
  testing::ExpectSameNumbers(*mod, *sch);
}

// A depthwise convolution: its channels share no input, so the register tile is rows of one
// channel (14 rows of an 8-lane vector: the budget of 16 accumulators its channels would have
// taken goes to the rows), with the window innermost and unrolled around it, so that each input
// vector is loaded once for every tap and row that reads it; the columns iterate inside the
// rows, and the accumulators are zeroed and written back by unrolled code.
TEST(MultiLevelTilingTest, ADepthwiseTileIsRowsOfOneChannelWithTheWindowInside) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(R"(
@I.ir_module
class Module:
    @T.prim_func
    def dw(X: T.Buffer((1, 32, 58, 58), "float32"), W: T.Buffer((32, 1, 3, 3), "float32"), Y: T.Buffer((1, 32, 56, 56), "float32")):
        for n, c, h, w, kh, kw in T.grid(1, 32, 56, 56, 3, 3):
            with T.block("dw"):
                vn, vc, vh, vw, vkh, vkw = T.axis.remap("SSSSRR", [n, c, h, w, kh, kw])
                T.reads(X[vn, vc, vh + vkh, vw + vkw], W[vc, 0, vkh, vkw])
                T.writes(Y[vn, vc, vh, vw])
                with T.init():
                    Y[vn, vc, vh, vw] = T.float32(0)
                Y[vn, vc, vh, vw] = Y[vn, vc, vh, vw] + X[vn, vc, vh + vkh, vw + vkw] * W[vc, 0, vkh, vkw]
)");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<Schedule> sch = DefaultSchedule(*mod, "dw", kAvx512);
  ASSERT_TRUE(sch.ok()) << sch.status();
  const std::string scheduled = script::PrintScript(sch->mod());
  EXPECT_THAT(scheduled, HasSubstr("for c_0 in T.parallel(32):"));
  EXPECT_THAT(scheduled,
              HasSubstr("for h_0, w_0, n_1, c_1, h_1, w_1 in T.grid(1, 1, 1, 1, 4, 7):"));
  EXPECT_THAT(scheduled, HasSubstr("for kh_1 in T.unroll(3):"));
  EXPECT_THAT(scheduled, HasSubstr("for kw_1 in T.unroll(3):"));
  EXPECT_THAT(scheduled, HasSubstr("for c_3 in T.unroll(1):"));
  EXPECT_THAT(scheduled, HasSubstr("for h_3 in T.unroll(14):"));
  EXPECT_THAT(scheduled, HasSubstr("for w_3 in T.vectorized(8):"));
  EXPECT_THAT(scheduled, HasSubstr("for h_3_init in T.unroll(14):"));
  EXPECT_THAT(scheduled, HasSubstr("for ax0_1 in T.unroll(14):"));
  testing::ExpectSameNumbers(*mod, *sch);
}

// A batch-1 classifier over 1,000 classes packed as 63 panels of 16: the register tile takes 7
// panels, as many independent accumulators as the budget of 8 allows (the budget left after a
// first 3 rows, divided step by step, had rounded it down to 3).
TEST(MultiLevelTilingTest, ABatchOneClassifierTilesAsManyPanelsAsTheBudgetAllows) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(R"(
@I.ir_module
class Module:
    @T.prim_func
    def classifier(X: T.Buffer((1, 256), "float32"), W: T.Buffer((63, 256, 16), "float32"), Y: T.Buffer((63, 1, 16), "float32")):
        for p, i, j, k in T.grid(63, 1, 16, 256):
            with T.block("matmul"):
                vp, vi, vj, vk = T.axis.remap("SSSR", [p, i, j, k])
                T.reads(X[vi, vk], W[vp, vk, vj])
                T.writes(Y[vp, vi, vj])
                with T.init():
                    Y[vp, vi, vj] = T.float32(0)
                Y[vp, vi, vj] = Y[vp, vi, vj] + X[vi, vk] * W[vp, vk, vj]
)");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<Schedule> sch = DefaultSchedule(*mod, "classifier", kAvx512);
  ASSERT_TRUE(sch.ok()) << sch.status();
  const std::string scheduled = script::PrintScript(sch->mod());
  EXPECT_THAT(scheduled, HasSubstr("for p_3 in T.unroll(7):"));
  EXPECT_THAT(scheduled, HasSubstr("for j_3 in T.vectorized(16):"));
  testing::ExpectSameNumbers(*mod, *sch);
}

// The register tile of the default schedule's one tiled block: the product of the innermost
// tiles of its spatial loops (the last entry of each four-level tiling decision), in registers
// of `lanes` float32 lanes.
int64_t TileRegisters(const Schedule& sch, int64_t lanes) {
  int64_t elements = 1;
  for (const std::optional<std::vector<int64_t>>& d : DecisionsOf(sch.trace())) {
    if (d && d->size() == 4) elements *= d->back();
  }
  return (elements + lanes - 1) / lanes;
}

// The register tile follows the target: what AVX-512's 32 registers hold (7 rows of two 16-lane
// vectors) would spill AVX2's 16 (7 rows of two 8-lane vectors take 14 of them, with no room for
// the streamed operands), so there the rows go whole at one vector each; NEON's 32 registers of
// 4 lanes hold 7 rows of two.
TEST(MultiLevelTilingTest, TheRegisterTileIsDerivedFromTheTarget) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(kNhwcConv7x7);
  ASSERT_TRUE(mod.ok()) << mod.status();
  struct Expected {
    const char* isa;
    target::CpuTarget cpu;
    const char* vector;
    const char* rows;
  };
  for (const Expected& e : {
           Expected{"AVX-512", target::Avx512Znver4(),
                    "for c_3 in T.vectorized(32):", "for w_3 in T.unroll(7):"},
           Expected{"AVX2", target::Avx2Haswell(),
                    "for c_3 in T.vectorized(8):", "for w_3 in T.unroll(7):"},
           Expected{"NEON", target::NeonCortexA72(),
                    "for c_3 in T.vectorized(8):", "for w_3 in T.unroll(7):"},
           Expected{"SVE-256", target::DescribeCpu("aarch64", "neoverse-v1", {"asimd", "sve"}, 256),
                    "for c_3 in T.vectorized(16):", "for w_3 in T.unroll(7):"},
       }) {
    SCOPED_TRACE(e.isa);
    const target::CpuPolicy policy = target::PolicyFor(e.cpu);
    absl::StatusOr<Schedule> sch = DefaultSchedule(*mod, "conv3x3", policy);
    ASSERT_TRUE(sch.ok()) << sch.status();
    const std::string scheduled = script::PrintScript(sch->mod());
    EXPECT_THAT(scheduled, HasSubstr(e.vector));
    EXPECT_THAT(scheduled, HasSubstr(e.rows));
    EXPECT_LE(TileRegisters(*sch, policy.lanes), policy.tile_registers);
  }
}

// For every target, the register tile of a matmul and of an NCHW convolution fits the register
// file beside the streamed operands, and holds enough accumulators to cover the FMA latency.
TEST(MultiLevelTilingTest, RegisterTilesFitEveryTargetsRegisterFile) {
  for (const target::CpuTarget& cpu :
       {target::Avx512Znver4(), target::Avx2Haswell(), target::NeonCortexA72(),
        target::DescribeCpu("aarch64", "neoverse-v1", {"asimd", "sve"}, 256)}) {
    SCOPED_TRACE(cpu.ToString());
    const target::CpuPolicy policy = target::PolicyFor(cpu);
    for (const auto& [script, name] :
         {std::pair<std::string, std::string>{testing::MatmulScript(64, 64, 64), "matmul"},
          {testing::MatmulScript(128, 256, 64), "matmul"}}) {
      absl::StatusOr<ir::IRModule> mod = testing::Parse(script);
      ASSERT_TRUE(mod.ok()) << mod.status();
      absl::StatusOr<Schedule> sch = DefaultSchedule(*mod, name, policy);
      ASSERT_TRUE(sch.ok()) << sch.status();
      const int64_t registers = TileRegisters(*sch, policy.lanes);
      EXPECT_LE(registers, policy.tile_registers);
      EXPECT_GE(registers, 4);
    }
  }
}

}  // namespace
}  // namespace kiln::tir
