// Cluster throughput: cached compiles (each a committed job row) per second through nginx in
// front of 1, 2 and 3 kilnd instances on one PostgreSQL database (fsync on), all on this
// machine, from 8 client threads for 5 s each; beside them one kilnd answering directly, on
// SQLite and on PostgreSQL, for what the store and the balancer cost. On a 2-core machine the
// instances, nginx, PostgreSQL and the clients share the same cores, so more instances cannot
// add throughput here: the point is what one more hop and a shared database cost, measured.
// Run: bazel run --config=opt //bench:cluster_bench
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/kiln_client.h"
#include "tests/nginx.h"
#include "tests/postgres_server.h"
#include "tests/service_cluster.h"

namespace {

// A flood of one client's submissions: its per-client limits off.
const std::vector<std::string> kNoClientLimits = {"--max-jobs-per-minute", "0", "--max-stored-jobs",
                                                  "0"};

std::vector<std::string> With(std::vector<std::string> flags) {
  flags.insert(flags.end(), kNoClientLimits.begin(), kNoClientLimits.end());
  return flags;
}

using Clock = std::chrono::steady_clock;
using kiln::testing::Cluster;

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// 8 clients submit the same compile (a cache hit) for `seconds`, each a new job.
bool Measure(const std::string& label, const std::string& address, int seconds) {
  kiln::v1::SubmitCompileRequest compile;
  *compile.mutable_module() = *kiln::client::ModuleSourceFromFile("tests/models/tiny_resnet.onnx");
  kiln::runtime::ChannelOptions options;
  options.address = address;
  {  // warm: the first compile builds, and each instance sees the request once
    auto client = kiln::client::KilnClient::Connect(options);
    if (!client.ok()) return false;
    for (int i = 0; i < 6; ++i) {
      auto done = (*client)->Compile(compile);
      if (!done.ok() || done->state() != kiln::v1::JOB_STATE_SUCCEEDED) {
        std::fprintf(stderr, "%s: warm-up compile failed\n", label.c_str());
        return false;
      }
    }
  }
  constexpr int kClients = 8;
  std::mutex mu;
  std::vector<double> latencies_ms;
  std::atomic<int> misses{0}, errors{0};
  const Clock::time_point end = Clock::now() + std::chrono::seconds(seconds);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&] {
      auto client = kiln::client::KilnClient::Connect(options);
      if (!client.ok()) {
        ++errors;
        return;
      }
      std::vector<double> mine;
      while (Clock::now() < end) {
        Clock::time_point t = Clock::now();
        auto hit = (*client)->SubmitCompile(compile);
        mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
        if (!hit.ok()) {
          if (errors++ == 0) std::fprintf(stderr, "%s\n", hit.status().ToString().c_str());
        } else if (!hit->job().cache_hit()) {
          ++misses;
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      latencies_ms.insert(latencies_ms.end(), mine.begin(), mine.end());
    });
  }
  for (std::thread& t : clients) t.join();
  std::printf("%-34s %12.0f %10.2f %10.2f %7d %7d\n", label.c_str(),
              static_cast<double>(latencies_ms.size()) / seconds, Percentile(latencies_ms, 0.5),
              Percentile(latencies_ms, 0.99), misses.load(), errors.load());
  return errors == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cluster_bench KILND\n");
    return 2;
  }
  kiln::testing::TestBinaries().kilnd = argv[1];
  constexpr int kSeconds = 5;
  std::printf("cached compiles from 8 clients, %d s each (this machine: %u cores)\n", kSeconds,
              std::thread::hardware_concurrency());
  std::printf("%-34s %12s %10s %10s %7s %7s\n", "setup", "compiles/s", "p50 ms", "p99 ms", "misses",
              "errors");
  {
    Cluster sqlite("cluster_bench_sqlite");
    if (!sqlite.StartDaemon(With({})).ok()) return 1;
    if (!Measure("1 kilnd, SQLite, direct", sqlite.address(), kSeconds)) return 1;
  }
  auto postgres = kiln::testing::PostgresServer::Start(/*fsync=*/true);
  if (!postgres.ok()) {
    std::fprintf(stderr, "%s\n", postgres.status().ToString().c_str());
    return 1;
  }
  auto url = (*postgres)->CreateDatabase("kiln");
  if (!url.ok()) return 1;
  std::vector<std::unique_ptr<Cluster>> instances;
  for (int n = 1; n <= 3; ++n) {
    instances.push_back(std::make_unique<Cluster>(absl::StrCat("cluster_bench_", n)));
    if (!instances.back()->StartDaemon(With({"--postgres", *url})).ok()) return 1;
    if (n == 1 && !Measure("1 kilnd, PostgreSQL, direct", instances[0]->address(), kSeconds)) {
      return 1;
    }
    std::vector<int> ports;
    for (const auto& i : instances) ports.push_back(i->port());
    kiln::testing::Nginx nginx(ports, Cluster::TmpPath(absl::StrCat("cluster_bench_nginx_", n)));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // nginx listening
    if (!Measure(absl::StrCat("nginx -> ", n, " kilnd, PostgreSQL"), nginx.address(), kSeconds)) {
      std::fprintf(stderr, "%s\n", nginx.Log().c_str());
      return 1;
    }
  }
  return 0;
}
