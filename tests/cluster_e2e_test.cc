// The cluster as deployed: real nginx with deploy/nginx/kiln.conf in front of three kilnd
// instances on one real PostgreSQL database, agents connected to different instances, and
// clients of nginx or of any one instance. Compile, inference, profile and tune jobs succeed
// whichever instance has the agent; every instance answers alike; idempotency keys, watches and
// cancellations cross instances. Then the instance running a job is killed with SIGKILL, twenty
// times: another instance finishes each job. Then PostgreSQL restarts under load.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "compiler/tune/database.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/agent/tensor_value.h"
#include "runtime/npy.h"
#include "tests/nginx.h"
#include "tests/postgres_server.h"
#include "tests/service_cluster.h"

namespace kiln::testing {
namespace {

runtime::Tensor Npy(const std::string& path) {
  absl::StatusOr<runtime::Tensor> t = runtime::ReadNpy(ReadFileBytes(path), path);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

// Retries what nginx answers UNAVAILABLE while no instance listens (during a takeover).
template <typename F>
auto Retry(F call) -> decltype(call()) {
  auto result = call();
  for (int i = 0;
       i < 100 && !result.ok() && result.status().code() == absl::StatusCode::kUnavailable; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    result = call();
  }
  return result;
}

// Three instances on one database behind nginx, each named (--instance kilnd-N) and holding
// jobs for 1 s past its last lease renewal.
class ThreeInstances {
 public:
  explicit ThreeInstances(const std::string& name) {
    absl::StatusOr<std::unique_ptr<PostgresServer>> postgres = PostgresServer::Start();
    EXPECT_TRUE(postgres.ok()) << postgres.status();
    if (!postgres.ok()) return;
    postgres_ = std::move(*postgres);
    absl::StatusOr<std::string> url = postgres_->CreateDatabase("kiln");
    EXPECT_TRUE(url.ok()) << url.status();
    url_ = url.value_or("");
    std::vector<int> ports;
    for (int i = 0; i < 3; ++i) {
      instances_.push_back(std::make_unique<Cluster>(absl::StrCat(name, "_", i)));
      instances_.back()->set_port(Cluster::FreePort());
      ports.push_back(instances_.back()->port());
      EXPECT_TRUE(Start(i).ok());
    }
    nginx_ = std::make_unique<Nginx>(ports, Cluster::TmpPath(name + "_nginx"));
  }
  bool ok() const { return nginx_ != nullptr; }
  absl::Status Start(int i) {
    return instances_[i]->StartDaemon(
        {"--postgres", url_, "--instance", Name(i), "--lease-ms", "1000", "--worker",
         std::filesystem::absolute(TestBinaries().worker_with_test_hooks).string()},
        /*same_port=*/true);
  }
  static std::string Name(int i) { return absl::StrCat("kilnd-", i); }
  Cluster& instance(int i) { return *instances_[i]; }
  PostgresServer& postgres() { return *postgres_; }
  const std::string& url() const { return url_; }
  Nginx& nginx() { return *nginx_; }
  std::unique_ptr<client::KilnClient> Client(const std::string& address) {
    runtime::ChannelOptions options;
    options.address = address;
    absl::StatusOr<std::unique_ptr<client::KilnClient>> c = client::KilnClient::Connect(options);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }
  std::unique_ptr<client::KilnClient> ThroughNginx() { return Client(nginx_->address()); }

 private:
  std::unique_ptr<PostgresServer> postgres_;
  std::string url_;
  std::vector<std::unique_ptr<Cluster>> instances_;
  std::unique_ptr<Nginx> nginx_;
};

v1::SubmitInferenceRequest TinyResnetInference(const std::string& digest,
                                               const std::string& device_key) {
  v1::SubmitInferenceRequest request;
  request.mutable_artifact()->set_digest(digest);
  request.set_device_key(device_key);
  runtime::TensorToProto(Npy("tests/models/tiny_resnet.input.npy"), "", request.add_inputs());
  return request;
}

void ExpectTinyResnetReference(const v1::Job& job) {
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
  ASSERT_EQ(job.inference().outputs_size(), 1);
  absl::StatusOr<runtime::Tensor> out = runtime::TensorFromProto(job.inference().outputs(0));
  ASSERT_TRUE(out.ok()) << out.status();
  runtime::Tensor want = Npy("tests/models/tiny_resnet.output.npy");
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    const float w = static_cast<const float*>(want.data())[i];
    ASSERT_NEAR(static_cast<const float*>(out->data())[i], w, 1e-4 * (1 + std::abs(w)));
  }
}

// Submits through `c` and follows the job (WatchJob) to its end.
v1::Job Finish(client::KilnClient& c, const absl::StatusOr<v1::SubmitResponse>& submitted) {
  EXPECT_TRUE(submitted.ok()) << submitted.status();
  if (!submitted.ok()) return v1::Job();
  absl::StatusOr<v1::Job> done = c.Wait(submitted->job().id());
  EXPECT_TRUE(done.ok()) << done.status();
  return done.value_or(v1::Job());
}

bool Finished(const v1::Job& job) {
  return job.state() == v1::JOB_STATE_SUCCEEDED || job.state() == v1::JOB_STATE_FAILED ||
         job.state() == v1::JOB_STATE_CANCELLED;
}

// Reads the job through `read` every 50 ms until `done` holds of it, a read fails, or
// `timeout_ms` passes; the last read.
absl::StatusOr<v1::Job> PollJob(const std::function<absl::StatusOr<v1::Job>()>& read,
                                const std::function<bool(const v1::Job&)>& done,
                                int timeout_ms = 15000) {
  absl::StatusOr<v1::Job> job = read();
  for (int waited = 0; job.ok() && !done(*job) && waited < timeout_ms; waited += 50) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    job = read();
  }
  return job;
}

TEST(ClusterTest, ThreeInstancesBehindNginxShareJobsDevicesAndArtifacts) {
  ThreeInstances cluster("share");
  ASSERT_TRUE(cluster.ok());
  // Agents on different instances: board-a on kilnd-0, board-c on kilnd-2; kilnd-1 has none.
  ASSERT_TRUE(cluster.instance(0).StartAgent("board-a").ok());
  ASSERT_TRUE(cluster.instance(2).StartAgent("board-c").ok());
  std::unique_ptr<client::KilnClient> lb = cluster.ThroughNginx();
  ASSERT_NE(lb, nullptr);

  // A tune for board-a, submitted to the instance without agents, measures on board-a. (First:
  // new records change what later compiles apply.)
  std::unique_ptr<client::KilnClient> agentless = cluster.Client(cluster.instance(1).address());
  v1::SubmitTuneRequest tune;
  *tune.mutable_module() = *client::ModuleSourceFromFile("tests/models/mlp_784_128_10.onnx");
  tune.set_device_key("board-a");
  tune.set_trials(4);
  v1::Job tuned = Finish(*agentless, agentless->SubmitTune(tune));
  ASSERT_EQ(tuned.state(), v1::JOB_STATE_SUCCEEDED) << tuned.reason();
  EXPECT_EQ(tuned.instance(), "kilnd-0");
  EXPECT_EQ(tuned.tune().trials(), 4);

  v1::SubmitCompileRequest compile;
  *compile.mutable_module() = *client::ModuleSourceFromFile("tests/models/tiny_resnet.onnx");
  v1::Job compiled = Finish(*lb, lb->SubmitCompile(compile));
  ASSERT_EQ(compiled.state(), v1::JOB_STATE_SUCCEEDED) << compiled.reason();

  // Every instance lists both devices, each with its one agent.
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<std::vector<v1::Device>> devices =
        cluster.Client(cluster.instance(i).address())->ListDevices();
    ASSERT_TRUE(devices.ok()) << devices.status();
    ASSERT_EQ(devices->size(), 2u);
    for (const v1::Device& d : *devices) EXPECT_EQ(d.agents_connected(), 1) << d.key();
  }
  // Inference and profile for each board, submitted through each instance: the task runs on
  // the instance its agent is connected to.
  std::vector<v1::Job> tasks;
  for (int i = 0; i < 3; ++i) {
    std::unique_ptr<client::KilnClient> direct = cluster.Client(cluster.instance(i).address());
    for (const std::string board : {"board-a", "board-c"}) {
      v1::Job inferred = Finish(
          *direct, direct->SubmitInference(TinyResnetInference(compiled.artifact_digest(), board)));
      ExpectTinyResnetReference(inferred);
      EXPECT_EQ(inferred.instance(), board == "board-a" ? "kilnd-0" : "kilnd-2");
      tasks.push_back(inferred);
    }
  }
  v1::SubmitProfileRequest profile;
  profile.mutable_artifact()->set_digest(compiled.artifact_digest());
  profile.set_device_key("board-c");
  profile.mutable_options()->set_repeat(2);
  v1::Job profiled = Finish(*lb, lb->SubmitProfile(profile));
  ASSERT_EQ(profiled.state(), v1::JOB_STATE_SUCCEEDED) << profiled.reason();
  EXPECT_GT(profiled.profile().mean_seconds(), 0);

