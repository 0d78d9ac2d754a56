// The store's contract, run against both implementations: the embedded SQLite store and the
// PostgreSQL store on a real server (tests/postgres_server). Then what only a shared
// database does: two instances on one database, migrations under concurrent starts, a server
// restart.
#include "server/store.h"

#include <postgresql/libpq-fe.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/artifact.h"
#include "server/postgres_store.h"
#include "tests/postgres_server.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;

// The binary's one PostgreSQL server (tests/postgres_server.h).
kiln::testing::PostgresServer* Postgres() {
  kiln::testing::PostgresServer* server = kiln::testing::SharedPostgresServer();
  EXPECT_NE(server, nullptr) << "PostgreSQL did not start";
  return server;
}

std::string Dir(const std::string& name) { return std::string(getenv("TEST_TMPDIR")) + "/" + name; }

std::string FreshDatabase() {
  static std::atomic<int> next{0};
  absl::StatusOr<std::string> url = Postgres()->CreateDatabase(absl::StrCat("store_test_", next++));
  EXPECT_TRUE(url.ok()) << url.status();
  return url.ok() ? *url : "";
}

v1::Job MakeJob(int i, v1::JobState state) {
  v1::Job job;
  job.set_id(absl::StrCat("job-", i));
  job.set_created_unix_ms(1000 + i);
  job.set_state(state);
  return job;
}

// A real (tiny) artifact, so that reads verify it.
std::string MakeArtifact(const std::string& payload) {
  v1::ArtifactProto a;
  a.set_format_version(runtime::kArtifactFormatVersion);
  a.mutable_manifest()->set_target("llvm");
  a.set_executable(payload);
  return runtime::SerializeArtifact(a);
}

std::string DigestOf(const std::string& artifact) {
  return runtime::ParseArtifact(artifact, false)->manifest().digest();
}

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  bool postgres() const { return GetParam() == "postgres"; }

  // The store `name`, fresh; Reopen opens the same one again.
  std::unique_ptr<Store> Open(const std::string& name) {
    dir_ = Dir(GetParam() + "_" + name);
    std::filesystem::remove_all(dir_);
    if (postgres()) url_ = FreshDatabase();
    return Reopen();
  }
  std::unique_ptr<Store> Reopen() {
    absl::StatusOr<std::unique_ptr<Store>> store =
        postgres() ? absl::StatusOr<std::unique_ptr<Store>>(PostgresStore::Open(url_, dir_))
                   : Store::Open(dir_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(*store) : nullptr;
  }

  std::string dir_, url_;
};

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

TEST_P(StoreTest, ConcurrentSavesAreAllDurableAndTheLatestRowWins) {
  constexpr int kThreads = 8, kJobsPerThread = 50;
  {
    std::unique_ptr<Store> store = Open("concurrent");
    ASSERT_NE(store, nullptr);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int j = 0; j < kJobsPerThread; ++j) {
          int i = t * kJobsPerThread + j;
          store->SaveJob(MakeJob(i, v1::JOB_STATE_QUEUED));
          uint64_t ticket = store->SaveJob(MakeJob(i, v1::JOB_STATE_SUCCEEDED));
          EXPECT_TRUE(store->AwaitSaved(ticket).ok());
        }
      });
    }
    for (std::thread& t : threads) t.join();
    // A row just saved is visible to a read.
    store->SaveJob(MakeJob(9999, v1::JOB_STATE_RUNNING));
    absl::StatusOr<std::optional<v1::Job>> queued = store->GetJob("job-9999");
    ASSERT_TRUE(queued.ok() && queued->has_value());
    EXPECT_EQ((*queued)->state(), v1::JOB_STATE_RUNNING);
  }
  std::unique_ptr<Store> reopened = Reopen();
  ASSERT_NE(reopened, nullptr);
  absl::StatusOr<std::vector<v1::Job>> jobs = reopened->LoadJobs(100000);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), size_t{kThreads * kJobsPerThread + 1});
  for (const v1::Job& job : *jobs) {
    if (job.id() == "job-9999") continue;
    EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.id();
  }
  EXPECT_EQ(jobs->front().id(), "job-9999");  // newest first
  ASSERT_TRUE(reopened->DeleteJobs({"job-0", "job-1"}).ok());
  EXPECT_FALSE(reopened->GetJob("job-0")->has_value());
  EXPECT_EQ(reopened->LoadJobs(100000)->size(), size_t{kThreads * kJobsPerThread - 1});
}

