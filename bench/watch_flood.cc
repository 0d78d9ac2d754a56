// Streams at scale: a bounded flood of WatchJob streams held open on one kilnd (loopback), and
// what the other calls cost meanwhile. WatchJob runs on gRPC's callback API, so an open watcher
// is a reactor, not a thread. For 0, 1,000, 5,000 and 10,000 open watchers: kilnd's threads,
// GetServerInfo p50/p99 and a cached compile's p50/p99; then the same with 1,000 agents' Connect
// streams (registered, heartbeating) beside the watchers; then the job ends and the time until
// every watcher has its last event. Run: bazel run --config=opt //bench:watch_flood
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/kiln_client.h"
#include "proto/kiln/v1/agent.grpc.pb.h"
#include "proto/kiln/v1/service.grpc.pb.h"
#include "tests/service_cluster.h"

namespace {

using Clock = std::chrono::steady_clock;
using kiln::testing::Cluster;

double Ms(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

int Threads(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

// Counts watchers that saw their first event and those that finished.
struct Tally {
  std::mutex mu;
  std::condition_variable cv;
  int started = 0, finished = 0, failed = 0;
};

// One WatchJob stream on the client's callback API: no thread per stream here either.
class Watcher : public grpc::ClientReadReactor<kiln::v1::JobEvent> {
 public:
  Watcher(kiln::v1::Kiln::Stub* stub, const std::string& job, Tally* tally) : tally_(tally) {
    request_.set_job_id(job);
    stub->async()->WatchJob(&context_, &request_, this);
    StartRead(&event_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream ended: OnDone follows
    if (first_) {
      first_ = false;
      std::lock_guard<std::mutex> lock(tally_->mu);
      ++tally_->started;
      tally_->cv.notify_all();
    }
    StartRead(&event_);
  }
  void OnDone(const grpc::Status& s) override {
    std::lock_guard<std::mutex> lock(tally_->mu);
    ++tally_->finished;
    if (!s.ok()) ++tally_->failed;
    tally_->cv.notify_all();
  }
  void Cancel() { context_.TryCancel(); }

 private:
  grpc::ClientContext context_;
  kiln::v1::WatchJobRequest request_;
  kiln::v1::JobEvent event_;
  Tally* tally_;
  bool first_ = true;
};

// One agent's Connect stream: registers, then heartbeats when Beat() is called (one write at a
// time); counts itself registered once kilnd answers.
class FloodAgent : public grpc::ClientBidiReactor<kiln::v1::AgentMessage, kiln::v1::ServerMessage> {
 public:
  FloodAgent(kiln::v1::AgentService::Stub* stub, int n, Tally* tally) : tally_(tally) {
    stub->async()->Connect(&context_, this);
    out_.mutable_register_()->set_device_key(absl::StrCat("flood-", n % 100));
    writing_ = true;
    StartWrite(&out_);
    StartRead(&in_);
    StartCall();
  }
  void OnWriteDone(bool /*ok*/) override { writing_ = false; }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    if (in_.has_registered() && !registered_) {
      registered_ = true;
      std::lock_guard<std::mutex> lock(tally_->mu);
      ++tally_->started;
      tally_->cv.notify_all();
    }
    StartRead(&in_);
  }
  void OnDone(const grpc::Status& s) override {
    std::lock_guard<std::mutex> lock(tally_->mu);
    ++tally_->finished;
    if (!s.ok() && !cancelled_) ++tally_->failed;
    tally_->cv.notify_all();
  }
  void Beat() {
    if (writing_ || !registered_) return;
    writing_ = true;
    out_.Clear();
    out_.mutable_heartbeat()->set_unix_ms(1);
    StartWrite(&out_);
  }
  void Cancel() {
    cancelled_ = true;
    context_.TryCancel();
  }

 private:
  grpc::ClientContext context_;
  kiln::v1::AgentMessage out_;
  kiln::v1::ServerMessage in_;
  Tally* tally_;
  std::atomic<bool> writing_{false}, registered_{false}, cancelled_{false};
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: watch_flood KILND\n");
    return 2;
  }
  kiln::testing::TestBinaries().kilnd = argv[1];
  Cluster cluster("watch_flood");
  // Agents heartbeat every 2 s (and are dropped after 10 s without one).
  if (!cluster.StartDaemon({"--max-deadline-s", "3600", "--heartbeat-ms", "2000"}).ok()) return 1;
  kiln::runtime::ChannelOptions options;
  options.address = cluster.address();
  auto client = kiln::client::KilnClient::Connect(options);
  if (!client.ok()) return 1;

  // The watched job: a tune for a device no agent serves waits (visibly) until cancelled.
  kiln::v1::SubmitTuneRequest tune;
  *tune.mutable_module() = *kiln::client::ModuleSourceFromFile("tests/models/mlp_784_128_10.onnx");
  tune.set_device_key("nowhere");
  tune.set_trials(8);
  tune.set_deadline_ms(3600 * 1000);
  auto job = (*client)->SubmitTune(tune);
  // The cached compile that competes with the watchers.
  kiln::v1::SubmitCompileRequest compile;
  *compile.mutable_module() = *kiln::client::ModuleSourceFromFile("tests/models/tiny_resnet.onnx");
  auto warm = (*client)->SubmitCompile(compile);
  if (!job.ok() || !warm.ok() || !(*client)->Wait(warm->job().id()).ok()) {
    std::fprintf(stderr, "setup failed\n");
    return 1;
  }

  // The watchers' connections: several, as many clients would have.
  constexpr int kChannels = 16;
  std::vector<std::unique_ptr<kiln::v1::Kiln::Stub>> stubs;
  for (int c = 0; c < kChannels; ++c) {
    grpc::ChannelArguments args;
    args.SetInt("kiln.channel", c);  // distinct arguments: distinct connections
    stubs.push_back(kiln::v1::Kiln::NewStub(
        grpc::CreateCustomChannel(cluster.address(), grpc::InsecureChannelCredentials(), args)));
  }
  auto info_stub = kiln::v1::Kiln::NewStub(
      grpc::CreateChannel(cluster.address(), grpc::InsecureChannelCredentials()));

  std::printf("WatchJob streams held open on one kilnd (loopback, this machine)\n");
  std::printf("%9s %8s %14s %14s %14s %14s %10s\n", "watchers", "threads", "info p50 ms",
              "info p99 ms", "compile p50 ms", "compile p99 ms", "open s");
  Tally tally, agent_tally;
  std::vector<std::unique_ptr<Watcher>> watchers;
  std::vector<std::unique_ptr<FloodAgent>> agents;
  std::atomic<bool> beating{true};
  std::thread heartbeats([&] {
    while (beating) {
      for (size_t i = 0; i < agents.size(); ++i) agents[i]->Beat();
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    }
  });
  auto agent_stub = kiln::v1::AgentService::NewStub(
      grpc::CreateChannel(cluster.address(), grpc::InsecureChannelCredentials()));
  // The last row adds 1,000 agents (their Connect streams) to the 10,000 watchers.
  for (int target : {0, 1000, 5000, 10000, -1}) {
    if (target < 0) {
      agents.reserve(1000);  // the heartbeat thread reads it: no reallocation
      for (int i = 0; i < 1000; ++i) {
        agents.push_back(std::make_unique<FloodAgent>(agent_stub.get(), i, &agent_tally));
      }
      std::unique_lock<std::mutex> lock(agent_tally.mu);
      agent_tally.cv.wait_for(lock, std::chrono::seconds(120),
                              [&] { return agent_tally.started >= 1000; });
      if (agent_tally.started < 1000) {
        std::fprintf(stderr, "only %d of 1000 agents registered\n", agent_tally.started);
        return 1;
      }
      target = 10000;
    }
    Clock::time_point opening = Clock::now();
    while (static_cast<int>(watchers.size()) < target) {
      watchers.push_back(std::make_unique<Watcher>(stubs[watchers.size() % kChannels].get(),
                                                   job->job().id(), &tally));
    }
    {
      std::unique_lock<std::mutex> lock(tally.mu);
      tally.cv.wait_for(lock, std::chrono::seconds(120), [&] { return tally.started >= target; });
      if (tally.started < target || tally.failed > 0) {
        std::fprintf(stderr, "only %d of %d watchers opened (%d failed)\n", tally.started, target,
                     tally.failed);
        return 1;
      }
    }
    const double open_s = Ms(opening) / 1000;
    std::vector<double> info, cached;
    for (int i = 0; i < 200; ++i) {
      grpc::ClientContext context;
      kiln::v1::ServerInfo reply;
      Clock::time_point t = Clock::now();
      info_stub->GetServerInfo(&context, kiln::v1::GetServerInfoRequest(), &reply);
      info.push_back(Ms(t));
    }
    for (int i = 0; i < 50; ++i) {
      Clock::time_point t = Clock::now();
      auto hit = (*client)->SubmitCompile(compile);
      cached.push_back(Ms(t));
      if (!hit.ok() || !hit->job().cache_hit()) {
        std::fprintf(stderr, "the cached compile was not a cache hit\n");
        return 1;
      }
    }
    std::printf("%9d%s %8d %14.2f %14.2f %14.2f %14.2f %10.1f\n", target,
                agents.empty() ? "" : " +1000 agents", Threads(cluster.daemon().pid()),
                Percentile(info, 0.5), Percentile(info, 0.99), Percentile(cached, 0.5),
                Percentile(cached, 0.99), open_s);
  }
  // The agents are still connected (none was dropped for a missed heartbeat).
  kiln::v1::ListDevicesRequest list;
  kiln::v1::ListDevicesResponse listed;
  grpc::ClientContext list_context;
  info_stub->ListDevices(&list_context, list, &listed);
  int connected = 0;
  for (const kiln::v1::Device& d : listed.devices()) connected += d.agents_connected();
  std::printf("agents connected after the measurements: %d of 1000\n", connected);
  beating = false;
  heartbeats.join();
  for (auto& a : agents) a->Cancel();
  // The job ends: every watcher gets its last event and its stream closes.
  Clock::time_point cancel = Clock::now();
  if (!(*client)->Cancel(job->job().id(), "bench done").ok()) return 1;
  {
    std::unique_lock<std::mutex> lock(tally.mu);
    tally.cv.wait_for(lock, std::chrono::seconds(120),
                      [&] { return tally.finished >= static_cast<int>(watchers.size()); });
    std::printf("job cancelled: %d of %zu watchers got the end in %.0f ms (%d failed)\n",
                tally.finished, watchers.size(), Ms(cancel), tally.failed);
  }
  return 0;
}