  // Any instance answers for any job, alike.
  for (int i = 0; i < 3; ++i) {
    std::unique_ptr<client::KilnClient> direct = cluster.Client(cluster.instance(i).address());
    for (const v1::Job& job : {compiled, profiled, tuned, tasks[0], tasks[5]}) {
      absl::StatusOr<v1::Job> seen = direct->GetJob(job.id());
      ASSERT_TRUE(seen.ok()) << seen.status();
      EXPECT_EQ(seen->state(), v1::JOB_STATE_SUCCEEDED);
      EXPECT_EQ(seen->instance(), job.instance());
    }
    absl::StatusOr<std::vector<v1::Job>> listed = direct->ListJobs();
    ASSERT_TRUE(listed.ok()) << listed.status();
    EXPECT_EQ(listed->size(), 9u);
    absl::StatusOr<std::string> bytes = direct->DownloadArtifact(compiled.artifact_digest());
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_EQ(static_cast<int64_t>(bytes->size()), compiled.artifact_size());
    EXPECT_THAT(cluster.instance(i).Metrics(),
                ::testing::HasSubstr(absl::StrCat("instance=\"", ThreeInstances::Name(i), "\"")));
  }
  // A resubmit through another instance is a cache hit.
  const std::string other = cluster.instance(compiled.instance() == "kilnd-0" ? 1 : 0).address();
  std::unique_ptr<client::KilnClient> elsewhere = cluster.Client(other);
  v1::Job again = Finish(*elsewhere, elsewhere->SubmitCompile(compile));
  ASSERT_EQ(again.state(), v1::JOB_STATE_SUCCEEDED) << again.reason();
  EXPECT_TRUE(again.cache_hit());
  EXPECT_EQ(again.artifact_digest(), compiled.artifact_digest());

