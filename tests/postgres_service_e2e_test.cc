// kilnd on PostgreSQL (--postgres): the state outlives the instance that wrote it. An instance
// compiles and runs a model while a second one, with its own local directory, serves beside it;
// the first is killed with SIGKILL, and the second answers for everything the first one did —
// the jobs, the artifact's bytes, the device, the tuning records — and a resubmit there is a
// cache hit. A task goes to the instance that has an agent of its device. Readiness follows the
// database: NOT_SERVING while it is down, SERVING once it is back.
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "compiler/tune/database.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "runtime/agent/tensor_value.h"
#include "runtime/artifact.h"
#include "runtime/npy.h"
#include "tests/postgres_server.h"
#include "tests/service_cluster.h"

namespace kiln::testing {
namespace {

v1::Job Finish(client::KilnClient& client, const absl::StatusOr<v1::SubmitResponse>& submitted) {
  EXPECT_TRUE(submitted.ok()) << submitted.status();
  if (!submitted.ok()) return v1::Job();
  absl::StatusOr<v1::Job> job = client.Wait(submitted->job().id());
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *job : v1::Job();
}

v1::SubmitCompileRequest Compile(const std::string& path) {
  v1::SubmitCompileRequest request;
  absl::StatusOr<v1::ModuleSource> source = client::ModuleSourceFromFile(path);
  EXPECT_TRUE(source.ok()) << source.status();
  *request.mutable_module() = *source;
  return request;
}

TEST(PostgresService, AnotherInstanceAnswersForAKilledOne) {
  absl::StatusOr<std::unique_ptr<kiln::testing::PostgresServer>> postgres =
      kiln::testing::PostgresServer::Start();
  ASSERT_TRUE(postgres.ok()) << postgres.status();
  absl::StatusOr<std::string> url = (*postgres)->CreateDatabase("kiln");
  ASSERT_TRUE(url.ok()) << url.status();

  Cluster first("first");
  ASSERT_TRUE(first.StartDaemon({"--postgres", *url}).ok());
  ASSERT_TRUE(first.StartAgent("cpu").ok());
  absl::StatusOr<std::unique_ptr<client::KilnClient>> a = first.Client();
  ASSERT_TRUE(a.ok()) << a.status();
  // A short tune first (new records change what later compiles apply): its records go to
  // PostgreSQL, beside the store.
  v1::SubmitTuneRequest tune;
  *tune.mutable_module() = *client::ModuleSourceFromFile("tests/models/mlp_784_128_10.onnx");
  tune.set_device_key("cpu");
  tune.set_trials(4);
  v1::Job tuned = Finish(**a, (*a)->SubmitTune(tune));
  ASSERT_EQ(tuned.state(), v1::JOB_STATE_SUCCEEDED) << tuned.reason();
  v1::Job compiled = Finish(**a, (*a)->SubmitCompile(Compile("tests/models/tiny_resnet.onnx")));
  ASSERT_EQ(compiled.state(), v1::JOB_STATE_SUCCEEDED) << compiled.reason();
  v1::SubmitProfileRequest profile;
  profile.mutable_artifact()->set_digest(compiled.artifact_digest());
  profile.set_device_key("cpu");
  profile.mutable_options()->set_repeat(2);
  v1::Job profiled = Finish(**a, (*a)->SubmitProfile(profile));
  ASSERT_EQ(profiled.state(), v1::JOB_STATE_SUCCEEDED) << profiled.reason();

  // A second instance on the same database, with its own directory (nothing local is shared),
  // serving beside the first; then the first dies.
  Cluster second("second");
  ASSERT_TRUE(second.StartDaemon({"--postgres", *url}).ok());
  first.daemon().Signal(SIGKILL);
  first.daemon().Wait();
  absl::StatusOr<std::unique_ptr<client::KilnClient>> b = second.Client();
  ASSERT_TRUE(b.ok()) << b.status();
  for (const v1::Job& earlier : {compiled, profiled}) {
    absl::StatusOr<v1::Job> seen = (*b)->GetJob(earlier.id());
    ASSERT_TRUE(seen.ok()) << seen.status();
    EXPECT_EQ(seen->state(), v1::JOB_STATE_SUCCEEDED);
    EXPECT_EQ(seen->artifact_digest(), compiled.artifact_digest());
  }
  absl::StatusOr<std::string> bytes = (*b)->DownloadArtifact(compiled.artifact_digest());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(static_cast<int64_t>(bytes->size()), compiled.artifact_size());
  EXPECT_EQ(runtime::ParseArtifact(*bytes, true)->manifest().digest(), compiled.artifact_digest());
  absl::StatusOr<std::vector<v1::Device>> devices = (*b)->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].key(), "cpu");
  // Every tuning record is there for the second instance's compiles.
  absl::StatusOr<std::unique_ptr<tune::TuningDatabase>> records = tune::TuningDatabase::Open(*url);
  ASSERT_TRUE(records.ok()) << records.status();
  int measured = 0;
  absl::StatusOr<std::vector<tune::WorkloadId>> workloads = (*records)->Workloads();
  ASSERT_TRUE(workloads.ok()) << workloads.status();
  for (const tune::WorkloadId& w : *workloads) {
    measured += static_cast<int>((*records)->Records(w)->size());
  }
  EXPECT_EQ(measured, 4);
  // The same compile through the second instance finds the first one's artifact.
  v1::Job again = Finish(**b, (*b)->SubmitCompile(Compile("tests/models/tiny_resnet.onnx")));
  ASSERT_EQ(again.state(), v1::JOB_STATE_SUCCEEDED) << again.reason();
  EXPECT_TRUE(again.cache_hit());
  EXPECT_EQ(again.artifact_digest(), compiled.artifact_digest());
}

