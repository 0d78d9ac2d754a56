#include "compiler/testing/expect_schedule.h"

#include <cmath>

#include "compiler/ir/structural.h"
#include "compiler/script/printer.h"
#include "compiler/testing/schedule_workloads.h"
#include "gtest/gtest.h"

namespace kiln::tir::testing {

ir::IRModule Load(const std::string& script) {
  absl::StatusOr<ir::IRModule> mod = Parse(script);
  EXPECT_TRUE(mod.ok()) << mod.status();
  return *mod;
}

Schedule MakeSchedule(const ir::IRModule& mod, const std::string& name) {
  absl::StatusOr<Schedule> sch = Schedule::Create(mod, name);
  EXPECT_TRUE(sch.ok()) << sch.status();
  return *sch;
}

void ExpectIr(const Schedule& sch, const std::string& expected) {
  ir::IRModule want = Load(expected);
  ir::ObjectRef got_f = sch.mod()->Lookup(sch.func_name());
  ir::ObjectRef want_f = want->Lookup(sch.func_name());
  ASSERT_TRUE(want_f) << "the expected script has no " << sch.func_name();
  absl::Status equal = ir::CheckStructuralEqual(got_f, want_f);
  EXPECT_TRUE(equal.ok()) << equal << "\ngot:\n"
                          << script::PrintScript(sch.mod()) << "\nwant:\n"
                          << script::PrintScript(want);
}

namespace {

void ExpectClose(const absl::StatusOr<std::vector<std::vector<float>>>& want,
                 const absl::StatusOr<std::vector<std::vector<float>>>& got, const Schedule& sch) {
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status() << "\n" << script::PrintScript(sch.mod());
  ASSERT_EQ(want->size(), got->size());
  for (size_t b = 0; b < want->size(); ++b) {
    for (size_t e = 0; e < (*want)[b].size(); ++e) {
      ASSERT_NEAR((*want)[b][e], (*got)[b][e], 1e-4 * (1 + std::abs((*want)[b][e])))
          << "buffer " << b << " element " << e << "\n"
          << script::PrintScript(sch.mod());
    }
  }
}

}  // namespace

void ExpectSameNumbers(const ir::IRModule& original, const Schedule& sch) {
  ExpectClose(RunPrimFunc(original, sch.func_name()), RunPrimFunc(sch.mod(), sch.func_name()), sch);
}

void ExpectSameNumbersOnAarch64(const ir::IRModule& original, const Schedule& sch) {
  ExpectClose(RunPrimFunc(original, sch.func_name()),
              RunPrimFuncOnAarch64(sch.mod(), sch.func_name()), sch);
}

void ExpectRefused(const Schedule& sch, const ir::IRModule& before, int trace_size,
                   const absl::Status& status, const std::string& message_part) {
  EXPECT_FALSE(status.ok());
  EXPECT_NE(std::string(status.message()).find(message_part), std::string::npos) << status;
  EXPECT_EQ(sch.mod().get(), before.get());
  EXPECT_EQ(sch.trace().instructions_size(), trace_size);
}

}  // namespace kiln::tir::testing