  // An idempotency key holds across instances.
  v1::SubmitCompileRequest keyed = compile;
  keyed.set_idempotency_key("retry-me");
  absl::StatusOr<v1::SubmitResponse> first =
      cluster.Client(cluster.instance(0).address())->SubmitCompile(keyed);
  absl::StatusOr<v1::SubmitResponse> second =
      cluster.Client(cluster.instance(2).address())->SubmitCompile(keyed);
  ASSERT_TRUE(first.ok() && second.ok()) << first.status() << second.status();
  EXPECT_TRUE(second->deduplicated());
  EXPECT_EQ(second->job().id(), first->job().id());

  // A compile running on one instance is watched through another, event by event.
  v1::SubmitCompileRequest slow = compile;
  slow.mutable_module()->set_name("kiln-test-slow-frontend");
  std::unique_ptr<client::KilnClient> on0 = cluster.Client(cluster.instance(0).address());
  std::unique_ptr<client::KilnClient> on1 = cluster.Client(cluster.instance(1).address());
  absl::StatusOr<v1::SubmitResponse> watched_there = on0->SubmitCompile(slow);
  ASSERT_TRUE(watched_there.ok()) << watched_there.status();
  std::vector<v1::JobState> states;
  absl::StatusOr<v1::Job> seen_finish = on1->Wait(
      watched_there->job().id(), [&](const v1::JobEvent& e) { states.push_back(e.state()); });
  ASSERT_TRUE(seen_finish.ok()) << seen_finish.status();
  EXPECT_EQ(seen_finish->state(), v1::JOB_STATE_SUCCEEDED) << seen_finish->reason();
  EXPECT_EQ(seen_finish->instance(), "kilnd-0");
  EXPECT_THAT(states, ::testing::Contains(v1::JOB_STATE_RUNNING));
  EXPECT_EQ(states.back(), v1::JOB_STATE_SUCCEEDED);

