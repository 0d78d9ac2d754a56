// Traces: serialize -> deserialize -> replay reproduces the schedule, over 1,000 random sampled
// schedules; the same seed gives the same trace; a changed decision replays a neighbour.
#include "compiler/tir/schedule/trace.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "compiler/ir/structural.h"
#include "compiler/script/printer.h"
#include "compiler/testing/schedule_workloads.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

ir::IRModule Load(const std::string& script) {
  absl::StatusOr<ir::IRModule> mod = testing::Parse(script);
  EXPECT_TRUE(mod.ok()) << mod.status();
  return *mod;
}

// A random schedule of the block: each loop split into a sampled number of sampled tiles, the
// loops permuted, the outermost parallel and the innermost vectorized where allowed.
Schedule RandomSchedule(const ir::IRModule& mod, const std::string& func, const std::string& block,
                        uint64_t seed) {
  Schedule sch = *Schedule::Create(mod, func, seed);
  BlockRV b = *sch.GetBlock(block);
  std::vector<LoopRV> loops;
  std::vector<LoopRV> original = *sch.GetLoops(b);
  for (LoopRV l : original) {
    ExprRV parts = *sch.SampleCategorical({1, 2, 3}, {0.2, 0.5, 0.3});
    int n = static_cast<int>(*sch.Get(parts));
    std::vector<ExprRV> tiles = *sch.SamplePerfectTile(l, n, 16);
    if (n == 1) {
      loops.push_back(l);
      continue;
    }
    std::vector<Factor> factors(tiles.begin(), tiles.end());
    std::vector<LoopRV> split = *sch.Split(l, factors);
    loops.insert(loops.end(), split.begin(), split.end());
  }
  std::mt19937_64 rng(seed);
  std::shuffle(loops.begin(), loops.end(), rng);
  EXPECT_TRUE(sch.Reorder(loops).ok());
  sch.Parallel(loops.front()).IgnoreError();  // refused when it drives a reduction
  sch.Vectorize(loops.back()).IgnoreError();
  return sch;
}

TEST(Trace, ThousandRandomSchedulesRoundTripAndReplay) {
  struct Workload {
    ir::IRModule mod;
    std::string func, block;
  };
  std::vector<Workload> workloads = {{Load(testing::MatmulScript(64, 48, 32)), "matmul", "C"},
                                     {Load(testing::Conv2dScript()), "conv2d", "Y"}};
  int replayed = 0;
  for (uint64_t seed = 1; seed <= 500; ++seed) {
    for (const Workload& w : workloads) {
      Schedule sch = RandomSchedule(w.mod, w.func, w.block, seed);
      absl::StatusOr<v1::TraceProto> from_json = TraceFromJson(TraceToJson(sch.trace()));
      ASSERT_TRUE(from_json.ok()) << from_json.status();
      absl::StatusOr<v1::TraceProto> from_bytes = TraceFromBytes(from_json->SerializeAsString());
      ASSERT_TRUE(from_bytes.ok()) << from_bytes.status();
      absl::StatusOr<Schedule> replay = ReplayTrace(w.mod, *from_bytes);
      ASSERT_TRUE(replay.ok()) << replay.status();
      ASSERT_TRUE(ir::StructuralEqual(replay->mod(), sch.mod()))
          << "seed " << seed << "\n"
          << script::PrintScript(sch.mod()) << "\nreplayed:\n"
          << script::PrintScript(replay->mod());
      EXPECT_EQ(replay->trace().SerializeAsString(), sch.trace().SerializeAsString());
      if (seed <= 5) {  // and the scheduled code computes what the original does
        auto want = testing::RunPrimFunc(w.mod, w.func);
        auto got = testing::RunPrimFunc(sch.mod(), w.func);
        ASSERT_TRUE(want.ok() && got.ok()) << got.status();
        for (size_t e = 0; e < want->back().size(); ++e) {
          ASSERT_NEAR(want->back()[e], got->back()[e], 1e-4) << "seed " << seed;
        }
      }
      ++replayed;
    }
  }
  EXPECT_EQ(replayed, 1000);
}

