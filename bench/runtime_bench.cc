// The parallel launch generated code uses, against OpenMP (libgomp) measured in the same run:
// the fixed cost of one launch with trivial tasks, and a small real workload (a 64K-element add
// split in chunks) where launch cost still matters.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <atomic>
#include <vector>

#include "runtime/thread_pool.h"

namespace kiln::runtime {
namespace {

constexpr int kThreads = 2;

void BM_ThreadPoolLaunch(benchmark::State& state) {
  ThreadPool pool(kThreads);
  std::atomic<int64_t> sink{0};
  std::function<int32_t(int64_t)> task = [&](int64_t i) {
    sink.fetch_add(i, std::memory_order_relaxed);
    return 0;
  };
  for (auto _ : state) pool.ParallelFor(kThreads, task);
}
BENCHMARK(BM_ThreadPoolLaunch);

void BM_OpenMPLaunch(benchmark::State& state) {
  std::atomic<int64_t> sink{0};
  for (auto _ : state) {
#pragma omp parallel for num_threads(kThreads)
    for (int i = 0; i < kThreads; ++i) sink.fetch_add(i, std::memory_order_relaxed);
  }
}
BENCHMARK(BM_OpenMPLaunch);

constexpr int64_t kElements = 64 * 1024;

void BM_ThreadPoolAdd64K(benchmark::State& state) {
  ThreadPool pool(kThreads);
  std::vector<float> a(kElements, 1.0f), b(kElements, 2.0f), c(kElements);
  std::function<int32_t(int64_t)> task = [&](int64_t t) {
    int64_t chunk = kElements / kThreads;
    for (int64_t i = t * chunk; i < (t + 1) * chunk; ++i) c[i] = a[i] + b[i];
    return 0;
  };
  for (auto _ : state) {
    pool.ParallelFor(kThreads, task);
    benchmark::DoNotOptimize(c.data());
  }
  state.SetBytesProcessed(state.iterations() * kElements * 12);
}
BENCHMARK(BM_ThreadPoolAdd64K);

void BM_OpenMPAdd64K(benchmark::State& state) {
  std::vector<float> a(kElements, 1.0f), b(kElements, 2.0f), c(kElements);
  for (auto _ : state) {
#pragma omp parallel for num_threads(kThreads) schedule(static)
    for (int64_t i = 0; i < kElements; ++i) c[i] = a[i] + b[i];
    benchmark::DoNotOptimize(c.data());
  }
  state.SetBytesProcessed(state.iterations() * kElements * 12);
}
BENCHMARK(BM_OpenMPAdd64K);

}  // namespace
}  // namespace kiln::runtime
