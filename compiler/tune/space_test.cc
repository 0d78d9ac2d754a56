// The design space on the workloads the issue names: every sampled schedule and every mutation
// replays from its trace to the same function and computes what the default schedule computes.
#include "compiler/tune/space.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "compiler/testing/schedule_workloads.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/schedule/trace.h"
#include "compiler/tir/transform/transform.h"
#include "compiler/tir/verify/tir_verifier.h"
#include "gtest/gtest.h"

namespace kiln::tune {
namespace {

std::string Relax(const std::string& params, const std::string& body) {
  return absl::StrCat("@I.ir_module\nclass Module:\n    @R.function\n    def main(", params,
                      "):\n        with R.dataflow():\n", body,
                      "            R.output(y)\n        return y\n");
}

std::string F32(const std::string& shape) {
  return absl::StrCat("R.Tensor((", shape, "), dtype=\"float32\")");
}

absl::StatusOr<ir::IRModule> ParseAny(const std::string& script) {
  if (script.rfind("@I.ir_module", 0) == 0) return script::ParseScript(script);
  return tir::testing::Parse(script);
}

struct Workload {
  std::string name;
  std::string script;
};

std::vector<Workload> Workloads() {
  return {
      {"matmul", tir::testing::MatmulScript(64, 48, 32)},
      {"conv2d", Relax(absl::StrCat("x: ", F32("1, 8, 12, 12"), ", w: ", F32("16, 8, 3, 3")),
                       "            y = R.nn.conv2d(x, w, padding=[1, 1])\n")},
      {"conv2d_depthwise_strided",
       Relax(absl::StrCat("x: ", F32("1, 8, 12, 12"), ", w: ", F32("8, 1, 3, 3")),
             "            y = R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 1], groups=8)\n")},
      {"softmax",
       Relax(absl::StrCat("x: ", F32("4, 64")), "            y = R.nn.softmax(x, axis=-1)\n")},
      {"layer_norm",
       Relax(absl::StrCat("x: ", F32("8, 32"), ", g: ", F32("32,"), ", b: ", F32("32,")),
             "            y = R.nn.layer_norm(x, g, b, axes=[-1], epsilon=1e-5)\n")},
      {"matmul_bias_gelu",
       Relax(absl::StrCat("x: ", F32("8, 32"), ", w: ", F32("32, 24"), ", b: ", F32("24,")),
             "            m = R.matmul(x, w)\n            a = R.add(m, b)\n"
             "            y = R.nn.gelu(a)\n")},
  };
}

void ExpectSameResults(const TuneTask& task, const ir::IRModule& scheduled) {
  absl::StatusOr<std::vector<std::vector<float>>> want =
      tir::testing::RunPrimFunc(tir::ApplyDefaultSchedule(task.mod, task.policy), task.name);
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<std::vector<std::vector<float>>> got =
      tir::testing::RunPrimFunc(scheduled, task.name);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t b = 0; b < want->size(); ++b) {
    for (size_t i = 0; i < (*want)[b].size(); ++i) {
      ASSERT_NEAR((*got)[b][i], (*want)[b][i], 1e-4 * (1 + std::abs((*want)[b][i])))
          << "buffer " << b << " element " << i;
    }
  }
}

void ExpectReplays(const TuneTask& task, const tir::Schedule& sch) {
  absl::StatusOr<tir::Schedule> replayed = tir::ReplayTrace(task.mod, sch.trace());
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_TRUE(ir::StructuralEqual(replayed->func(), sch.func()));
  // The same decisions regenerate the same trace.
  absl::StatusOr<tir::Schedule> again = GenerateSchedule(task, 99, DecisionsOf(sch.trace()));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(ir::StructuralEqual(again->func(), sch.func()));
}

TEST(SpaceTest, SampledSchedulesAndMutationsReplayAndAreCorrect) {
  for (const Workload& w : Workloads()) {
    SCOPED_TRACE(w.name);
    absl::StatusOr<ir::IRModule> mod = ParseAny(w.script);
    ASSERT_TRUE(mod.ok()) << mod.status();
    absl::StatusOr<std::vector<TuneTask>> tasks = ExtractTasks(*mod);
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    ASSERT_FALSE(tasks->empty());
    for (const TuneTask& task : *tasks) {
      SCOPED_TRACE(task.name);
      for (uint64_t seed : {1, 2, 3}) {
        SCOPED_TRACE(seed);
        absl::StatusOr<tir::Schedule> sch = GenerateSchedule(task, seed);
        ASSERT_TRUE(sch.ok()) << sch.status();
        ExpectReplays(task, *sch);
        ExpectSameResults(task, ScheduledModule(*sch));
      }
      absl::StatusOr<tir::Schedule> parent = GenerateSchedule(task, 5);
      ASSERT_TRUE(parent.ok());
      const size_t n = DecisionsOf(parent->trace()).size();
      for (size_t k = 0; k < n; ++k) {
        SCOPED_TRACE(absl::StrCat("mutating decision ", k));
        absl::StatusOr<tir::Schedule> child = Mutate(task, parent->trace(), k, 11 + k);
        ASSERT_TRUE(child.ok()) << child.status();
        ExpectReplays(task, *child);
        ExpectSameResults(task, ScheduledModule(*child));
      }
    }
  }
}

// Every sampled schedule lowers to TIR the verifier accepts: no pass of the lowering meets an
// access outside its buffer, whatever the decisions (the design space is searched, not trusted).
TEST(SpaceTest, SampledSchedulesLowerToValidTir) {
  for (const Workload& w : Workloads()) {
    SCOPED_TRACE(w.name);
    absl::StatusOr<ir::IRModule> mod = ParseAny(w.script);
    ASSERT_TRUE(mod.ok()) << mod.status();
    absl::StatusOr<std::vector<TuneTask>> tasks = ExtractTasks(*mod);
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    for (const TuneTask& task : *tasks) {
      SCOPED_TRACE(task.name);
      for (uint64_t seed = 1; seed <= 60; ++seed) {
        SCOPED_TRACE(seed);
        absl::StatusOr<tir::Schedule> sch = GenerateSchedule(task, seed);
        ASSERT_TRUE(sch.ok()) << sch.status();
        pass::PassContext ctx;
        ctx.AddInstrument(std::make_shared<tir::TirVerifier>());
        const ir::IRModule scheduled = ScheduledModule(*sch);
        absl::StatusOr<ir::IRModule> lowered = ctx.Run(scheduled, tir::LowerTirPasses());
        ASSERT_TRUE(lowered.ok()) << lowered.status() << "\n" << script::PrintScript(scheduled);
      }
    }
  }
}

TEST(SpaceTest, MatmulIsTiledWithEveryRule) {
  absl::StatusOr<ir::IRModule> mod = tir::testing::Parse(tir::testing::MatmulScript(64, 64, 64));
  ASSERT_TRUE(mod.ok());
  absl::StatusOr<std::vector<TuneTask>> tasks = ExtractTasks(*mod);
  ASSERT_TRUE(tasks.ok());
  ASSERT_EQ(tasks->size(), 1u);
  absl::StatusOr<tir::Schedule> sch = GenerateSchedule((*tasks)[0], 1);
  ASSERT_TRUE(sch.ok()) << sch.status();
  std::multiset<std::string> kinds;
  for (const v1::TraceInstruction& inst : sch->trace().instructions()) kinds.insert(inst.kind());
  EXPECT_EQ(kinds.count("SamplePerfectTile"), 3u);  // i, j in four, k in two
  EXPECT_EQ(kinds.count("SampleCategorical"), 3u);  // packing, write-back level, unrolling
  for (const char* k : {"CacheWrite", "ReverseComputeAt", "DecomposeReduction"}) {
    EXPECT_EQ(kinds.count(k), 1u) << k;
  }
  // B packed into panels or not (sampled), each copy and the tiled nest scheduled.
  const size_t packed = kinds.count("CacheRead");
  EXPECT_EQ(kinds.count("TransformLayout"), packed);
  EXPECT_EQ(kinds.count("Reorder"), 1 + packed);
  EXPECT_EQ(kinds.count("Parallel"), 1 + packed);
  EXPECT_EQ(kinds.count("Vectorize"), 3 + packed);  // the tile, its init and its write-back
}

TEST(SpaceTest, TasksAreDeduplicatedAndWeighted) {
  // Two layers of the same shape share one task of weight 2.
  absl::StatusOr<ir::IRModule> mod = ParseAny(
      Relax(absl::StrCat("x: ", F32("4, 16"), ", w1: ", F32("16, 16"), ", w2: ", F32("16, 16")),
            "            a = R.matmul(x, w1)\n            b = R.nn.relu(a)\n"
            "            c = R.matmul(b, w2)\n            y = R.nn.relu(c)\n"));
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<std::vector<TuneTask>> tasks = ExtractTasks(*mod);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  ASSERT_EQ(tasks->size(), 1u);
  EXPECT_EQ((*tasks)[0].weight, 2);
  EXPECT_EQ(
      WorkloadKey((*tasks)[0].mod->Lookup((*tasks)[0].name).as_ref<ir::PrimFuncNode>()).size(),
      16u);
}

TEST(SpaceTest, SymbolicBatchIsNoted) {
  absl::StatusOr<ir::IRModule> mod =
      ParseAny(Relax(absl::StrCat("x: R.Tensor((\"n\", 16), dtype=\"float32\"), w: ", F32("16, 8")),
                     "            y = R.matmul(x, w)\n"));
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<std::vector<TuneTask>> tasks = ExtractTasks(*mod);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  ASSERT_EQ(tasks->size(), 1u);
  EXPECT_EQ((*tasks)[0].symbolic_dims, std::vector<std::string>{"n"});
  absl::StatusOr<tir::Schedule> sch = GenerateSchedule((*tasks)[0], 1);
  ASSERT_TRUE(sch.ok()) << sch.status();
  ExpectReplays((*tasks)[0], *sch);
}

// The loops around each block of `f`, outermost first.
std::map<std::string, std::vector<const ir::ForNode*>> LoopsAroundBlocks(const ir::PrimFunc& f) {
  struct Walker : ir::StmtExprVisitor {
    std::vector<const ir::ForNode*> loops;
    std::map<std::string, std::vector<const ir::ForNode*>> out;
    void VisitStmt(const ir::Stmt& s) override {
      if (const auto* loop = s.as<ir::ForNode>()) {
        loops.push_back(loop);
        DefaultVisitStmt(s);
        loops.pop_back();
        return;
      }
      if (const auto* block = s.as<ir::BlockNode>()) out[block->name] = loops;
      DefaultVisitStmt(s);
    }
  } walker;
  walker.VisitStmt(f->body);
  return walker.out;
}

TEST(SpaceTest, ConvolutionsKeepTheirPaddingAndDepthwiseOnesComputeItPerChannel) {
  // A padded convolution keeps its zero padding as a block of its own (inlined, every
  // multiply-add would test bounds and clamp its index). The default schedule computes it under
  // the convolution's parallel loop for a depthwise one (each channel reads only its own), and
  // once, outside that loop, for a dense one (each output channel reads every input channel).
  for (const Workload& w : Workloads()) {
    if (w.name.rfind("conv2d", 0) != 0) continue;
    SCOPED_TRACE(w.name);
    absl::StatusOr<ir::IRModule> mod = ParseAny(w.script);
    ASSERT_TRUE(mod.ok()) << mod.status();
    absl::StatusOr<std::vector<TuneTask>> tasks = ExtractTasks(*mod);
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    ASSERT_EQ(tasks->size(), 1u);
    const TuneTask& task = (*tasks)[0];
    absl::StatusOr<tir::Schedule> sch = tir::DefaultSchedule(task.mod, task.name, task.policy);
    ASSERT_TRUE(sch.ok()) << sch.status();
    std::map<std::string, std::vector<const ir::ForNode*>> loops = LoopsAroundBlocks(sch->func());
    ASSERT_TRUE(loops.count("pad_temp")) << script::PrintScript(sch->mod());
    ASSERT_TRUE(loops.count("conv2d"));
    const bool depthwise = w.name == "conv2d_depthwise_strided";
    const std::vector<const ir::ForNode*>& pad = loops["pad_temp"];
    const std::vector<const ir::ForNode*>& conv = loops["conv2d"];
    const bool under_parallel = std::any_of(pad.begin(), pad.end(), [&](const ir::ForNode* f) {
      return f->for_kind == ir::ForKind::kParallel &&
             std::find(conv.begin(), conv.end(), f) != conv.end();
    });
    EXPECT_EQ(under_parallel, depthwise) << script::PrintScript(sch->mod());
    // The same numbers as the function's plain loops.
    ir::IRModuleBuilder plain(task.mod);
    plain.Update(task.mod->GetGlobalVar(task.name),
                 ir::WithFuncAttr(task.mod->Lookup(task.name).as_ref<ir::PrimFuncNode>(),
                                  "tir.is_scheduled", ir::Bool(true)));
    absl::StatusOr<std::vector<std::vector<float>>> want =
        tir::testing::RunPrimFunc(plain.Build(), task.name);
    absl::StatusOr<std::vector<std::vector<float>>> got =
        tir::testing::RunPrimFunc(ScheduledModule(*sch), task.name);
    ASSERT_TRUE(want.ok() && got.ok());
    ASSERT_EQ(want->size(), got->size());
    for (size_t b = 0; b < want->size(); ++b) {
      for (size_t i = 0; i < (*want)[b].size(); ++i)
        ASSERT_NEAR((*got)[b][i], (*want)[b][i], 1e-4 * (1 + std::abs((*want)[b][i])));
    }
  }
}

}  // namespace
}  // namespace kiln::tune
