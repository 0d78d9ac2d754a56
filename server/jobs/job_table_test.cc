// The job table on a real store: conditional transitions (what was cancelled or handed over is
// not started or finished), watchers, hand-over and adoption, pruning.
#include "server/jobs/job_table.h"

#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class JobTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" +
                            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    table_ = std::make_unique<JobTable>(store_.get(), "");
  }
  v1::Job Task(const std::string& client, int64_t deadline_ms = 60000) {
    v1::Job job;
    job.set_kind(v1::JOB_KIND_PROFILE);
    job.set_client(client);
    job.set_device_key("board");
    job.set_deadline_ms(deadline_ms);
    return job;
  }
  std::string Queued(const std::string& client, int64_t deadline_ms = 60000) {
    JobInput input;
    input.mutable_task()->set_kind(v1::JOB_KIND_PROFILE);
    return table_->Insert(Task(client, deadline_ms), input, v1::JOB_STATE_QUEUED, "queued")
        .job.id();
  }
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobTable> table_;
};

TEST_F(JobTableTest, ACancelledJobIsNeitherStartedNorFinished) {
  const std::string id = Queued("alice");
  ASSERT_TRUE(table_->Cancel(id, "cancelled: no").ok());
  EXPECT_FALSE(table_->StartOnAgent(id, "agent-1").has_value());
  EXPECT_FALSE(table_->StartInWorker(id).has_value());
  EXPECT_FALSE(table_->Transition(id, v1::JOB_STATE_UNSPECIFIED, v1::JOB_STATE_SUCCEEDED, "done"));
  EXPECT_EQ(table_->Get(id)->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(table_->Cancel(id, "again").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(table_->Cancel("job-none", "x").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(JobTableTest, AStartedTaskCarriesItsIdAttemptAndAgent) {
  const std::string id = Queued("alice");
  std::optional<HeldJob> held = table_->StartOnAgent(id, "agent-7");
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ(held->input.task().task_id(), id);
  EXPECT_EQ(held->job.agent_id(), "agent-7");
  EXPECT_EQ(held->job.attempts(), 1);
  EXPECT_EQ(held->job.state(), v1::JOB_STATE_RUNNING);
  // Started once: a second agent does not get it.
  EXPECT_FALSE(table_->StartOnAgent(id, "agent-8").has_value());
  // Finishing is conditional on the state it was read in.
  EXPECT_FALSE(table_->Transition(id, v1::JOB_STATE_QUEUED, v1::JOB_STATE_FAILED, "no"));
  EXPECT_TRUE(table_->Transition(id, v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED, "done",
                                 [](v1::Job& job) { job.set_artifact_digest("d"); }));
  EXPECT_TRUE(table_->HasArtifact("alice", "d"));
  EXPECT_FALSE(table_->HasArtifact("bob", "d"));
  EXPECT_EQ(table_->ActiveJobs("alice"), 0);
}

TEST_F(JobTableTest, WatchersSeeTheJobThenEveryEventInOrder) {
  const std::string id = Queued("alice");
  std::vector<std::string> seen;
  std::optional<uint64_t> watch = table_->Subscribe(
      id, [&](const v1::JobEvent& e) { seen.push_back(StateName(e.state()) + ":" + e.message()); });
  ASSERT_TRUE(watch.has_value());
  table_->StartOnAgent(id, "agent-1");
  table_->Publish(id, "half way");
  table_->Transition(id, v1::JOB_STATE_RUNNING, v1::JOB_STATE_FAILED, "broke");
  table_->Unsubscribe(*watch);
  table_->Publish(id, "after the end");  // a finished job publishes nothing more
  EXPECT_THAT(seen, ElementsAre("queued:queued", "running:running on agent-1", "running:half way",
                                "failed:broke"));
  EXPECT_EQ(table_->Get(id)->reason(), "broke");
}

TEST_F(JobTableTest, AHandedOverJobIsForgottenAndItsWatchersFollowTheDatabase) {
  const std::string id = Queued("alice");
  EXPECT_EQ(table_->ActiveJobs("alice"), 1);
  int pushes = 0;
  ASSERT_TRUE(table_->Subscribe(id, [&](const v1::JobEvent&) { ++pushes; }).has_value());
  EXPECT_TRUE(table_->HandOver(id));
  EXPECT_FALSE(table_->Get(id).has_value());
  EXPECT_EQ(table_->ActiveJobs("alice"), 0);
  EXPECT_EQ(table_->StoredJobs("alice"), 0);
  EXPECT_THAT(table_->RemotelyWatched(), ElementsAre(id));
  // The database's row changes: the watcher hears of it once.
  v1::Job row = Task("alice");
  row.set_id(id);
  row.set_state(v1::JOB_STATE_SUCCEEDED);
  table_->PushRemote(row);
  table_->PushRemote(row);
  EXPECT_EQ(pushes, 2);  // the job as subscribed, then the new row
  // Adopted again: held here, the watcher follows from memory.
  row.set_state(v1::JOB_STATE_RUNNING);
  ASSERT_TRUE(table_->Adopt(row, JobInput()));
  EXPECT_TRUE(table_->RemotelyWatched().empty());
  EXPECT_TRUE(table_->Transition(id, v1::JOB_STATE_UNSPECIFIED, v1::JOB_STATE_QUEUED, "taken"));
  EXPECT_EQ(pushes, 3);
}

TEST_F(JobTableTest, AJobAWorkerStillRunsIsNotAdoptedUntilTheWorkerLetsGo) {
  JobInput input;
  v1::Job compile;
  compile.set_kind(v1::JOB_KIND_COMPILE);
  compile.set_client("alice");
  compile.set_deadline_ms(60000);
  const std::string id = table_->Insert(compile, input, v1::JOB_STATE_QUEUED, "queued").job.id();
  std::optional<HeldJob> held = table_->StartInWorker(id);
  ASSERT_TRUE(held.has_value());
  EXPECT_TRUE(table_->HandOver(id));
  EXPECT_TRUE(*held->cancel);  // the worker is killed
  v1::Job row = held->job;
  EXPECT_FALSE(table_->Adopt(row, input));
  table_->WorkerDone(id);
  EXPECT_TRUE(table_->Adopt(row, input));
}

TEST_F(JobTableTest, ATaskPastItsDeadlineExpiresWithWhereItWaited) {
  const std::string id = Queued("alice", 1);
  EXPECT_FALSE(table_->ExpireTask(id, NowUnixMs() - 1000));
  EXPECT_TRUE(table_->ExpireTask(id, NowUnixMs() + 1000));
  EXPECT_THAT(table_->Get(id)->reason(), HasSubstr("no agent of device 'board' took it"));
}

TEST_F(JobTableTest, PruningDropsTheOldestFinishedJobsBeyondTheCount) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(Queued("alice"));
    ASSERT_TRUE(table_->Cancel(ids.back(), "done with it").ok());
  }
  const std::string unfinished = Queued("alice");
  // Kept 2 s after they finish; then the oldest beyond one.
  EXPECT_TRUE(table_->Prune(NowUnixMs(), 0, 1).empty());
  std::vector<std::string> pruned = table_->Prune(NowUnixMs() + 5000, 0, 1);
  ASSERT_EQ(pruned.size(), 2u);
  for (const std::string& id : pruned) EXPECT_THAT(ids, ::testing::Contains(id));
  EXPECT_EQ(table_->size(), 2u);
  EXPECT_TRUE(table_->Get(unfinished).has_value());
  EXPECT_EQ(table_->StoredJobs("alice"), 2);
}

TEST_F(JobTableTest, UnfinishedJobsResumeAfterARestartWhenTheirInputWasKept) {
  const std::string kept = Queued("alice");
  const std::string lost = Queued("alice");
  ASSERT_TRUE(store_->PutJobInput(kept, JobInput().SerializeAsString()).ok());
  for (const std::string& id : {kept, lost}) {
    ASSERT_TRUE(store_->AwaitSaved(store_->SaveJob(*table_->Get(id))).ok());
  }
  JobTable restarted(store_.get(), "");
  absl::StatusOr<std::vector<v1::Job>> resumed = restarted.Load(/*resume=*/true);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  ASSERT_EQ(resumed->size(), 1u);
  EXPECT_EQ((*resumed)[0].id(), kept);
  EXPECT_EQ(restarted.Get(kept)->state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(restarted.Get(lost)->state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(restarted.Get(lost)->reason(), HasSubstr("interrupted"));
  // A cluster's instance leaves unfinished jobs to whoever claims them.
  JobTable instance(store_.get(), "host:1:a");
  ASSERT_TRUE(instance.Load(/*resume=*/false).ok());
  EXPECT_FALSE(instance.Get(kept).has_value());
}

}  // namespace
}  // namespace kiln::server
