// The store's write queue: rows saved from many threads at once are committed in shared
// transactions, are durable once AwaitSaved returns, and survive reopening the store.
#include "server/store.h"

#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace kiln::server {
namespace {

std::string StoreDir(const std::string& name) {
  std::string dir = std::string(getenv("TEST_TMPDIR")) + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

v1::Job MakeJob(int i, v1::JobState state) {
  v1::Job job;
  job.set_id(absl::StrCat("job-", i));
  job.set_created_unix_ms(1000 + i);
  job.set_state(state);
  return job;
}

TEST(Store, ConcurrentSavesAreAllDurableAndTheLatestRowWins) {
  std::string dir = StoreDir("concurrent");
  constexpr int kThreads = 8, kJobsPerThread = 50;
  {
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int j = 0; j < kJobsPerThread; ++j) {
          int i = t * kJobsPerThread + j;
          (*store)->SaveJob(MakeJob(i, v1::JOB_STATE_QUEUED));
          uint64_t ticket = (*store)->SaveJob(MakeJob(i, v1::JOB_STATE_SUCCEEDED));
          EXPECT_TRUE((*store)->AwaitSaved(ticket).ok());
        }
      });
    }
    for (std::thread& t : threads) t.join();
    // A row still queued is visible to a read.
    (*store)->SaveJob(MakeJob(9999, v1::JOB_STATE_RUNNING));
    absl::StatusOr<std::optional<v1::Job>> queued = (*store)->GetJob("job-9999");
    ASSERT_TRUE(queued.ok() && queued->has_value());
    EXPECT_EQ((*queued)->state(), v1::JOB_STATE_RUNNING);
  }
  absl::StatusOr<std::unique_ptr<Store>> reopened = Store::Open(dir);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  absl::StatusOr<std::vector<v1::Job>> jobs = (*reopened)->LoadJobs(100000);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), size_t{kThreads * kJobsPerThread + 1});
  for (const v1::Job& job : *jobs) {
    if (job.id() == "job-9999") continue;
    EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.id();
  }
  EXPECT_EQ(jobs->front().id(), "job-9999");  // newest first
}

TEST(Store, ATouchIsWrittenBeforeEvictionOrdersByIt) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(StoreDir("touch"));
  ASSERT_TRUE(store.ok()) << store.status();
  // Not real artifacts: the index and eviction only need bytes and sizes.
  ASSERT_TRUE((*store)->PutArtifact("old", "k", std::string(100, 'a'), "").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE((*store)->PutArtifact("new", "k", std::string(100, 'b'), "").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  (*store)->TouchArtifact("old");  // now the most recently used
  absl::StatusOr<int> evicted = (*store)->EvictTo(150, "");
  ASSERT_TRUE(evicted.ok()) << evicted.status();
  EXPECT_EQ(*evicted, 1);
  absl::StatusOr<std::optional<ArtifactRecord>> old = (*store)->FindArtifact("old");
  absl::StatusOr<std::optional<ArtifactRecord>> fresh = (*store)->FindArtifact("new");
  ASSERT_TRUE(old.ok() && fresh.ok());
  EXPECT_TRUE(old->has_value());
  EXPECT_FALSE(fresh->has_value());
}

}  // namespace
}  // namespace kiln::server
