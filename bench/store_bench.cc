// What the PostgreSQL store costs against the embedded SQLite store, on the paths that write:
// a cached compile (a job row committed before the answer) and a GetJob and a ListJobs read, on
// one kilnd each, loopback, PostgreSQL started here with fsync on (as a server would run it).
// Run: bazel run --config=opt //bench:store_bench
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "client/kiln_client.h"
#include "tests/postgres_server.h"
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

bool Measure(const char* name, Cluster& cluster) {
  kiln::runtime::ChannelOptions options;
  options.address = cluster.address();
  auto client = kiln::client::KilnClient::Connect(options);
  if (!client.ok()) return false;
  kiln::v1::SubmitCompileRequest compile;
  *compile.mutable_module() = *kiln::client::ModuleSourceFromFile("tests/models/tiny_resnet.onnx");
  auto first = (*client)->SubmitCompile(compile);
  if (!first.ok() || !(*client)->Wait(first->job().id()).ok()) return false;
  std::vector<double> hits, gets, lists;
  for (int i = 0; i < 200; ++i) {
    Clock::time_point t = Clock::now();
    auto hit = (*client)->SubmitCompile(compile);
    hits.push_back(Ms(t));
    if (!hit.ok() || !hit->job().cache_hit()) return false;
    t = Clock::now();
    if (!(*client)->GetJob(hit->job().id()).ok()) return false;
    gets.push_back(Ms(t));
  }
  for (int i = 0; i < 50; ++i) {
    Clock::time_point t = Clock::now();
    if (!(*client)->ListJobs(kiln::v1::JOB_STATE_UNSPECIFIED, 100).ok()) return false;
    lists.push_back(Ms(t));
  }
  std::printf("%-12s %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f\n", name, Percentile(hits, 0.5),
              Percentile(hits, 0.99), Percentile(gets, 0.5), Percentile(gets, 0.99),
              Percentile(lists, 0.5), Percentile(lists, 0.99));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: store_bench KILND\n");
    return 2;
  }
  kiln::testing::TestBinaries().kilnd = argv[1];
  std::printf("kilnd's store: a cached compile (a job row committed), GetJob, ListJobs(100), ms\n");
  std::printf("%-12s %10s %10s %10s %10s %10s %10s\n", "store", "hit p50", "hit p99", "get p50",
              "get p99", "list p50", "list p99");
  Cluster sqlite("store_bench_sqlite");
  if (!sqlite.StartDaemon().ok() || !Measure("sqlite", sqlite)) return 1;
  auto postgres = kiln::testing::PostgresServer::Start(/*fsync=*/true);
  if (!postgres.ok()) {
    std::fprintf(stderr, "%s\n", postgres.status().ToString().c_str());
    return 1;
  }
  auto url = (*postgres)->CreateDatabase("kiln");
  Cluster pg("store_bench_postgres");
  if (!url.ok() || !pg.StartDaemon({"--postgres", *url}).ok() || !Measure("postgresql", pg)) {
    return 1;
  }
  return 0;
}