TEST(Trace, TheSameSeedGivesTheSameTrace) {
  ir::IRModule mod = Load(testing::Conv2dScript());
  for (uint64_t seed : {3u, 17u, 99u}) {
    std::string a = RandomSchedule(mod, "conv2d", "Y", seed).trace().SerializeAsString();
    std::string b = RandomSchedule(mod, "conv2d", "Y", seed).trace().SerializeAsString();
    EXPECT_EQ(a, b);
  }
  EXPECT_NE(RandomSchedule(mod, "conv2d", "Y", 1).trace().SerializeAsString(),
            RandomSchedule(mod, "conv2d", "Y", 2).trace().SerializeAsString());
}

TEST(Trace, SampledTilesMultiplyToTheExtentWithinTheBound) {
  ir::IRModule mod = Load(testing::MatmulScript(64, 48, 32));
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    Schedule sch = *Schedule::Create(mod, "matmul", seed);
    std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
    std::vector<ExprRV> tiles = *sch.SamplePerfectTile(loops[1], 3, 8);
    int64_t product = 1;
    for (ExprRV t : tiles) product *= *sch.Get(t);
    EXPECT_EQ(product, 48);
    EXPECT_LE(*sch.Get(tiles.back()), 8);
  }
}

TEST(Trace, AChangedDecisionReplaysANeighbourThatComputesTheSame) {
  ir::IRModule mod = Load(testing::MatmulScript(64, 48, 32));
  Schedule sch = *Schedule::Create(mod, "matmul", 5);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  std::vector<ExprRV> tiles = *sch.SamplePerfectTile(loops[0], 2, 16);
  ASSERT_TRUE(sch.Split(loops[0], {tiles[0], tiles[1]}).ok());
  int index = 2;  // GetBlock, GetLoops, SamplePerfectTile
  ASSERT_EQ(sch.trace().instructions(index).kind(), "SamplePerfectTile");
  absl::StatusOr<v1::TraceProto> changed = WithDecision(sch.trace(), index, {16, 4});
  ASSERT_TRUE(changed.ok());
  absl::StatusOr<Schedule> neighbour = ReplayTrace(mod, *changed);
  ASSERT_TRUE(neighbour.ok()) << neighbour.status();
  std::vector<LoopRV> split = *neighbour->GetLoops(*neighbour->GetBlock("C"));
  EXPECT_EQ(*neighbour->LoopName(split[0]), "i_0");
  const auto* outer = neighbour->func()->body.as<ir::ForNode>();
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(*ir::AsConstInt(outer->extent), 16);
  auto want = testing::RunPrimFunc(mod, "matmul");
  auto got = testing::RunPrimFunc(neighbour->mod(), "matmul");
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ(*want, *got);

  // A decision that is not a tiling of the loop is refused, naming the instruction.
  absl::StatusOr<v1::TraceProto> wrong = WithDecision(sch.trace(), index, {5, 5});
  absl::StatusOr<Schedule> refused = ReplayTrace(mod, *wrong);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("trace instruction 2 (SamplePerfectTile)"),
            std::string::npos)
      << refused.status();
  EXPECT_FALSE(WithDecision(sch.trace(), 0, {1}).ok());  // GetBlock decides nothing
}

