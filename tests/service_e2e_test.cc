// The service end to end on loopback: a real kilnd with its SQLite store and kiln-worker
// processes, real kiln-agent processes, and the C++ client library. No mocks.
//
// Arguments: kilnd, kiln-agent, kiln (the binaries under test).
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/onnx/testing/onnx_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/kiln/v1/agent.grpc.pb.h"
#include "runtime/agent/tensor_value.h"
#include "runtime/artifact.h"
#include "runtime/npy.h"
#include "tests/cluster_test.h"
#include "tests/hostile_inputs.h"
#include "tests/service_cluster.h"

namespace kiln::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kMlp[] = "compiler/script/testdata/tvm_mlp.py";
constexpr char kMlpInput[] = "runtime/testdata/mlp_dynamic_batch.input.npy";
constexpr char kCnn[] = "tests/models/tiny_resnet.onnx";
constexpr char kCnnInput[] = "tests/models/tiny_resnet.input.npy";
constexpr char kCnnOutput[] = "tests/models/tiny_resnet.output.npy";
constexpr char kBig[] = "tests/models/mobilenet_v2.onnx";  // seconds to compile

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

runtime::Tensor Npy(const std::string& path) {
  absl::StatusOr<runtime::Tensor> t = runtime::ReadNpy(ReadFile(path), path);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

v1::SubmitCompileRequest CompileRequest(const std::string& path) {
  v1::SubmitCompileRequest request;
  absl::StatusOr<v1::ModuleSource> source = client::ModuleSourceFromFile(path);
  EXPECT_TRUE(source.ok()) << source.status();
  *request.mutable_module() = *source;
  request.set_target("llvm");
  return request;
}

// Compiles and expects success.
v1::Job CompileOk(client::KilnClient& client, v1::SubmitCompileRequest request) {
  absl::StatusOr<v1::Job> job = client.Compile(std::move(request));
  EXPECT_TRUE(job.ok()) << job.status();
  if (!job.ok()) return v1::Job();
  EXPECT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED) << job->reason();
  EXPECT_EQ(job->artifact_digest().size(), 64u);
  return *job;
}

// Waits until `predicate(job)` holds, polling GetJob.
v1::Job WaitFor(client::KilnClient& client, const std::string& id,
                const std::function<bool(const v1::Job&)>& predicate, int timeout_ms = 60000) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  v1::Job job;
  while (std::chrono::steady_clock::now() < end) {
    absl::StatusOr<v1::Job> got = client.GetJob(id);
    if (got.ok()) {
      job = *got;
      if (predicate(job)) return job;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "job " << id
                << " never reached the expected state; last: " << v1::JobState_Name(job.state())
                << " " << job.reason();
  return job;
}

// The value of an unlabelled metric line "NAME VALUE".
double MetricValue(const std::string& metrics, const std::string& name) {
  size_t at = metrics.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(metrics.substr(at + name.size() + 2));
}

// Runs `digest` in this process on `inputs`: what the agent's answer must equal.
std::vector<runtime::Tensor> RunInProcess(const std::string& artifact,
                                          const std::vector<runtime::Tensor>& inputs) {
  absl::StatusOr<runtime::LoadedArtifact> loaded =
      runtime::LoadArtifact(artifact, std::make_shared<runtime::ThreadPool>(1));
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  std::vector<runtime::Value> args(inputs.begin(), inputs.end());
  absl::StatusOr<runtime::Value> out = loaded->vm->Invoke("main", args);
  EXPECT_TRUE(out.ok()) << out.status();
  return {*out->as_tensor()};
}

void ExpectClose(const runtime::Tensor& got, const runtime::Tensor& want, double tolerance) {
  ASSERT_EQ(got.NumElements(), want.NumElements());
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    float w = static_cast<const float*>(want.data())[i];
    ASSERT_NEAR(static_cast<const float*>(got.data())[i], w, tolerance * (1 + std::abs(w))) << i;
  }
}

