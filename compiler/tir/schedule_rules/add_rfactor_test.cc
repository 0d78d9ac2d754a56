// AddRFactor: a row reduction accumulates vectors of partial results.
// Through DefaultSchedule: the rules with heuristic decisions, the AVX-512 policy's unless a
// test says otherwise, each schedule checked to compute what the unscheduled function does.
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

TEST(AddRFactorTest, RowReductionsAccumulateVectorsOfPartialResults) {
  // Softmax's row max and row sum (64 wide) run 16 lanes of partial results each (AddRFactor),
  // the rows in parallel, and compute what the unscheduled function computes.
  absl::StatusOr<ir::IRModule> mod = testing::Parse(testing::SoftmaxScript());
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<Schedule> sch = DefaultSchedule(*mod, "softmax", kAvx512);
  ASSERT_TRUE(sch.ok()) << sch.status();
  const std::string scheduled = script::PrintScript(sch->mod());
  EXPECT_THAT(scheduled, HasSubstr("with T.block(\"max_rf\"):"));
  EXPECT_THAT(scheduled, HasSubstr("with T.block(\"sum_rf\"):"));
  EXPECT_THAT(scheduled, HasSubstr("T.vectorized(16)"));
  testing::ExpectSameNumbers(*mod, *sch);
}

}  // namespace
}  // namespace kiln::tir