  // And one is cancelled through another instance.
  slow.mutable_module()->set_name("kiln-test-slow-frontend-cancelled");
  absl::StatusOr<v1::SubmitResponse> running = on0->SubmitCompile(slow);
  ASSERT_TRUE(running.ok()) << running.status();
  EXPECT_EQ(running->job().instance(), "kilnd-0");
  absl::StatusOr<v1::Job> cancelled = on1->Cancel(running->job().id(), "changed my mind");
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  absl::StatusOr<v1::Job> watched = on1->Wait(running->job().id());
  ASSERT_TRUE(watched.ok()) << watched.status();
  EXPECT_EQ(watched->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_THAT(watched->reason(), ::testing::HasSubstr("changed my mind"));
}

// kill -9 of the instance running a compile, twenty times: each time another instance takes the
// job over once the lease runs out and finishes it, with the same artifact; no job is lost,
// failed or finished twice.
TEST(ClusterTest, KilledInstancesLoseNoJob) {
  ThreeInstances cluster("kills");
  ASSERT_TRUE(cluster.ok());
  std::unique_ptr<client::KilnClient> lb = cluster.ThroughNginx();
  ASSERT_NE(lb, nullptr);
  v1::SubmitCompileRequest compile;
  *compile.mutable_module() = *client::ModuleSourceFromFile("tests/models/mlp_784_128_10.onnx");
  v1::Job reference = Finish(*lb, Retry([&] { return lb->SubmitCompile(compile); }));
  ASSERT_EQ(reference.state(), v1::JOB_STATE_SUCCEEDED) << reference.reason();
  std::set<std::string> ids;
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    // Slow in the front end (1.5 s): surely running when its instance is killed. A new name
    // each round, so that no instance answers it from the request's fingerprint.
    compile.mutable_module()->set_name(absl::StrCat("kiln-test-slow-frontend-", round));
    absl::StatusOr<v1::SubmitResponse> submitted =
        Retry([&] { return lb->SubmitCompile(compile); });
    ASSERT_TRUE(submitted.ok()) << submitted.status();
    const std::string id = submitted->job().id();
    ids.insert(id);
    auto read = [&] { return Retry([&] { return lb->GetJob(id); }); };
    absl::StatusOr<v1::Job> job =
        PollJob(read, [](const v1::Job& j) { return j.state() == v1::JOB_STATE_RUNNING; });
    ASSERT_TRUE(job.ok()) << job.status();
    ASSERT_EQ(job->state(), v1::JOB_STATE_RUNNING);
    const int victim = job->instance().back() - '0';
    // The holder answers from its memory, which its database write may not have reached yet:
    // killed then, the job would be taken over as queued, never having run. Another instance
    // reads the database: the kill waits until the run is there.
    std::unique_ptr<client::KilnClient> other =
        cluster.Client(cluster.instance((victim + 1) % 3).address());
    absl::StatusOr<v1::Job> stored =
        PollJob([&] { return Retry([&] { return other->GetJob(id); }); },
                [](const v1::Job& j) { return j.attempts() >= 1; });
    ASSERT_TRUE(stored.ok()) << stored.status();
    ASSERT_EQ(stored->attempts(), 1) << v1::JobState_Name(stored->state());
    cluster.instance(victim).daemon().Signal(SIGKILL);
    cluster.instance(victim).daemon().Wait();
    job = PollJob(read, Finished);
    ASSERT_TRUE(job.ok()) << job.status();
    ASSERT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED) << job->reason();
    EXPECT_EQ(job->artifact_digest(), reference.artifact_digest());
    EXPECT_NE(job->instance(), ThreeInstances::Name(victim));
    EXPECT_EQ(job->attempts(), 2);  // a worker on the victim, one on the instance that took over
    ASSERT_TRUE(cluster.Start(victim).ok());
  }
  // Every job is there, once, succeeded; none failed.
  absl::StatusOr<std::vector<v1::Job>> all = Retry([&] { return lb->ListJobs(); });
  ASSERT_TRUE(all.ok()) << all.status();
  int succeeded = 0;
  for (const v1::Job& job : *all) {
    EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.id() << ": " << job.reason();
    succeeded += ids.count(job.id());
  }
  EXPECT_EQ(succeeded, 20);
  EXPECT_EQ(all->size(), 21u);
}

