// Tuning as a service, end to end on loopback: a real kilnd whose kiln-worker searches and builds,
// real kiln-agent processes that measure the candidates, the service's SQLite tuning database,
// and compile jobs that apply it. Each fault the service promises to survive is injected.
//
// Arguments: kilnd, kiln-agent, kiln (the binaries under test).
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/tune/database.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/agent/tensor_value.h"
#include "runtime/artifact.h"
#include "runtime/npy.h"
#include "tests/cluster_test.h"
#include "tests/service_cluster.h"

namespace kiln::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kCnn[] = "tests/models/tiny_resnet.onnx";
constexpr char kCnnInput[] = "tests/models/tiny_resnet.input.npy";
constexpr char kCnnOutput[] = "tests/models/tiny_resnet.output.npy";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

v1::ModuleSource Source(const std::string& path) {
  absl::StatusOr<v1::ModuleSource> source = client::ModuleSourceFromFile(path);
  EXPECT_TRUE(source.ok()) << source.status();
  return *source;
}

v1::SubmitTuneRequest TuneRequest(int trials, const std::string& device = "cpu") {
  v1::SubmitTuneRequest request;
  *request.mutable_module() = Source(kCnn);
  request.set_device_key(device);
  request.set_trials(trials);
  request.set_seed(1);
  return request;
}

// Every record the service's tuning database holds: (measured, failed).
std::pair<int, int> RecordCount(const Cluster& cluster) {
  absl::StatusOr<std::unique_ptr<tune::TuningDatabase>> db =
      tune::TuningDatabase::Open(cluster.dir() + "/store/tuning.db");
  EXPECT_TRUE(db.ok()) << db.status();
  if (!db.ok()) return {0, 0};
  int measured = 0, failed = 0;
  absl::StatusOr<std::vector<tune::WorkloadId>> workloads = (*db)->Workloads();
  EXPECT_TRUE(workloads.ok()) << workloads.status();
  for (const tune::WorkloadId& w : *workloads) {
    absl::StatusOr<std::vector<tune::TuningRecord>> records = (*db)->Records(w);
    EXPECT_TRUE(records.ok()) << records.status();
    for (const tune::TuningRecord& r : *records) ++(r.seconds ? measured : failed);
  }
  return {measured, failed};
}

// The job's events up to its end, and the job as it ended.
struct Watched {
  std::vector<v1::JobEvent> events;
  v1::Job job;
};

Watched Watch(client::KilnClient& client, const std::string& id,
              const std::function<void(const v1::JobEvent&)>& on_event = nullptr) {
  Watched w;
  absl::StatusOr<v1::Job> job = client.Wait(id, [&](const v1::JobEvent& e) {
    w.events.push_back(e);
    if (on_event) on_event(e);
  });
  EXPECT_TRUE(job.ok()) << job.status();
  if (job.ok()) w.job = *job;
  return w;
}

class TuneServiceTest : public ClusterTest {
 protected:
  std::string Submit(const v1::SubmitTuneRequest& request) {
    absl::StatusOr<v1::SubmitResponse> submitted = client_->SubmitTune(request);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    return submitted.ok() ? submitted->job().id() : "";
  }

  v1::Job CompileOk(bool no_tuning) {
    v1::SubmitCompileRequest request;
    *request.mutable_module() = Source(kCnn);
    request.mutable_options()->set_no_tuning(no_tuning);
    absl::StatusOr<v1::Job> job = client_->Compile(request);
    EXPECT_TRUE(job.ok()) << job.status();
    if (!job.ok()) return v1::Job();
    EXPECT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED) << job->reason();
    return *job;
  }
};