// Token files must be readable by their owner only (kilnd refuses others).
void PrivateFile(const std::string& path) {
  std::filesystem::permissions(
      path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

class ServiceTest : public ClusterTest {
 protected:
  // A daemon with token files of these lines (written readable by their owner only; no file
  // for empty text) and `flags`; returns the cluster's directory.
  std::string StartWithTokens(const std::string& name, const std::string& client_tokens,
                              const std::string& agent_tokens,
                              std::vector<std::string> flags = {}) {
    cluster_ = std::make_unique<Cluster>(name);
    std::string dir = cluster_->dir();
    for (const auto& [file, text, flag] : {std::tuple<std::string, std::string, std::string>{
                                               "client.tokens", client_tokens, "--client-tokens"},
                                           {"agent.tokens", agent_tokens, "--agent-tokens"}}) {
      if (text.empty()) continue;
      std::ofstream(dir + "/" + file) << text;
      PrivateFile(dir + "/" + file);
      flags.insert(flags.end(), {flag, dir + "/" + file});
    }
    EXPECT_TRUE(cluster_->StartDaemon(flags).ok());
    return dir;
  }
};

TEST_F(ServiceTest, CompilesProfilesAndRunsTheMlpAndTheCnnOnAgents) {
  StartWithAgents("models", 2);
  struct Case {
    const char* module;
    const char* input_name;
    const char* input;
  };
  for (const Case& c : {Case{kMlp, "input", kMlpInput}, Case{kCnn, "input", kCnnInput}}) {
    SCOPED_TRACE(c.module);
    v1::Job compiled = CompileOk(*client_, CompileRequest(c.module));
    EXPECT_FALSE(compiled.cache_hit());
    EXPECT_GT(compiled.worker_pid(), 0);
    EXPECT_GT(compiled.compile_seconds(), 0);
    v1::Job again = CompileOk(*client_, CompileRequest(c.module));
    EXPECT_TRUE(again.cache_hit());
    EXPECT_EQ(again.artifact_digest(), compiled.artifact_digest());
    absl::StatusOr<std::string> artifact = client_->DownloadArtifact(compiled.artifact_digest());
    ASSERT_TRUE(artifact.ok()) << artifact.status();
    EXPECT_EQ(static_cast<int64_t>(artifact->size()), compiled.artifact_size());

    // Profile on an agent: every repeat's time and the statistics over them.
    v1::SubmitProfileRequest profile;
    profile.mutable_artifact()->set_digest(compiled.artifact_digest());
    profile.set_device_key("cpu");
    profile.mutable_options()->set_repeat(5);
    profile.mutable_options()->set_min_repeat_ms(5);
    profile.mutable_options()->set_per_kernel(true);
    absl::StatusOr<v1::SubmitResponse> submitted = client_->SubmitProfile(profile);
    ASSERT_TRUE(submitted.ok()) << submitted.status();
    absl::StatusOr<v1::Job> profiled = client_->Wait(submitted->job().id());
    ASSERT_TRUE(profiled.ok()) << profiled.status();
    ASSERT_EQ(profiled->state(), v1::JOB_STATE_SUCCEEDED) << profiled->reason();
    const v1::ProfileResult& p = profiled->profile();
    ASSERT_EQ(p.seconds_per_call_size(), 5);
    EXPECT_GT(p.min_seconds(), 0);
    EXPECT_LE(p.min_seconds(), p.median_seconds());
    EXPECT_LE(p.median_seconds(), p.max_seconds());
    EXPECT_GE(p.number(), 1);
    EXPECT_THAT(agent_ids_, ::testing::Contains(profiled->agent_id()));
    // Per kernel: every kernel of the model with its raw samples, operators and FLOPs.
    ASSERT_GE(p.kernels_size(), 2);
    EXPECT_GT(p.instrumented_median_seconds(), 0);
    double covered = 0;
    for (const v1::KernelProfile& k : p.kernels()) {
      EXPECT_EQ(k.seconds_size(), 5) << k.name();
      EXPECT_GT(k.fused_ops_size(), 0) << k.name();
      covered += k.median_seconds();
    }
    EXPECT_LE(covered, p.instrumented_median_seconds() * 1.01);
    EXPECT_EQ(p.instrumented_seconds_size(), 5);
    EXPECT_GT(p.kernel_coverage(), 0);
    EXPECT_LE(p.kernel_coverage(), 1);
    // The slowest kernel is a matmul or a convolution, whose work is known.
    EXPECT_GT(p.kernels(0).flops(), 0) << p.kernels(0).name();

    // Inference on an agent equals the same artifact run in this process.
    runtime::Tensor input = Npy(c.input);
    v1::SubmitInferenceRequest infer;
    infer.mutable_artifact()->set_digest(compiled.artifact_digest());
    infer.set_device_key("cpu");
    runtime::TensorToProto(input, c.input_name, infer.add_inputs());
    submitted = client_->SubmitInference(infer);
    ASSERT_TRUE(submitted.ok()) << submitted.status();
    absl::StatusOr<v1::Job> inferred = client_->Wait(submitted->job().id());
    ASSERT_TRUE(inferred.ok()) << inferred.status();
    ASSERT_EQ(inferred->state(), v1::JOB_STATE_SUCCEEDED) << inferred->reason();
    ASSERT_EQ(inferred->inference().outputs_size(), 1);
    absl::StatusOr<runtime::Tensor> remote =
        runtime::TensorFromProto(inferred->inference().outputs(0));
    ASSERT_TRUE(remote.ok()) << remote.status();
    ExpectClose(*remote, RunInProcess(*artifact, {input})[0], 1e-6);
  }
  // And the CNN's answer is PyTorch's.
  absl::StatusOr<std::vector<v1::Job>> jobs = client_->ListJobs(v1::JOB_STATE_SUCCEEDED, 1);
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  ExpectClose(*runtime::TensorFromProto((*jobs)[0].inference().outputs(0)), Npy(kCnnOutput), 1e-4);
}

TEST_F(ServiceTest, ResubmittingIsACacheHitThatRunsNoWorker) {
  StartWithAgents("cache", 0);
  v1::Job first = CompileOk(*client_, CompileRequest(kMlp));
  double compiles = MetricValue(cluster_->Metrics(), "kiln_compile_seconds_count");
  EXPECT_EQ(compiles, 1);

  v1::Job again = CompileOk(*client_, CompileRequest(kMlp));
  EXPECT_TRUE(again.cache_hit());
  EXPECT_EQ(again.worker_pid(), 0);
  EXPECT_NE(again.id(), first.id());
  EXPECT_EQ(again.artifact_digest(), first.artifact_digest());
  std::string metrics = cluster_->Metrics();
  EXPECT_EQ(MetricValue(metrics, "kiln_compile_seconds_count"), 1) << metrics;
  EXPECT_EQ(MetricValue(metrics, "kiln_cache_hits_total"), 1) << metrics;

  // The same module in other bytes (a comment added) is loaded by a worker, which matches it
  // structurally: served from the cache, nothing built.
  v1::SubmitCompileRequest reworded = CompileRequest(kMlp);
  reworded.mutable_module()->set_tvmscript("# the same module in other bytes\n" +
                                           reworded.module().tvmscript());
  v1::Job structural = CompileOk(*client_, reworded);
  EXPECT_TRUE(structural.cache_hit());
  EXPECT_GT(structural.worker_pid(), 0);
  EXPECT_EQ(structural.artifact_digest(), first.artifact_digest());
  EXPECT_EQ(structural.artifact_size(), first.artifact_size());
  metrics = cluster_->Metrics();
  EXPECT_EQ(MetricValue(metrics, "kiln_compile_seconds_count"), 1) << metrics;
  EXPECT_EQ(MetricValue(metrics, "kiln_cache_hits_total"), 2) << metrics;
  // And a repeat of those bytes is now answered by its fingerprint.
  EXPECT_EQ(CompileOk(*client_, reworded).worker_pid(), 0);

  // A changed option or target misses.
  v1::SubmitCompileRequest unfused = CompileRequest(kMlp);
  unfused.mutable_options()->set_no_fuse(true);
  v1::Job miss_option = CompileOk(*client_, unfused);
  EXPECT_FALSE(miss_option.cache_hit());
  EXPECT_NE(miss_option.artifact_digest(), first.artifact_digest());

  v1::SubmitCompileRequest other_target = CompileRequest(kMlp);
  other_target.set_target("llvm -mtriple=aarch64-linux-gnu");
  v1::Job miss_target = CompileOk(*client_, other_target);
  EXPECT_FALSE(miss_target.cache_hit());
  EXPECT_EQ(MetricValue(cluster_->Metrics(), "kiln_compile_seconds_count"), 3);
}

// The worker built with test hooks: a module named "kiln-test-abort-in-frontend" aborts in the
// front end, "kiln-test-spin-in-frontend" spins there.
std::string WorkerWithTestHooks() {
  return std::filesystem::absolute(TestBinaries().worker_with_test_hooks).string();
}

TEST_F(ServiceTest, AFrontEndThatCrashesOrSpinsCostsOnlyItsJob) {
  StartWithAgents("frontend_crash", 0, {"--worker", WorkerWithTestHooks(), "--worker-cpu-s", "2"});

  v1::SubmitCompileRequest crash = CompileRequest(kMlp);
  crash.mutable_module()->set_name("kiln-test-abort-in-frontend");
  absl::StatusOr<v1::Job> crashed = client_->Compile(crash);
  ASSERT_TRUE(crashed.ok()) << crashed.status();
  EXPECT_EQ(crashed->state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(crashed->error_code(), static_cast<int>(absl::StatusCode::kInternal));
  EXPECT_THAT(crashed->reason(), HasSubstr("killed by signal 6"));

  v1::SubmitCompileRequest spin = CompileRequest(kMlp);
  spin.mutable_module()->set_name("kiln-test-spin-in-frontend");
  absl::StatusOr<v1::Job> spun = client_->Compile(spin);
  ASSERT_TRUE(spun.ok()) << spun.status();
  EXPECT_EQ(spun->state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(spun->error_code(), static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(spun->reason(), HasSubstr("CPU-time limit of 2 s"));

  // kilnd is still serving, and compiles on.
  EXPECT_TRUE(client_->ServerInfo().ok());
  CompileOk(*client_, CompileRequest(kMlp));
  EXPECT_EQ(cluster_->daemon().Wait(100), -1);  // still running
}

TEST_F(ServiceTest, SigtermEndsKilndWithinTheDrainTimeoutWhateverIsRunning) {
  StartWithAgents("drain_runaway", 0,
                  {"--worker", WorkerWithTestHooks(), "--drain-timeout-s", "1"});
  v1::SubmitCompileRequest spin = CompileRequest(kMlp);
  spin.mutable_module()->set_name("kiln-test-spin-in-frontend");  // never finishes by itself
  absl::StatusOr<v1::SubmitResponse> submitted = client_->SubmitCompile(spin);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  v1::Job running =
      WaitFor(*client_, submitted->job().id(), [](const v1::Job& j) { return j.worker_pid() > 0; });
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(cluster_->StopDaemon(), 0);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10) << "a drain timeout of 1 s";
  EXPECT_THAT(cluster_->daemon().Log(), HasSubstr("kilnd: stopped"));
  // The runaway worker went with it.
  for (int i = 0; i < 100 && kill(running.worker_pid(), 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(kill(running.worker_pid(), 0), 0);
}

TEST_F(ServiceTest, AModelOverTheWorkersMemoryLimitCostsOnlyItsJob) {
  // kilnd's constant limit raised past what the worker's memory holds.
  StartWithAgents("frontend_memory", 0,
                  {"--worker-memory-mb", "1536", "--max-constant-mb", "4096"});
  // A 200-byte model whose import asks for 2 GiB (a Range of 2^28 int64s) of a worker with 1.5.
  frontend::testing::GraphBuilder range(13);
  range.Init(frontend::testing::IntTensor("start", {}, {0}))
      .Init(frontend::testing::IntTensor("limit", {}, {int64_t{1} << 28}))
      .Init(frontend::testing::IntTensor("delta", {}, {1}))
      .Output("y", 7)
      .Node("Range", {"start", "limit", "delta"}, {"y"});
  v1::SubmitCompileRequest huge;
  huge.set_target("llvm");
  huge.mutable_module()->set_onnx(range.Serialize());
  huge.mutable_module()->set_name("range.onnx");
  absl::StatusOr<v1::Job> over = client_->Compile(huge);
  ASSERT_TRUE(over.ok()) << over.status();
  EXPECT_EQ(over->state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(over->reason(), HasSubstr("memory limit"));
  EXPECT_THAT(over->reason(), HasSubstr("1536 MiB"));

  EXPECT_TRUE(client_->ServerInfo().ok());
  CompileOk(*client_, CompileRequest(kMlp));
}

// kilnd's peak resident memory (VmHWM), in MiB.
int64_t PeakRssMb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) >> 10;
  }
  return -1;
}

// The generated hostile inputs of tests/stress_test.cc, sent at once to a default kilnd: each
// costs its job at most (compiled, or failed with the front end's reason), kilnd answers
// throughout, and its own memory stays small whatever the modules ask for.
TEST_F(ServiceTest, HostileInputCostsAJobAtMost) {
  StartWithAgents("hostile", 0, {"--workers", "2"});
  struct Case {
    std::string name;
    std::string bytes;
    void (v1::ModuleSource::*set)(const std::string&);
    bool compiles;
    std::string reason;  // a substring of a failed job's reason
  };
  const std::string too_deep = "nesting is too deep (more than 20000 levels";
  std::vector<Case> cases = {
      {"chain_1e6.py", TirSumChain(1000000), &v1::ModuleSource::set_tvmscript, false,
       "chain_1e6.py:7:140015: " + too_deep},
      {"parens_1e5.py", RelaxParentheses(100000), &v1::ModuleSource::set_tvmscript, false,
       too_deep},
      {"elif_1e5.py", TirElifChain(100000), &v1::ModuleSource::set_tvmscript, false, too_deep},
      {"chain_1e4.py", TirSumChain(10000), &v1::ModuleSource::set_tvmscript, true, ""},
      {"chain_1e5.pb", ChainProto(100000), &v1::ModuleSource::set_ir_proto, false,
       "nested more than 20000 levels deep"},
      {"dag.pb", SharedDagProto(64), &v1::ModuleSource::set_ir_proto, false,
       "stands for more than 16777216 nodes"},
      {"range.onnx", HugeRangeOnnx(int64_t{1} << 40), &v1::ModuleSource::set_onnx, false,
       "is larger than the 64 MiB a constant computed while importing may be"},
      {"broadcast.onnx", BroadcastBlowupOnnx(), &v1::ModuleSource::set_onnx, true, ""},
  };
  std::vector<std::string> ids;
  for (const Case& c : cases) {
    v1::SubmitCompileRequest r;
    r.set_target("llvm");
    (r.mutable_module()->*c.set)(c.bytes);
    r.mutable_module()->set_name(c.name);
    absl::StatusOr<v1::SubmitResponse> submitted = client_->SubmitCompile(r);
    ASSERT_TRUE(submitted.ok()) << c.name << ": " << submitted.status();
    ids.push_back(submitted->job().id());
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    v1::Job job = WaitFor(
        *client_, ids[i],
        [](const v1::Job& j) {
          return j.state() == v1::JOB_STATE_SUCCEEDED || j.state() == v1::JOB_STATE_FAILED;
        },
        180000);
    EXPECT_TRUE(client_->ServerInfo().ok());
    if (cases[i].compiles) {
      EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
    } else {
      EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
      EXPECT_EQ(job.error_code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
      EXPECT_THAT(job.reason(), HasSubstr(cases[i].reason));
    }
  }
  EXPECT_EQ(cluster_->daemon().Wait(100), -1);  // still running
  int64_t peak_mb = PeakRssMb(cluster_->daemon().pid());
  EXPECT_GT(peak_mb, 0);
  EXPECT_LT(peak_mb, 512) << "kilnd's own peak RSS";
}

TEST_F(ServiceTest, JobsAndArtifactsBelongToWhoeverSubmittedThem) {
  std::string dir = StartWithTokens(
      "owners",
      "# clients\nalice-secret name=alice\nbob-secret name=bob\nops-secret name=ops role=admin\n",
      "agent-secret\n");
  std::ofstream(dir + "/agent.token") << "agent-secret\n";
  ASSERT_TRUE(cluster_->StartAgent("cpu", {"--token", dir + "/agent.token"}).ok());
  auto as = [&](const char* token) {
    runtime::ChannelOptions o;
    o.token = token;
    absl::StatusOr<std::unique_ptr<client::KilnClient>> c = cluster_->Client(o);
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  };
  std::unique_ptr<client::KilnClient> alice = as("alice-secret"), bob = as("bob-secret"),
                                      ops = as("ops-secret");
  v1::Job compiled = CompileOk(*alice, CompileRequest(kMlp));
  EXPECT_EQ(compiled.client(), "alice");
  // A queued job to cancel: a profile of alice's artifact with a long run.
  v1::SubmitProfileRequest profile;
  profile.mutable_artifact()->set_digest(compiled.artifact_digest());
  profile.set_device_key("cpu");
  profile.mutable_options()->set_repeat(1000);
  profile.mutable_options()->set_min_repeat_ms(100);
  absl::StatusOr<v1::SubmitResponse> running = alice->SubmitProfile(profile);
  ASSERT_TRUE(running.ok()) << running.status();
  std::string id = running->job().id();

  // Bob gets NOT_FOUND for every RPC on alice's job and artifact, as for ones that do not exist.
  auto not_found = [](const absl::Status& s) {
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  };
  not_found(bob->GetJob(id).status());
  not_found(bob->GetJob(compiled.id()).status());
  not_found(bob->Wait(id).status());
  not_found(bob->Cancel(id, "bob was here").status());
  not_found(bob->DownloadArtifact(compiled.artifact_digest()).status());
  not_found(bob->SubmitProfile(profile).status());
  v1::SubmitInferenceRequest infer;
  infer.mutable_artifact()->set_digest(compiled.artifact_digest());
  infer.set_device_key("cpu");
  not_found(bob->SubmitInference(infer).status());
  EXPECT_EQ(bob->GetJob(id).status().message(), absl::StrCat("no job '", id, "'"));
  not_found(bob->GetJob("job-nonexistent").status());
  absl::StatusOr<std::vector<v1::Job>> bobs = bob->ListJobs();
  ASSERT_TRUE(bobs.ok());
  EXPECT_TRUE(bobs->empty());
  // Alice still sees and owns both.
  EXPECT_EQ(alice->ListJobs()->size(), 2u);
  EXPECT_TRUE(alice->GetJob(id).ok());

  // The admin sees everyone's jobs and cancels alice's.
  EXPECT_EQ(ops->ListJobs()->size(), 2u);
  absl::StatusOr<v1::Job> cancelled = ops->Cancel(id, "maintenance");
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_TRUE(ops->DownloadArtifact(compiled.artifact_digest()).ok());

  // Bob compiles the same module: a cache hit, and now the artifact is his to download too.
  v1::Job bobs_compile = CompileOk(*bob, CompileRequest(kMlp));
  EXPECT_TRUE(bobs_compile.cache_hit());
  EXPECT_EQ(bobs_compile.artifact_digest(), compiled.artifact_digest());
  EXPECT_TRUE(bob->DownloadArtifact(compiled.artifact_digest()).ok());
  EXPECT_EQ(bob->ListJobs()->size(), 1u);
}

TEST_F(ServiceTest, AnAgentRetriesWithDoublingBackoffUntilTheDaemonComes) {
  // A daemon's address before the daemon: the agent retries 100, 200, 400 ms ... up to its cap.
  cluster_ = std::make_unique<Cluster>("backoff");
  ASSERT_TRUE(cluster_->StartDaemon().ok());
  std::string address = cluster_->address();
  cluster_->StopDaemon();
  Process agent({TestBinaries().agent, "--server", address, "--device-key", "cpu", "--cache-dir",
                 cluster_->dir() + "/agent", "--max-backoff-ms", "800"},
                cluster_->dir() + "/agent.log");
  std::vector<int> waits;
  for (int i = 0; i < 100 && waits.size() < 6; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    waits.clear();
    std::string log = agent.Log();
    for (size_t at = log.find("retrying in "); at != std::string::npos;
         at = log.find("retrying in ", at + 1)) {
      waits.push_back(std::atoi(log.c_str() + at + 12));
    }
  }
  ASSERT_GE(waits.size(), 6u) << agent.Log();
  EXPECT_EQ(std::vector<int>(waits.begin(), waits.begin() + 6),
            (std::vector<int>{100, 200, 400, 800, 800, 800}))
      << agent.Log();
  // The daemon comes back on that address: the agent registers by itself.
  ASSERT_TRUE(cluster_->StartDaemon({}, /*same_port=*/true).ok());
  EXPECT_TRUE(agent.WaitForLog("kiln-agent: registered as ").ok()) << agent.Log();
}

// An agent credential serves only the device keys its token names; results count only from the
// session that was given the task; artifacts go only to the session running their task; and no
// string field of a request may be megabytes long. Each hole was open before issue 30: a process
// with any agent token registered as `board1`, fetched any artifact by digest, and a 4 MB module
// name was stored.
TEST_F(ServiceTest, AgentsServeOnlyTheirKeysAndSeeOnlyTheirTasks) {
  std::string dir = StartWithTokens("device_trust", "alice-secret name=alice\n",
                                    "board1-secret name=board1-agent keys=board1\n"
                                    "board2-secret name=board2-agent keys=board2\n");
  std::ofstream(dir + "/board1.token") << "board1-secret\n";
  std::ofstream(dir + "/board2.token") << "board2-secret\n";
  absl::StatusOr<std::string> board1 =
      cluster_->StartAgent("board1", {"--token", dir + "/board1.token"});
  ASSERT_TRUE(board1.ok()) << board1.status();

  // board2's credential cannot pose as board1.
  Process impostor({TestBinaries().agent, "--server", cluster_->address(), "--device-key", "board1",
                    "--cache-dir", dir + "/impostor", "--token", dir + "/board2.token"},
                   dir + "/impostor.log");
  EXPECT_TRUE(impostor
                  .WaitForLog("PERMISSION_DENIED: agent credential 'board2-agent' may not serve "
                              "device key 'board1' (it may serve: board2)")
                  .ok())
      << impostor.Log();
  runtime::ChannelOptions alice;
  alice.token = "alice-secret";
  std::unique_ptr<client::KilnClient> client = *cluster_->Client(alice);
  absl::StatusOr<std::vector<v1::Device>> devices = client->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].key(), "board1");
  EXPECT_EQ((*devices)[0].reported_by(), "board1-agent");
  EXPECT_EQ((*devices)[0].agents_connected(), 1);

  // A session of board2's own key, opened by hand: it may not fetch an artifact it runs no task
  // for, and a result it sends for board1's task is ignored.
  v1::Job compiled = CompileOk(*client, CompileRequest(kMlp));
  auto channel = grpc::CreateChannel(cluster_->address(), grpc::InsecureChannelCredentials());
  std::unique_ptr<v1::AgentService::Stub> stub = v1::AgentService::NewStub(channel);
  auto as_board2 = [](grpc::ClientContext* context) {
    context->AddMetadata("authorization", "Bearer board2-secret");
  };
  grpc::ClientContext session_context;
  as_board2(&session_context);
  auto session = stub->Connect(&session_context);
  v1::AgentMessage hello;
  hello.mutable_register_()->set_device_key("board2");
  ASSERT_TRUE(session->Write(hello));
  v1::ServerMessage registered;
  ASSERT_TRUE(session->Read(&registered));
  ASSERT_TRUE(registered.has_registered());
  for (const std::string& agent_id : {registered.registered().agent_id(), *board1}) {
    grpc::ClientContext context;
    as_board2(&context);
    v1::FetchArtifactRequest fetch;
    fetch.set_digest(compiled.artifact_digest());
    fetch.set_agent_id(agent_id);
    auto reader = stub->FetchArtifact(&context, fetch);
    v1::ArtifactChunk chunk;
    EXPECT_FALSE(reader->Read(&chunk));
    grpc::Status refused = reader->Finish();
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED) << agent_id;
    EXPECT_THAT(refused.error_message(), HasSubstr("is not the artifact of a task given to"));
  }
  v1::SubmitProfileRequest profile;
  profile.mutable_artifact()->set_digest(compiled.artifact_digest());
  profile.set_device_key("board1");
  profile.mutable_options()->set_repeat(20);
  absl::StatusOr<v1::SubmitResponse> submitted = client->SubmitProfile(profile);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  WaitFor(*client, submitted->job().id(),
          [](const v1::Job& j) { return j.state() != v1::JOB_STATE_QUEUED; });
  v1::AgentMessage forged;
  forged.mutable_result()->set_task_id(submitted->job().id());
  forged.mutable_result()->set_ok(true);
  forged.mutable_result()->mutable_profile()->set_median_seconds(1e-9);
  ASSERT_TRUE(session->Write(forged));
  absl::StatusOr<v1::Job> done = client->Wait(submitted->job().id());
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->reason();
  EXPECT_GT(done->profile().median_seconds(), 1e-7) << "the forged result counted";
  EXPECT_EQ(done->profile().seconds_per_call_size(), 20);  // board1's measurement

  // The hand-made session is board2's only agent: given a task, its answer of a megabyte of error
  // text is cut at the string limit before it is kept as the job's reason.
  profile.set_device_key("board2");
  absl::StatusOr<v1::SubmitResponse> on_board2 = client->SubmitProfile(profile);
  ASSERT_TRUE(on_board2.ok()) << on_board2.status();
  v1::ServerMessage given;
  while (session->Read(&given) && !given.has_task()) {
  }
  ASSERT_TRUE(given.has_task());
  v1::AgentMessage verbose;
  verbose.mutable_result()->set_task_id(given.task().task_id());
  verbose.mutable_result()->set_error(std::string(1 << 20, 'e'));
  ASSERT_TRUE(session->Write(verbose));
  absl::StatusOr<v1::Job> failed = client->Wait(on_board2->job().id());
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_EQ(failed->state(), v1::JOB_STATE_FAILED);
  EXPECT_LT(failed->reason().size(), 4200u);
  EXPECT_THAT(failed->reason(), HasSubstr("... (truncated)"));
  session_context.TryCancel();

  // A 4 MB module name is refused, naming the field; nothing is stored.
  v1::SubmitCompileRequest named = CompileRequest(kMlp);
  named.mutable_module()->set_name(std::string(4 << 20, 'n'));
  absl::StatusOr<v1::SubmitResponse> refused = client->SubmitCompile(named);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("module.name: 4194304 bytes, more than the 4096 a string field may have"));
}

// A flood of cache-hit compiles (each finishes at once) is held by the per-minute quota for the
// client that sends it, while another client goes on; finished jobs are pruned after the
// retention, and `kiln jobs` says how long they are kept.
TEST_F(ServiceTest, QuotasHoldAFloodAndRetentionPrunes) {
  std::string dir = StartWithTokens("quotas", "alice-secret name=alice\nbob-secret name=bob\n", "",
                                    {"--max-jobs-per-minute", "10", "--job-retention-s", "1"});
  std::ofstream(dir + "/alice.token") << "alice-secret\n";
  auto client_of = [&](const char* token) {
    runtime::ChannelOptions o;
    o.token = token;
    return *cluster_->Client(o);
  };
  std::unique_ptr<client::KilnClient> alice = client_of("alice-secret");
  std::unique_ptr<client::KilnClient> bob = client_of("bob-secret");
  v1::Job first = CompileOk(*alice, CompileRequest(kMlp));
  int admitted = 1;
  absl::Status held;
  for (int i = 0; i < 30 && held.ok(); ++i) {
    absl::StatusOr<v1::Job> hit = alice->Compile(CompileRequest(kMlp));
    if (hit.ok()) {
      EXPECT_TRUE(hit->cache_hit());
      ++admitted;
    } else {
      held = hit.status();
    }
  }
  EXPECT_EQ(admitted, 10);
  EXPECT_EQ(held.code(), absl::StatusCode::kResourceExhausted) << held;
  EXPECT_THAT(held.message(), HasSubstr("client alice submitted 10 jobs this minute"));
  CompileOk(*bob, CompileRequest(kMlp));
  EXPECT_EQ(
      MetricValue(cluster_->Metrics(), "kiln_limit_refusals_total{limit=\"jobs_per_minute\"}"), 1);

  // Pruned about 2 s after they finished (1 s of retention, kept 2 s past the end).
  for (int i = 0; i < 100 && alice->GetJob(first.id()).ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(alice->GetJob(first.id()).status().code(), absl::StatusCode::kNotFound);
  std::string out = dir + "/jobs.txt";
  std::string command = TestBinaries().kiln + " jobs --server " + cluster_->address() +
                        " --token " + dir + "/alice.token > " + out + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << ReadFile(out);
  EXPECT_THAT(ReadFile(out), HasSubstr("(finished jobs are kept 1 s, the newest 100000 of them)"));
  // The cache hits finished a little after the first job: a later scan prunes them.
  for (int i = 0; i < 50 && MetricValue(cluster_->Metrics(), "kiln_jobs_pruned_total") < 11; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GE(MetricValue(cluster_->Metrics(), "kiln_jobs_pruned_total"), 11);
}

// Past --store-max-mb, the least recently used artifacts are evicted before the next job is
// admitted (the refusal once the database alone is over the bound: server:job_manager_test).
TEST_F(ServiceTest, TheStoreBoundEvictsTheLeastRecentlyUsedArtifacts) {
  StartWithAgents("store_bound", 0, {"--store-max-mb", "8"});
  v1::Job mlp = CompileOk(*client_, CompileRequest(kMlp));
  v1::Job big = CompileOk(*client_, CompileRequest(kBig));  // a 14 MB artifact: over the bound
  ASSERT_TRUE(client_->DownloadArtifact(big.artifact_digest()).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the size is read once a second
  CompileOk(*client_, CompileRequest(kCnn));
  EXPECT_TRUE(cluster_->daemon().WaitForLog("store over its bound: artifacts evicted", 5000).ok())
      << cluster_->daemon().Log();
  EXPECT_FALSE(client_->DownloadArtifact(big.artifact_digest()).ok());
  EXPECT_FALSE(client_->DownloadArtifact(mlp.artifact_digest()).ok());
}

TEST_F(ServiceTest, TokenFilesAreReloadedOnSighup) {
  cluster_ = std::make_unique<Cluster>("reload");
  std::string tokens = cluster_->dir() + "/client.tokens";
  std::ofstream(tokens) << "alice-secret name=alice\n";
  PrivateFile(tokens);
  ASSERT_TRUE(cluster_->StartDaemon({"--client-tokens", tokens}).ok());
  auto list_as = [&](const char* token) {
    runtime::ChannelOptions o;
    o.token = token;
    return (*cluster_->Client(o))->ListJobs().status();
  };
  EXPECT_TRUE(list_as("alice-secret").ok());
  EXPECT_EQ(list_as("carol-secret").code(), absl::StatusCode::kUnauthenticated);

  std::ofstream(tokens, std::ios::trunc) << "carol-secret name=carol\n";
  cluster_->daemon().Signal(SIGHUP);
  ASSERT_TRUE(cluster_->daemon().WaitForLog("tokens reloaded", 5000).ok())
      << cluster_->daemon().Log();
  EXPECT_TRUE(list_as("carol-secret").ok());
  EXPECT_EQ(list_as("alice-secret").code(), absl::StatusCode::kUnauthenticated);

  // A file that does not read is refused, and the tokens in use stay.
  std::ofstream(tokens, std::ios::trunc) << "carol-secret role=root\n";
  cluster_->daemon().Signal(SIGHUP);
  ASSERT_TRUE(cluster_->daemon().WaitForLog("token reload refused", 5000).ok())
      << cluster_->daemon().Log();
  EXPECT_TRUE(list_as("carol-secret").ok());
}

TEST_F(ServiceTest, AnIdempotencyKeyNamesOneJob) {
  StartWithAgents("idempotency", 0);
  v1::SubmitCompileRequest request = CompileRequest(kMlp);
  request.set_idempotency_key("build-42");
  absl::StatusOr<v1::SubmitResponse> a = client_->SubmitCompile(request);
  absl::StatusOr<v1::SubmitResponse> b = client_->SubmitCompile(request);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->job().id(), b->job().id());
  EXPECT_FALSE(a->deduplicated());
  EXPECT_TRUE(b->deduplicated());
}

TEST_F(ServiceTest, ATaskWhoseAgentIsKilledCompletesOnTheOtherAgent) {
  StartWithAgents("agent_kill", 2);
  v1::Job compiled = CompileOk(*client_, CompileRequest(kMlp));
  v1::SubmitProfileRequest profile;
  profile.mutable_artifact()->set_digest(compiled.artifact_digest());
  profile.set_device_key("cpu");
  profile.mutable_options()->set_repeat(15);
  profile.mutable_options()->set_min_repeat_ms(100);  // 1.5 s of timing
  absl::StatusOr<v1::SubmitResponse> submitted = client_->SubmitProfile(profile);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  v1::Job running = WaitFor(*client_, submitted->job().id(),
                            [](const v1::Job& j) { return j.state() == v1::JOB_STATE_RUNNING; });
  std::string victim = running.agent_id();
  ASSERT_FALSE(victim.empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  cluster_->agent(victim).Signal(SIGKILL);

  absl::StatusOr<v1::Job> done = client_->Wait(submitted->job().id());
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->reason();
  EXPECT_NE(done->agent_id(), victim);
  EXPECT_EQ(done->attempts(), 2);
  EXPECT_EQ(done->profile().seconds_per_call_size(), 15);
}

TEST_F(ServiceTest, AKilledWorkerFailsItsJobAndTheDaemonServesOn) {
  StartWithAgents("worker_kill", 0);
  absl::StatusOr<v1::SubmitResponse> submitted = client_->SubmitCompile(CompileRequest(kBig));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  v1::Job running =
      WaitFor(*client_, submitted->job().id(), [](const v1::Job& j) { return j.worker_pid() > 0; });
  ASSERT_EQ(kill(running.worker_pid(), SIGKILL), 0);
  absl::StatusOr<v1::Job> done = client_->Wait(submitted->job().id());
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(done->reason(), HasSubstr("killed by signal 9"));
  EXPECT_THAT(done->reason(), HasSubstr(absl::StrCat("pid ", running.worker_pid())));
  // The next compile gets a fresh worker.
  v1::Job next = CompileOk(*client_, CompileRequest(kMlp));
  EXPECT_NE(next.worker_pid(), running.worker_pid());
}

TEST_F(ServiceTest, ACompilePastItsDeadlineIsKilled) {
  StartWithAgents("deadline", 0);
  v1::SubmitCompileRequest request = CompileRequest(kBig);
  request.set_deadline_ms(300);
  absl::StatusOr<v1::Job> done = client_->Compile(request);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(done->reason(), HasSubstr("exceeded its deadline of 300 ms"));
  EXPECT_LT(done->finished_unix_ms() - done->created_unix_ms(), 5000);
}

TEST_F(ServiceTest, CancellingARunningCompileKillsItsWorker) {
  StartWithAgents("cancel", 0);
  absl::StatusOr<v1::SubmitResponse> submitted = client_->SubmitCompile(CompileRequest(kBig));
  ASSERT_TRUE(submitted.ok());
  v1::Job running =
      WaitFor(*client_, submitted->job().id(), [](const v1::Job& j) { return j.worker_pid() > 0; });
  absl::StatusOr<v1::Job> cancelled = client_->Cancel(running.id(), "changed my mind");
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(cancelled->reason(), "cancelled: changed my mind");
  // The worker is gone within moments.
  for (int i = 0; i < 100 && kill(running.worker_pid(), 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(kill(running.worker_pid(), 0), 0);
  EXPECT_EQ(client_->Cancel(running.id()).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ServiceTest, FinishedJobsAndArtifactsSurviveARestart) {
  StartWithAgents("restart", 1);
  v1::Job compiled = CompileOk(*client_, CompileRequest(kMlp));
  absl::StatusOr<std::string> before = client_->DownloadArtifact(compiled.artifact_digest());
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(cluster_->StopDaemon(), 0);

  ASSERT_TRUE(cluster_->StartDaemon({}, /*same_port=*/true).ok());
  absl::StatusOr<std::unique_ptr<client::KilnClient>> c = cluster_->Client();
  ASSERT_TRUE(c.ok());
  // The agent reconnects by itself (its backoff is capped at 500 ms here); the restarted
  // daemon loaded the device with no agents connected.
  bool reconnected = false;
  for (int i = 0; i < 200 && !reconnected; ++i) {
    absl::StatusOr<std::vector<v1::Device>> devices = (*c)->ListDevices();
    reconnected = devices.ok() && devices->size() == 1 && (*devices)[0].agents_connected() == 1;
    if (!reconnected) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(reconnected);
  absl::StatusOr<v1::Job> job = (*c)->GetJob(compiled.id());
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(job->artifact_digest(), compiled.artifact_digest());
  absl::StatusOr<std::string> after = (*c)->DownloadArtifact(compiled.artifact_digest());
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, *before);
  v1::Job again = CompileOk(**c, CompileRequest(kMlp));
  EXPECT_TRUE(again.cache_hit());
}

TEST_F(ServiceTest, ACorruptedArtifactIsDetectedAndNotServed) {
  StartWithAgents("corrupt", 0);
  v1::Job compiled = CompileOk(*client_, CompileRequest(kMlp));
  std::string path =
      absl::StrCat(cluster_->dir(), "/store/artifacts/", compiled.artifact_digest(), ".kiln");
  std::string bytes = ReadFile(path);
  ASSERT_FALSE(bytes.empty());
  bytes[bytes.size() - 100] ^= 0x5a;  // in the kernel library
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;

  absl::StatusOr<std::string> download = client_->DownloadArtifact(compiled.artifact_digest());
  EXPECT_EQ(download.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(download.status().message(), HasSubstr("corrupt"));
  // The cache does not serve it either: the resubmit compiles again.
  v1::Job again = CompileOk(*client_, CompileRequest(kMlp));
  EXPECT_FALSE(again.cache_hit());
  absl::StatusOr<std::string> fresh = client_->DownloadArtifact(again.artifact_digest());
  EXPECT_TRUE(fresh.ok()) << fresh.status();
}

TEST_F(ServiceTest, BadInputIsRefusedWithTheRightCodeAndNothingIsStored) {
  StartWithAgents("bad_input", 1, {"--max-request-mb", "2", "--max-module-mb", "1"});
  struct Bad {
    std::string what;
    v1::SubmitCompileRequest request;
    absl::StatusCode code;
    std::string message;
  };
  // What kilnd can tell without parsing is refused at submission; a module that does not load is
  // a failed job, with the code and the reason the worker's front end gave.
  std::vector<Bad> refused, failed;
  auto add = [&](std::vector<Bad>& into, const std::string& what, auto fill, absl::StatusCode code,
                 const std::string& message) {
    v1::SubmitCompileRequest r;
    r.set_target("llvm");
    fill(r);
    into.push_back({what, r, code, message});
  };
  add(
      failed, "garbage bytes",
      [](auto& r) { r.mutable_module()->set_ir_proto("\xff\xfe garbage \x01"); },
      absl::StatusCode::kInvalidArgument, "module.pb");
  std::string ir = ReadFile(kMlp);
  add(
      failed, "malformed TVMScript",
      [](auto& r) {
        r.mutable_module()->set_tvmscript("@I.ir_module\nclass M:\n  def main(x: R.Tensor(:\n");
        r.mutable_module()->set_name("broken.py");
      },
      absl::StatusCode::kInvalidArgument, "broken.py:");
  frontend::testing::GraphBuilder unique(13);
  unique.Input("x", 1, {2, 2}).Output("y", 1).Node("Unique", {"x"}, {"y"});
  std::string unique_bytes = unique.Serialize();
  add(
      failed, "unsupported ONNX op", [&](auto& r) { r.mutable_module()->set_onnx(unique_bytes); },
      absl::StatusCode::kUnimplemented, "operator Unique is not supported");
  add(
      failed, "truncated ONNX protobuf",
      [&](auto& r) {
        r.mutable_module()->set_onnx(unique_bytes.substr(0, unique_bytes.size() / 2));
      },
      absl::StatusCode::kInvalidArgument, "model.onnx");
  add(
      refused, "unknown target",
      [&](auto& r) {
        r.mutable_module()->set_tvmscript(ir);
        r.set_target("cuda -arch=sm_90");
      },
      absl::StatusCode::kInvalidArgument, "target 'cuda -arch=sm_90'");
  add(
      refused, "no module", [](auto&) {}, absl::StatusCode::kInvalidArgument, "none was set");
  add(
      refused, "module over the limit",
      [](auto& r) { r.mutable_module()->set_tvmscript(std::string((1 << 20) + 10, '#')); },
      absl::StatusCode::kResourceExhausted, "limit");
  add(
      refused, "request over the limit",
      [](auto& r) { r.mutable_module()->set_tvmscript(std::string(3 << 20, '#')); },
      absl::StatusCode::kResourceExhausted, "");

  for (const Bad& bad : refused) {
    SCOPED_TRACE(bad.what);
    absl::StatusOr<v1::SubmitResponse> r = client_->SubmitCompile(bad.request);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), bad.code) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr(bad.message));
  }
  for (const Bad& bad : failed) {
    SCOPED_TRACE(bad.what);
    absl::StatusOr<v1::Job> job = client_->Compile(bad.request);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->state(), v1::JOB_STATE_FAILED);
    EXPECT_EQ(job->error_code(), static_cast<int>(bad.code)) << job->reason();
    EXPECT_THAT(job->reason(), HasSubstr(bad.message));
    EXPECT_TRUE(job->artifact_digest().empty());
  }
  // Profile and inference requests.
  v1::Job compiled = CompileOk(*client_, CompileRequest(kMlp));
  v1::SubmitProfileRequest unknown_device;
  unknown_device.mutable_artifact()->set_digest(compiled.artifact_digest());
  unknown_device.set_device_key("tpu-v9");
  absl::StatusOr<v1::SubmitResponse> r = client_->SubmitProfile(unknown_device);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("unknown device key 'tpu-v9' (known: cpu)"));
  v1::SubmitProfileRequest unknown_artifact;
  unknown_artifact.mutable_artifact()->set_digest(std::string(64, 'a'));
  unknown_artifact.set_device_key("cpu");
  EXPECT_EQ(client_->SubmitProfile(unknown_artifact).status().code(), absl::StatusCode::kNotFound);
  v1::SubmitProfileRequest garbage_artifact;
  garbage_artifact.mutable_artifact()->set_artifact("not an artifact");
  garbage_artifact.set_device_key("cpu");
  EXPECT_EQ(client_->SubmitProfile(garbage_artifact).status().code(),
            absl::StatusCode::kInvalidArgument);
  v1::SubmitInferenceRequest wrong_shape;
  wrong_shape.mutable_artifact()->set_digest(compiled.artifact_digest());
  wrong_shape.set_device_key("cpu");
  runtime::Tensor input = Npy(kMlpInput);
  runtime::TensorToProto(input, "input", wrong_shape.add_inputs());
  wrong_shape.mutable_inputs(0)->set_shape(0, 8);
  r = client_->SubmitInference(wrong_shape);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("needs 2048 bytes of data, got 1024"));
  wrong_shape.mutable_inputs(0)->set_shape(0, 2);
  wrong_shape.mutable_inputs(0)->set_shape(1, 128);
  r = client_->SubmitInference(wrong_shape);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("must have shape [4, 64], got [2, 128]"));

  // The refusals left no job; the failed compiles and the one good compile are there, and only
  // the good one stored an artifact.
  absl::StatusOr<std::vector<v1::Job>> jobs = client_->ListJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), failed.size() + 1);
  int artifacts = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(absl::StrCat(cluster_->dir(), "/store/artifacts"))) {
    artifacts += entry.path().extension() == ".kiln" ? 1 : 0;
  }
  EXPECT_EQ(artifacts, 1);
  // And the daemon is still here.
  EXPECT_TRUE(client_->ServerInfo().ok());
}

