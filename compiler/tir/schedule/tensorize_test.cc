// blockize and tensorize: the IR each produces, the numbers the result computes, and refusals.
#include "absl/strings/str_replace.h"
#include "compiler/script/printer.h"
#include "compiler/testing/expect_schedule.h"
#include "compiler/testing/schedule_workloads.h"
#include "compiler/tir/schedule/schedule.h"
#include "compiler/tir/schedule/tensor_intrin.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

using testing::ExpectIr;
using testing::ExpectRefused;
using testing::ExpectSameNumbers;
using testing::ExpectSameNumbersOnAarch64;
using testing::Load;
using testing::MakeSchedule;

// The 64^3 matmul tiled 4 x 16 in (i, j), k outside the tile: i_0, j_0, k, i_1, j_1.
struct TiledMatmul {
  ir::IRModule mod = Load(testing::MatmulScript(64, 64, 64));
  Schedule sch = MakeSchedule(mod, "matmul");
  BlockRV c;
  std::vector<LoopRV> i, j;
  LoopRV k;
  explicit TiledMatmul(int ti = 4, int tj = 16) {
    c = *sch.GetBlock("C");
    std::vector<LoopRV> loops = *sch.GetLoops(c);
    i = *sch.Split(loops[0], {Factor(), ti});
    j = *sch.Split(loops[1], {Factor(), tj});
    k = loops[2];
    EXPECT_TRUE(sch.Reorder({i[0], j[0], k, i[1], j[1]}).ok());
  }
};

TEST(Blockize, MakesTheTileAnOuterBlock) {
  TiledMatmul t;
  absl::StatusOr<BlockRV> outer = t.sch.Blockize(t.i[1]);
  ASSERT_TRUE(outer.ok()) << outer.status();
  EXPECT_EQ(*t.sch.BlockName(*outer), "C_o");
  ExpectIr(t.sch, R"(
@T.prim_func
def matmul(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    for i_0, j_0, k in T.grid(16, 4, 64):
        with T.block("C_o"):
            vi_o = T.axis.spatial(16, i_0)
            vj_o = T.axis.spatial(4, j_0)
            vk_o = T.axis.reduce(64, k)
            T.reads(A[vi_o * 4:vi_o * 4 + 4, vk_o], B[vk_o, vj_o * 16:vj_o * 16 + 16])
            T.writes(C[vi_o * 4:vi_o * 4 + 4, vj_o * 16:vj_o * 16 + 16])
            for i_1, j_1 in T.grid(4, 16):
                with T.block("C"):
                    vi = T.axis.spatial(64, vi_o * 4 + i_1)
                    vj = T.axis.spatial(64, vj_o * 16 + j_1)
                    vk = T.axis.reduce(64, vk_o)
                    T.reads(A[vi, vk], B[vk, vj])
                    T.writes(C[vi, vj])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)");
  ExpectSameNumbers(t.mod, t.sch);
}

TEST(Blockize, ConvRowAndChainAndSoftmax) {
  // conv2d: the output row (x and the reduction loops) as one block.
  ir::IRModule conv = Load(testing::Conv2dScript());
  Schedule sch = MakeSchedule(conv, "conv2d");
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("Y"));
  ASSERT_TRUE(sch.Blockize(loops[3]).ok());
  ExpectSameNumbers(conv, sch);
  // chain: a 8 x 16 tile of the add.
  ir::IRModule chain = Load(testing::ChainScript());
  Schedule c = MakeSchedule(chain, "chain");
  std::vector<LoopRV> add = *c.GetLoops(*c.GetBlock("add"));
  std::vector<LoopRV> ci = *c.Split(add[0], {Factor(), 8});
  ASSERT_TRUE(c.Blockize(ci[1]).ok());
  ExpectSameNumbers(chain, c);
  // softmax: a whole row of the sum.
  ir::IRModule softmax = Load(testing::SoftmaxScript());
  Schedule s = MakeSchedule(softmax, "softmax");
  std::vector<LoopRV> sum = *s.GetLoops(*s.GetBlock("sum"));
  ASSERT_TRUE(s.Blockize(sum[1]).ok());
  ExpectSameNumbers(softmax, s);
}