TEST_F(TuneServiceTest, TwoAgentsTuneTheCnnAndCompilesApplyTheServicesRecords) {
  StartWithAgents("tune_two_agents", 2);
  Watched first = Watch(*client_, Submit(TuneRequest(16)));
  ASSERT_EQ(first.job.state(), v1::JOB_STATE_SUCCEEDED) << first.job.reason();
  EXPECT_EQ(first.job.kind(), v1::JOB_KIND_TUNE);
  const v1::TuneResult& result = first.job.tune();
  EXPECT_EQ(result.trials(), 16);
  EXPECT_EQ(result.budget(), 16);
  ASSERT_GT(result.tasks_size(), 3);  // the convolutions, the pool, the dense layer...
  int tuned = 0;
  for (const v1::TuneTaskResult& t : result.tasks()) {
    EXPECT_GT(t.default_seconds(), 0) << t.name();  // every untuned kernel was measured
    tuned += t.trials();
  }
  EXPECT_EQ(tuned, 16);
  // Progress came while it ran: trial counts that grow, each with the curve so far.
  int progress = 0, last_trials = -1;
  for (const v1::JobEvent& e : first.events) {
    if (e.job().tune().curve_size() == 0) continue;
    ++progress;
    EXPECT_GE(e.job().tune().trials(), last_trials);
    last_trials = e.job().tune().trials();
  }
  EXPECT_GE(progress, 2);
  // Both agents measured (one candidate each at a time), and every trial is a record.
  for (const std::string& id : agent_ids_) {
    EXPECT_THAT(cluster_->agent(id).Log(), HasSubstr("(JOB_KIND_TUNE)")) << id;
  }
  auto [measured, failed] = RecordCount(*cluster_);
  EXPECT_EQ(measured + failed, 16);

  // A compile applies the best records: another artifact than the untuned one, whose manifest
  // names its tuned kernels, and which still computes the model.
  v1::Job untuned = CompileOk(/*no_tuning=*/true);
  v1::Job tuned_compile = CompileOk(/*no_tuning=*/false);
  absl::StatusOr<std::string> bytes = client_->DownloadArtifact(tuned_compile.artifact_digest());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<v1::ArtifactProto> artifact = runtime::ParseArtifact(*bytes, true);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  // Kernels whose best record beat the untuned kernel by more than the noise are the tuned
  // ones (a record within 3 % of it is not applied).
  int improved = 0;
  for (const v1::TuneTaskResult& t : result.tasks()) improved += t.record_applied();
  EXPECT_EQ(artifact->manifest().tuned_kernels_size() > 0, improved > 0);
  if (improved > 0) {
    EXPECT_NE(tuned_compile.artifact_digest(), untuned.artifact_digest());
  }
  // An unchanged database is a cache hit.
  EXPECT_TRUE(CompileOk(false).cache_hit());
  v1::SubmitInferenceRequest run;
  run.mutable_artifact()->set_digest(tuned_compile.artifact_digest());
  run.set_device_key("cpu");
  absl::StatusOr<runtime::Tensor> input = runtime::ReadNpy(ReadFile(kCnnInput), kCnnInput);
  ASSERT_TRUE(input.ok());
  runtime::TensorToProto(*input, "input", run.add_inputs());
  absl::StatusOr<v1::SubmitResponse> submitted = client_->SubmitInference(run);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  absl::StatusOr<v1::Job> ran = client_->Wait(submitted->job().id());
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_EQ(ran->state(), v1::JOB_STATE_SUCCEEDED) << ran->reason();
  absl::StatusOr<runtime::Tensor> got = runtime::TensorFromProto(ran->inference().outputs(0));
  absl::StatusOr<runtime::Tensor> want = runtime::ReadNpy(ReadFile(kCnnOutput), kCnnOutput);
  ASSERT_TRUE(got.ok() && want.ok());
  ASSERT_EQ(got->NumElements(), want->NumElements());
  for (int64_t i = 0; i < want->NumElements(); ++i) {
    float w = static_cast<const float*>(want->data())[i];
    ASSERT_NEAR(static_cast<const float*>(got->data())[i], w, 1e-4 * (1 + std::abs(w))) << i;
  }

  // A second tune of the same model starts from what the first learned: every kernel's best is
  // at least the first tune's from its first round on.
  Watched second = Watch(*client_, Submit(TuneRequest(8)));
  ASSERT_EQ(second.job.state(), v1::JOB_STATE_SUCCEEDED) << second.job.reason();
  std::map<std::string, double> first_best;
  for (const v1::TuneTaskResult& t : result.tasks())
    first_best[t.workload_key()] = t.best_seconds();
  for (const v1::JobEvent& e : second.events) {
    for (const v1::TuneTaskResult& t : e.job().tune().tasks()) {
      if (first_best[t.workload_key()] > 0) {
        EXPECT_GT(t.best_seconds(), 0) << t.name();
        EXPECT_LE(t.best_seconds(), first_best[t.workload_key()]) << t.name();
      }
    }
  }
  EXPECT_EQ(RecordCount(*cluster_).first + RecordCount(*cluster_).second, 24);
}

