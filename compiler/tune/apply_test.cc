// Applying records in the pipeline: a kernel with a record gets the record's schedule and the
// "kiln.tuned" mark; a record that no longer replays is a warning and the default schedule.
#include "compiler/tune/apply.h"

#include "compiler/backend/build.h"
#include "compiler/ir/structural.h"
#include "compiler/script/script_parser.h"
#include "compiler/testing/temp_path.h"
#include "compiler/tune/space.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/artifact.h"

namespace kiln::tune {
namespace {

using ::testing::HasSubstr;

constexpr char kModel[] = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((16, 32), dtype="float32"), w: R.Tensor((32, 24), dtype="float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            R.output(y)
        return y
)";

struct Fixture {
  ir::IRModule mod;
  TuneTask task;
  std::shared_ptr<TuningDatabase> db;
  WorkloadId workload;
};

Fixture Make(const std::string& db_name) {
  Fixture f;
  f.mod = *script::ParseScript(kModel);
  absl::StatusOr<std::vector<TuneTask>> tasks = ExtractTasks(f.mod);
  EXPECT_TRUE(tasks.ok() && tasks->size() == 1u);
  f.task = (*tasks)[0];
  f.db = std::shared_ptr<TuningDatabase>(
      std::move(*TuningDatabase::Open(kiln::testing::FreshTempPath(db_name))));
  f.workload = {WorkloadKey(f.task.mod->Lookup(f.task.name).as_ref<ir::PrimFuncNode>()),
                *TuningTarget("llvm"), ""};
  EXPECT_TRUE(f.db->AddWorkload(f.workload, "").ok());
  return f;
}

TEST(ApplyTest, BestRecordReplacesTheDefaultSchedule) {
  Fixture f = Make("apply.db");
  absl::StatusOr<tir::Schedule> slow = GenerateSchedule(f.task, 1);
  absl::StatusOr<tir::Schedule> fast = GenerateSchedule(f.task, 2);
  ASSERT_TRUE(slow.ok() && fast.ok());
  ASSERT_TRUE(f.db->AddRecord(f.workload, {"a", slow->trace(), 2e-3, "", "", "", ""}).ok());
  ASSERT_TRUE(f.db->AddRecord(f.workload, {"b", fast->trace(), 1e-3, "", "", "", ""}).ok());
  ASSERT_TRUE(
      f.db->AddRecord(f.workload, {"c", slow->trace(), std::nullopt, "x", "", "", ""}).ok());
  std::vector<std::string> warnings;
  backend::BuildOptions options;
  options.schedule_passes.push_back(
      ApplyTuningRecordsPass(f.db, "llvm", [&](const std::string& w) { warnings.push_back(w); }));
  std::vector<pass::PassPtr> passes = PassesBeforeScheduling(options);
  absl::StatusOr<ir::IRModule> out = backend::RunPasses(f.mod, passes, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(warnings.empty());
  ir::PrimFunc tuned = (*out)->Lookup(f.task.name).as_ref<ir::PrimFuncNode>();
  EXPECT_TRUE(ir::GetAttr(tuned->attrs, "kiln.tuned"));
  EXPECT_TRUE(ir::StructuralEqual(tuned->body, fast->func()->body));
  // Through the whole build: the manifest names the kernel.
  absl::StatusOr<std::string> artifact = backend::BuildArtifact(f.mod, "llvm", options);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  kiln::v1::ArtifactProto parsed;
  ASSERT_TRUE(parsed.ParseFromString(*artifact));
  ASSERT_EQ(parsed.manifest().tuned_kernels_size(), 1);
  EXPECT_EQ(parsed.manifest().tuned_kernels(0), f.task.name);
  auto applied = [&](double untuned_seconds) {
    EXPECT_TRUE(f.db->SetDefaultSeconds(f.workload, untuned_seconds).ok());
    absl::StatusOr<ir::IRModule> built = backend::RunPasses(f.mod, passes, options);
    EXPECT_TRUE(built.ok()) << built.status();
    return built.ok() &&
           ir::GetAttr((*built)->Lookup(f.task.name).as_ref<ir::PrimFuncNode>()->attrs,
                       "kiln.tuned");
  };
  // The best record (1 ms) beats an untuned kernel of 1.1 ms; not one of 1.01 ms (within the
  // measurement's noise) nor one faster than every record.
  EXPECT_TRUE(applied(1.1e-3));
  EXPECT_FALSE(applied(1.01e-3));
  EXPECT_FALSE(applied(0.5e-3));
}

TEST(ApplyTest, StaleRecordFallsBackWithAWarning) {
  Fixture f = Make("stale.db");
  v1::TraceProto stale;
  stale.set_version(1);
  stale.set_func_name(f.task.name);
  v1::TraceInstruction* inst = stale.add_instructions();
  inst->set_kind("GetBlock");
  inst->add_attrs()->set_str("a_block_that_is_gone");
  inst->add_outputs("b0");
  ASSERT_TRUE(f.db->AddRecord(f.workload, {"s", stale, 1e-4, "", "", "", ""}).ok());
  std::vector<std::string> warnings;
  backend::BuildOptions options;
  options.schedule_passes.push_back(
      ApplyTuningRecordsPass(f.db, "llvm", [&](const std::string& w) { warnings.push_back(w); }));
  absl::StatusOr<std::string> artifact = backend::BuildArtifact(f.mod, "llvm", options);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("no longer replays"));
  EXPECT_THAT(warnings[0], HasSubstr("using the default schedule"));
  kiln::v1::ArtifactProto parsed;
  ASSERT_TRUE(parsed.ParseFromString(*artifact));
  EXPECT_EQ(parsed.manifest().tuned_kernels_size(), 0);
}

// A record measured for one ISA is never applied to a compile for another: AVX2 records stay
// out of an AVX-512 build of the same model, and the AVX2 build applies them.
TEST(ApplyTest, RecordsOfOneIsaAreNeverAppliedToAnother) {
  const std::string avx2 = "llvm -mcpu=haswell";
  const std::string avx512 = "llvm -mcpu=skylake-avx512";
  Fixture f = Make("isa.db");
  absl::StatusOr<std::vector<TuneTask>> tasks = ExtractTasksFor(f.mod, avx2);
  ASSERT_TRUE(tasks.ok() && tasks->size() == 1u);
  const WorkloadId workload{
      WorkloadKey((*tasks)[0].mod->Lookup((*tasks)[0].name).as_ref<ir::PrimFuncNode>()),
      *TuningTarget(avx2), ""};
  ASSERT_NE(workload.target, *TuningTarget(avx512));
  ASSERT_TRUE(f.db->AddWorkload(workload, "").ok());
  absl::StatusOr<tir::Schedule> sch = GenerateSchedule((*tasks)[0], 2);
  ASSERT_TRUE(sch.ok());
  ASSERT_TRUE(f.db->AddRecord(workload, {"h", sch->trace(), 1e-6, "", "", "", ""}).ok());
  ASSERT_TRUE(f.db->SetDefaultSeconds(workload, 1.0).ok());
  auto tuned_kernels = [&](const std::string& target) {
    backend::BuildOptions options;
    options.schedule_passes.push_back(ApplyTuningRecordsPass(f.db, target, [](auto&) {}));
    absl::StatusOr<std::string> artifact = backend::BuildArtifact(f.mod, target, options);
    EXPECT_TRUE(artifact.ok()) << artifact.status();
    kiln::v1::ArtifactProto parsed;
    EXPECT_TRUE(artifact.ok() && parsed.ParseFromString(*artifact));
    return parsed.manifest().tuned_kernels_size();
  };
  EXPECT_EQ(tuned_kernels(avx512), 0);
  EXPECT_EQ(tuned_kernels(avx2), 1);
  EXPECT_EQ(*AppliedRecordsDigest(*f.db, avx512), "");
  EXPECT_NE(*AppliedRecordsDigest(*f.db, avx2), "");
}

}  // namespace
}  // namespace kiln::tune