TEST(Blockize, RefusesPredicatesAndSharedNests) {
  ir::IRModule mod = Load(testing::MatmulScript(64, 64, 64));
  Schedule sch = MakeSchedule(mod, "matmul");
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_TRUE(sch.Split(loops[1], {Factor(), 5}).ok());
  ir::IRModule before = sch.mod();
  int n = sch.trace().instructions_size();
  ExpectRefused(sch, before, n, sch.Blockize(loops[0]).status(), "has a predicate");
  ir::IRModule softmax = Load(testing::SoftmaxScript());
  Schedule s = MakeSchedule(softmax, "softmax");
  BlockRV sum = *s.GetBlock("sum");
  std::vector<LoopRV> norm = *s.GetLoops(*s.GetBlock("norm"));
  ASSERT_TRUE(s.ComputeAt(sum, norm[0]).ok());
  before = s.mod();
  n = s.trace().instructions_size();
  ExpectRefused(s, before, n, s.Blockize(norm[0]).status(), "perfect nest around one block");
}

TEST(Tensorize, Avx2MicroKernelReplacesTheTile) {
  TiledMatmul t;
  ASSERT_TRUE(t.sch.DecomposeReduction(t.c, t.k).ok());
  absl::StatusOr<BlockRV> outer = t.sch.Tensorize(t.i[1], "x86_avx2_fma_f32_4x16");
  ASSERT_TRUE(outer.ok()) << outer.status();
  ExpectIr(t.sch, R"(
@T.prim_func
def matmul(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    for i_0, j_0 in T.grid(16, 4):
        for i_1_init, j_1_init in T.grid(4, 16):
            with T.block("C_init"):
                vi = T.axis.spatial(64, i_0 * 4 + i_1_init)
                vj = T.axis.spatial(64, j_0 * 16 + j_1_init)
                T.reads()
                T.writes(C[vi, vj])
                C[vi, vj] = T.float32(0)
        for k in range(64):
            with T.block("C_o"):
                vi_o = T.axis.spatial(16, i_0)
                vj_o = T.axis.spatial(4, j_0)
                vk_o = T.axis.reduce(64, k)
                T.reads(A[vi_o * 4:vi_o * 4 + 4, vk_o], B[vk_o, vj_o * 16:vj_o * 16 + 16])
                T.writes(C[vi_o * 4:vi_o * 4 + 4, vj_o * 16:vj_o * 16 + 16])
                T.block_attr({"tensorized": "x86_avx2_fma_f32_4x16"})
                C_view = T.match_buffer(C[vi_o * 4:vi_o * 4 + 4, vj_o * 16:vj_o * 16 + 16], (T.int64(4), T.int64(16)), "float32")
                A_view = T.match_buffer(A[vi_o * 4:vi_o * 4 + 4, vk_o], (T.int64(4), T.int64(1)), "float32")
                B_view = T.match_buffer(B[vk_o, vj_o * 16:vj_o * 16 + 16], (T.int64(1), T.int64(16)), "float32")
                for k_1 in range(1):
                    for i in T.unroll(4):
                        for v in T.unroll(2):
                            C_view[i, T.Ramp(v * 8, 1, 8)] = T.fma(T.Broadcast(A_view[i, k_1], 8), B_view[k_1, T.Ramp(v * 8, 1, 8)], C_view[i, T.Ramp(v * 8, 1, 8)])
)");
  ExpectSameNumbers(t.mod, t.sch);
}

TEST(Tensorize, NeonMicroKernelOnALocalAccumulator) {
  // The NEON implementation is plain 4-lane TIR: it runs here, and on aarch64 under qemu.
  TiledMatmul t;
  absl::StatusOr<BlockRV> local = t.sch.CacheWrite(t.c, 0, "local");
  ASSERT_TRUE(local.ok()) << local.status();
  ASSERT_TRUE(t.sch.ReverseComputeAt(*local, t.j[0]).ok());
  ASSERT_TRUE(t.sch.DecomposeReduction(t.c, t.k).ok());
  absl::StatusOr<BlockRV> outer = t.sch.Tensorize(t.i[1], "arm_neon_f32_4x16");
  ASSERT_TRUE(outer.ok()) << outer.status();
  ASSERT_TRUE(t.sch.Parallel(t.i[0]).ok());
  ExpectSameNumbers(t.mod, t.sch);
  ExpectSameNumbersOnAarch64(t.mod, t.sch);
}

TEST(Tensorize, RefusesWhatTheIntrinsicDoesNotCompute) {
  {  // an init still in the block
    TiledMatmul t;
    ir::IRModule before = t.sch.mod();
    int n = t.sch.trace().instructions_size();
    ExpectRefused(t.sch, before, n, t.sch.Tensorize(t.i[1], "x86_avx2_fma_f32_4x16").status(),
                  "decompose_reduction first");
  }
  {  // a 8 x 16 tile for a 4 x 16 intrinsic
    TiledMatmul t(8, 16);
    ASSERT_TRUE(t.sch.DecomposeReduction(t.c, t.k).ok());
    ir::IRModule before = t.sch.mod();
    int n = t.sch.trace().instructions_size();
    ExpectRefused(t.sch, before, n, t.sch.Tensorize(t.i[1], "x86_avx2_fma_f32_4x16").status(),
                  "extents (8, 16), the intrinsic's description (4, 16)");
  }
  {  // an elementwise add is not a multiply-accumulate
    ir::IRModule chain = Load(testing::ChainScript());
    Schedule sch = MakeSchedule(chain, "chain");
    std::vector<LoopRV> add = *sch.GetLoops(*sch.GetBlock("add"));
    std::vector<LoopRV> i = *sch.Split(add[0], {Factor(), 4});
    std::vector<LoopRV> j = *sch.Split(add[1], {Factor(), 16});
    ASSERT_TRUE(sch.Reorder({i[0], j[0], i[1], j[1]}).ok());
    ir::IRModule before = sch.mod();
    int n = sch.trace().instructions_size();
    ExpectRefused(sch, before, n, sch.Tensorize(i[1], "x86_avx2_fma_f32_4x16").status(),
                  "does not compute what the intrinsic's description does");
  }
  {  // B transposed: the same buffers, accessed the other way round
    ir::IRModule mod =
        Load(absl::StrReplaceAll(testing::MatmulScript(64, 64, 64), {{"B[vk, vj]", "B[vj, vk]"}}));
    Schedule sch = MakeSchedule(mod, "matmul");
    BlockRV c = *sch.GetBlock("C");
    std::vector<LoopRV> loops = *sch.GetLoops(c);
    std::vector<LoopRV> i = *sch.Split(loops[0], {Factor(), 4});
    std::vector<LoopRV> j = *sch.Split(loops[1], {Factor(), 16});
    ASSERT_TRUE(sch.Reorder({i[0], j[0], loops[2], i[1], j[1]}).ok());
    ASSERT_TRUE(sch.DecomposeReduction(c, loops[2]).ok());
    ir::IRModule before = sch.mod();
    int n = sch.trace().instructions_size();
    ExpectRefused(sch, before, n, sch.Tensorize(i[1], "x86_avx2_fma_f32_4x16").status(),
                  "does not compute");
  }
  {  // an unknown intrinsic
    TiledMatmul t;
    ir::IRModule before = t.sch.mod();
    int n = t.sch.trace().instructions_size();
    ExpectRefused(t.sch, before, n, t.sch.Tensorize(t.i[1], "no_such_intrin").status(),
                  "registered: arm_neon_f32_4x16 x86_avx2_fma_f32_4x16");
  }
}

TEST(TensorIntrin, RegistrationChecksThePair) {
  TensorIntrin ok = MatmulMicroKernel(2, 8, 4, 4);
  EXPECT_TRUE(RegisterTensorIntrin("test_2x8x4", ok.desc, ok.impl).ok());
  EXPECT_EQ(RegisterTensorIntrin("test_2x8x4", ok.desc, ok.impl).code(),
            absl::StatusCode::kAlreadyExists);
  TensorIntrin other = MatmulMicroKernel(4, 8, 4, 4);
  absl::Status mismatch = RegisterTensorIntrin("test_bad", ok.desc, other.impl);
  EXPECT_NE(std::string(mismatch.message()).find("differs in dtype or constant shape"),
            std::string::npos)
      << mismatch;
  // A registered kernel with a k loop inside: a 2 x 8 tile over 4 steps of k.
  TiledMatmul t(2, 8);
  std::vector<LoopRV> k = *t.sch.Split(t.k, {Factor(), 4});
  ASSERT_TRUE(t.sch.Reorder({t.i[0], t.j[0], k[0], t.i[1], t.j[1], k[1]}).ok());
  ASSERT_TRUE(t.sch.DecomposeReduction(t.c, k[0]).ok());
  absl::StatusOr<BlockRV> outer = t.sch.Tensorize(t.i[1], "test_2x8x4");
  ASSERT_TRUE(outer.ok()) << outer.status();
  ExpectSameNumbers(t.mod, t.sch);
}

}  // namespace
}  // namespace kiln::tir
