// Admission on a real store: each limit refuses with its own reason and counts its refusals;
// draining and an unreachable store refuse everyone as Unavailable.
#include "server/jobs/admission.h"

#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Store> OpenStore() {
  absl::StatusOr<std::unique_ptr<Store>> store =
      Store::Open(std::string(std::getenv("TEST_TMPDIR")) + "/" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

TEST(AdmissionTest, EachClientLimitRefusesWithItsReason) {
  std::unique_ptr<Store> store = OpenStore();
  AdmissionOptions options;
  options.max_active_jobs_per_client = 2;
  options.max_stored_jobs_per_client = 5;
  options.max_jobs_per_minute_per_client = 3;
  Admission admission(options, store.get());
  EXPECT_TRUE(admission.Admit("alice", 1, 0).ok());
  absl::Status active = admission.Admit("alice", 2, 0);
  EXPECT_EQ(active.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(active.message(), HasSubstr("already has 2 unfinished jobs"));
  EXPECT_THAT(admission.Admit("alice", 0, 5).message(), HasSubstr("has 5 stored jobs"));
  EXPECT_TRUE(admission.Admit("alice", 0, 0).ok());
  EXPECT_TRUE(admission.Admit("alice", 0, 0).ok());
  absl::Status rate = admission.Admit("alice", 0, 0);  // the fourth this minute
  EXPECT_THAT(rate.message(), HasSubstr("submitted 3 jobs this minute"));
  EXPECT_TRUE(admission.Admit("bob", 0, 0).ok());  // another client's own minute
  std::map<std::string, int64_t> refusals = admission.Refusals();
  EXPECT_EQ(refusals["active_jobs"], 1);
  EXPECT_EQ(refusals["stored_jobs"], 1);
  EXPECT_EQ(refusals["jobs_per_minute"], 1);
}

TEST(AdmissionTest, DrainingAndAnUnreachableStoreRefuseEveryone) {
  std::unique_ptr<Store> store = OpenStore();
  Admission admission(AdmissionOptions{}, store.get());
  EXPECT_TRUE(admission.Accepting());
  admission.SetStoreHealth(absl::UnavailableError("connection refused"));
  EXPECT_FALSE(admission.Accepting());
  absl::Status away = admission.Admit("alice", 0, 0);
  EXPECT_EQ(away.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(away.message(), HasSubstr("connection refused"));
  admission.SetStoreHealth(absl::OkStatus());
  EXPECT_TRUE(admission.Admit("alice", 0, 0).ok());
  admission.SetDraining();
  EXPECT_FALSE(admission.Accepting());
  EXPECT_THAT(admission.Admit("alice", 0, 0).message(), HasSubstr("shutting down"));
}

}  // namespace
}  // namespace kiln::server
