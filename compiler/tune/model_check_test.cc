// The model check compiles and times a real model without and with its records, each in a
// fresh child, and says which one failed when one does.
#include "compiler/tune/model_check.h"

#include "compiler/script/script_parser.h"
#include "compiler/testing/temp_path.h"
#include "compiler/tune/space.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tune {
namespace {

using ::testing::HasSubstr;

constexpr char kModel[] = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((32, 64), dtype="float32"), w: R.Tensor((64, 48), dtype="float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.nn.relu(y)
            R.output(z)
        return z
)";

TEST(ModelCheckTest, TimesTheModelUntunedAndWithItsRecords) {
  ir::IRModule mod = *script::ParseScript(kModel);
  absl::StatusOr<std::vector<TuneTask>> tasks = ExtractTasks(mod);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  std::shared_ptr<TuningDatabase> db(
      std::move(*TuningDatabase::Open(kiln::testing::FreshTempPath("check.db"))));
  // A record for every kernel, faster than its untuned time as far as the database knows.
  for (const TuneTask& task : *tasks) {
    const WorkloadId workload{WorkloadKey(task.mod->Lookup(task.name).as_ref<ir::PrimFuncNode>()),
                              *TuningTarget("llvm"), ""};
    ASSERT_TRUE(db->AddWorkload(workload, "").ok());
    absl::StatusOr<tir::Schedule> sch = GenerateSchedule(task, 3);
    ASSERT_TRUE(sch.ok()) << sch.status();
    ASSERT_TRUE(db->AddRecord(workload, {task.name, sch->trace(), 1e-6, "", "", "", ""}).ok());
    ASSERT_TRUE(db->SetDefaultSeconds(workload, 1.0).ok());
  }
  ModelCheckOptions options;
  options.rounds = 2;
  options.repeat = 3;
  options.min_repeat_ms = 1;
  absl::StatusOr<ModelTimes> times = MeasureModel(mod, db, options);
  ASSERT_TRUE(times.ok()) << times.status();
  EXPECT_GT(times->untuned_seconds, 0);
  EXPECT_GT(times->tuned_seconds, 0);
  EXPECT_EQ(times->tuned_kernels, static_cast<int>(tasks->size()));
  // A function the model does not have: the untuned model's child says so.
  options.function = "nope";
  times = MeasureModel(mod, db, options);
  ASSERT_FALSE(times.ok());
  EXPECT_THAT(times.status().message(), HasSubstr("the untuned model"));
  EXPECT_THAT(times.status().message(), HasSubstr("no function 'nope'"));
}

}  // namespace
}  // namespace kiln::tune
