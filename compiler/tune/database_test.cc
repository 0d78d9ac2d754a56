#include "compiler/tune/database.h"

#include <sqlite3.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "compiler/testing/temp_path.h"
#include "compiler/tune/records_generation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/postgres_server.h"

namespace kiln::tune {
namespace {

using ::testing::HasSubstr;

using ::kiln::testing::FreshTempPath;

TuningRecord Record(const std::string& key, std::optional<double> seconds, int tile) {
  TuningRecord r;
  r.candidate_key = key;
  r.trace.set_version(1);
  r.trace.set_func_name("matmul");
  v1::TraceInstruction* inst = r.trace.add_instructions();
  inst->set_kind("SampleCategorical");
  inst->add_attrs()->set_int_(tile);
  inst->add_attrs()->set_real(1.0);
  inst->set_has_decision(true);
  inst->add_decision(0);
  inst->add_outputs("v0");
  r.seconds = seconds;
  if (!seconds) r.error = "build: the linker failed";
  r.measured_at = "2026-11-25T06:00:00Z";
  r.measured_on = "test-host";
  r.compiler = "0.1.0+abcdef123456";
  return r;
}

// The binary's one PostgreSQL server (tests/postgres_server.h).
kiln::testing::PostgresServer* Postgres() {
  kiln::testing::PostgresServer* server = kiln::testing::SharedPostgresServer();
  EXPECT_NE(server, nullptr) << "PostgreSQL did not start";
  return server;
}

class Backends : public ::testing::TestWithParam<std::string> {
 protected:
  // A fresh database named `name`: a file, or a PostgreSQL database.
  std::string Location(const std::string& name) {
    if (GetParam() == "sqlite") return FreshTempPath(name + ".db");
    absl::StatusOr<std::string> url = Postgres()->CreateDatabase(name);
    EXPECT_TRUE(url.ok()) << url.status();
    return url.ok() ? *url : "";
  }
};

INSTANTIATE_TEST_SUITE_P(TuningDatabase, Backends, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

TEST_P(Backends, RoundTripBestFirstAcrossReopen) {
  const std::string path = Location("round_trip");
  const WorkloadId w{"00112233aabbccdd", "llvm", ""};
  {
    absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(path);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->AddWorkload(w, "# the kernel").ok());
    ASSERT_TRUE((*db)->AddWorkload(w, "# again: ignored").ok());
    ASSERT_TRUE((*db)->AddRecord(w, Record("c1", 2e-3, 4)).ok());
    ASSERT_TRUE((*db)->AddRecord(w, Record("c2", std::nullopt, 8)).ok());
    ASSERT_TRUE((*db)->AddRecord(w, Record("c3", 1e-3, 16)).ok());
  }
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(path);
  ASSERT_TRUE(db.ok()) << db.status();
  absl::StatusOr<std::vector<TuningRecord>> records = (*db)->Records(w);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[0].candidate_key, "c3");
  EXPECT_EQ((*records)[1].candidate_key, "c1");
  EXPECT_EQ((*records)[2].candidate_key, "c2");
  EXPECT_FALSE((*records)[2].seconds.has_value());
  EXPECT_EQ((*records)[2].error, "build: the linker failed");
  EXPECT_EQ((*records)[0].trace.instructions(0).attrs(0).int_(), 16);
  EXPECT_EQ((*records)[0].trace.instructions(0).decision(0), 0);
  EXPECT_EQ((*records)[0].measured_on, "test-host");
  absl::StatusOr<std::optional<TuningRecord>> best = (*db)->Best(w);
  ASSERT_TRUE(best.ok() && best->has_value());
  EXPECT_DOUBLE_EQ(*(*best)->seconds, 1e-3);
  // Other targets and devices are other workloads.
  best = (*db)->Best({w.workload_key, "llvm -mcpu=znver3", ""});
  ASSERT_TRUE(best.ok());
  EXPECT_FALSE(best->has_value());
  absl::StatusOr<std::optional<double>> untuned = (*db)->DefaultSeconds(w);
  ASSERT_TRUE(untuned.ok());
  EXPECT_FALSE(untuned->has_value());
  ASSERT_TRUE((*db)->SetDefaultSeconds(w, 3e-3).ok());
  untuned = (*db)->DefaultSeconds(w);
  ASSERT_TRUE(untuned.ok() && untuned->has_value());
  EXPECT_DOUBLE_EQ(**untuned, 3e-3);
  absl::StatusOr<std::vector<WorkloadId>> all = (*db)->Workloads();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].workload_key, w.workload_key);
}