TEST_P(StoreTest, ATouchIsWrittenBeforeEvictionOrdersByIt) {
  std::unique_ptr<Store> store = Open("touch");
  ASSERT_NE(store, nullptr);
  // Not real artifacts: the index and eviction only need bytes and sizes.
  ASSERT_TRUE(store->PutArtifact("old", "k", std::string(100, 'a'), "").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(store->PutArtifact("new", "k", std::string(100, 'b'), "").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  store->TouchArtifact("old");  // now the most recently used
  EXPECT_EQ(*store->TotalArtifactBytes(), 200);
  EXPECT_THAT(*store->FindByCacheKey("k"), ::testing::UnorderedElementsAre("old", "new"));
  absl::StatusOr<int> evicted = store->EvictTo(150, "");
  ASSERT_TRUE(evicted.ok()) << evicted.status();
  EXPECT_EQ(*evicted, 1);
  absl::StatusOr<std::optional<ArtifactRecord>> old = store->FindArtifact("old");
  absl::StatusOr<std::optional<ArtifactRecord>> fresh = store->FindArtifact("new");
  ASSERT_TRUE(old.ok() && fresh.ok());
  EXPECT_TRUE(old->has_value());
  EXPECT_FALSE(fresh->has_value());
  EXPECT_FALSE(std::filesystem::exists(store->ArtifactPath("new")));
  EXPECT_GT(store->DatabaseBytes(), 0);
}

TEST_P(StoreTest, ArtifactsAreVerifiedAndDevicesKept) {
  std::unique_ptr<Store> store = Open("verify");
  ASSERT_NE(store, nullptr);
  const std::string artifact = MakeArtifact("executable bytes");
  const std::string digest = DigestOf(artifact);
  ASSERT_TRUE(store->PutArtifact(digest, "key", artifact, "the module").ok());
  EXPECT_EQ(*store->ReadArtifact(digest), artifact);
  EXPECT_EQ(*store->ReadModule(digest), "the module");
  EXPECT_EQ(store->ReadArtifact(std::string(64, '0')).status().code(), absl::StatusCode::kNotFound);
  // Corrupt this machine's copy: SQLite has no other and drops it; PostgreSQL serves the
  // database's bytes and repairs the copy.
  {
    std::fstream f(store->ArtifactPath(digest), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(artifact.size() / 2));
    f.put('\x5a');
  }
  absl::StatusOr<std::string> read = store->ReadArtifact(digest);
  if (postgres()) {
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(*read, artifact);
    EXPECT_EQ(*ReadFile(store->ArtifactPath(digest)), artifact);
  } else {
    EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(read.status().message(), HasSubstr("it was removed from the store"));
    EXPECT_FALSE(store->FindArtifact(digest)->has_value());
  }

  v1::Device board;
  board.set_key("board");
  board.mutable_attributes()->set_target_triple("aarch64-unknown-linux-gnu");
  ASSERT_TRUE(store->PutDevice(board).ok());
  board.set_agents_connected(2);
  ASSERT_TRUE(store->PutDevice(board).ok());  // replaces
  absl::StatusOr<std::vector<v1::Device>> devices = store->LoadDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].agents_connected(), 2);
}