TEST_F(ServiceTest, MetricsCountJobsQueuesCacheAndAgents) {
  StartWithAgents("metrics", 2);
  CompileOk(*client_, CompileRequest(kMlp));
  CompileOk(*client_, CompileRequest(kMlp));
  std::string m = cluster_->Metrics();
  EXPECT_THAT(m, HasSubstr(" 200 OK\r\n"));
  EXPECT_THAT(m, HasSubstr("kiln_jobs{state=\"succeeded\"} 2\n"));
  EXPECT_THAT(m, HasSubstr("kiln_queue_depth{queue=\"compile\"} 0\n"));
  EXPECT_EQ(MetricValue(m, "kiln_cache_hits_total"), 1);
  EXPECT_EQ(MetricValue(m, "kiln_cache_misses_total"), 1);
  EXPECT_EQ(MetricValue(m, "kiln_agents_connected"), 2);
  EXPECT_GT(MetricValue(m, "kiln_compile_seconds_sum"), 0);
  absl::StatusOr<std::vector<v1::Device>> devices = client_->ListDevices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].agents_connected(), 2);
  EXPECT_GT((*devices)[0].attributes().cores(), 0);
  EXPECT_GT((*devices)[0].attributes().memory_bytes(), 0);
  EXPECT_THAT((*devices)[0].attributes().target_triple(), HasSubstr("-linux-gnu"));
}

