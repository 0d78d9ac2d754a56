// What the service's end-to-end tests share: the models they compile, requests, waiting on a
// job, metrics, running an artifact in process, and the ServiceTest fixture (a Cluster whose
// daemon may have token files). Test-only.
#ifndef KILN_TESTS_SERVICE_TEST_UTIL_H_
#define KILN_TESTS_SERVICE_TEST_UTIL_H_

#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/kiln/v1/agent.grpc.pb.h"
#include "runtime/agent/tensor_value.h"
#include "runtime/artifact.h"
#include "runtime/npy.h"
#include "tests/cluster_test.h"
#include "tests/service_cluster.h"

namespace kiln::testing {

inline constexpr char kMlp[] = "compiler/script/testdata/tvm_mlp.py";
inline constexpr char kMlpInput[] = "runtime/testdata/mlp_dynamic_batch.input.npy";
inline constexpr char kCnn[] = "tests/models/tiny_resnet.onnx";
inline constexpr char kCnnInput[] = "tests/models/tiny_resnet.input.npy";
inline constexpr char kCnnOutput[] = "tests/models/tiny_resnet.output.npy";
inline constexpr char kBig[] = "tests/models/mobilenet_v2.onnx";  // seconds to compile

// //server:kiln-worker-test-hooks as kilnd's --worker takes it: a module named
// "kiln-test-abort-in-frontend" aborts in the front end, "kiln-test-spin-in-frontend" spins there.
inline std::string WorkerWithTestHooks() {
  return std::filesystem::absolute(TestBinaries().worker_with_test_hooks).string();
}

// A process's resident and peak memory (VmRSS, VmHWM), in MB.
inline std::pair<int64_t, int64_t> Memory(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  int64_t rss = 0, peak = 0;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) rss = std::stoll(line.substr(6)) / 1024;
    if (line.rfind("VmHWM:", 0) == 0) peak = std::stoll(line.substr(6)) / 1024;
  }
  return {rss, peak};
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline runtime::Tensor Npy(const std::string& path) {
  absl::StatusOr<runtime::Tensor> t = runtime::ReadNpy(ReadFile(path), path);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

inline v1::SubmitCompileRequest CompileRequest(const std::string& path) {
  v1::SubmitCompileRequest request;
  absl::StatusOr<v1::ModuleSource> source = client::ModuleSourceFromFile(path);
  EXPECT_TRUE(source.ok()) << source.status();
  *request.mutable_module() = *source;
  request.set_target("llvm");
  return request;
}

// Compiles and expects success.
inline v1::Job CompileOk(client::KilnClient& client, v1::SubmitCompileRequest request) {
  absl::StatusOr<v1::Job> job = client.Compile(std::move(request));
  EXPECT_TRUE(job.ok()) << job.status();
  if (!job.ok()) return v1::Job();
  EXPECT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED) << job->reason();
  EXPECT_EQ(job->artifact_digest().size(), 64u);
  return *job;
}

// Waits until `predicate(job)` holds, polling GetJob.
inline v1::Job WaitFor(client::KilnClient& client, const std::string& id,
                       const std::function<bool(const v1::Job&)>& predicate,
                       int timeout_ms = 60000) {
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
inline double MetricValue(const std::string& metrics, const std::string& name) {
  size_t at = metrics.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(metrics.substr(at + name.size() + 2));
}

// Runs `digest` in this process on `inputs`: what the agent's answer must equal.
inline std::vector<runtime::Tensor> RunInProcess(const std::string& artifact,
                                                 const std::vector<runtime::Tensor>& inputs) {
  absl::StatusOr<runtime::LoadedArtifact> loaded =
      runtime::LoadArtifact(artifact, std::make_shared<runtime::ThreadPool>(1));
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  std::vector<runtime::Value> args(inputs.begin(), inputs.end());
  absl::StatusOr<runtime::Value> out = loaded->vm->Invoke("main", args);
  EXPECT_TRUE(out.ok()) << out.status();
  return {*out->as_tensor()};
}

inline void ExpectClose(const runtime::Tensor& got, const runtime::Tensor& want, double tolerance) {
  ASSERT_EQ(got.NumElements(), want.NumElements());
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    float w = static_cast<const float*>(want.data())[i];
    ASSERT_NEAR(static_cast<const float*>(got.data())[i], w, tolerance * (1 + std::abs(w))) << i;
  }
}

// Token files must be readable by their owner only (kilnd refuses others).
inline void PrivateFile(const std::string& path) {
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

}  // namespace kiln::testing

#endif  // KILN_TESTS_SERVICE_TEST_UTIL_H_