// A stored digest is written once: the same content with other bytes beside it (another
// signature) leaves the first bytes in place; files are the owner's alone.
TEST_P(StoreTest, AStoredArtifactIsNeverRewrittenAndOwnerOnly) {
  std::unique_ptr<Store> store = Open("write_once");
  ASSERT_NE(store, nullptr);
  const std::string artifact = MakeArtifact("first bytes");
  const std::string digest = DigestOf(artifact);
  ASSERT_TRUE(store->PutArtifact(digest, "key", artifact, "").ok());
  absl::StatusOr<v1::ArtifactProto> other = runtime::ParseArtifact(artifact, false);
  ASSERT_TRUE(other.ok());
  other->mutable_signature()->set_key_id("someone else");
  other->mutable_signature()->set_signature("forged");
  const std::string resigned = other->SerializeAsString();
  ASSERT_NE(resigned, artifact);
  ASSERT_TRUE(store->PutArtifact(digest, "key", resigned, "").ok());
  EXPECT_EQ(*store->ReadArtifact(digest), artifact);
  EXPECT_EQ(*ReadFile(store->ArtifactPath(digest)), artifact);
  namespace fs = std::filesystem;
  EXPECT_EQ(fs::status(store->ArtifactPath(digest)).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::status(dir_).permissions() & fs::perms::all, fs::perms::owner_all);
}

// ---- What only the shared store does ----

TEST(PostgresStore, TwoInstancesShareJobsAndArtifacts) {
  const std::string url = FreshDatabase();
  absl::StatusOr<std::unique_ptr<PostgresStore>> a = PostgresStore::Open(url, Dir("pg_a"));
  absl::StatusOr<std::unique_ptr<PostgresStore>> b = PostgresStore::Open(url, Dir("pg_b"));
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  ASSERT_TRUE((*a)->AwaitSaved((*a)->SaveJob(MakeJob(1, v1::JOB_STATE_SUCCEEDED))).ok());
  absl::StatusOr<std::optional<v1::Job>> seen = (*b)->GetJob("job-1");
  ASSERT_TRUE(seen.ok() && seen->has_value());
  EXPECT_EQ((*seen)->state(), v1::JOB_STATE_SUCCEEDED);

  const std::string artifact = MakeArtifact("compiled on a");
  const std::string digest = DigestOf(artifact);
  ASSERT_TRUE((*a)->PutArtifact(digest, "key", artifact, "module").ok());
  EXPECT_FALSE(std::filesystem::exists((*b)->ArtifactPath(digest)));
  EXPECT_THAT(*(*b)->FindByCacheKey("key"), ::testing::ElementsAre(digest));
  EXPECT_EQ(*(*b)->ReadArtifact(digest), artifact);                  // from the database
  EXPECT_TRUE(std::filesystem::exists((*b)->ArtifactPath(digest)));  // and now a local copy
  EXPECT_EQ(*(*b)->ReadModule(digest), "module");
}

TEST(PostgresStore, LocalCopiesAreBoundedLeastRecentlyUsedFirst) {
  const std::string url = FreshDatabase();
  std::vector<std::string> artifacts, digests;
  for (int i = 0; i < 3; ++i) {
    artifacts.push_back(MakeArtifact(std::string(1000, static_cast<char>('a' + i))));
    digests.push_back(DigestOf(artifacts.back()));
  }
  PostgresStore::OpenOptions options;
  options.local_copies_max_bytes = static_cast<int64_t>(artifacts[0].size() * 2 + 100);
  absl::StatusOr<std::unique_ptr<PostgresStore>> store =
      PostgresStore::Open(url, Dir("pg_local"), options);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->PutArtifact(digests[0], "k0", artifacts[0], "").ok());
  ASSERT_TRUE((*store)->PutArtifact(digests[1], "k1", artifacts[1], "").ok());
  ASSERT_TRUE((*store)->ReadArtifact(digests[0]).ok());  // 0 used after 1
  ASSERT_TRUE((*store)->PutArtifact(digests[2], "k2", artifacts[2], "").ok());
  EXPECT_TRUE(std::filesystem::exists((*store)->ArtifactPath(digests[0])));
  EXPECT_FALSE(std::filesystem::exists((*store)->ArtifactPath(digests[1])));  // evicted
  EXPECT_TRUE(std::filesystem::exists((*store)->ArtifactPath(digests[2])));
  // Still served, from the database, and copied here again (evicting the least recent, 0).
  EXPECT_EQ(*(*store)->ReadArtifact(digests[1]), artifacts[1]);
  EXPECT_TRUE(std::filesystem::exists((*store)->ArtifactPath(digests[1])));
  EXPECT_FALSE(std::filesystem::exists((*store)->ArtifactPath(digests[0])));
}

