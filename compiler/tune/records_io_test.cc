#include "compiler/tune/records_io.h"

#include <sstream>

#include "compiler/testing/temp_path.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tune {
namespace {

using ::kiln::testing::FreshTempPath;
using ::testing::HasSubstr;

TuningRecord Record(const std::string& key, std::optional<double> seconds) {
  TuningRecord r;
  r.candidate_key = key;
  r.trace.set_version(1);
  r.trace.set_func_name("matmul");
  v1::TraceInstruction* inst = r.trace.add_instructions();
  inst->set_kind("SampleCategorical");
  inst->add_attrs()->set_int_(8);
  inst->set_has_decision(true);
  inst->add_decision(1);
  inst->add_outputs("v0");
  r.seconds = seconds;
  if (!seconds) r.error = "run: wrong result";
  r.measured_at = "2026-11-25T06:00:00Z";
  r.measured_on = "board-1";
  r.compiler = "0.1.0+abcdef123456";
  return r;
}

std::unique_ptr<TuningDatabase> Open(const std::string& name) {
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(FreshTempPath(name));
  EXPECT_TRUE(db.ok()) << db.status();
  return db.ok() ? std::move(*db) : nullptr;
}

TEST(RecordsIoTest, ExportThenImportRecreatesEveryRecordOnceInAnotherDatabase) {
  std::unique_ptr<TuningDatabase> from = Open("records_from.db");
  const WorkloadId a{"00000000000000aa", "llvm -mtriple=x86_64", ""};
  const WorkloadId b{"00000000000000bb", "llvm -mtriple=x86_64", "board"};
  ASSERT_TRUE(from->AddWorkload(a, "# kernel a").ok());
  ASSERT_TRUE(from->SetDefaultSeconds(a, 3e-3).ok());
  ASSERT_TRUE(from->AddRecord(a, Record("a1", 2e-3)).ok());
  ASSERT_TRUE(from->AddRecord(a, Record("a2", std::nullopt)).ok());
  ASSERT_TRUE(from->AddWorkload(b, "# kernel b").ok());
  ASSERT_TRUE(from->AddRecord(b, Record("b1", 1e-3)).ok());
  std::stringstream lines;
  absl::StatusOr<int64_t> exported = ExportRecords(*from, lines);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(*exported, 3);

  std::unique_ptr<TuningDatabase> to = Open("records_to.db");
  std::stringstream in(lines.str());
  absl::StatusOr<ImportCounts> counts = ImportRecords(*to, in);
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->imported, 3);
  EXPECT_EQ(counts->already_there, 0);
  for (const WorkloadId& w : {a, b}) {
    absl::StatusOr<std::vector<TuningRecord>> want = from->Records(w), got = to->Records(w);
    ASSERT_TRUE(want.ok() && got.ok());
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i) {
      EXPECT_EQ((*got)[i].candidate_key, (*want)[i].candidate_key);
      EXPECT_EQ((*got)[i].seconds, (*want)[i].seconds);
      EXPECT_EQ((*got)[i].error, (*want)[i].error);
      EXPECT_EQ((*got)[i].measured_on, "board-1");
      EXPECT_EQ((*got)[i].trace.SerializeAsString(), (*want)[i].trace.SerializeAsString());
    }
    EXPECT_EQ(*to->Module(w), *from->Module(w));
  }
  EXPECT_EQ(**to->DefaultSeconds(a), 3e-3);
  // Importing again adds nothing.
  std::stringstream again(lines.str());
  counts = ImportRecords(*to, again);
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->imported, 0);
  EXPECT_EQ(counts->already_there, 3);
}

TEST(RecordsIoTest, AMalformedLineIsRefusedByNumberAndTheLinesBeforeItStay) {
  std::unique_ptr<TuningDatabase> from = Open("records_good.db");
  const WorkloadId a{"00000000000000aa", "llvm", ""};
  ASSERT_TRUE(from->AddWorkload(a, "# kernel a").ok());
  ASSERT_TRUE(from->AddRecord(a, Record("a1", 2e-3)).ok());
  std::stringstream lines;
  ASSERT_TRUE(ExportRecords(*from, lines).ok());
  std::unique_ptr<TuningDatabase> to = Open("records_bad.db");
  for (const auto& [bad, message] : std::vector<std::pair<std::string, std::string>>{
           {"not json", "line 2: not a JSON object"},
           {R"({"target": "llvm"})", "line 2: no \"workload_key\""},
           {R"({"workload_key": "1", "target": "llvm", "candidate_key": "c", "module": "", )"
            R"("trace": {"version": 1}, "seconds": "fast"})",
            "line 2: \"seconds\" is no number"},
           {R"({"workload_key": "1", "target": "llvm", "candidate_key": "c", "module": "", )"
            R"("trace": 7})",
            "line 2: trace:"}}) {
    std::stringstream in(lines.str() + bad + "\n");
    absl::StatusOr<ImportCounts> counts = ImportRecords(*to, in);
    ASSERT_FALSE(counts.ok()) << bad;
    EXPECT_EQ(counts.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(counts.status().message(), HasSubstr(message));
  }
  absl::StatusOr<std::vector<TuningRecord>> kept = to->Records(a);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->size(), 1u);
}

}  // namespace
}  // namespace kiln::tune