TEST_F(ServiceTest, ShutdownDrainsARunningCompile) {
  // A drain long enough for a compile on a loaded CI machine (the default 30 s was not: a busy
  // 2-core run took 34.6 s); the test is that shutdown waits for it, not how fast it is.
  StartWithAgents("drain", 0, {"--drain-timeout-s", "600"});
  absl::StatusOr<v1::SubmitResponse> submitted = client_->SubmitCompile(CompileRequest(kBig));
  ASSERT_TRUE(submitted.ok());
  WaitFor(*client_, submitted->job().id(), [](const v1::Job& j) { return j.worker_pid() > 0; });
  cluster_->daemon().Signal(SIGTERM);
  EXPECT_EQ(cluster_->daemon().Wait(/*timeout_ms=*/600000), 0);
  EXPECT_THAT(cluster_->daemon().Log(), HasSubstr("kilnd: stopped"));
  ASSERT_TRUE(cluster_->StartDaemon().ok());
  absl::StatusOr<std::unique_ptr<client::KilnClient>> c = cluster_->Client();
  absl::StatusOr<v1::Job> job = (*c)->GetJob(submitted->job().id());
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED) << job->reason();
}

// Tokens with separate roles, over mutual TLS with certificates made by openssl.
class SecureServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = Cluster::TmpPath("pki");
    std::string d = dir_;
    std::string script = absl::StrCat(
        "set -e; cd ", d, ";",
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=kiln-test-ca "
        "-keyout ca.key -out ca.pem 2>/dev/null;",
        "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost' > san.ext;",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key "
        "-out server.csr 2>/dev/null;",
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-extfile san.ext -out server.pem 2>/dev/null;",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=client -keyout client.key "
        "-out client.csr 2>/dev/null;",
        "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-out client.pem 2>/dev/null;",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=other-client -keyout other.key "
        "-out other.csr 2>/dev/null;",
        "openssl x509 -req -in other.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-out other.pem 2>/dev/null;",
        "echo client-secret > client.tokens; echo agent-secret > agent.tokens;",
        "chmod 600 client.tokens agent.tokens;",
        "echo client-secret > client.token; echo agent-secret > agent.token;");
    ASSERT_EQ(std::system(script.c_str()), 0);
  }

  runtime::ChannelOptions Tls(const std::string& token) {
    runtime::ChannelOptions o;
    o.tls_ca = dir_ + "/ca.pem";
    o.tls_cert = dir_ + "/client.pem";
    o.tls_key = dir_ + "/client.key";
    o.token = token;
    return o;
  }

  static std::string dir_;
};
std::string SecureServiceTest::dir_;

