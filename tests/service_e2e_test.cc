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
#include "tests/service_test_util.h"

namespace kiln::testing {
namespace {

using ::testing::HasSubstr;

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
  // And the CNN's answer is PyTorch's: the listing names the last job, GetJob has its outputs.
  absl::StatusOr<std::vector<v1::Job>> jobs = client_->ListJobs(v1::JOB_STATE_SUCCEEDED, 1);
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  absl::StatusOr<v1::Job> last = client_->GetJob((*jobs)[0].id());
  ASSERT_TRUE(last.ok()) << last.status();
  ExpectClose(*runtime::TensorFromProto(last->inference().outputs(0)), Npy(kCnnOutput), 1e-4);
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
  EXPECT_THAT(spun->reason(), HasSubstr("CPU-time budget of 2 s (--worker-cpu-s)"));

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
  EXPECT_EQ(over->error_code(), static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(over->reason(), HasSubstr("memory limit"));
  EXPECT_THAT(over->reason(), HasSubstr("1536 MiB"));

  EXPECT_TRUE(client_->ServerInfo().ok());
  CompileOk(*client_, CompileRequest(kMlp));
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
  int64_t peak_mb = Memory(cluster_->daemon().pid()).second;
  EXPECT_GT(peak_mb, 0);
  EXPECT_LT(peak_mb, 512) << "kilnd's own peak RSS";
}

TEST_F(ServiceTest, AnAgentRetriesWithDoublingBackoffUntilTheDaemonComes) {
  // A daemon's address before the daemon: the agent retries 100, 200, 400 ms ... up to its cap.
  cluster_ = std::make_unique<Cluster>("backoff");
  ASSERT_TRUE(cluster_->StartDaemon().ok());
  std::string address = cluster_->address();
  cluster_->StopDaemon();
  Process agent({TestBinaries().agent, "--server", address, "--device-key", "cpu", "--cache-dir",
                 cluster_->dir() + "/agent", "--max-backoff-ms", "800", "--trusted-keys",
                 Cluster::SigningKeyPath() + ".pub"},
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
  add(  // issue 52, finding 6: half a character in the diagnostic lost it (INTERNAL)
      failed, "TVMScript with a character it does not know",
      [](auto& r) {
        r.mutable_module()->set_tvmscript("x = 1 + \xc3\xa9\n");
        r.mutable_module()->set_name("accent.py");
      },
      absl::StatusCode::kInvalidArgument, "unexpected character '\xc3\xa9' (U+00E9)");
  add(  // issue 52, finding 8: it compiled
      failed, "a buffer of a negative dimension",
      [](auto& r) {
        r.mutable_module()->set_tvmscript(
            "@I.ir_module\nclass Module:\n    @T.prim_func\n"
            "    def f(A: T.Buffer((-8,), \"float32\")):\n        A[0] = T.float32(1)\n");
      },
      absl::StatusCode::kInvalidArgument, "buffer 'A' dimension 0 is -8");
  frontend::testing::GraphBuilder latin1(13);  // a node name that is no UTF-8, quoted back
  latin1.Input("x", 1, {2, 2}).Output("y", 1).Node("Unique", {"x"}, {"y"});
  onnx::ModelProto latin1_model = latin1.model();
  latin1_model.mutable_graph()->mutable_node(0)->set_name("caf\xe9");
  std::string latin1_bytes = latin1_model.SerializeAsString();
  add(
      failed, "ONNX node name that is no UTF-8",
      [&](auto& r) { r.mutable_module()->set_onnx(latin1_bytes); },
      absl::StatusCode::kUnimplemented, "ONNX node 'caf\xef\xbf\xbd' (Unique");
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
      refused, "negative deadline",  // issue 52, finding 8: it became the default silently
      [&](auto& r) {
        r.mutable_module()->set_tvmscript(ir);
        r.set_deadline_ms(-5);
      },
      absl::StatusCode::kInvalidArgument, "deadline_ms: -5 is negative");
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

}  // namespace
}  // namespace kiln::testing
