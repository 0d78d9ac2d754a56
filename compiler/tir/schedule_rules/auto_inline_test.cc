// AutoInline: elementwise producers of elementwise blocks are computed where they are read, so
// an epilogue chain becomes one block; the result is the same.
#include "compiler/script/printer.h"
#include "compiler/testing/expect_schedule.h"
#include "compiler/testing/schedule_workloads.h"
#include "compiler/tir/default_schedule.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(AutoInlineTest, AnElementwiseChainBecomesOneBlock) {
  // add -> relu -> scale through two intermediates: the first two are inlined into the last.
  absl::StatusOr<ir::IRModule> mod = testing::Parse(testing::ChainScript());
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<Schedule> sch =
      DefaultSchedule(*mod, "chain", target::PolicyFor(target::Avx2Haswell()));
  ASSERT_TRUE(sch.ok()) << sch.status();
  const std::string scheduled = script::PrintScript(sch->mod());
  EXPECT_THAT(scheduled, Not(HasSubstr("T.block(\"add\")")));
  EXPECT_THAT(scheduled, Not(HasSubstr("T.block(\"relu\")")));
  EXPECT_THAT(scheduled, HasSubstr("T.block(\"scale\")"));
  EXPECT_THAT(scheduled, Not(HasSubstr("T.alloc_buffer")));  // no intermediate is left
  testing::ExpectSameNumbers(*mod, *sch);
}

}  // namespace
}  // namespace kiln::tir