TEST_F(SecureServiceTest, TokensAndMutualTls) {
  Cluster cluster("secure");
  ASSERT_TRUE(
      cluster
          .StartDaemon({"--tls-cert", dir_ + "/server.pem", "--tls-key", dir_ + "/server.key",
                        "--tls-client-ca", dir_ + "/ca.pem", "--client-tokens",
                        dir_ + "/client.tokens", "--agent-tokens", dir_ + "/agent.tokens"})
          .ok());
  auto call = [&](runtime::ChannelOptions o) {
    absl::StatusOr<std::unique_ptr<client::KilnClient>> c = cluster.Client(o);
    EXPECT_TRUE(c.ok());
    return (*c)->ListJobs().status();
  };
  EXPECT_TRUE(call(Tls("client-secret")).ok());
  absl::Status missing = call(Tls(""));
  EXPECT_EQ(missing.code(), absl::StatusCode::kUnauthenticated) << missing;
  EXPECT_EQ(call(Tls("wrong")).code(), absl::StatusCode::kUnauthenticated);
  // The other role's token gets the answer an unknown token gets: a guess learns nothing.
  absl::Status role = call(Tls("agent-secret"));
  EXPECT_EQ(role.code(), absl::StatusCode::kUnauthenticated) << role;
  EXPECT_EQ(role.message(), call(Tls("wrong")).message());
  // Without a client certificate, or without TLS, there is no connection at all.
  runtime::ChannelOptions no_cert = Tls("client-secret");
  no_cert.tls_cert.clear();
  no_cert.tls_key.clear();
  EXPECT_EQ(call(no_cert).code(), absl::StatusCode::kUnavailable);
  runtime::ChannelOptions plain;
  plain.token = "client-secret";
  EXPECT_EQ(call(plain).code(), absl::StatusCode::kUnavailable);

  // An agent with the agent token registers; with the client token it is refused.
  std::vector<std::string> tls = {"--tls-ca",           dir_ + "/ca.pem", "--tls-cert",
                                  dir_ + "/client.pem", "--tls-key",      dir_ + "/client.key"};
  std::vector<std::string> bad = tls;
  bad.insert(bad.end(), {"--token", dir_ + "/client.token"});
  Process refused(
      {TestBinaries().agent, "--server", cluster.address(), "--device-key", "cpu", "--cache-dir",
       cluster.dir() + "/refused", "--token", dir_ + "/client.token", "--tls-ca", dir_ + "/ca.pem",
       "--tls-cert", dir_ + "/client.pem", "--tls-key", dir_ + "/client.key"},
      cluster.dir() + "/refused.log");
  EXPECT_TRUE(refused.WaitForLog("UNAUTHENTICATED: not an agent token of this server").ok())
      << refused.Log();
  std::vector<std::string> good = tls;
  good.insert(good.end(), {"--token", dir_ + "/agent.token"});
  absl::StatusOr<std::string> agent = cluster.StartAgent("cpu", good);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<std::unique_ptr<client::KilnClient>> c = cluster.Client(Tls("client-secret"));
  v1::Job compiled = CompileOk(**c, CompileRequest(kMlp));
  v1::SubmitProfileRequest profile;
  profile.mutable_artifact()->set_digest(compiled.artifact_digest());
  profile.set_device_key("cpu");
  profile.mutable_options()->set_repeat(2);
  absl::StatusOr<v1::SubmitResponse> submitted = (*c)->SubmitProfile(profile);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  absl::StatusOr<v1::Job> done = (*c)->Wait(submitted->job().id());
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->reason();
}