// A task submitted to an instance with no agent of its device runs where one is connected: the
// first instance releases it, and the second, where the agent is, claims it — even with the
// first instance dead by then.
TEST(PostgresService, ATaskRunsOnTheInstanceThatHasAnAgentOfItsDevice) {
  absl::StatusOr<std::unique_ptr<kiln::testing::PostgresServer>> postgres =
      kiln::testing::PostgresServer::Start();
  ASSERT_TRUE(postgres.ok()) << postgres.status();
  absl::StatusOr<std::string> url = (*postgres)->CreateDatabase("kiln");
  ASSERT_TRUE(url.ok()) << url.status();
  Cluster first("task_first");
  ASSERT_TRUE(first.StartDaemon({"--postgres", *url, "--instance", "first"}).ok());
  absl::StatusOr<std::string> agent = first.StartAgent("cpu");
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<std::unique_ptr<client::KilnClient>> a = first.Client();
  ASSERT_TRUE(a.ok()) << a.status();
  v1::Job compiled = Finish(**a, (*a)->SubmitCompile(Compile("tests/models/tiny_resnet.onnx")));
  ASSERT_EQ(compiled.state(), v1::JOB_STATE_SUCCEEDED) << compiled.reason();
  EXPECT_EQ(compiled.instance(), "first");
  // The first instance's agent goes away. kilnd notices when its stream breaks, a moment after
  // the process is gone: wait for that, or the inference could be handed to the dead agent.
  first.agent(*agent).Signal(SIGKILL);
  first.agent(*agent).Wait();
  bool disconnected = false;
  for (int i = 0; i < 200 && !disconnected; ++i) {
    absl::StatusOr<std::vector<v1::Device>> devices = (*a)->ListDevices();
    disconnected = devices.ok() && devices->size() == 1 && (*devices)[0].agents_connected() == 0;
    if (!disconnected) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(disconnected) << "kilnd still counts the killed agent after 10 s";
  v1::SubmitInferenceRequest infer;
  infer.mutable_artifact()->set_digest(compiled.artifact_digest());
  infer.set_device_key("cpu");
  absl::StatusOr<runtime::Tensor> input =
      runtime::ReadNpy(ReadFileBytes("tests/models/tiny_resnet.input.npy"), "input");
  ASSERT_TRUE(input.ok()) << input.status();
  runtime::TensorToProto(*input, "", infer.add_inputs());
  absl::StatusOr<v1::SubmitResponse> queued = (*a)->SubmitInference(infer);
  ASSERT_TRUE(queued.ok()) << queued.status();
  ASSERT_EQ(queued->job().state(), v1::JOB_STATE_QUEUED);
  // Listed as queued for the device by every instance.
  absl::StatusOr<std::vector<v1::Device>> devices = (*a)->ListDevices();
  ASSERT_TRUE(devices.ok() && devices->size() == 1) << devices.status();
  EXPECT_EQ((*devices)[0].tasks_queued(), 1);

  first.daemon().Signal(SIGKILL);
  first.daemon().Wait();
  Cluster second("task_second");
  ASSERT_TRUE(second.StartDaemon({"--postgres", *url, "--instance", "second"}).ok());
  ASSERT_TRUE(second.StartAgent("cpu").ok());
  absl::StatusOr<std::unique_ptr<client::KilnClient>> b = second.Client();
  ASSERT_TRUE(b.ok()) << b.status();
  absl::StatusOr<v1::Job> done = (*b)->Wait(queued->job().id());
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->reason();
  EXPECT_EQ(done->instance(), "second");
  EXPECT_EQ(done->attempts(), 1);  // released before any agent had it
  ASSERT_EQ(done->inference().outputs_size(), 1);
  EXPECT_EQ(done->inference().outputs(0).shape(1), 10);
}

// A draining instance (SIGTERM) hands back the jobs it could not finish within its drain
// timeout, and another instance runs them at once, without waiting for a lease to run out.
TEST(PostgresService, ADrainingInstanceHandsItsJobsBack) {
  absl::StatusOr<std::unique_ptr<kiln::testing::PostgresServer>> postgres =
      kiln::testing::PostgresServer::Start();
  ASSERT_TRUE(postgres.ok()) << postgres.status();
  absl::StatusOr<std::string> url = (*postgres)->CreateDatabase("kiln");
  ASSERT_TRUE(url.ok()) << url.status();
  const std::string hooks = std::filesystem::absolute(TestBinaries().worker_with_test_hooks);
  Cluster first("drain_first"), second("drain_second");
  // A long lease: a takeover within it can only come from the hand-back.
  ASSERT_TRUE(first
                  .StartDaemon({"--postgres", *url, "--instance", "first", "--worker", hooks,
                                "--drain-timeout-s", "0", "--lease-ms", "600000"})
                  .ok());
  ASSERT_TRUE(
      second.StartDaemon({"--postgres", *url, "--instance", "second", "--worker", hooks}).ok());
  absl::StatusOr<std::unique_ptr<client::KilnClient>> a = first.Client();
  ASSERT_TRUE(a.ok()) << a.status();
  v1::SubmitCompileRequest slow = Compile("tests/models/mlp_784_128_10.onnx");
  slow.mutable_module()->set_name("kiln-test-slow-frontend");
  absl::StatusOr<v1::SubmitResponse> submitted = (*a)->SubmitCompile(slow);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  EXPECT_EQ(submitted->job().instance(), "first");
  EXPECT_EQ(first.StopDaemon(), 0);
  ASSERT_TRUE(first.daemon().WaitForLog("jobs handed back", 1000).ok()) << first.daemon().Log();
  absl::StatusOr<std::unique_ptr<client::KilnClient>> b = second.Client();
  ASSERT_TRUE(b.ok()) << b.status();
  absl::StatusOr<v1::Job> done = (*b)->Wait(submitted->job().id());
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->reason();
  EXPECT_EQ(done->instance(), "second");
  EXPECT_EQ(done->attempts(), 2);
}

grpc::health::v1::HealthCheckResponse::ServingStatus Health(const Cluster& cluster) {
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(cluster.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status s = stub->Check(&context, request, &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return response.status();
}

TEST(PostgresService, ReadinessFollowsTheDatabase) {
  absl::StatusOr<std::unique_ptr<kiln::testing::PostgresServer>> postgres =
      kiln::testing::PostgresServer::Start();
  ASSERT_TRUE(postgres.ok()) << postgres.status();
  absl::StatusOr<std::string> url = (*postgres)->CreateDatabase("kiln");
  ASSERT_TRUE(url.ok()) << url.status();
  Cluster cluster("readiness");
  ASSERT_TRUE(cluster.StartDaemon({"--postgres", *url}).ok());
  EXPECT_EQ(Health(cluster), grpc::health::v1::HealthCheckResponse::SERVING);
  ASSERT_TRUE((*postgres)->Stop().ok());
  ASSERT_TRUE(cluster.daemon().WaitForLog("store unreachable: not serving", 10000).ok());
  EXPECT_EQ(Health(cluster), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  // Meanwhile a job would not be saved: it is refused, with the reason.
  absl::StatusOr<std::unique_ptr<client::KilnClient>> c = cluster.Client();
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<v1::SubmitResponse> refused =
      (*c)->SubmitCompile(Compile("tests/models/mlp_784_128_10.onnx"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("the store is unreachable"));
  ASSERT_TRUE((*postgres)->StartAgain().ok());
  ASSERT_TRUE(cluster.daemon().WaitForLog("store reachable again: serving", 10000).ok());
  EXPECT_EQ(Health(cluster), grpc::health::v1::HealthCheckResponse::SERVING);
  // And it works again: a compile goes through.
  v1::Job compiled = Finish(**c, (*c)->SubmitCompile(Compile("tests/models/mlp_784_128_10.onnx")));
  EXPECT_EQ(compiled.state(), v1::JOB_STATE_SUCCEEDED) << compiled.reason();
}

TEST(PostgresService, AnUnreachableDatabaseIsAClearStartupError) {
  Cluster cluster("unreachable");
  // Port 1 on loopback: nothing listens.
  absl::Status started =
      cluster.StartDaemon({"--postgres", "postgresql://kiln@127.0.0.1:1/kiln?connect_timeout=2"});
  EXPECT_FALSE(started.ok());
  EXPECT_THAT(cluster.daemon().Log(), ::testing::HasSubstr("cannot connect to PostgreSQL"));
}

// Issue 47, finding 5: quotas were counted per instance, so behind a load balancer a client got
// N times its quota. Both instances count the client's submissions in PostgreSQL: with a limit
// of 3 a minute, two on each instance make the fourth refused, wherever it lands.
TEST(PostgresService, QuotasAreCountedAcrossInstances) {
  absl::StatusOr<std::unique_ptr<kiln::testing::PostgresServer>> postgres =
      kiln::testing::PostgresServer::Start();
  ASSERT_TRUE(postgres.ok()) << postgres.status();
  absl::StatusOr<std::string> url = (*postgres)->CreateDatabase("kiln");
  ASSERT_TRUE(url.ok()) << url.status();
  Cluster first("quota_first"), second("quota_second");
  ASSERT_TRUE(
      first.StartDaemon({"--postgres", *url, "--instance", "first", "--max-jobs-per-minute", "3"})
          .ok());
  ASSERT_TRUE(
      second.StartDaemon({"--postgres", *url, "--instance", "second", "--max-jobs-per-minute", "3"})
          .ok());
  std::unique_ptr<client::KilnClient> a = *first.Client();
  std::unique_ptr<client::KilnClient> b = *second.Client();
  // The four submissions within one minute of the database's clock (this machine's): start
  // with at least 10 s of it left.
  const int64_t in_minute = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count() %
                            60000;
  if (in_minute > 50000) std::this_thread::sleep_for(std::chrono::milliseconds(60100 - in_minute));
  const v1::SubmitCompileRequest request = Compile("tests/models/mlp_784_128_10.onnx");
  EXPECT_EQ(Finish(*a, a->SubmitCompile(request)).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(a->SubmitCompile(request).ok());  // a cache hit
  EXPECT_TRUE(b->SubmitCompile(request).ok());  // the other instance's first: the client's third
  absl::Status fourth = b->SubmitCompile(request).status();
  EXPECT_EQ(fourth.code(), absl::StatusCode::kResourceExhausted) << fourth;
  EXPECT_THAT(fourth.message(), ::testing::HasSubstr("3 jobs this minute across the cluster"));
  EXPECT_EQ(a->SubmitCompile(request).status().code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace kiln::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: postgres_service_e2e_test KILND KILN_AGENT KILN WORKER_WITH_TEST_HOOKS\n");
    return 2;
  }
  kiln::testing::TestBinaries() = {argv[1], argv[2], argv[3], argc > 4 ? argv[4] : ""};
  return RUN_ALL_TESTS();
}
