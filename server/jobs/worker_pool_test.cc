// The worker pool with real processes standing in for kiln-worker (shell scripts that crash,
// hang or never start) on a real job table: whatever a worker does fails only its job, with the
// reason and status code a client sees; a cancel kills a running worker; the slot comes back.
// What a real kiln-worker computes is the service tests' part (tests/service_e2e_test.cc).
#include "server/jobs/worker_pool.h"

#include <sys/stat.h>

#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <mutex>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;

class WorkerPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(std::getenv("TEST_TMPDIR")) + "/" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(dir_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    cache_ = std::make_unique<ArtifactCache>(store_.get(), 1 << 20);
    table_ = std::make_unique<JobTable>(store_.get(), "");
    agents_ = std::make_unique<AgentDispatcher>(DispatcherOptions{}, table_.get(), store_.get());
  }
  void TearDown() override { pool_.reset(); }
  // A pool of one worker running `script` (a shell script body) as its kiln-worker.
  void StartPool(const std::string& script) {
    WorkerPoolOptions options;
    options.worker_path = dir_ + "/fake-worker";
    options.workers = 1;
    if (!script.empty()) {
      std::ofstream(options.worker_path) << "#!/bin/sh\n" << script << "\n";
      chmod(options.worker_path.c_str(), 0755);
    }
    pool_ = std::make_unique<WorkerPool>(options, table_.get(), agents_.get(), cache_.get());
    pool_->Start();
  }
  // Queues a compile and follows its events.
  std::string Submit(int64_t deadline_ms = 60000) {
    v1::Job job;
    job.set_kind(v1::JOB_KIND_COMPILE);
    job.set_client("alice");
    job.set_deadline_ms(deadline_ms);
    const std::string id = table_->Insert(job, JobInput(), v1::JOB_STATE_QUEUED, "queued").job.id();
    table_->Subscribe(id, [this](const v1::JobEvent& e) {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(e);
      changed_.notify_all();
    });
    pool_->Enqueue(id);
    return id;
  }
  // Waits for the job's first event that `matches`.
  v1::JobEvent WaitFor(const std::function<bool(const v1::JobEvent&)>& matches) {
    std::unique_lock<std::mutex> lock(mu_);
    size_t seen = 0;
    while (true) {
      for (; seen < events_.size(); ++seen) {
        if (matches(events_[seen])) return events_[seen];
      }
      changed_.wait(lock);
    }
  }
  v1::Job Finished() {
    return WaitFor([](const v1::JobEvent& e) { return Terminal(e.state()); }).job();
  }

  std::string dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<ArtifactCache> cache_;
  std::unique_ptr<JobTable> table_;
  std::unique_ptr<AgentDispatcher> agents_;
  std::unique_ptr<WorkerPool> pool_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<v1::JobEvent> events_;
};

TEST_F(WorkerPoolTest, AWorkerThatCrashesFailsItsJobWithWhatItSaid) {
  StartPool("echo 'the front end gave up' >&2\nexit 3");
  Submit();
  v1::Job job = Finished();
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(job.reason(), HasSubstr("exited with status 3"));
  EXPECT_THAT(job.reason(), HasSubstr("the front end gave up"));
  EXPECT_EQ(job.error_code(), static_cast<int>(absl::StatusCode::kInternal));
  EXPECT_EQ(job.attempts(), 1);
}

TEST_F(WorkerPoolTest, AWorkerThatCannotBeExecutedFailsItsJob) {
  StartPool("");  // no executable at the path: exec fails in the child (kilnd checks at start)
  Submit();
  v1::Job job = Finished();
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(job.reason(), HasSubstr("exited with status 127"));
}

TEST_F(WorkerPoolTest, AWorkerPastTheDeadlineIsKilled) {
  StartPool("exec sleep 600");
  Submit(/*deadline_ms=*/1500);
  v1::Job job = Finished();
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(job.reason(), HasSubstr("exceeded its deadline of 1500 ms"));
  EXPECT_EQ(job.error_code(), static_cast<int>(absl::StatusCode::kDeadlineExceeded));
}

TEST_F(WorkerPoolTest, ACancelKillsTheRunningWorkerAndFreesItsSlot) {
  StartPool("exec sleep 600");
  const std::string id = Submit();
  v1::JobEvent running = WaitFor([](const v1::JobEvent& e) {
    return e.message().find("in kiln-worker pid") != std::string::npos;
  });
  const int pid = running.job().worker_pid();
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(table_->Cancel(id, "cancelled: enough").ok());
  EXPECT_EQ(Finished().state(), v1::JOB_STATE_CANCELLED);
  // The pool stops (joining its thread) only once the worker is gone.
  pool_->Stop();
  EXPECT_NE(kill(pid, 0), 0);
  EXPECT_EQ(table_->Get(id)->state(), v1::JOB_STATE_CANCELLED);
}

}  // namespace
}  // namespace kiln::server