// Finding 4 of issue 47: an agent reported -1 s, which no candidate could beat. Times that are
// not finite and positive are refused, and one already stored (an older database) is skipped.
TEST_P(Backends, ImplausibleTimesAreRefusedAndNeverBest) {
  const std::string path = Location("implausible");
  const WorkloadId w{"0123456789abcdef", "llvm", ""};
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(path);
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)->AddWorkload(w, "# the kernel").ok());
  ASSERT_TRUE((*db)->AddRecord(w, Record("honest", 2e-3, 4)).ok());
  for (double bad : {-1.0, 0.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    absl::Status s = (*db)->AddRecord(w, Record("forged", bad, 4));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr("must be a positive number of seconds"));
    EXPECT_EQ((*db)->SetDefaultSeconds(w, bad).code(), absl::StatusCode::kInvalidArgument);
  }
  absl::StatusOr<std::optional<TuningRecord>> best = (*db)->Best(w);
  ASSERT_TRUE(best.ok() && best->has_value());
  EXPECT_EQ((*best)->candidate_key, "honest");
  if (GetParam() == "sqlite") {  // a negative time written before the check: skipped
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "UPDATE records SET seconds = -1 WHERE candidate_key = 'honest'",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
    best = (*db)->Best(w);
    ASSERT_TRUE(best.ok());
    EXPECT_FALSE(best->has_value());
  }
}

// Issue 47, finding 4: a tenant's tune decided every tenant's compiles. Records are their
// tenant's: another tenant neither sees nor applies them; published ones ("") everyone does.
TEST_P(Backends, ATenantsRecordsAreItsOwn) {
  const std::string path = Location("owners");
  const WorkloadId w{"fedcba9876543210", "llvm", "cpu"};
  auto open_as = [&](const std::string& owner) {
    absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(path);
    EXPECT_TRUE(db.ok()) << db.status();
    (*db)->set_owner(owner);
    return std::move(*db);
  };
  std::unique_ptr<TuningDatabase> published = open_as("");
  ASSERT_TRUE(published->AddWorkload(w, "# the kernel").ok());
  ASSERT_TRUE(published->AddRecord(w, Record("published", 3e-3, 4)).ok());
  std::unique_ptr<TuningDatabase> mallory = open_as("mallory");
  ASSERT_TRUE(mallory->AddRecord(w, Record("mallory's", 1e-6, 8)).ok());
  std::unique_ptr<TuningDatabase> alice = open_as("alice");
  ASSERT_TRUE(alice->AddRecord(w, Record("alice's", 2e-3, 16)).ok());

  EXPECT_EQ((*mallory->Best(w))->candidate_key, "mallory's");
  EXPECT_EQ((*alice->Best(w))->candidate_key, "alice's");
  EXPECT_EQ((*open_as("bob")->Best(w))->candidate_key, "published");
  EXPECT_EQ((*published->Best(w))->candidate_key, "published");
  EXPECT_EQ(alice->Records(w)->size(), 2u);  // its own and the published one

  // Each tenant's measurement of the untuned kernel is its own; the published one otherwise.
  ASSERT_TRUE(published->SetDefaultSeconds(w, 4e-3).ok());
  ASSERT_TRUE(mallory->SetDefaultSeconds(w, 1e-6).ok());
  EXPECT_DOUBLE_EQ(**mallory->DefaultSeconds(w), 1e-6);
  EXPECT_DOUBLE_EQ(**alice->DefaultSeconds(w), 4e-3);
  ASSERT_TRUE(alice->SetDefaultSeconds(w, 5e-3).ok());
  EXPECT_DOUBLE_EQ(**alice->DefaultSeconds(w), 5e-3);
  EXPECT_DOUBLE_EQ(**open_as("bob")->DefaultSeconds(w), 4e-3);

  // An operator publishes alice's: every tenant's compiles see them from now on.
  absl::StatusOr<int64_t> published_count = published->Publish("alice");
  ASSERT_TRUE(published_count.ok()) << published_count.status();
  EXPECT_EQ(*published_count, 1);
  EXPECT_EQ((*open_as("bob")->Best(w))->candidate_key, "alice's");
  EXPECT_EQ(*published->Publish("nobody"), 0);
}