int TuningRecords(const std::string& url) {
  absl::StatusOr<std::unique_ptr<tune::TuningDatabase>> db = tune::TuningDatabase::Open(url);
  EXPECT_TRUE(db.ok()) << db.status();
  if (!db.ok()) return -1;
  int records = 0;
  absl::StatusOr<std::vector<tune::WorkloadId>> workloads = (*db)->Workloads();
  EXPECT_TRUE(workloads.ok()) << workloads.status();
  for (const tune::WorkloadId& w : workloads.value_or(std::vector<tune::WorkloadId>())) {
    records += static_cast<int>((*db)->Records(w)->size());
  }
  return records;
}

// The instance running a tune is killed mid-search: another instance with an agent of the
// device takes the tune over and finishes it, and every record measured before the kill is
// still there.
TEST(ClusterTest, AKilledInstancesTuneFinishesElsewhereKeepingItsRecords) {
  ThreeInstances cluster("tune_kill");
  ASSERT_TRUE(cluster.ok());
  ASSERT_TRUE(cluster.instance(1).StartAgent("board").ok());
  ASSERT_TRUE(cluster.instance(2).StartAgent("board").ok());
  std::unique_ptr<client::KilnClient> on1 = cluster.Client(cluster.instance(1).address());
  v1::SubmitTuneRequest tune;
  *tune.mutable_module() = *client::ModuleSourceFromFile("tests/models/mlp_784_128_10.onnx");
  tune.set_device_key("board");
  tune.set_trials(12);
  absl::StatusOr<v1::SubmitResponse> submitted = on1->SubmitTune(tune);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  ASSERT_EQ(submitted->job().instance(), "kilnd-1");
  const std::string id = submitted->job().id();
  // Some records measured, then the instance dies.
  absl::StatusOr<v1::Job> job =
      PollJob([&] { return on1->GetJob(id); },
              [](const v1::Job& j) { return j.tune().trials() >= 4 || Finished(j); }, 30000);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->state(), v1::JOB_STATE_RUNNING) << "the tune ended before the kill";
  cluster.instance(1).daemon().Signal(SIGKILL);
  cluster.instance(1).daemon().Wait();
  const int before = TuningRecords(cluster.url());
  EXPECT_GE(before, 4);
  std::unique_ptr<client::KilnClient> on2 = cluster.Client(cluster.instance(2).address());
  job = PollJob([&] { return on2->GetJob(id); }, Finished, 60000);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED) << job->reason();
  EXPECT_EQ(job->instance(), "kilnd-2");
  EXPECT_EQ(job->attempts(), 2);
  EXPECT_EQ(job->tune().trials(), 12);
  EXPECT_GE(TuningRecords(cluster.url()), before + 12);  // none lost, the rerun's added
}

