// The job state machine on a real store, without workers or agents: every legal transition a
// job can take here, the illegal ones refused, idempotency keys, per-client limits, deadlines and
// persistence across a restart.
#include "server/jobs/job_manager.h"

#include <chrono>
#include <cstdlib>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;

std::string StoreDir(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
}

v1::Job CompileJob(const std::string& client, const std::string& key = "") {
  v1::Job job;
  job.set_kind(v1::JOB_KIND_COMPILE);
  job.set_client(client);
  job.set_idempotency_key(key);
  job.set_target("llvm");
  job.set_artifact_digest(std::string(64, 'a'));
  return job;
}

v1::Job ProfileJob(const std::string& client, int64_t deadline_ms = 60000) {
  v1::Job job;
  job.set_kind(v1::JOB_KIND_PROFILE);
  job.set_client(client);
  job.set_device_key("board");
  job.set_artifact_digest(std::string(64, 'b'));
  job.set_deadline_ms(deadline_ms);
  return job;
}

class JobManagerTest : public ::testing::Test {
 protected:
  void Open(const std::string& name, JobManagerOptions options = {}) {
    manager_.reset();
    cache_.reset();
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(StoreDir(name));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    cache_ = std::make_unique<ArtifactCache>(store_.get(), 1 << 30);
    options.worker_path = "/nonexistent/kiln-worker";  // no compile runs here
    options.workers = 1;
    options_ = options;
    ReopenManager();
  }
  // A new manager on the same store, as a restarted kilnd would have.
  void ReopenManager() {
    manager_.reset();
    manager_ = std::make_unique<JobManager>(options_, store_.get(), cache_.get());
    ASSERT_TRUE(manager_->Start().ok());
  }
  void TearDown() override {
    manager_.reset();
    cache_.reset();
    store_.reset();
  }
  JobManagerOptions options_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<ArtifactCache> cache_;
  std::unique_ptr<JobManager> manager_;
};

TEST_F(JobManagerTest, ACacheHitSucceedsAtOnce) {
  Open("hit");
  Submitted s = manager_->AddCacheHit(CompileJob("alice"));
  EXPECT_FALSE(s.deduplicated);
  EXPECT_EQ(s.job.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_GT(s.job.finished_unix_ms(), 0);
  // A finished job cannot be cancelled.
  absl::StatusOr<v1::Job> again = manager_->Cancel(s.job.id(), "");
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.status().message(), HasSubstr("already succeeded"));
}