TEST(PostgresStore, MigrationsRunOnceWhenInstancesStartTogether) {
  const std::string url = FreshDatabase();
  std::vector<std::thread> starts;
  std::atomic<int> opened{0};
  for (int i = 0; i < 4; ++i) {
    starts.emplace_back([&, i] {
      absl::StatusOr<std::unique_ptr<PostgresStore>> s =
          PostgresStore::Open(url, Dir(absl::StrCat("pg_start_", i)));
      EXPECT_TRUE(s.ok()) << s.status();
      if (s.ok()) ++opened;
    });
  }
  for (std::thread& t : starts) t.join();
  EXPECT_EQ(opened, 4);
  PGconn* conn = PQconnectdb(url.c_str());
  PGresult* r = PQexec(conn, "SELECT version FROM kiln_schema_migrations ORDER BY version");
  ASSERT_EQ(PQntuples(r), PostgresStore::SchemaVersion());
  PQclear(r);
  // A database migrated by a newer kilnd is refused, with the versions.
  PQclear(PQexec(conn, "INSERT INTO kiln_schema_migrations VALUES (99, 0)"));
  PQfinish(conn);
  absl::StatusOr<std::unique_ptr<PostgresStore>> old = PostgresStore::Open(url, Dir("pg_old"));
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(old.status().message(), HasSubstr("schema is version 99, newer than this kilnd's"));
}

TEST(PostgresStore, ARestartedServerIsReconnected) {
  const std::string url = FreshDatabase();
  absl::StatusOr<std::unique_ptr<PostgresStore>> store = PostgresStore::Open(url, Dir("pg_re"));
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->AwaitSaved((*store)->SaveJob(MakeJob(7, v1::JOB_STATE_QUEUED))).ok());
  ASSERT_TRUE(Postgres()->Stop().ok());
  absl::StatusOr<std::optional<v1::Job>> down = (*store)->GetJob("job-7");
  EXPECT_EQ(down.status().code(), absl::StatusCode::kUnavailable) << down.status();
  const uint64_t lost = (*store)->SaveJob(MakeJob(8, v1::JOB_STATE_QUEUED));
  EXPECT_EQ((*store)->AwaitSaved(lost).code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(Postgres()->StartAgain().ok());
  absl::StatusOr<std::optional<v1::Job>> back = (*store)->GetJob("job-7");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->has_value());
}

// A row the writer has taken from the queue but not committed yet (its batch waits on a lock)
// is still what a read of the job returns.
TEST(PostgresStore, AJobBeingWrittenIsReadFromTheWritersBatch) {
  const std::string url = FreshDatabase();
  absl::StatusOr<std::unique_ptr<PostgresStore>> store = PostgresStore::Open(url, Dir("pg_wr"));
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->AwaitSaved((*store)->SaveJob(MakeJob(1, v1::JOB_STATE_QUEUED))).ok());
  // Writes to the table wait until this transaction ends; reads do not.
  PGconn* blocker = PQconnectdb(url.c_str());
  PQclear(PQexec(blocker, "BEGIN"));
  PQclear(PQexec(blocker, "LOCK TABLE jobs IN SHARE MODE"));
  const uint64_t ticket = (*store)->SaveJob(MakeJob(2, v1::JOB_STATE_QUEUED));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the writer takes the batch
  absl::StatusOr<std::optional<v1::Job>> read = (*store)->GetJob("job-2");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->has_value());
  PQclear(PQexec(blocker, "COMMIT"));
  PQfinish(blocker);
  EXPECT_TRUE((*store)->AwaitSaved(ticket).ok());
  EXPECT_TRUE((*(*store)->GetJob("job-2")).has_value());
}

// ---- Several active instances: leases, claims, fencing ----

