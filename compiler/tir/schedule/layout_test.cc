// storage_align, transform_layout and pad_einsum: the IR each produces, the numbers the result
// computes, and refusals.
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

TEST(StorageAlign, PadsTheRowStride) {
  ir::IRModule mod = Load(testing::ChainScript());
  Schedule sch = MakeSchedule(mod, "chain");
  ASSERT_TRUE(sch.StorageAlign(*sch.GetBlock("relu"), 0, 0, 64, 8).ok());
  // 48 rounds up to 72 = 64 + 8.
  ExpectIr(sch, R"(
@T.prim_func
def chain(A: T.Buffer((32, 48), "float32"), B: T.Buffer((32, 48), "float32"), D: T.Buffer((32, 48), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    with T.block("root"):
        S = T.alloc_buffer((32, 48), "float32")
        R = T.alloc_buffer((32, 48), "float32", strides=(72, 1))
        for i, j in T.grid(32, 48):
            with T.block("add"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj], B[vi, vj])
                T.writes(S[vi, vj])
                S[vi, vj] = A[vi, vj] + B[vi, vj]
        for i, j in T.grid(32, 48):
            with T.block("relu"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(S[vi, vj])
                T.writes(R[vi, vj])
                R[vi, vj] = T.max(S[vi, vj], T.float32(0))
        for i, j in T.grid(32, 48):
            with T.block("scale"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(R[vi, vj])
                T.writes(D[vi, vj])
                D[vi, vj] = R[vi, vj] * T.float32(2)
)");
  ExpectSameNumbers(mod, sch);
}

TEST(StorageAlign, LocalAccumulatorAndSoftmax) {
  ir::IRModule mod = Load(testing::MatmulScript(64, 64, 64));
  Schedule sch = MakeSchedule(mod, "matmul");
  BlockRV c = *sch.GetBlock("C");
  ASSERT_TRUE(sch.CacheWrite(c, 0, "local").ok());
  ASSERT_TRUE(sch.StorageAlign(c, 0, 0, 32, 4).ok());
  ExpectSameNumbers(mod, sch);
  ir::IRModule softmax = Load(testing::SoftmaxScript());
  Schedule s = MakeSchedule(softmax, "softmax");
  ASSERT_TRUE(s.StorageAlign(*s.GetBlock("exp"), 0, 0, 16, 1).ok());
  ExpectSameNumbers(softmax, s);
}

TEST(StorageAlign, RefusesParametersAndTheInnermostAxis) {
  ir::IRModule mod = Load(testing::ChainScript());
  Schedule sch = MakeSchedule(mod, "chain");
  BlockRV scale = *sch.GetBlock("scale");
  BlockRV relu = *sch.GetBlock("relu");
  ir::IRModule before = sch.mod();
  int n = sch.trace().instructions_size();
  ExpectRefused(sch, before, n, sch.StorageAlign(scale, 0, 0, 64, 8), "parameter of the function");
  ExpectRefused(sch, before, n, sch.StorageAlign(relu, 0, 1, 64, 8),
                "innermost dimension's stride is 1");
  ExpectRefused(sch, before, n, sch.StorageAlign(relu, 0, 0, 8, 8), "0 <= offset < factor");
}

TEST(TransformLayout, PanelsOfSixteen) {
  ir::IRModule mod = Load(testing::ChainScript());
  Schedule sch = MakeSchedule(mod, "chain");
  ASSERT_TRUE(sch.TransformLayout(*sch.GetBlock("relu"), 0, true, {1, 16}, {1, 0, 2}).ok());
  ExpectIr(sch, R"(
@T.prim_func
def chain(A: T.Buffer((32, 48), "float32"), B: T.Buffer((32, 48), "float32"), D: T.Buffer((32, 48), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    with T.block("root"):
        S = T.alloc_buffer((32, 48), "float32")
        R = T.alloc_buffer((3, 32, 16), "float32")
        for i, j in T.grid(32, 48):
            with T.block("add"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj], B[vi, vj])
                T.writes(S[vi, vj])
                S[vi, vj] = A[vi, vj] + B[vi, vj]
        for i, j in T.grid(32, 48):
            with T.block("relu"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(S[vi, vj])
                T.writes(R[vj // 16, vi, vj % 16])
                R[vj // 16, vi, vj % 16] = T.max(S[vi, vj], T.float32(0))
        for i, j in T.grid(32, 48):
            with T.block("scale"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(R[vj // 16, vi, vj % 16])
                T.writes(D[vi, vj])
                D[vi, vj] = R[vj // 16, vi, vj % 16] * T.float32(2)
)");
  ExpectSameNumbers(mod, sch);
}

TEST(TransformLayout, PackedMatmulOperandAndSoftmax) {
  // B copied, then packed into (n / 16, k, 16) panels: what a micro-kernel streams.
  ir::IRModule mod = Load(testing::MatmulScript(64, 64, 64));
  Schedule sch = MakeSchedule(mod, "matmul");
  absl::StatusOr<BlockRV> copy = sch.CacheRead(*sch.GetBlock("C"), 1, "global");
  ASSERT_TRUE(copy.ok()) << copy.status();
  ASSERT_TRUE(sch.TransformLayout(*copy, 0, true, {1, 16}, {1, 0, 2}).ok());
  ExpectSameNumbers(mod, sch);
  ir::IRModule softmax = Load(testing::SoftmaxScript());
  Schedule s = MakeSchedule(softmax, "softmax");
  ASSERT_TRUE(s.TransformLayout(*s.GetBlock("norm"), 0, false, {4, 8}, {0, 2, 1, 3}).ok());
  ExpectSameNumbers(softmax, s);
}

TEST(TransformLayout, RefusesParametersUnevenSplitsAndBadOrders) {
  ir::IRModule mod = Load(testing::ChainScript());
  Schedule sch = MakeSchedule(mod, "chain");
  BlockRV relu = *sch.GetBlock("relu");
  BlockRV scale = *sch.GetBlock("scale");
  ir::IRModule before = sch.mod();
  int n = sch.trace().instructions_size();
  ExpectRefused(sch, before, n, sch.TransformLayout(scale, 0, true, {1, 16}, {1, 0, 2}),
                "parameter of the function");
  ExpectRefused(sch, before, n, sch.TransformLayout(relu, 0, true, {1, 7}, {0, 1, 2}),
                "not a multiple of its factor 7");
  ExpectRefused(sch, before, n, sch.TransformLayout(relu, 0, true, {1, 16}, {0, 0, 2}),
                "must be a permutation");
}

TEST(PadEinsum, MatmulToMultiplesOfFour) {
  ir::IRModule mod = Load(testing::MatmulScript(6, 6, 6));
  Schedule sch = MakeSchedule(mod, "matmul");
  absl::Status padded = sch.PadEinsum(*sch.GetBlock("C"), {4, 4, 4});
  ASSERT_TRUE(padded.ok()) << padded;
  ExpectIr(sch, R"(
@T.prim_func
def matmul(A: T.Buffer((6, 6), "float32"), B: T.Buffer((6, 6), "float32"), C: T.Buffer((6, 6), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    with T.block("root"):
        A_pad = T.alloc_buffer((8, 8), "float32")
        B_pad = T.alloc_buffer((8, 8), "float32")
        C_pad = T.alloc_buffer((8, 8), "float32")
        for ax0, ax1 in T.grid(8, 8):
            with T.block("A_pad"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(A[0:6, 0:6])
                T.writes(A_pad[v0, v1])
                if v0 < 6 and v1 < 6:
                    A_pad[v0, v1] = A[v0, v1]
                else:
                    A_pad[v0, v1] = T.float32(0)
        for ax0, ax1 in T.grid(8, 8):
            with T.block("B_pad"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(B[0:6, 0:6])
                T.writes(B_pad[v0, v1])
                if v0 < 6 and v1 < 6:
                    B_pad[v0, v1] = B[v0, v1]
                else:
                    B_pad[v0, v1] = T.float32(0)
        for i, j, k in T.grid(8, 8, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A_pad[vi, vk], B_pad[vk, vj])
                T.writes(C_pad[vi, vj])
                with T.init():
                    C_pad[vi, vj] = T.float32(0)
                C_pad[vi, vj] = C_pad[vi, vj] + A_pad[vi, vk] * B_pad[vk, vj]
        for ax0, ax1 in T.grid(6, 6):
            with T.block("C_unpad"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(C_pad[v0, v1])
                T.writes(C[v0, v1])
                C[v0, v1] = C_pad[v0, v1]
)");
  ExpectSameNumbers(mod, sch);
}

TEST(PadEinsum, PaddedMatmulTakesTheMicroKernelAndChainPads) {
  // 60^3 padded to 64^3, then tiled and tensorized: the shape the 4 x 16 kernel needs.
  ir::IRModule mod = Load(testing::MatmulScript(60, 60, 60));
  Schedule sch = MakeSchedule(mod, "matmul");
  BlockRV c = *sch.GetBlock("C");
  ASSERT_TRUE(sch.PadEinsum(c, {16, 16, 1}).ok());
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  std::vector<LoopRV> i = *sch.Split(loops[0], {Factor(), 4});
  std::vector<LoopRV> j = *sch.Split(loops[1], {Factor(), 16});
  ASSERT_TRUE(sch.Reorder({i[0], j[0], loops[2], i[1], j[1]}).ok());
  ASSERT_TRUE(sch.DecomposeReduction(c, loops[2]).ok());
  absl::StatusOr<BlockRV> outer = sch.Tensorize(i[1], "x86_avx2_fma_f32_4x16");
  ASSERT_TRUE(outer.ok()) << outer.status();
  ExpectSameNumbers(mod, sch);
  ir::IRModule chain = Load(testing::ChainScript());
  Schedule s = MakeSchedule(chain, "chain");
  ASSERT_TRUE(s.PadEinsum(*s.GetBlock("add"), {1, 32}).ok());
  ExpectSameNumbers(chain, s);
}

TEST(PadEinsum, RefusesShiftedAccessesAndPaddedMaxima) {
  ir::IRModule conv = Load(testing::Conv2dScript());
  Schedule sch = MakeSchedule(conv, "conv2d");
  BlockRV y = *sch.GetBlock("Y");
  ir::IRModule before = sch.mod();
  int n = sch.trace().instructions_size();
  ExpectRefused(sch, before, n, sch.PadEinsum(y, {1, 16, 1, 1, 1, 1, 1}), "plain iter vars");
  ir::IRModule softmax = Load(testing::SoftmaxScript());
  Schedule s = MakeSchedule(softmax, "softmax");
  BlockRV max = *s.GetBlock("max");
  before = s.mod();
  n = s.trace().instructions_size();
  ExpectRefused(s, before, n, s.PadEinsum(max, {1, 48}), "needs a sum");
  ExpectRefused(s, before, n, s.PadEinsum(max, {1}), "1 paddings for 2");
}

}  // namespace
}  // namespace kiln::tir