// Without tokens, agent certificates name the device keys they may serve (--agent-certs); a
// certificate that is not listed is no agent.
TEST_F(SecureServiceTest, AgentCertificatesServeOnlyTheirKeys) {
  Cluster cluster("mtls_agents");
  std::ofstream(cluster.dir() + "/agent.certs") << "client keys=board1\n";
  ASSERT_TRUE(cluster
                  .StartDaemon({"--tls-cert", dir_ + "/server.pem", "--tls-key",
                                dir_ + "/server.key", "--tls-client-ca", dir_ + "/ca.pem",
                                "--agent-certs", cluster.dir() + "/agent.certs"})
                  .ok());
  auto agent_with = [&](const std::string& cert, const std::string& key, const char* device,
                        const char* log) {
    return std::make_unique<Process>(
        std::vector<std::string>{TestBinaries().agent, "--server", cluster.address(),
                                 "--device-key", device, "--cache-dir", cluster.dir() + "/" + log,
                                 "--tls-ca", dir_ + "/ca.pem", "--tls-cert", dir_ + "/" + cert,
                                 "--tls-key", dir_ + "/" + key},
        cluster.dir() + "/" + log + ".log");
  };
  auto good = agent_with("client.pem", "client.key", "board1", "good");
  EXPECT_TRUE(good->WaitForLog("kiln-agent: registered as ").ok()) << good->Log();
  auto wrong_key = agent_with("client.pem", "client.key", "board2", "wrong_key");
  EXPECT_TRUE(wrong_key
                  ->WaitForLog("PERMISSION_DENIED: agent credential 'cert:client' may not serve "
                               "device key 'board2' (it may serve: board1)")
                  .ok())
      << wrong_key->Log();
  auto unlisted = agent_with("other.pem", "other.key", "board1", "unlisted");
  EXPECT_TRUE(unlisted->WaitForLog("UNAUTHENTICATED: not an agent certificate of this server").ok())
      << unlisted->Log();
}

