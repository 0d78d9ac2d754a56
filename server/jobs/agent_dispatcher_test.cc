// The agent dispatcher on a real job table and store, with agents whose streams are vectors:
// which agent gets which task, what happens when one disappears, the measurement queue, and
// what an agent may fetch.
#include "server/jobs/agent_dispatcher.h"

#include <grpcpp/server_context.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;

// An agent's stream: the messages the dispatcher queued on it, in order.
class Inbox {
 public:
  void Push(v1::ServerMessage m) {
    std::lock_guard<std::mutex> lock(mu_);
    messages_.push_back(std::move(m));
    arrived_.notify_all();
  }
  // The n-th message (from 1), once it arrives.
  v1::ServerMessage Wait(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    arrived_.wait(lock, [&] { return messages_.size() >= n; });
    return messages_[n - 1];
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return messages_.size();
  }
  bool empty() { return size() == 0; }

 private:
  std::mutex mu_;
  std::condition_variable arrived_;
  std::vector<v1::ServerMessage> messages_;
};

class AgentDispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" +
                            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    table_ = std::make_unique<JobTable>(store_.get(), "");
    dispatcher_ =
        std::make_unique<AgentDispatcher>(DispatcherOptions{}, table_.get(), store_.get());
  }
  // An agent of `key` whose stream appends to `inbox`.
  std::shared_ptr<AgentLink> Connect(const std::string& key, Inbox* inbox,
                                     const std::string& principal = "board-token") {
    v1::RegisterAgent hello;
    hello.set_device_key(key);
    return dispatcher_->Register(hello, principal, &context_,
                                 [inbox](v1::ServerMessage m) { inbox->Push(std::move(m)); });
  }
  std::string QueueTask(const std::string& key, const std::string& digest = "d1",
                        const std::string& client = "alice") {
    v1::Job job;
    job.set_kind(v1::JOB_KIND_PROFILE);
    job.set_client(client);
    job.set_device_key(key);
    job.set_deadline_ms(60000);
    job.set_artifact_digest(digest);
    JobInput input;
    input.mutable_task()->set_kind(v1::JOB_KIND_PROFILE);
    const std::string id = table_->Insert(job, input, v1::JOB_STATE_QUEUED, "queued").job.id();
    dispatcher_->Enqueue(id, key, client);
    return id;
  }
  // A tune of device `key` as its worker holds it: what measures candidates.
  std::optional<HeldJob> HeldTune(const std::string& key) {
    v1::Job tune;
    tune.set_kind(v1::JOB_KIND_TUNE);
    tune.set_client("alice");
    tune.set_device_key(key);
    tune.set_deadline_ms(60000);
    const std::string id =
        table_->Insert(tune, JobInput(), v1::JOB_STATE_QUEUED, "queued").job.id();
    return table_->StartInWorker(id);
  }
  grpc::ServerContext context_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobTable> table_;
  std::unique_ptr<AgentDispatcher> dispatcher_;
};