v1::Job Unfinished(int i, v1::JobKind kind, const std::string& device_key = "") {
  v1::Job job = MakeJob(i, v1::JOB_STATE_QUEUED);
  job.set_kind(kind);
  job.set_device_key(device_key);
  job.set_client("alice");
  return job;
}

// Leases long enough that a loaded machine (CI runs the whole suite on 2 cores) does not let one
// run out between two steps of a test that expects it held.
constexpr int kLeaseMs = 3000;

std::unique_ptr<PostgresStore> Instance(const std::string& url, const std::string& name) {
  PostgresStore::OpenOptions options;
  options.instance = name;
  options.lease_ms = kLeaseMs;
  absl::StatusOr<std::unique_ptr<PostgresStore>> store =
      PostgresStore::Open(url, Dir("pg_" + name), options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

std::vector<std::string> Ids(const std::vector<ClaimedJob>& claimed) {
  std::vector<std::string> ids;
  for (const ClaimedJob& c : claimed) ids.push_back(c.job.id());
  return ids;
}

TEST(PostgresStore, ADeadInstancesJobsAreClaimedOnceItsLeaseRunsOut) {
  const std::string url = FreshDatabase();
  std::unique_ptr<PostgresStore> a = Instance(url, "a"), b = Instance(url, "b");
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->AwaitSaved(a->SaveJob(Unfinished(1, v1::JOB_KIND_COMPILE))).ok());
  // Held by a while it renews: past the first lease's end (half a lease, then 0.6 of one), the
  // renewed lease still has 0.4 of a lease (1.2 s) to run when b tries.
  EXPECT_THAT(Ids(*b->ClaimJobs(true, {}, 10)), ::testing::IsEmpty());
  std::this_thread::sleep_for(std::chrono::milliseconds(kLeaseMs / 2));
  absl::StatusOr<LeaseRenewal> renewed = a->RenewLeases();
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_THAT(renewed->held, ::testing::ElementsAre("job-1"));
  std::this_thread::sleep_for(std::chrono::milliseconds(kLeaseMs * 6 / 10));
  EXPECT_THAT(Ids(*b->ClaimJobs(true, {}, 10)), ::testing::IsEmpty());
  // a stops renewing: b takes it, as interrupted, exactly once.
  std::this_thread::sleep_for(std::chrono::milliseconds(kLeaseMs / 2));
  absl::StatusOr<std::vector<ClaimedJob>> claimed = b->ClaimJobs(true, {}, 10);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  ASSERT_THAT(Ids(*claimed), ::testing::ElementsAre("job-1"));
  EXPECT_TRUE((*claimed)[0].interrupted);
  EXPECT_THAT(Ids(*b->ClaimJobs(true, {}, 10)), ::testing::IsEmpty());
  // a, back from a pause, no longer holds it and may not write it: b's row stands.
  EXPECT_THAT(a->RenewLeases()->held, ::testing::IsEmpty());
  v1::Job stale = Unfinished(1, v1::JOB_KIND_COMPILE);
  stale.set_state(v1::JOB_STATE_FAILED);
  EXPECT_EQ(a->AwaitSaved(a->SaveJob(stale)).code(), absl::StatusCode::kFailedPrecondition);
  v1::Job done = Unfinished(1, v1::JOB_KIND_COMPILE);
  done.set_state(v1::JOB_STATE_SUCCEEDED);
  ASSERT_TRUE(b->AwaitSaved(b->SaveJob(done)).ok());
  EXPECT_EQ((*a->GetJob("job-1"))->state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_THAT(b->RenewLeases()->held, ::testing::IsEmpty());  // finished: nothing to hold
}

TEST(PostgresStore, ReleasedTasksGoToAnInstanceWithAnAgentOfTheirDevice) {
  const std::string url = FreshDatabase();
  std::unique_ptr<PostgresStore> a = Instance(url, "a"), b = Instance(url, "b");
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->AwaitSaved(a->SaveJob(Unfinished(1, v1::JOB_KIND_INFERENCE, "rpi"))).ok());
  ASSERT_TRUE(a->AwaitSaved(a->SaveJob(Unfinished(2, v1::JOB_KIND_PROFILE, "jetson"))).ok());
  ASSERT_TRUE(a->ReleaseJobs({"job-1", "job-2"}).ok());
  EXPECT_EQ((*b->TasksQueuedByDevice())["rpi"], 1);
  // Only an instance serving the device takes a task; compiles are not tasks.
  EXPECT_THAT(Ids(*b->ClaimJobs(true, {"x86"}, 10)), ::testing::IsEmpty());
  absl::StatusOr<std::vector<ClaimedJob>> claimed = b->ClaimJobs(false, {"rpi", "x86"}, 10);
  ASSERT_THAT(Ids(*claimed), ::testing::ElementsAre("job-1"));
  EXPECT_FALSE((*claimed)[0].interrupted);  // released, never started
  EXPECT_THAT(b->RenewLeases()->held, ::testing::ElementsAre("job-1"));
  // A cancellation asked through a reaches b at its next renewal.
  ASSERT_TRUE(a->RequestCancel("job-1", "cancelled by the client").ok());
  absl::StatusOr<LeaseRenewal> renewal = b->RenewLeases();
  ASSERT_TRUE(renewal.ok());
  EXPECT_EQ(renewal->cancel_requests["job-1"], "cancelled by the client");
  // Nobody holds job-2: a single job can be taken (to cancel it), then it is held.
  EXPECT_TRUE(b->ClaimJob("job-2")->has_value());
  EXPECT_FALSE(a->ClaimJob("job-2")->has_value());
}

TEST(PostgresStore, EveryInstanceAnswersAlike) {
  const std::string url = FreshDatabase();
  std::unique_ptr<PostgresStore> a = Instance(url, "a"), b = Instance(url, "b");
  ASSERT_TRUE(a && b);
  v1::Job keyed = Unfinished(1, v1::JOB_KIND_COMPILE);
  keyed.set_idempotency_key("retry-1");
  keyed.set_artifact_digest("abc");
  ASSERT_TRUE(a->AwaitSaved(a->SaveJob(keyed)).ok());
  ASSERT_TRUE(b->AwaitSaved(b->SaveJob(Unfinished(2, v1::JOB_KIND_INFERENCE, "rpi"))).ok());
  // One key, one job, cluster-wide: a second job with it is refused as AlreadyExists.
  v1::Job again = Unfinished(3, v1::JOB_KIND_COMPILE);
  again.set_idempotency_key("retry-1");
  EXPECT_EQ(b->AwaitSaved(b->SaveJob(again)).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ((*b->FindIdempotent("alice", "retry-1"))->id(), "job-1");
  EXPECT_FALSE(b->FindIdempotent("bob", "retry-1")->has_value());
  EXPECT_TRUE(*b->ClientHasArtifact("alice", "abc"));
  EXPECT_FALSE(*b->ClientHasArtifact("bob", "abc"));
  absl::StatusOr<std::vector<v1::Job>> alices = a->ListJobs(v1::JOB_STATE_QUEUED, "alice", 10);
  ASSERT_TRUE(alices.ok()) << alices.status();
  std::vector<std::string> listed;
  for (const v1::Job& j : *alices) listed.push_back(j.id());
  EXPECT_THAT(listed, ::testing::ElementsAre("job-2", "job-1"));  // newest first
  EXPECT_THAT(*a->ListJobs(v1::JOB_STATE_QUEUED, "bob", 10), ::testing::IsEmpty());
  // Agents: counted wherever they are connected, until their session ends.
  ASSERT_TRUE(a->PutAgentSession("agent-1", "rpi").ok());
  ASSERT_TRUE(b->PutAgentSession("agent-1", "rpi").ok());  // b's own agent-1
  EXPECT_EQ((*b->AgentsByDevice())["rpi"], 2);
  ASSERT_TRUE(a->DropAgentSession("agent-1").ok());
  EXPECT_EQ((*b->AgentsByDevice())["rpi"], 1);
}

}  // namespace
}  // namespace kiln::server
