// Auto-tuning float32 SGEMM N^3 on one thread against OpenBLAS measured in the same run, and the
// cost model against random search at the same trial count:
//   tune_bench N TRIALS [DB_DIR [TARGET]]
// For each search: the best GFLOPS, its ratio to OpenBLAS, the trials it took to reach 90 % of
// its final best, and the wall time. Run with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset, or,
// for an AVX2 row on an AVX-512 machine, TARGET "llvm -mcpu=haswell" with
// OPENBLAS_CORETYPE=Haswell.
#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "compiler/testing/schedule_workloads.h"
#include "compiler/tune/tuner.h"
#include "runtime/tensor.h"

extern "C" void openblas_set_num_threads(int);

namespace {

double OpenBlasSeconds(int64_t n) {
  openblas_set_num_threads(1);
  std::vector<float> a(n * n), b(n * n), c(n * n);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (float& x : a) x = dist(rng);
  for (float& x : b) x = dist(rng);
  double best = 1e9;
  for (int rep = 0; rep < 10; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kiln;  // NOLINT
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 512;
  const int trials = argc > 2 ? std::atoi(argv[2]) : 64;
  const std::string dir = argc > 3 ? argv[3] : "/tmp";
  const std::string target = argc > 4 ? argv[4] : "llvm";
  absl::StatusOr<ir::IRModule> mod = tir::testing::Parse(tir::testing::MatmulScript(n, n, n));
  if (!mod.ok()) return 1;
  absl::StatusOr<std::vector<tune::TuneTask>> tasks = tune::ExtractTasksFor(*mod, target);
  if (!tasks.ok()) return 1;
  const double flops = 2.0 * n * n * n;
  const double blas = OpenBlasSeconds(n);
  std::printf("SGEMM %lld^3, 1 thread, Kiln target \"%s\": OpenBLAS %.1f GFLOPS\n",
              static_cast<long long>(n), target.c_str(), flops / blas / 1e9);
  for (bool model : {true, false}) {
    const std::string path =
        dir + "/tune_bench_" + std::to_string(n) + (model ? "_model.db" : "_random.db");
    std::remove(path.c_str());
    absl::StatusOr<std::unique_ptr<tune::TuningDatabase>> db = tune::TuningDatabase::Open(path);
    if (!db.ok()) return 1;
    tune::LocalBuilderOptions bo;
    bo.target = target;
    std::unique_ptr<tune::Builder> builder = tune::MakeLocalBuilder(bo);
    tune::LocalRunnerOptions ro;
    ro.min_repeat_ms = 30;
    std::unique_ptr<tune::Runner> runner = tune::MakeLocalRunner(ro);
    tune::TuneOptions options;
    options.target = target;
    options.trials = trials;
    options.use_cost_model = model;
    absl::StatusOr<tune::TuneReport> r = tune::Tune(*tasks, **db, *builder, *runner, options);
    if (!r.ok() || !r->tasks[0].best_seconds) {
      std::printf("%s: failed\n", model ? "cost model" : "random");
      continue;
    }
    const double best = *r->tasks[0].best_seconds;
    int to_90 = 0;
    for (const tune::CurvePoint& p : r->curve) {
      if (p.trials > 0 &&
          p.estimated_seconds <= std::min(best, *r->tasks[0].default_seconds) / 0.9) {
        to_90 = p.trials;
        break;
      }
    }
    std::printf(
        "%-12s %4d trials: best %.1f GFLOPS = %.2fx OpenBLAS (untuned %.1f GFLOPS); 90%% of "
        "best after %d trials; %.0f s\n",
        model ? "cost model" : "random", r->trials, flops / best / 1e9, blas / best,
        flops / *r->tasks[0].default_seconds / 1e9, to_90, r->elapsed_s);
  }
  return 0;
}