// PostgreSQL stopped and started again while compiles keep coming through nginx: every instance
// reports NOT_SERVING, then SERVING again by itself, and every job that was accepted finishes
// with the right artifact.
TEST(ClusterTest, APostgresRestartUnderLoadLosesNothing) {
  ThreeInstances cluster("pg_restart");
  ASSERT_TRUE(cluster.ok());
  std::unique_ptr<client::KilnClient> lb = cluster.ThroughNginx();
  ASSERT_NE(lb, nullptr);
  v1::SubmitCompileRequest compile;
  *compile.mutable_module() = *client::ModuleSourceFromFile("tests/models/mlp_784_128_10.onnx");
  v1::Job reference = Finish(*lb, lb->SubmitCompile(compile));
  ASSERT_EQ(reference.state(), v1::JOB_STATE_SUCCEEDED) << reference.reason();

  // The load: a compile every 50 ms; the test moves on when enough were accepted (events, not
  // the clock: on a busy machine a submission takes longer).
  std::mutex mu;
  std::condition_variable progressed;
  bool stop = false;
  std::vector<std::string> accepted;
  int refused = 0;
  std::thread load([&] {
    std::unique_ptr<client::KilnClient> c = cluster.ThroughNginx();
    for (int n = 0;; ++n) {
      compile.mutable_module()->set_name(absl::StrCat("under-load-", n));  // no fingerprint hit
      absl::StatusOr<v1::SubmitResponse> s = c->SubmitCompile(compile);
      {
        std::lock_guard<std::mutex> lock(mu);
        if (s.ok()) {
          accepted.push_back(s->job().id());
        } else {
          ++refused;  // UNAVAILABLE while the database is away
        }
        if (stop) break;
      }
      progressed.notify_all();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  auto accepted_at_least = [&](size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    progressed.wait(lock, [&] { return accepted.size() >= n; });
    return accepted.size();
  };
  accepted_at_least(5);
  ASSERT_TRUE(cluster.postgres().Stop().ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(
        cluster.instance(i).daemon().WaitForLog("store unreachable: not serving", 15000).ok());
  }
  ASSERT_TRUE(cluster.postgres().StartAgain().ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(
        cluster.instance(i).daemon().WaitForLog("store reachable again: serving", 15000).ok());
  }
  size_t after_restart = accepted_at_least(0);
  accepted_at_least(after_restart + 5);  // accepted again once it is back
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
  }
  load.join();
  for (const std::string& id : accepted) {
    absl::StatusOr<v1::Job> job =
        PollJob([&] { return Retry([&] { return lb->GetJob(id); }); }, Finished);
    ASSERT_TRUE(job.ok()) << id << ": " << job.status();
    EXPECT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED) << id << ": " << job->reason();
    EXPECT_EQ(job->artifact_digest(), reference.artifact_digest()) << id;
    if (job->state() != v1::JOB_STATE_SUCCEEDED) {  // what the instances logged of it
      for (int i = 0; i < 3; ++i) {
        std::istringstream log(cluster.instance(i).daemon().Log());
        for (std::string line; std::getline(log, line);) {
          if (line.find(id) != std::string::npos) std::printf("kilnd-%d: %s\n", i, line.c_str());
        }
      }
    }
  }
  std::printf("%zu jobs accepted, %d refused while the database was away\n", accepted.size(),
              refused);
}

}  // namespace
}  // namespace kiln::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 4) {
    std::fprintf(stderr, "usage: cluster_e2e_test KILND KILN_AGENT KILN WORKER_WITH_TEST_HOOKS\n");
    return 2;
  }
  kiln::testing::TestBinaries() = {argv[1], argv[2], argv[3], argc > 4 ? argv[4] : ""};
  return RUN_ALL_TESTS();
}
