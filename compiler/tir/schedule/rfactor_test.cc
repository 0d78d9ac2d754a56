// rfactor: the IR it produces, the numbers the result computes, and refusals.
#include "compiler/script/printer.h"
#include "compiler/testing/expect_schedule.h"
#include "compiler/testing/schedule_workloads.h"
#include "compiler/tir/schedule/schedule.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

using testing::ExpectIr;
using testing::ExpectRefused;
using testing::ExpectSameNumbers;
using testing::Load;
using testing::MakeSchedule;

TEST(RFactor, MatmulPartialSumsOverTheInnerK) {
  ir::IRModule mod = Load(testing::MatmulScript(16, 16, 64));
  Schedule sch = MakeSchedule(mod, "matmul");
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  std::vector<LoopRV> k = *sch.Split(loops[2], {Factor(), 4});
  absl::StatusOr<BlockRV> rf = sch.RFactor(k[1], 0);
  ASSERT_TRUE(rf.ok()) << rf.status();
  EXPECT_EQ(*sch.BlockName(*rf), "C_rf");
  ExpectIr(sch, R"(
@T.prim_func
def matmul(A: T.Buffer((16, 64), "float32"), B: T.Buffer((64, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    with T.block("root"):
        C_rf = T.alloc_buffer((4, 16, 16), "float32")
        for i, j, k_0, k_1 in T.grid(16, 16, 16, 4):
            with T.block("C_rf"):
                vi = T.axis.spatial(16, i)
                vj = T.axis.spatial(16, j)
                vk_0 = T.axis.reduce(16, k_0)
                vk_1 = T.axis.spatial(4, k_1)
                T.reads(A[vi, vk_0 * 4 + vk_1], B[vk_0 * 4 + vk_1, vj])
                T.writes(C_rf[vk_1, vi, vj])
                with T.init():
                    C_rf[vk_1, vi, vj] = T.float32(0)
                C_rf[vk_1, vi, vj] = C_rf[vk_1, vi, vj] + A[vi, vk_0 * 4 + vk_1] * B[vk_0 * 4 + vk_1, vj]
        for i, j, k_1 in T.grid(16, 16, 4):
            with T.block("C"):
                vi = T.axis.spatial(16, i)
                vj = T.axis.spatial(16, j)
                vk_1 = T.axis.reduce(4, k_1)
                T.reads(C_rf[vk_1, vi, vj])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + C_rf[vk_1, vi, vj]
)");
  ExpectSameNumbers(mod, sch);
}

TEST(RFactor, SoftmaxSumsAndMaxesInParallelLanes) {
  // The row sum factored over its 8 innermost steps and the row max over 8 chunks, both
  // partials at the last axis (1 and -1); the row loop then runs in parallel and the max's
  // chunk loop is vectorized.
  ir::IRModule mod = Load(testing::SoftmaxScript());
  Schedule sch = MakeSchedule(mod, "softmax");
  std::vector<LoopRV> sum = *sch.GetLoops(*sch.GetBlock("sum"));
  std::vector<LoopRV> sk = *sch.Split(sum[1], {Factor(), 8});
  ASSERT_TRUE(sch.RFactor(sk[1], 1).ok());
  std::vector<LoopRV> max = *sch.GetLoops(*sch.GetBlock("max"));
  std::vector<LoopRV> mk = *sch.Split(max[1], {8, Factor()});
  absl::StatusOr<BlockRV> rf = sch.RFactor(mk[0], -1);
  ASSERT_TRUE(rf.ok()) << rf.status();
  ASSERT_TRUE(sch.Reorder({mk[1], mk[0]}).ok());
  ASSERT_TRUE(sch.Vectorize(mk[0]).ok());
  ASSERT_TRUE(sch.Parallel(sum[0]).ok());
  ExpectSameNumbers(mod, sch);
}

TEST(RFactor, ConvOverInputChannels) {
  ir::IRModule mod = Load(testing::Conv2dScript());
  Schedule sch = MakeSchedule(mod, "conv2d");
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("Y"));
  ASSERT_TRUE(sch.RFactor(loops[4], 1).ok());
  ExpectSameNumbers(mod, sch);
}

TEST(RFactor, RefusesSpatialLoopsAndNonReductions) {
  ir::IRModule mod = Load(testing::MatmulScript(16, 16, 64));
  Schedule sch = MakeSchedule(mod, "matmul");
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ir::IRModule before = sch.mod();
  int n = sch.trace().instructions_size();
  ExpectRefused(sch, before, n, sch.RFactor(loops[0], 0).status(), "drives no reduction iter var");
  ExpectRefused(sch, before, n, sch.RFactor(loops[2], 5).status(), "out of range");
  ir::IRModule chain = Load(testing::ChainScript());
  Schedule c = MakeSchedule(chain, "chain");
  std::vector<LoopRV> add = *c.GetLoops(*c.GetBlock("add"));
  before = c.mod();
  n = c.trace().instructions_size();
  ExpectRefused(c, before, n, c.RFactor(add[1], 0).status(), "must be a reduction");
}

}  // namespace
}  // namespace kiln::tir
