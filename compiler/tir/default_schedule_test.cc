// The default schedule: what untuned kernels get.
#include "compiler/tir/default_schedule.h"

#include "compiler/ir/relax_expr.h"
#include "compiler/ir/structural.h"
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "compiler/testing/expect_schedule.h"
#include "compiler/testing/schedule_workloads.h"
#include "compiler/tir/schedule/trace.h"
#include "compiler/tir/schedule_rules/schedule_rules.h"
#include "compiler/tir/transform/transform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The decisions these tests expect are the AVX-512 policy's (32 zmm registers, 16 lanes).
const target::CpuPolicy kAvx512 = target::PolicyFor(target::Avx512Znver4());

absl::StatusOr<ir::IRModule> Matmul64() {
  return testing::Parse(testing::MatmulScript(64, 64, 64));
}

TEST(DefaultScheduleTest, TheDefaultIsAPointOfTheDesignSpace) {
  // The default schedule is the schedule rules with heuristic decisions: its trace replays to
  // the same function, and its decisions given back to the rules regenerate it.
  absl::StatusOr<ir::IRModule> mod = Matmul64();
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<Schedule> sch = DefaultSchedule(*mod, "matmul", kAvx512);
  ASSERT_TRUE(sch.ok()) << sch.status();
  EXPECT_TRUE(
      ir::StructuralEqual(sch->func(), ApplyDefaultSchedule(*mod, kAvx512)->Lookup("matmul")));
  absl::StatusOr<Schedule> replayed = ReplayTrace(*mod, sch->trace());
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_TRUE(ir::StructuralEqual(replayed->func(), sch->func()));
  Decisions decisions = DecisionsOf(sch->trace());
  EXPECT_GE(decisions.size(), 5u);  // three tilings, packing, write-back level, unrolling
  absl::StatusOr<Schedule> sampled = Schedule::Create(*mod, "matmul", 77);
  ASSERT_TRUE(sampled.ok());
  ASSERT_TRUE(ApplyScheduleRules(*sampled, kAvx512, decisions, UnsetDecisions::kSample).ok());
  EXPECT_TRUE(ir::StructuralEqual(sampled->func(), sch->func()));
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
  absl::StatusOr<ir::IRModule> out = pass::PassContext().Run(*mod, {DefaultSchedulePass(kAvx512)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE((*out)->Lookup("tuned").same_as((*mod)->Lookup("tuned")));
  const auto* plain = (*out)->Lookup("plain").as<ir::PrimFuncNode>();
  ASSERT_NE(plain, nullptr);
  EXPECT_TRUE(ir::GetAttr(plain->attrs, "tir.is_scheduled").defined());
  ir::IRModuleBuilder one;
  ASSERT_TRUE(one.Add(ir::relax::MakeGlobalVar("plain"), (*out)->Lookup("plain")).ok());
  EXPECT_THAT(script::PrintScript(one.Build()), HasSubstr("for i_1 in T.vectorized(64):"));
}

}  // namespace
}  // namespace kiln::tir