TEST_F(SecureServiceTest, WithMutualTlsAloneTheCertificateIsThePrincipal) {
  Cluster cluster("mtls_owners");
  ASSERT_TRUE(cluster
                  .StartDaemon({"--tls-cert", dir_ + "/server.pem", "--tls-key",
                                dir_ + "/server.key", "--tls-client-ca", dir_ + "/ca.pem"})
                  .ok());
  runtime::ChannelOptions other = Tls("");
  other.tls_cert = dir_ + "/other.pem";
  other.tls_key = dir_ + "/other.key";
  absl::StatusOr<std::unique_ptr<client::KilnClient>> mine = cluster.Client(Tls(""));
  absl::StatusOr<std::unique_ptr<client::KilnClient>> theirs = cluster.Client(other);
  ASSERT_TRUE(mine.ok() && theirs.ok());
  v1::Job compiled = CompileOk(**mine, CompileRequest(kMlp));
  EXPECT_EQ(compiled.client(), "cert:client");
  EXPECT_TRUE((*mine)->GetJob(compiled.id()).ok());
  EXPECT_EQ((*theirs)->GetJob(compiled.id()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*theirs)->DownloadArtifact(compiled.artifact_digest()).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE((*theirs)->ListJobs()->empty());
  EXPECT_EQ((*mine)->ListJobs()->size(), 1u);
}

}  // namespace
}  // namespace kiln::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 4) {
    std::fprintf(stderr, "usage: service_e2e_test KILND KILN_AGENT KILN\n");
    return 2;
  }
  kiln::testing::TestBinaries() = {argv[1], argv[2], argv[3], argc > 4 ? argv[4] : ""};
  return RUN_ALL_TESTS();
}