TEST_F(JobManagerTest, AQueuedTaskIsCancelledWithItsReasonAndOnlyOnce) {
  Open("cancel");
  Submitted s = manager_->EnqueueTask(ProfileJob("alice"), v1::Task());
  EXPECT_EQ(s.job.state(), v1::JOB_STATE_QUEUED);  // no agent for "board"
  absl::StatusOr<v1::Job> cancelled = manager_->Cancel(s.job.id(), "changed my mind");
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(cancelled->reason(), "cancelled: changed my mind");
  EXPECT_EQ(manager_->Cancel(s.job.id(), "").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(manager_->Cancel("job-none", "").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(manager_->Get("job-none").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(JobManagerTest, AnIdempotencyKeyNamesOneJobPerClient) {
  Open("idempotency");
  Submitted first = manager_->AddCacheHit(CompileJob("alice", "build-1"));
  Submitted repeat = manager_->AddCacheHit(CompileJob("alice", "build-1"));
  EXPECT_TRUE(repeat.deduplicated);
  EXPECT_EQ(repeat.job.id(), first.job.id());
  ASSERT_TRUE(manager_->FindIdempotent("alice", "build-1").has_value());
  // The same key from another client is another job.
  Submitted other = manager_->AddCacheHit(CompileJob("bob", "build-1"));
  EXPECT_FALSE(other.deduplicated);
  EXPECT_NE(other.job.id(), first.job.id());
  EXPECT_FALSE(manager_->FindIdempotent("carol", "build-1").has_value());
}

TEST_F(JobManagerTest, AClientWithTooManyUnfinishedJobsIsRefused) {
  JobManagerOptions options;
  options.max_active_jobs_per_client = 2;
  Open("limit", options);
  manager_->EnqueueTask(ProfileJob("alice"), v1::Task());
  EXPECT_TRUE(manager_->Admit("alice").ok());
  Submitted second = manager_->EnqueueTask(ProfileJob("alice"), v1::Task());
  absl::Status refused = manager_->Admit("alice");
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(), HasSubstr("2 unfinished jobs"));
  EXPECT_TRUE(manager_->Admit("bob").ok());
  // A finished job frees its place.
  ASSERT_TRUE(manager_->Cancel(second.job.id(), "").ok());
  EXPECT_TRUE(manager_->Admit("alice").ok());
}

TEST_F(JobManagerTest, DeadlinesAreClampedAndATaskPastItsDeadlineFails) {
  JobManagerOptions options;
  options.default_deadline_ms = 5000;
  options.max_deadline_ms = 10000;
  Open("deadline", options);
  EXPECT_EQ(manager_->ClampDeadline(0), 5000);
  EXPECT_EQ(manager_->ClampDeadline(999999), 10000);
  EXPECT_EQ(manager_->ClampDeadline(300), 300);
  Submitted s = manager_->EnqueueTask(ProfileJob("alice", 300), v1::Task());
  v1::Job job;
  for (int i = 0; i < 100; ++i) {
    job = *manager_->Get(s.job.id());
    if (job.state() == v1::JOB_STATE_FAILED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(job.reason(), HasSubstr("deadline of 300 ms exceeded"));
}

TEST_F(JobManagerTest, WatchersSeeEveryEventInOrderThenTheEnd) {
  Open("watch");
  Submitted s = manager_->EnqueueTask(ProfileJob("alice"), v1::Task());
  std::vector<v1::JobState> seen;  // written under the manager's lock, read after Unsubscribe
  absl::StatusOr<uint64_t> watch =
      manager_->Subscribe(s.job.id(), [&](const v1::JobEvent& e) { seen.push_back(e.state()); });
  ASSERT_TRUE(watch.ok()) << watch.status();
  EXPECT_NE(*watch, 0u);
  ASSERT_TRUE(manager_->Cancel(s.job.id(), "").ok());
  manager_->Unsubscribe(*watch);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen.front(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(seen.back(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(manager_->Subscribe("job-nonexistent", [](const v1::JobEvent&) {}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(JobManagerTest, AShutdownFailsWhatWasUnfinishedAndARestartKeepsWhatWasDone) {
  Open("restart");
  Submitted done = manager_->AddCacheHit(CompileJob("alice"));
  Submitted queued = manager_->EnqueueTask(ProfileJob("alice"), v1::Task());
  Open("restart");  // the same store, a new manager
  absl::StatusOr<v1::Job> kept = manager_->Get(done.job.id());
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->state(), v1::JOB_STATE_SUCCEEDED);
  absl::StatusOr<v1::Job> interrupted = manager_->Get(queued.job.id());
  ASSERT_TRUE(interrupted.ok());
  EXPECT_EQ(interrupted->state(), v1::JOB_STATE_FAILED);
  // A graceful shutdown (the manager drains) fails what had not started.
  EXPECT_THAT(interrupted->reason(), HasSubstr("kilnd shut down before the job started"));
  EXPECT_EQ(manager_->List(v1::JOB_STATE_UNSPECIFIED, 10, "alice").size(), 2u);
  EXPECT_TRUE(manager_->List(v1::JOB_STATE_UNSPECIFIED, 10, "bob").empty());
  EXPECT_TRUE(manager_->HasArtifact("alice", std::string(64, 'a')));
  EXPECT_FALSE(manager_->HasArtifact("bob", std::string(64, 'a')));
}

// A kilnd killed leaves unfinished rows: those whose input the store
// kept run again, the others fail with the reason.
TEST_F(JobManagerTest, AfterACrashUnfinishedJobsWithTheirInputRunAgain) {
  Open("crash");
  Submitted queued = manager_->EnqueueTask(ProfileJob("alice"), v1::Task());
  ASSERT_TRUE(store_->GetJobInput(queued.job.id())->has_value());  // kept while it runs
  // A crash leaves the rows as they were; a graceful stop (this reset) would fail the job, so
  // the rows are written back behind the manager's back: one job with its input, one without.
  manager_.reset();
  v1::Job lost = queued.job;
  lost.set_id("job-lost");
  ASSERT_TRUE(store_->AwaitSaved(store_->SaveJob(queued.job)).ok());
  ASSERT_TRUE(store_->AwaitSaved(store_->SaveJob(lost)).ok());
  JobInput input;
  input.mutable_task()->set_kind(v1::JOB_KIND_PROFILE);
  ASSERT_TRUE(store_->PutJobInput(queued.job.id(), input.SerializeAsString()).ok());
  ReopenManager();
  absl::StatusOr<v1::Job> resumed = manager_->Get(queued.job.id());
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(resumed->attempts(), 0);  // queued when the crash came: never given to an agent
  absl::StatusOr<std::vector<v1::JobEvent>> events = manager_->Events(queued.job.id());
  ASSERT_TRUE(events.ok());
  EXPECT_THAT(events->back().message(), HasSubstr("resumed"));
  absl::StatusOr<v1::Job> failed = manager_->Get("job-lost");  // no input was kept for it
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(failed->reason(), HasSubstr("interrupted: kilnd restarted"));
  // Finished, its input goes.
  ASSERT_TRUE(manager_->Cancel(queued.job.id(), "done").ok());
  for (int i = 0; i < 50 && store_->GetJobInput(queued.job.id())->has_value(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(store_->GetJobInput(queued.job.id())->has_value());
}

// Cache hits finish at once, so the unfinished-jobs limit never holds a flood of them: the
// per-minute quota does, for that client only, and the stored-jobs quota bounds what it keeps.
TEST_F(JobManagerTest, QuotasHoldOneClientAndNotTheOthers) {
  JobManagerOptions options;
  options.max_jobs_per_minute_per_client = 5;
  options.max_stored_jobs_per_client = 8;
  Open("quotas", options);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(manager_->Admit("alice").ok()) << i;
    manager_->AddCacheHit(CompileJob("alice"));
  }
  absl::Status flood = manager_->Admit("alice");
  EXPECT_EQ(flood.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(flood.message(),
              HasSubstr("client alice submitted 5 jobs this minute (the limit is 5)"));
  EXPECT_TRUE(manager_->Admit("bob").ok());
  for (int i = 0; i < 8; ++i) manager_->AddCacheHit(CompileJob("carol"));
  absl::Status stored = manager_->Admit("carol");
  EXPECT_EQ(stored.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(stored.message(), HasSubstr("client carol has 8 stored jobs (the limit is 8)"));
  JobStats stats = manager_->Stats();
  EXPECT_EQ(stats.limit_refusals["jobs_per_minute"], 1);
  EXPECT_EQ(stats.limit_refusals["stored_jobs"], 1);
}

// Finished jobs go once past the retention (by count here), from memory and from the store: a
// restart does not bring them back.
TEST_F(JobManagerTest, RetentionPrunesTheOldestFinishedJobs) {
  JobManagerOptions options;
  options.max_finished_jobs = 2;
  Open("retention", options);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(manager_->AddCacheHit(CompileJob("alice")).job.id());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // distinct creation times
  }
  // Pruned by the monitor once a job has been finished 2 s.
  for (int i = 0; i < 60 && manager_->Get(ids[0]).ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(manager_->Get(ids[0]).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(manager_->Get(ids[1]).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(manager_->Get(ids[3]).ok());
  EXPECT_EQ(manager_->List(v1::JOB_STATE_UNSPECIFIED, 100).size(), 2u);
  EXPECT_EQ(manager_->Stats().jobs_pruned, 2);
  Open("retention", options);
  EXPECT_EQ(manager_->List(v1::JOB_STATE_UNSPECIFIED, 100).size(), 2u);
  EXPECT_EQ(manager_->Get(ids[0]).status().code(), absl::StatusCode::kNotFound);
}

// Past the store's bound, least recently used artifacts go first; when the database alone is over
// it, new jobs are refused.
TEST_F(JobManagerTest, TheStoreBoundEvictsArtifactsThenRefuses) {
  Open("store_bound");
  int64_t database = store_->DatabaseBytes() + (64 << 10);  // and what opening it again adds
  ASSERT_TRUE(store_->PutArtifact(std::string(64, 'c'), "key", std::string(200000, 'x'), "").ok());
  JobManagerOptions options;
  options.store_max_bytes = database + 100000;
  Open("store_bound", options);
  EXPECT_TRUE(manager_->Admit("alice").ok());
  absl::StatusOr<std::optional<ArtifactRecord>> evicted =
      store_->FindArtifact(std::string(64, 'c'));
  ASSERT_TRUE(evicted.ok());
  EXPECT_FALSE(evicted->has_value()) << "the artifact was not evicted";
  options.store_max_bytes = 1;  // smaller than any database
  Open("store_bound", options);
  absl::Status full = manager_->Admit("alice");
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(full.message(), HasSubstr("the store is full"));
  EXPECT_EQ(manager_->Stats().limit_refusals["store_bytes"], 1);
}

}  // namespace
}  // namespace kiln::server