// Serialize -> deserialize -> replay, checked to give the same module and the same numbers.
void ExpectReplays(const ir::IRModule& mod, const Schedule& sch) {
  absl::StatusOr<v1::TraceProto> trace = TraceFromJson(TraceToJson(sch.trace()));
  ASSERT_TRUE(trace.ok()) << trace.status();
  absl::StatusOr<Schedule> replay = ReplayTrace(mod, *trace);
  ASSERT_TRUE(replay.ok()) << replay.status();
  ASSERT_TRUE(ir::StructuralEqual(replay->mod(), sch.mod()))
      << script::PrintScript(sch.mod()) << "\nreplayed:\n"
      << script::PrintScript(replay->mod());
  auto want = testing::RunPrimFunc(mod, sch.func_name());
  auto got = testing::RunPrimFunc(replay->mod(), sch.func_name());
  ASSERT_TRUE(want.ok() && got.ok()) << got.status();
  for (size_t e = 0; e < want->back().size(); ++e) {
    ASSERT_NEAR(want->back()[e], got->back()[e], 1e-4 * (1 + std::abs(want->back()[e])));
  }
}

TEST(Trace, LayoutTensorizeAndRFactorInstructionsReplay) {
  // A 60^3 matmul padded to 64, a local accumulator with aligned rows, tiled 4 x 16 and
  // tensorized with the AVX2 micro-kernel.
  ir::IRModule mod = Load(testing::MatmulScript(60, 60, 60));
  Schedule sch = *Schedule::Create(mod, "matmul", 3);
  BlockRV c = *sch.GetBlock("C");
  ASSERT_TRUE(sch.PadEinsum(c, {16, 16, 1}).ok());
  BlockRV local = *sch.CacheWrite(c, 0, "local");
  ASSERT_TRUE(sch.StorageAlign(c, 0, 0, 16, 4).ok());
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  std::vector<LoopRV> i = *sch.Split(loops[0], {Factor(), 4});
  std::vector<LoopRV> j = *sch.Split(loops[1], {Factor(), 16});
  ASSERT_TRUE(sch.Reorder({i[0], j[0], loops[2], i[1], j[1]}).ok());
  ASSERT_TRUE(sch.ReverseComputeAt(local, j[0]).ok());
  ASSERT_TRUE(sch.DecomposeReduction(c, loops[2]).ok());
  absl::StatusOr<BlockRV> tile = sch.Tensorize(i[1], "x86_avx2_fma_f32_4x16");
  ASSERT_TRUE(tile.ok()) << tile.status();
  ExpectReplays(mod, sch);

  // Softmax: the exponentials in (8, 16, 8) panels, the row sum factored over 8 lanes, its
  // row loop blockized.
  ir::IRModule softmax = Load(testing::SoftmaxScript());
  Schedule s = *Schedule::Create(softmax, "softmax", 3);
  ASSERT_TRUE(s.TransformLayout(*s.GetBlock("exp"), 0, true, {1, 8}, {1, 0, 2}).ok());
  std::vector<LoopRV> sum = *s.GetLoops(*s.GetBlock("sum"));
  std::vector<LoopRV> k = *s.Split(sum[1], {Factor(), 8});
  ASSERT_TRUE(s.RFactor(k[1], 1).ok());
  ASSERT_TRUE(s.Blockize(k[0]).ok());
  ExpectReplays(softmax, s);
}

TEST(Trace, BadTracesAreRefusedWithWhere) {
  ir::IRModule mod = Load(testing::MatmulScript(64, 48, 32));
  EXPECT_FALSE(TraceFromJson("{not json").ok());
  EXPECT_FALSE(TraceFromBytes("\xff\xff garbage").ok());
  v1::TraceProto trace;
  trace.set_version(1);
  trace.set_func_name("matmul");
  trace.add_instructions()->set_kind("Teleport");
  absl::StatusOr<Schedule> r = ReplayTrace(mod, trace);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown instruction kind 'Teleport'"), std::string::npos);
  trace.mutable_instructions(0)->set_kind("GetLoops");
  trace.mutable_instructions(0)->add_inputs()->set_rv("b9");
  r = ReplayTrace(mod, trace);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown random variable 'b9'"), std::string::npos);
  trace.set_version(7);
  EXPECT_NE(ReplayTrace(mod, trace).status().message().find("version 7"), std::string::npos);
  trace.set_version(1);
  trace.set_func_name("nope");
  EXPECT_EQ(ReplayTrace(mod, trace).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kiln::tir