// What kilnd reads before it answers a compile from memory: any change to what a compile may
// apply — a record, a publish, an untuned kernel's time — moves the generation; reading moves
// nothing, and a database not created yet reads as 0.
TEST_P(Backends, EveryChangeMovesTheGeneration) {
  const std::string path = Location("generation");
  RecordsGeneration generation(path);
  absl::StatusOr<int64_t> before = generation.Read();
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(*before, 0);
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(path);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(*generation.Read(), 0);  // created, nothing written
  const WorkloadId w{"0123456789abcdef", "llvm", "cpu"};
  ASSERT_TRUE((*db)->AddWorkload(w, "# the kernel").ok());
  int64_t last = *generation.Read();
  auto moved = [&] {
    absl::StatusOr<int64_t> now = generation.Read();
    EXPECT_TRUE(now.ok()) << now.status();
    bool changed = now.ok() && *now > last;
    if (now.ok()) last = *now;
    return changed;
  };
  (*db)->set_owner("alice");
  ASSERT_TRUE((*db)->AddRecord(w, Record("alice's", 2e-3, 4)).ok());
  EXPECT_TRUE(moved());
  EXPECT_FALSE(moved());  // reading changes nothing
  ASSERT_TRUE((*db)->SetDefaultSeconds(w, 3e-3).ok());
  EXPECT_TRUE(moved());
  (*db)->set_owner("");
  ASSERT_TRUE((*db)->SetDefaultSeconds(w, 4e-3).ok());
  EXPECT_TRUE(moved());
  ASSERT_TRUE((*db)->Publish("alice").ok());
  EXPECT_TRUE(moved());
  // Another process's change is seen too (a fresh connection wrote it).
  absl::StatusOr<std::unique_ptr<TuningDatabase>> other = TuningDatabase::Open(path);
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE((*other)->AddRecord(w, Record("another", 1e-3, 8)).ok());
  EXPECT_TRUE(moved());
}

TEST_P(Backends, RecordOfAnUnknownWorkloadIsNotFound) {
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(Location("unknown"));
  ASSERT_TRUE(db.ok());
  absl::Status s = (*db)->AddRecord({"ffff", "llvm", ""}, Record("c", 1e-3, 1));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("no workload ffff"));
}

TEST(TuningDatabaseTest, AnUnreachableServerIsUnavailableWithoutThePassword) {
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db =
      TuningDatabase::Open("postgresql://kiln:hunter2@127.0.0.1:1/kiln?connect_timeout=2");
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(db.status().message(), HasSubstr("postgresql://kiln@127.0.0.1:1/kiln"));
  EXPECT_THAT(db.status().message(), ::testing::Not(HasSubstr("hunter2")));
}

// A version 1 file (records without an owner) opens as version 2, its records published.
TEST(TuningDatabaseTest, AVersionOneFileIsUpgraded) {
  const std::string path = FreshTempPath("v1.db");
  const WorkloadId w{"0011223344556677", "llvm", ""};
  {
    absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->AddWorkload(w, "# k").ok());
    ASSERT_TRUE((*db)->AddRecord(w, Record("old", 1e-3, 4)).ok());
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw,
                         "ALTER TABLE records DROP COLUMN owner;"
                         "UPDATE kiln_tuning_meta SET value = '1' WHERE key = 'schema_version'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(path);
  ASSERT_TRUE(db.ok()) << db.status();
  (*db)->set_owner("anyone");
  EXPECT_EQ((*(*db)->Best(w))->candidate_key, "old");
}

TEST(TuningDatabaseTest, AnotherSchemaVersionIsRefused) {
  const std::string path = FreshTempPath("version.db");
  ASSERT_TRUE(TuningDatabase::Open(path).ok());
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(raw, "UPDATE kiln_tuning_meta SET value = '99' WHERE key = 'schema_version'",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(raw);
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(db.status().message(), HasSubstr("schema version 99"));
  EXPECT_THAT(db.status().message(), HasSubstr(path));
}

TEST(TuningDatabaseTest, GarbageFileIsDataLoss) {
  const std::string path = FreshTempPath("garbage.db");
  std::ofstream(path) << std::string(4096, 'x');
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(db.status().message(), HasSubstr(path));
}

TEST(TuningDatabaseTest, CorruptTraceIsDataLossNamingTheWorkload) {
  const std::string path = FreshTempPath("trace.db");
  const WorkloadId w{"0123", "llvm", ""};
  {
    absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->AddWorkload(w, "").ok());
    ASSERT_TRUE((*db)->AddRecord(w, Record("c", 1e-3, 1)).ok());
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "UPDATE records SET trace = '{not json'", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(path);
  ASSERT_TRUE(db.ok());
  absl::StatusOr<std::vector<TuningRecord>> records = (*db)->Records(w);
  ASSERT_FALSE(records.ok());
  EXPECT_EQ(records.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(records.status().message(), HasSubstr("workload 0123"));
}

}  // namespace
}  // namespace kiln::tune