TEST_F(AgentDispatcherTest, ATaskGoesToAnIdleAgentOfItsDeviceOnly) {
  Inbox pi, jetson;
  auto a = Connect("pi", &pi);
  auto b = Connect("jetson", &jetson);
  const std::string first = QueueTask("pi");
  const std::string second = QueueTask("pi");
  ASSERT_EQ(pi.size(), 1u);  // one task per agent at a time
  EXPECT_EQ(pi.Wait(1).task().task_id(), first);
  EXPECT_GT(pi.Wait(1).task().timeout_ms(), 0);
  EXPECT_TRUE(jetson.empty());
  EXPECT_EQ(dispatcher_->TasksQueued(), 1);
  // Its result finishes the job and the agent takes the next.
  v1::TaskResult done;
  done.set_task_id(first);
  done.set_ok(true);
  done.mutable_profile();
  dispatcher_->Result(a, done);
  EXPECT_EQ(table_->Get(first)->state(), v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(pi.size(), 2u);
  EXPECT_EQ(pi.Wait(2).task().task_id(), second);
  // A result for a task the agent was not given changes nothing.
  v1::TaskResult forged;
  forged.set_task_id(second);
  forged.set_ok(true);
  dispatcher_->Result(b, forged);
  EXPECT_EQ(table_->Get(second)->state(), v1::JOB_STATE_RUNNING);
}

TEST_F(AgentDispatcherTest, ATaskWhoseAgentDisappearsGoesToAnotherAgentOfItsDevice) {
  Inbox first_inbox, second_inbox;
  auto first = Connect("pi", &first_inbox);
  const std::string id = QueueTask("pi");
  ASSERT_EQ(first_inbox.size(), 1u);
  dispatcher_->Gone(first);
  EXPECT_EQ(table_->Get(id)->state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(table_->Get(id)->agent_id(), "");
  auto second = Connect("pi", &second_inbox);
  ASSERT_EQ(second_inbox.size(), 1u);
  EXPECT_EQ(second_inbox.Wait(1).task().task_id(), id);
  EXPECT_EQ(table_->Get(id)->attempts(), 2);
  // While draining, a task whose agent disappears fails instead.
  dispatcher_->SetDraining();
  dispatcher_->Gone(second);
  EXPECT_EQ(table_->Get(id)->state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(table_->Get(id)->reason(), HasSubstr("while kilnd was shutting down"));
}

TEST_F(AgentDispatcherTest, AWithdrawnTaskIsCancelledOnItsAgent) {
  Inbox inbox;
  auto agent = Connect("pi", &inbox);
  const std::string id = QueueTask("pi");
  ASSERT_TRUE(table_->Cancel(id, "cancelled: no").ok());
  dispatcher_->Withdraw(id, "pi");
  ASSERT_EQ(inbox.size(), 2u);
  EXPECT_EQ(inbox.Wait(2).cancel().task_id(), id);
}

TEST_F(AgentDispatcherTest, AnAgentMayFetchOnlyTheArtifactOfTheTaskItRuns) {
  Inbox inbox;
  auto agent = Connect("pi", &inbox, "pi-token");
  const std::string id = QueueTask("pi", "digest-a");
  EXPECT_TRUE(dispatcher_->MayFetch(agent->id, "pi-token", id, "digest-a"));
  EXPECT_FALSE(dispatcher_->MayFetch(agent->id, "pi-token", id, "digest-b"));
  EXPECT_FALSE(dispatcher_->MayFetch(agent->id, "other-token", id, "digest-a"));
  EXPECT_FALSE(dispatcher_->MayFetch("agent-99", "pi-token", id, "digest-a"));
  dispatcher_->Gone(agent);
  EXPECT_FALSE(dispatcher_->MayFetch(agent->id, "pi-token", id, "digest-a"));
}

TEST_F(AgentDispatcherTest, CandidatesAreMeasuredOneAtATimeAndRetriedOnAnotherAgent) {
  std::optional<HeldJob> held = HeldTune("pi");
  ASSERT_TRUE(held.has_value());
  Inbox first_inbox, second_inbox;
  auto first = Connect("pi", &first_inbox);
  MeasureBatch batch;
  batch.add_candidates();
  batch.add_candidates();
  std::optional<MeasureResults> results;
  std::thread tuner([&] { results = dispatcher_->Measure(*held, batch); });
  // The tuner waits; the test answers as an agent would, once each candidate arrives. The
  // first candidate's agent disappears: another agent measures it.
  first_inbox.Wait(1);
  dispatcher_->Gone(first);
  auto second = Connect("pi", &second_inbox);
  for (size_t n = 1; n <= 2; ++n) {
    v1::TaskResult r;
    r.set_task_id(second_inbox.Wait(n).task().task_id());
    r.set_ok(true);
    r.set_measured_seconds(1.0 / n);
    dispatcher_->Result(second, r);
  }
  tuner.join();
  ASSERT_TRUE(results.has_value());
  ASSERT_EQ(results->results_size(), 2);
  EXPECT_DOUBLE_EQ(results->results(0).seconds(), 1.0);
  EXPECT_DOUBLE_EQ(results->results(1).seconds(), 0.5);
  // A cancelled tune stops waiting and gets no answer.
  *held->cancel = true;
  EXPECT_FALSE(dispatcher_->Measure(*held, batch).has_value());
}

// Finding 5 of issue 47: a client's many tasks stood before another's one on a shared device.
// Each device's queue is shared by turns: bob's one task runs second, not last.
TEST_F(AgentDispatcherTest, ADevicesQueueIsSharedFairlyBetweenClients) {
  Inbox pi;
  auto agent = Connect("pi", &pi);
  std::vector<std::string> alices;
  for (int i = 0; i < 4; ++i) alices.push_back(QueueTask("pi", "d1", "alice"));
  const std::string bobs = QueueTask("pi", "d1", "bob");
  std::vector<std::string> order;
  for (size_t n = 1; n <= 5; ++n) {
    const std::string id = pi.Wait(n).task().task_id();
    order.push_back(id);
    v1::TaskResult done;
    done.set_task_id(id);
    done.set_ok(true);
    dispatcher_->Result(agent, done);
  }
  ASSERT_EQ(order.size(), 5u);
  EXPECT_EQ(order[0], alices[0]);  // the first queued, running when bob came
  EXPECT_EQ(order[1], bobs);       // bob's turn before alice's second
  EXPECT_EQ(std::vector<std::string>(order.begin() + 2, order.end()),
            std::vector<std::string>(alices.begin() + 1, alices.end()));
}

// An agent's time the device could not have measured is refused, never a record (issue 47,
// finding 4: a negative time was applied to every tenant's compiles).
TEST_F(AgentDispatcherTest, ImplausibleTimesAreRefused) {
  std::optional<HeldJob> held = HeldTune("pi");
  ASSERT_TRUE(held.has_value());
  Inbox inbox;
  auto agent = Connect("pi", &inbox);
  MeasureBatch batch;
  batch.add_candidates()->set_flops(1e12);  // a teraflop: seconds on any board
  batch.add_candidates();
  std::optional<MeasureResults> results;
  std::thread tuner([&] { results = dispatcher_->Measure(*held, batch); });
  const double reported[] = {1e-6, -1.0};
  for (size_t n = 1; n <= 2; ++n) {
    v1::TaskResult r;
    r.set_task_id(inbox.Wait(n).task().task_id());
    r.set_ok(true);
    r.set_measured_seconds(reported[n - 1]);
    dispatcher_->Result(agent, r);
  }
  tuner.join();
  ASSERT_TRUE(results.has_value());
  ASSERT_EQ(results->results_size(), 2);
  for (const auto& r : results->results()) {
    EXPECT_FALSE(r.ok());
    EXPECT_THAT(r.error(), ::testing::HasSubstr("refused: a reported time of"));
  }
  EXPECT_THAT(results->results(0).error(), ::testing::HasSubstr("faster than the device's peak"));
}

}  // namespace
}  // namespace kiln::server
