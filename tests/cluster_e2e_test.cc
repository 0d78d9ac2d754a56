// The cluster as deployed: real nginx with deploy/nginx/kiln.conf in front of two kilnd
// instances on one real PostgreSQL database — one active, one a standby — and an agent and a
// client that only know nginx's address. Compile, watch and inference go through nginx; the
// active instance is killed with SIGKILL; the standby takes over, the agent reconnects through
// nginx, and every earlier job and a new inference are answered there.
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/agent/tensor_value.h"
#include "runtime/npy.h"
#include "tests/postgres_server.h"
#include "tests/service_cluster.h"

namespace kiln::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// nginx in the foreground with the deployment's server block, its upstream servers and listen
// port replaced by these.
class Nginx {
 public:
  Nginx(const std::vector<int>& upstream_ports, const std::string& dir)
      : port_(Cluster::FreePort()) {
    std::string site = ReadAll("deploy/nginx/kiln.conf");
    std::string servers;
    for (int p : upstream_ports) {
      absl::StrAppend(&servers, "    server 127.0.0.1:", p, " max_fails=1 fail_timeout=2s;\n");
    }
    site = std::regex_replace(site, std::regex(R"(    server 10\.0\.0\.11:7077[^\n]*\n)"), servers);
    site = std::regex_replace(site, std::regex(R"(    server 10\.0\.0\.\d+:7077[^\n]*\n)"), "");
    site = std::regex_replace(site, std::regex(R"(listen 7070 http2;)"),
                              absl::StrCat("listen 127.0.0.1:", port_, " http2;"));
    std::string conf = absl::StrCat(
        geteuid() == 0 ? "user root;\n" : "", "daemon off;\nworker_processes 1;\npid ", dir,
        "/nginx.pid;\nerror_log ", dir, "/error.log info;\nevents { worker_connections 1024; }\n",
        "http {\n  access_log off;\n  client_body_temp_path ", dir, "/body;\n",
        "  proxy_temp_path ", dir, "/proxy;\n  fastcgi_temp_path ", dir, "/fastcgi;\n",
        "  uwsgi_temp_path ", dir, "/uwsgi;\n  scgi_temp_path ", dir, "/scgi;\n", site, "}\n");
    std::ofstream(dir + "/nginx.conf") << conf;
    process_ = std::make_unique<Process>(
        std::vector<std::string>{"/usr/sbin/nginx", "-c", dir + "/nginx.conf", "-p", dir},
        dir + "/nginx.out");
    error_log_ = dir + "/error.log";
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  std::string Log() const { return ReadAll(error_log_); }

 private:
  int port_;
  std::string error_log_;
  std::unique_ptr<Process> process_;
};

runtime::Tensor Npy(const std::string& path) {
  absl::StatusOr<runtime::Tensor> t = runtime::ReadNpy(ReadAll(path), path);
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

TEST(ClusterTest, ThroughNginxTheStandbyTakesOverFromAKilledActiveInstance) {
  absl::StatusOr<std::unique_ptr<kiln::testing::PostgresServer>> postgres =
      kiln::testing::PostgresServer::Start();
  ASSERT_TRUE(postgres.ok()) << postgres.status();
  absl::StatusOr<std::string> url = (*postgres)->CreateDatabase("kiln");
  ASSERT_TRUE(url.ok()) << url.status();

  Cluster active("active"), standby("standby");
  active.set_port(Cluster::FreePort());
  standby.set_port(Cluster::FreePort());
  ASSERT_TRUE(active.StartDaemon({"--postgres", *url}, /*same_port=*/true).ok());
  absl::Status standby_started;
  std::thread waiting([&] { standby_started = standby.StartDaemon({"--postgres", *url}, true); });
  for (int i = 0;
       i < 300 && ReadAll(standby.dir() + "/kilnd.0.log").find("\"standby\"") == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Nginx nginx({active.port(), standby.port()}, Cluster::TmpPath("nginx"));

  // The agent and the client know only nginx.
  Process agent({TestBinaries().agent, "--server", nginx.address(), "--device-key", "cpu",
                 "--cache-dir", Cluster::TmpPath("agent-cache"), "--max-backoff-ms", "500"},
                Cluster::TmpPath("agent") + "/agent.log");
  ASSERT_TRUE(agent.WaitForLog("kiln-agent: registered as ").ok()) << nginx.Log();
  runtime::ChannelOptions through;
  through.address = nginx.address();
  absl::StatusOr<std::unique_ptr<client::KilnClient>> client = client::KilnClient::Connect(through);
  ASSERT_TRUE(client.ok()) << client.status();

  v1::SubmitCompileRequest compile;
  *compile.mutable_module() = *client::ModuleSourceFromFile("tests/models/tiny_resnet.onnx");
  absl::StatusOr<v1::SubmitResponse> submitted = (*client)->SubmitCompile(compile);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  absl::StatusOr<v1::Job> compiled = (*client)->Wait(submitted->job().id());  // WatchJob
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_EQ(compiled->state(), v1::JOB_STATE_SUCCEEDED) << compiled->reason();

  auto infer = [&]() -> absl::StatusOr<v1::Job> {
    v1::SubmitInferenceRequest request;
    request.mutable_artifact()->set_digest(compiled->artifact_digest());
    request.set_device_key("cpu");
    runtime::TensorToProto(Npy("tests/models/tiny_resnet.input.npy"), "", request.add_inputs());
    absl::StatusOr<v1::SubmitResponse> s = (*client)->SubmitInference(request);
    if (!s.ok()) return s.status();
    return (*client)->Wait(s->job().id());
  };
  auto expect_reference = [](const v1::Job& job) {
    ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
    absl::StatusOr<runtime::Tensor> out = runtime::TensorFromProto(job.inference().outputs(0));
    ASSERT_TRUE(out.ok()) << out.status();
    runtime::Tensor want = Npy("tests/models/tiny_resnet.output.npy");
    for (int64_t i = 0; i < want.NumElements(); ++i) {
      const float w = static_cast<const float*>(want.data())[i];
      ASSERT_NEAR(static_cast<const float*>(out->data())[i], w, 1e-4 * (1 + std::abs(w)));
    }
  };
  absl::StatusOr<v1::Job> first = infer();
  ASSERT_TRUE(first.ok()) << first.status();
  expect_reference(*first);

  // The active instance dies; the standby takes over and starts listening.
  active.daemon().Signal(SIGKILL);
  active.daemon().Wait();
  waiting.join();
  ASSERT_TRUE(standby_started.ok()) << standby_started;

  // The agent reconnects through nginx, now to the new active instance.
  bool reconnected = false;
  for (int i = 0; i < 150 && !reconnected; ++i) {
    absl::StatusOr<std::vector<v1::Device>> devices =
        Retry([&] { return (*client)->ListDevices(); });
    reconnected = devices.ok() && devices->size() == 1 && (*devices)[0].agents_connected() == 1;
    if (!reconnected) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(reconnected) << agent.Log();
  for (const std::string& id : {compiled->id(), first->id()}) {
    absl::StatusOr<v1::Job> earlier = Retry([&] { return (*client)->GetJob(id); });
    ASSERT_TRUE(earlier.ok()) << earlier.status();
    EXPECT_EQ(earlier->state(), v1::JOB_STATE_SUCCEEDED);
  }
  absl::StatusOr<v1::Job> after = Retry(infer);
  ASSERT_TRUE(after.ok()) << after.status();
  expect_reference(*after);
}

}  // namespace
}  // namespace kiln::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 4) {
    std::fprintf(stderr, "usage: cluster_e2e_test KILND KILN_AGENT KILN\n");
    return 2;
  }
  kiln::testing::TestBinaries() = {argv[1], argv[2], argv[3], ""};
  return RUN_ALL_TESTS();
}