TEST_F(TuneServiceTest, CancelStopsATuneWithinSecondsAndKeepsEveryRecord) {
  StartWithAgents("tune_cancel", 1);
  std::string id = Submit(TuneRequest(400));
  int seen_trials = 0;
  absl::StatusOr<v1::Job> job;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (seen_trials < 8 && std::chrono::steady_clock::now() < deadline) {
    job = client_->GetJob(id);
    ASSERT_TRUE(job.ok()) << job.status();
    seen_trials = job->tune().trials();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(seen_trials, 8);
  auto asked = std::chrono::steady_clock::now();
  absl::StatusOr<v1::Job> cancelled = client_->Cancel(id, "enough");
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state(), v1::JOB_STATE_CANCELLED);
  // The worker is gone within seconds, and every measurement it reported is in the database.
  for (int i = 0; i < 250 && kill(job->worker_pid(), 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(kill(job->worker_pid(), 0), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(5));
  auto [measured, failed] = RecordCount(*cluster_);
  EXPECT_GE(measured + failed, seen_trials);
  // The service goes on: a compile right after applies what was kept.
  CompileOk(false);
}

// kilnd dies mid-tune: every record measured before is kept, nothing that was never measured was
// recorded, and the restarted kilnd runs the tune again.
TEST_F(TuneServiceTest, AKilndRestartMidTuneKeepsTheRecords) {
  StartWithAgents("tune_restart", 1);
  std::string id = Submit(TuneRequest(400));
  v1::Job job;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (job.tune().trials() < 8 && std::chrono::steady_clock::now() < deadline) {
    absl::StatusOr<v1::Job> got = client_->GetJob(id);
    ASSERT_TRUE(got.ok()) << got.status();
    job = *got;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(job.tune().trials(), 8);
  cluster_->daemon().Signal(SIGKILL);
  cluster_->daemon().Wait();
  // The orphaned worker ends by itself once kilnd stops answering.
  for (int i = 0; i < 500 && kill(job.worker_pid(), 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(kill(job.worker_pid(), 0), 0);
  auto [measured, failed] = RecordCount(*cluster_);
  EXPECT_GE(measured + failed, job.tune().trials());
  EXPECT_LE(measured + failed, job.tune().trials() + 8);  // at most the batch in flight
  EXPECT_LE(failed, 1);
  ASSERT_TRUE(cluster_->StartDaemon({}, /*same_port=*/true).ok());
  absl::StatusOr<std::unique_ptr<client::KilnClient>> again = cluster_->Client();
  ASSERT_TRUE(again.ok()) << again.status();
  // The first call may meet the connection the killed kilnd left behind (Unavailable).
  absl::StatusOr<v1::Job> after = (*again)->GetJob(id);
  for (int i = 0; i < 50 && after.status().code() == absl::StatusCode::kUnavailable; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    after = (*again)->GetJob(id);
  }
  ASSERT_TRUE(after.ok()) << after.status();
  // The restarted kilnd runs the tune again (its input was kept): it starts from the records
  // the first run left, which are all still there.
  EXPECT_TRUE(after->state() == v1::JOB_STATE_QUEUED || after->state() == v1::JOB_STATE_RUNNING)
      << v1::JobState_Name(after->state()) << " " << after->reason();
  EXPECT_GE(after->attempts(), 1);
  absl::StatusOr<v1::Job> stopped = (*again)->Cancel(id, "enough");
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->state(), v1::JOB_STATE_CANCELLED);
  auto [measured_after, failed_after] = RecordCount(*cluster_);
  EXPECT_GE(measured_after + failed_after, measured + failed);
}

TEST_F(TuneServiceTest, WithoutAnAgentATuneWaitsVisiblyUntilItsDeadline) {
  StartWithAgents("tune_no_agent", 0);
  v1::SubmitTuneRequest request = TuneRequest(8, "board");
  request.set_deadline_ms(4000);
  Watched w = Watch(*client_, Submit(request));
  EXPECT_EQ(w.job.state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(w.job.reason(), HasSubstr("exceeded its deadline of 4000 ms"));
  bool waited = false;
  for (const v1::JobEvent& e : w.events) {
    waited = waited || absl::StrContains(e.message(), "waiting for an agent of device 'board'");
  }
  EXPECT_TRUE(waited);
}

TEST_F(TuneServiceTest, AnAgentKilledMidTuneLosesNoCandidate) {
  StartWithAgents("tune_agent_killed", 2);
  std::string id = Submit(TuneRequest(24));
  bool killed = false;
  Watched w = Watch(*client_, id, [&](const v1::JobEvent& e) {
    if (!killed && e.job().tune().trials() >= 8) {
      cluster_->agent(agent_ids_[0]).Signal(SIGKILL);
      killed = true;
    }
  });
  ASSERT_TRUE(killed);
  ASSERT_EQ(w.job.state(), v1::JOB_STATE_SUCCEEDED) << w.job.reason();
  EXPECT_EQ(w.job.tune().trials(), 24);
  auto [measured, failed] = RecordCount(*cluster_);
  EXPECT_EQ(measured + failed, 24);
  EXPECT_GE(measured, 20);  // a candidate the dead agent held was measured by the other one
}

// The worker builds each candidate in a child of its own: one killed mid-build fails that
// candidate (recorded with the reason) and the tune goes on to its whole budget.
TEST_F(TuneServiceTest, ABuilderKilledMidBuildFailsOnlyItsCandidate) {
  StartWithAgents("tune_builder_killed", 1);
  std::string id = Submit(TuneRequest(16));
  v1::Job job;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  // Past the first round (loading, whose constant folding links kernels too, is over).
  while (job.tune().curve_size() == 0 && std::chrono::steady_clock::now() < deadline) {
    absl::StatusOr<v1::Job> got = client_->GetJob(id);
    ASSERT_TRUE(got.ok()) << got.status();
    job = *got;
  }
  ASSERT_GT(job.worker_pid(), 0);
  // Then the builders are the worker's only children (forked by whichever of its threads runs
  // the search): kill the first one seen.
  int killed = 0;
  const std::string tasks = absl::StrCat("/proc/", job.worker_pid(), "/task");
  while (killed == 0 && std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    for (const auto& thread : std::filesystem::directory_iterator(tasks, ec)) {
      std::ifstream children(thread.path() / "children");
      pid_t child = 0;
      if (children >> child && child > 0 && kill(child, SIGKILL) == 0) {
        ++killed;
        break;
      }
    }
  }
  ASSERT_EQ(killed, 1);
  Watched w = Watch(*client_, id);
  ASSERT_EQ(w.job.state(), v1::JOB_STATE_SUCCEEDED) << w.job.reason();
  EXPECT_EQ(w.job.tune().trials(), 16);
  auto [measured, failed] = RecordCount(*cluster_);
  EXPECT_EQ(measured + failed, 16);
}

// A time budget without a trial count: as many trials as the server allows, and the job ends,
// succeeded, when the budget does. One spent before the search starts (measuring the untuned
// kernels takes longer) gives no trial, every untuned kernel measured, and says so.
TEST_F(TuneServiceTest, ATimeBudgetEndsATuneWithWhatItHas) {
  StartWithAgents("tune_budget", 1, {"--max-tune-trials", "100000"});
  v1::SubmitTuneRequest request = TuneRequest(0);
  request.set_budget_s(1e-3);
  Watched w = Watch(*client_, Submit(request));
  ASSERT_EQ(w.job.state(), v1::JOB_STATE_SUCCEEDED) << w.job.reason();
  const v1::TuneResult& result = w.job.tune();
  EXPECT_TRUE(result.out_of_time());
  EXPECT_DOUBLE_EQ(result.budget_s(), 1e-3);
  EXPECT_EQ(result.budget(), 100000);
  EXPECT_EQ(result.trials(), 0);
  ASSERT_GT(result.tasks_size(), 3);
  for (const v1::TuneTaskResult& t : result.tasks()) EXPECT_GT(t.default_seconds(), 0) << t.name();
}

TEST_F(TuneServiceTest, BadTuneRequestsAreRefusedWithTheReason) {
  StartWithAgents("tune_bad", 0, {"--max-tune-trials", "100"});
  auto refused = [&](v1::SubmitTuneRequest request, const std::string& fragment) {
    absl::StatusOr<v1::SubmitResponse> r = client_->SubmitTune(request);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(fragment));
  };
  refused(TuneRequest(0), "trials: 0 is not in [1, 100]");
  refused(TuneRequest(101), "this server's --max-tune-trials");
  refused(TuneRequest(8, ""), "device_key: required");
  v1::SubmitTuneRequest negative_budget = TuneRequest(8);
  negative_budget.set_budget_s(-1);
  refused(negative_budget, "budget_s: -1 is not a number of seconds");
  v1::SubmitTuneRequest no_module = TuneRequest(8);
  no_module.clear_module();
  refused(no_module, "module: give it as ir_proto, tvmscript or onnx");
  v1::SubmitTuneRequest bad_target = TuneRequest(8);
  bad_target.set_target("llvm -mtriple=nonsense");
  refused(bad_target, "target 'llvm -mtriple=nonsense'");
  // A module that does not load fails its job with the loader's reason.
  v1::SubmitTuneRequest broken = TuneRequest(8);
  broken.mutable_module()->set_onnx("not a model");
  Watched w = Watch(*client_, Submit(broken));
  EXPECT_EQ(w.job.state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(w.job.reason(), HasSubstr("not an ONNX model"));
}

}  // namespace
}  // namespace kiln::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 4) {
    std::fprintf(stderr, "usage: tune_service_e2e_test KILND KILN_AGENT KILN\n");
    return 2;
  }
  kiln::testing::TestBinaries() = {argv[1], argv[2], argv[3], ""};
  return RUN_ALL_TESTS();
}
