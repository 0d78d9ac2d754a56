// Each primitive: the IR it produces (against TVMScript written out by hand), the numbers the
// scheduled function computes (against the unscheduled one, both compiled and run), and a failing
// precondition that must leave the schedule untouched.
#include "compiler/tir/schedule/schedule.h"

#include "absl/strings/str_replace.h"
#include "compiler/ir/structural.h"
#include "compiler/script/printer.h"
#include "compiler/testing/expect_schedule.h"
#include "compiler/testing/schedule_workloads.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

using testing::ExpectIr;
using testing::ExpectRefused;
using testing::ExpectSameNumbers;
using testing::Load;
Schedule Make(const ir::IRModule& mod, const std::string& name) {
  return testing::MakeSchedule(mod, name);
}

const std::string kMatmul = testing::MatmulScript(64, 64, 64);

std::string MatmulWith(const std::string& loops_and_block) {
  return absl::StrReplaceAll(R"(
@T.prim_func
def matmul(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
BODY)",
                             {{"BODY", loops_and_block}});
}

// --- split ---

TEST(Split, InfersAFactorAndRewritesTheBinding) {
  ir::IRModule mod = Load(kMatmul);
  Schedule sch = Make(mod, "matmul");
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  absl::StatusOr<std::vector<LoopRV>> parts = sch.Split(loops[0], {Factor(), 8});
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ(*sch.LoopName((*parts)[0]), "i_0");
  ExpectIr(sch, MatmulWith(R"(
    for i_0, i_1, j, k in T.grid(8, 8, 64, 64):
        with T.block("C"):
            vi = T.axis.spatial(64, i_0 * 8 + i_1)
            vj, vk = T.axis.remap("SR", [j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)"));
  ExpectSameNumbers(mod, sch);
}

TEST(Split, AnImperfectSplitGuardsTheBlock) {
  ir::IRModule mod = Load(kMatmul);
  Schedule sch = Make(mod, "matmul");
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_TRUE(sch.Split(loops[1], {Factor(), 5}).ok());
  ExpectIr(sch, MatmulWith(R"(
    for i, j_0, j_1, k in T.grid(64, 13, 5, 64):
        with T.block("C"):
            vi = T.axis.spatial(64, i)
            vj = T.axis.spatial(64, j_0 * 5 + j_1)
            vk = T.axis.reduce(64, k)
            T.where(j_0 * 5 + j_1 < 64)
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)"));
  ExpectSameNumbers(mod, sch);
}

TEST(Split, RefusesBadFactors) {
  ir::IRModule mod = Load(kMatmul);
  Schedule sch = Make(mod, "matmul");
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ir::IRModule before = sch.mod();
  int n = sch.trace().instructions_size();
  ExpectRefused(sch, before, n, sch.Split(loops[0], {4, 8}).status(), "less than the extent 64");
  ExpectRefused(sch, before, n, sch.Split(loops[0], {Factor(), Factor()}).status(),
                "at most one factor");
  ExpectRefused(sch, before, n, sch.Split(loops[0], {Factor(), 0}).status(), "positive");
  ASSERT_TRUE(sch.Parallel(loops[0]).ok());
  before = sch.mod();
  n = sch.trace().instructions_size();
  ExpectRefused(sch, before, n, sch.Split(loops[0], {Factor(), 8}).status(), "parallel");
}

// --- fuse and reorder ---

TEST(Fuse, FusesAPerfectNest) {
  ir::IRModule mod = Load(kMatmul);
  Schedule sch = Make(mod, "matmul");
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  absl::StatusOr<LoopRV> fused = sch.Fuse({loops[0], loops[1]});
  ASSERT_TRUE(fused.ok()) << fused.status();
  ExpectIr(sch, MatmulWith(R"(
    for i_j_fused, k in T.grid(4096, 64):
        with T.block("C"):
            vi = T.axis.spatial(64, i_j_fused // 64)
            vj = T.axis.spatial(64, i_j_fused % 64)
            vk = T.axis.reduce(64, k)
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)"));
  ExpectSameNumbers(mod, sch);
}

TEST(Fuse, RefusesLoopsThatAreNotANest) {
  ir::IRModule mod = Load(kMatmul);
  Schedule sch = Make(mod, "matmul");
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ir::IRModule before = sch.mod();
  ExpectRefused(sch, before, sch.trace().instructions_size(),
                sch.Fuse({loops[0], loops[2]}).status(), "perfect nest");
}

TEST(Reorder, PermutesTheNest) {
  ir::IRModule mod = Load(kMatmul);
  Schedule sch = Make(mod, "matmul");
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_TRUE(sch.Reorder({loops[2], loops[0]}).ok());
  ExpectIr(sch, MatmulWith(R"(
    for k, j, i in T.grid(64, 64, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)"));
  ExpectSameNumbers(mod, sch);
}

TEST(Reorder, RefusesLoopsOfDifferentNests) {
  ir::IRModule mod = Load(testing::SoftmaxScript());
  Schedule sch = Make(mod, "softmax");
  std::vector<LoopRV> a = *sch.GetLoops(*sch.GetBlock("max"));
  std::vector<LoopRV> b = *sch.GetLoops(*sch.GetBlock("sum"));
  ir::IRModule before = sch.mod();
  ExpectRefused(sch, before, sch.trace().instructions_size(), sch.Reorder({b[1], a[0]}),
                "not one perfect nest");
}

// --- loop kinds and annotations ---

TEST(LoopKinds, ParallelVectorizeUnrollBindAndAnnotate) {
  ir::IRModule mod = Load(kMatmul);
  Schedule sch = Make(mod, "matmul");
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  ASSERT_TRUE(sch.Reorder({loops[0], loops[2], loops[1]}).ok());
  ASSERT_TRUE(sch.Parallel(loops[0]).ok());
  ASSERT_TRUE(sch.Unroll(loops[2]).ok());
  ASSERT_TRUE(sch.Vectorize(loops[1]).ok());
  ASSERT_TRUE(sch.Annotate(loops[2], "pragma_unroll_explicit", 1).ok());
  ASSERT_TRUE(sch.Annotate(c, "meta_schedule.tiling_structure", "SSRSRS").ok());
  ASSERT_TRUE(sch.Annotate(c, "scratch", 3).ok());
  ASSERT_TRUE(sch.Unannotate(c, "scratch").ok());
  ExpectIr(sch, MatmulWith(R"(
    for i in T.parallel(64):
        for k in T.unroll(64, annotations={"pragma_unroll_explicit": 1}):
            for j in T.vectorized(64):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    T.reads(A[vi, vk], B[vk, vj])
                    T.writes(C[vi, vj])
                    T.block_attr({"meta_schedule.tiling_structure": "SSRSRS"})
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)"));
  ExpectSameNumbers(mod, sch);

  Schedule gpu = Make(mod, "matmul");
  std::vector<LoopRV> g = *gpu.GetLoops(*gpu.GetBlock("C"));
  ASSERT_TRUE(gpu.Bind(g[0], "blockIdx.x").ok());
  ASSERT_TRUE(gpu.Bind(g[1], "threadIdx.x").ok());
  ExpectIr(gpu, MatmulWith(R"(
    for i in T.thread_binding(64, thread="blockIdx.x"):
        for j in T.thread_binding(64, thread="threadIdx.x"):
            for k in range(64):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    T.reads(A[vi, vk], B[vk, vj])
                    T.writes(C[vi, vj])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)"));
}

TEST(LoopKinds, RefuseReductionLoopsAndRebinding) {
  ir::IRModule mod = Load(kMatmul);
  Schedule sch = Make(mod, "matmul");
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  ir::IRModule before = sch.mod();
  int n = sch.trace().instructions_size();
  ExpectRefused(sch, before, n, sch.Parallel(loops[2]), "reduce iter var 'vk' of block 'C'");
  ExpectRefused(sch, before, n, sch.Vectorize(loops[2]), "reduce iter var");
  ExpectRefused(sch, before, n, sch.Bind(loops[2], "threadIdx.x"), "reduce iter var");
  ExpectRefused(sch, before, n, sch.Bind(loops[0], "threadIdx.w"), "unknown thread axis");
  ExpectRefused(sch, before, n, sch.Unannotate(loops[0], "nothing"), "no annotation");
  ASSERT_TRUE(sch.Vectorize(loops[1]).ok());
  before = sch.mod();
  n = sch.trace().instructions_size();
  ExpectRefused(sch, before, n, sch.Parallel(loops[1]), "already vectorized");
}

// --- cache_write, reverse_compute_at, decompose_reduction ---

TEST(CacheWrite, AccumulatesInALocalBufferAndCopiesBack) {
  ir::IRModule mod = Load(kMatmul);
  Schedule sch = Make(mod, "matmul");
  absl::StatusOr<BlockRV> copy = sch.CacheWrite(*sch.GetBlock("C"), 0, "local");
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(*sch.BlockName(*copy), "C_local");
  ExpectIr(sch, MatmulWith(R"(
    with T.block("root"):
        C_local = T.alloc_buffer((64, 64), "float32", scope="local")
        for i, j, k in T.grid(64, 64, 64):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C_local[vi, vj])
                with T.init():
                    C_local[vi, vj] = T.float32(0)
                C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
        for ax0, ax1 in T.grid(64, 64):
            with T.block("C_local"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(C_local[v0, v1])
                T.writes(C[v0, v1])
                C[v0, v1] = C_local[v0, v1]
)"));
  ExpectSameNumbers(mod, sch);
  ir::IRModule before = sch.mod();
  ExpectRefused(sch, before, sch.trace().instructions_size(),
                sch.CacheWrite(*sch.GetBlock("C"), 2, "local").status(), "not index 2");
}

TEST(ReverseComputeAt, MovesTheWriteBackUnderTheTile) {
  ir::IRModule mod = Load(kMatmul);
  Schedule sch = Make(mod, "matmul");
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  BlockRV copy = *sch.CacheWrite(c, 0, "local");
  std::vector<LoopRV> i = *sch.Split(loops[0], {Factor(), 8});
  ASSERT_TRUE(sch.Reorder({i[0], loops[1], loops[2], i[1]}).ok());
  absl::Status moved = sch.ReverseComputeAt(copy, loops[1]);
  ASSERT_TRUE(moved.ok()) << moved;
  ExpectIr(sch, MatmulWith(R"(
    with T.block("root"):
        C_local = T.alloc_buffer((64, 64), "float32", scope="local")
        for i_0, j in T.grid(8, 64):
            for k, i_1 in T.grid(64, 8):
                with T.block("C"):
                    vi = T.axis.spatial(64, i_0 * 8 + i_1)
                    vj, vk = T.axis.remap("SR", [j, k])
                    T.reads(A[vi, vk], B[vk, vj])
                    T.writes(C_local[vi, vj])
                    with T.init():
                        C_local[vi, vj] = T.float32(0)
                    C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
            for ax0_1 in range(8):
                with T.block("C_local"):
                    v0 = T.axis.spatial(64, i_0 * 8 + ax0_1)
                    v1 = T.axis.spatial(64, j)
                    T.reads(C_local[v0, v1])
                    T.writes(C[v0, v1])
                    C[v0, v1] = C_local[v0, v1]
)"));
  ExpectSameNumbers(mod, sch);
}

TEST(ReverseComputeAt, RefusesAProducer) {
  ir::IRModule mod = Load(testing::ChainScript());
  Schedule sch = Make(mod, "chain");
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("scale"));
  ir::IRModule before = sch.mod();
  ExpectRefused(sch, before, sch.trace().instructions_size(),
                sch.ReverseComputeAt(*sch.GetBlock("add"), loops[0]), "comes before");
}

TEST(ReverseComputeAt, RefusesToMoveAConsumerAboveTheProducerOfItsOtherInput) {
  // The epilogue reads S, which a store between the tile and the epilogue writes: moved into the
  // tile, it would read S before it is written (a fused QLinearMatMul's zero point did).
  ir::IRModule mod = Load(R"(
@T.prim_func
def f(A: T.Buffer((8,), "float32"), Z: T.Buffer((), "float32"), Y: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,), "float32")
    S = T.alloc_buffer((), "float32")
    for i in range(8):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.float32(2)
    S[()] = Z[()] + T.float32(1)
    for i in range(8):
        with T.block("Y"):
            vi = T.axis.remap("S", [i])
            Y[vi] = B[vi] + S[()]
)");
  Schedule sch = Make(mod, "f");
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("B"));
  ir::IRModule before = sch.mod();
  ExpectRefused(sch, before, sch.trace().instructions_size(),
                sch.ReverseComputeAt(*sch.GetBlock("Y"), loops[0]),
                "a statement between them writes 'S'");
}

TEST(ComputeAt, RefusesToMoveAProducerBelowAnotherConsumer) {
  // exp's E is read by sum before norm: computed under norm's loop, sum would read it unwritten.
  ir::IRModule mod = Load(testing::SoftmaxScript());
  Schedule sch = Make(mod, "softmax");
  std::vector<LoopRV> norm = *sch.GetLoops(*sch.GetBlock("norm"));
  ir::IRModule before = sch.mod();
  ExpectRefused(sch, before, sch.trace().instructions_size(),
                sch.ComputeAt(*sch.GetBlock("exp"), norm[0]), "a statement between them reads 'E'");
}

TEST(DecomposeReduction, SplitsTheInitIntoItsOwnBlock) {
  ir::IRModule mod = Load(kMatmul);
  Schedule sch = Make(mod, "matmul");
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  absl::StatusOr<BlockRV> init = sch.DecomposeReduction(c, loops[1]);
  ASSERT_TRUE(init.ok()) << init.status();
  EXPECT_EQ(*sch.BlockName(*init), "C_init");
  ExpectIr(sch, MatmulWith(R"(
    for i in range(64):
        for j_init in range(64):
            with T.block("C_init"):
                vi, vj = T.axis.remap("SS", [i, j_init])
                T.reads()
                T.writes(C[vi, vj])
                C[vi, vj] = T.float32(0)
        for j, k in T.grid(64, 64):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)"));
  ExpectSameNumbers(mod, sch);
  ir::IRModule before = sch.mod();
  ExpectRefused(sch, before, sch.trace().instructions_size(),
                sch.DecomposeReduction(c, loops[2]).status(), "has no init");
}

TEST(Composition, TiledMatmulWithALocalAccumulator) {
  ir::IRModule mod = Load(kMatmul);
  Schedule sch = Make(mod, "matmul");
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  BlockRV copy = *sch.CacheWrite(c, 0, "local");
  std::vector<LoopRV> i = *sch.Split(loops[0], {Factor(), 4});
  std::vector<LoopRV> j = *sch.Split(loops[1], {Factor(), 16});
  ASSERT_TRUE(sch.Reorder({j[0], i[0], loops[2], i[1], j[1]}).ok());
  ASSERT_TRUE(sch.ReverseComputeAt(copy, i[0]).ok());
  ASSERT_TRUE(sch.DecomposeReduction(c, loops[2]).ok());
  ASSERT_TRUE(sch.Unroll(i[1]).ok());
  ASSERT_TRUE(sch.Vectorize(j[1]).ok());
  ASSERT_TRUE(sch.Parallel(j[0]).ok());
  ExpectSameNumbers(mod, sch);
}

// --- cache_read, compute_at ---

TEST(CacheRead, CopiesTheOperandFirst) {
  ir::IRModule mod = Load(kMatmul);
  Schedule sch = Make(mod, "matmul");
  absl::StatusOr<BlockRV> copy = sch.CacheRead(*sch.GetBlock("C"), 1, "global");
  ASSERT_TRUE(copy.ok()) << copy.status();
  ExpectIr(sch, MatmulWith(R"(
    with T.block("root"):
        B_global = T.alloc_buffer((64, 64), "float32")
        for ax0, ax1 in T.grid(64, 64):
            with T.block("B_global"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(B[v0, v1])
                T.writes(B_global[v0, v1])
                B_global[v0, v1] = B[v0, v1]
        for i, j, k in T.grid(64, 64, 64):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B_global[vk, vj])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B_global[vk, vj]
)"));
  ExpectSameNumbers(mod, sch);
  ir::IRModule before = sch.mod();
  ExpectRefused(sch, before, sch.trace().instructions_size(),
                sch.CacheRead(*sch.GetBlock("C"), 5, "local").status(), "not index 5");
}

TEST(ComputeAt, ComputesTheReadRowUnderTheConsumersLoop) {
  ir::IRModule mod = Load(testing::ChainScript());
  Schedule sch = Make(mod, "chain");
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("relu"));
  absl::Status moved = sch.ComputeAt(*sch.GetBlock("add"), loops[0]);
  ASSERT_TRUE(moved.ok()) << moved;
  ExpectIr(sch, R"(
@T.prim_func
def chain(A: T.Buffer((32, 48), "float32"), B: T.Buffer((32, 48), "float32"), D: T.Buffer((32, 48), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    with T.block("root"):
        S = T.alloc_buffer((32, 48), "float32")
        R = T.alloc_buffer((32, 48), "float32")
        for i in range(32):
            for ax0 in range(48):
                with T.block("add"):
                    vi = T.axis.spatial(32, i)
                    vj = T.axis.spatial(48, ax0)
                    T.reads(A[vi, vj], B[vi, vj])
                    T.writes(S[vi, vj])
                    S[vi, vj] = A[vi, vj] + B[vi, vj]
            for j in range(48):
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
  std::vector<LoopRV> add_loops = *sch.GetLoops(*sch.GetBlock("add"));
  ir::IRModule before = sch.mod();
  ExpectRefused(sch, before, sch.trace().instructions_size(),
                sch.ComputeAt(*sch.GetBlock("scale"), loops[0]), "comes after");
}

TEST(ComputeAt, ConvInputTileUnderTheOutputRow) {
  ir::IRModule mod = Load(testing::Conv2dScript());
  Schedule sch = Make(mod, "conv2d");
  BlockRV y = *sch.GetBlock("Y");
  BlockRV x_copy = *sch.CacheRead(y, 0, "global");
  std::vector<LoopRV> loops = *sch.GetLoops(y);
  absl::Status moved = sch.ComputeAt(x_copy, loops[2]);
  ASSERT_TRUE(moved.ok()) << moved;
  ExpectSameNumbers(mod, sch);
}

// --- compute_inline, reverse_compute_inline, set_scope ---

TEST(ComputeInline, InlinesTheChain) {
  ir::IRModule mod = Load(testing::ChainScript());
  Schedule sch = Make(mod, "chain");
  ASSERT_TRUE(sch.ComputeInline(*sch.GetBlock("add")).ok());
  absl::Status s = sch.ComputeInline(*sch.GetBlock("relu"));
  ASSERT_TRUE(s.ok()) << s;
  ExpectIr(sch, R"(
@T.prim_func
def chain(A: T.Buffer((32, 48), "float32"), B: T.Buffer((32, 48), "float32"), D: T.Buffer((32, 48), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    with T.block("root"):
        for i, j in T.grid(32, 48):
            with T.block("scale"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj], B[vi, vj])
                T.writes(D[vi, vj])
                D[vi, vj] = T.max(A[vi, vj] + B[vi, vj], T.float32(0)) * T.float32(2)
)");
  ExpectSameNumbers(mod, sch);
  ir::IRModule before = sch.mod();
  ExpectRefused(sch, before, sch.trace().instructions_size(),
                sch.ComputeInline(*sch.GetBlock("scale")), "output of the function");
}

TEST(ComputeInline, SoftmaxExponentials) {
  ir::IRModule mod = Load(testing::SoftmaxScript());
  Schedule sch = Make(mod, "softmax");
  absl::Status s = sch.ComputeInline(*sch.GetBlock("exp"));
  ASSERT_TRUE(s.ok()) << s;
  ExpectSameNumbers(mod, sch);
  ir::IRModule before = sch.mod();
  ExpectRefused(sch, before, sch.trace().instructions_size(),
                sch.ComputeInline(*sch.GetBlock("sum")), "reduction");
}

TEST(ReverseComputeInline, FoldsTheScaleIntoRelu) {
  ir::IRModule mod = Load(testing::ChainScript());
  Schedule sch = Make(mod, "chain");
  absl::Status s = sch.ReverseComputeInline(*sch.GetBlock("scale"));
  ASSERT_TRUE(s.ok()) << s;
  ExpectIr(sch, R"(
@T.prim_func
def chain(A: T.Buffer((32, 48), "float32"), B: T.Buffer((32, 48), "float32"), D: T.Buffer((32, 48), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    with T.block("root"):
        S = T.alloc_buffer((32, 48), "float32")
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
                T.writes(D[vi, vj])
                D[vi, vj] = T.max(S[vi, vj], T.float32(0)) * T.float32(2)
)");
  ExpectSameNumbers(mod, sch);
  ir::IRModule before = sch.mod();
  ExpectRefused(sch, before, sch.trace().instructions_size(),
                sch.ReverseComputeInline(*sch.GetBlock("add")), "no block produces");
}

TEST(ReverseComputeInline, SoftmaxNormalization) {
  ir::IRModule mod = Load(testing::SoftmaxScript());
  Schedule sch = Make(mod, "softmax");
  ir::IRModule before = sch.mod();
  // norm reads E and Z, both produced: it has two producers.
  ExpectRefused(sch, before, sch.trace().instructions_size(),
                sch.ReverseComputeInline(*sch.GetBlock("norm")), "exactly one producer");
}

TEST(SetScope, MovesAnIntermediateToLocal) {
  ir::IRModule mod = Load(testing::ChainScript());
  Schedule sch = Make(mod, "chain");
  ASSERT_TRUE(sch.SetScope(*sch.GetBlock("add"), 0, "local").ok());
  const auto* f = sch.func().get();
  const auto* root = f->body.as<ir::BlockRealizeNode>();
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->block->alloc_buffers[0]->scope, "local");
  ExpectSameNumbers(mod, sch);
  ir::IRModule before = sch.mod();
  ExpectRefused(sch, before, sch.trace().instructions_size(),
                sch.SetScope(*sch.GetBlock("scale"), 0, "local"), "parameter");
}

// --- look-ups ---

TEST(LookUps, BlocksLoopsProducersAndConsumers) {
  ir::IRModule mod = Load(testing::SoftmaxScript());
  Schedule sch = Make(mod, "softmax");
  BlockRV exp = *sch.GetBlock("exp");
  std::vector<BlockRV> producers = *sch.GetProducers(exp);
  std::vector<BlockRV> consumers = *sch.GetConsumers(exp);
  ASSERT_EQ(producers.size(), 1u);
  EXPECT_EQ(*sch.BlockName(producers[0]), "max");
  ASSERT_EQ(consumers.size(), 2u);
  EXPECT_EQ(*sch.BlockName(consumers[0]), "sum");
  EXPECT_EQ(*sch.BlockName(consumers[1]), "norm");
  std::vector<BlockRV> children = *sch.GetChildBlocks(*sch.GetBlock("root"));
  EXPECT_EQ(children.size(), 4u);
  std::vector<LoopRV> loops = *sch.GetLoops(exp);
  ASSERT_EQ(loops.size(), 2u);
  EXPECT_EQ(*sch.LoopName(loops[1]), "j");
  EXPECT_EQ(sch.GetChildBlocks(loops[0])->size(), 1u);
  absl::StatusOr<BlockRV> missing = sch.GetBlock("nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("blocks: root, max, exp, sum, norm"), std::string::npos)
      << missing.status();
  // A loop a split replaced is reported as gone.
  ASSERT_TRUE(sch.Split(loops[1], {Factor(), 16}).ok());
  EXPECT_EQ(sch.Parallel(loops[1]).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kiln::tir
