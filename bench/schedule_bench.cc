// A hand-written schedule of float32 matmul 1024^3 against OpenBLAS cblas_sgemm in the same run,
// on 1 and 2 threads. The schedule is built with the schedule primitives only:
//   cache_write C to a local accumulator, split i by TI and j by TJ, reorder to
//   j_0, i_0, k, i_1, j_1 (a TJ-column panel of B stays in L2 across all row tiles), the
//   write-back under i_0 (reverse_compute_at), the init split off (decompose_reduction),
//   i_1 unrolled, j_1 vectorized (plain LLVM vectorization), j_0 parallel.
// The tensorized variant splits j_1 into 16-wide strips and replaces each 4 x 16 tile with the
// "x86_avx2_fma_f32_4x16" micro-kernel (tensorize) instead of unroll + vectorize.
// Run: bazel run --config=opt //bench:schedule_bench
#include <cblas.h>

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "compiler/backend/toolchain.h"
#include "compiler/testing/schedule_workloads.h"
#include "compiler/tir/schedule/schedule.h"
#include "runtime/library.h"
#include "runtime/tensor.h"

extern "C" void openblas_set_num_threads(int);

namespace kiln {
namespace {

constexpr int64_t kN = 1024;

absl::StatusOr<ir::IRModule> ScheduledMatmul(int64_t ti, int64_t tj, bool tensorize) {
  absl::StatusOr<ir::IRModule> mod = tir::testing::Parse(tir::testing::MatmulScript(kN, kN, kN));
  if (!mod.ok()) return mod.status();
  absl::StatusOr<tir::Schedule> sch = tir::Schedule::Create(*mod, "matmul");
  if (!sch.ok()) return sch.status();
  tir::BlockRV c = *sch->GetBlock("C");
  std::vector<tir::LoopRV> loops = *sch->GetLoops(c);
  absl::StatusOr<tir::BlockRV> write_back = sch->CacheWrite(c, 0, "local");
  if (!write_back.ok()) return write_back.status();
  absl::StatusOr<std::vector<tir::LoopRV>> i = sch->Split(loops[0], {tir::Factor(), ti});
  absl::StatusOr<std::vector<tir::LoopRV>> j = sch->Split(loops[1], {tir::Factor(), tj});
  if (!i.ok() || !j.ok()) return i.ok() ? j.status() : i.status();
  if (tensorize) {
    // The TJ columns in 16-wide strips, each a 4 x 16 register tile of the micro-kernel held
    // across the whole k loop: j_0, i_0, j_1, k, i_1, j_2 with (i_1, j_2) tensorized.
    absl::StatusOr<std::vector<tir::LoopRV>> strips = sch->Split((*j)[1], {tir::Factor(), 16});
    if (!strips.ok()) return strips.status();
    for (absl::Status s :
         {sch->Reorder({(*j)[0], (*i)[0], (*strips)[0], loops[2], (*i)[1], (*strips)[1]}),
          sch->ReverseComputeAt(*write_back, (*i)[0])}) {
      if (!s.ok()) return s;
    }
    absl::StatusOr<tir::BlockRV> init = sch->DecomposeReduction(c, loops[2]);
    if (!init.ok()) return init.status();
    absl::StatusOr<tir::BlockRV> tile = sch->Tensorize((*i)[1], "x86_avx2_fma_f32_4x16");
    if (!tile.ok()) return tile.status();
    if (absl::Status s = sch->Parallel((*j)[0]); !s.ok()) return s;
  } else {
    for (absl::Status s : {sch->Reorder({(*j)[0], (*i)[0], loops[2], (*i)[1], (*j)[1]}),
                           sch->ReverseComputeAt(*write_back, (*i)[0])}) {
      if (!s.ok()) return s;
    }
    absl::StatusOr<tir::BlockRV> init = sch->DecomposeReduction(c, loops[2]);
    if (!init.ok()) return init.status();
    for (absl::Status s : {sch->Unroll((*i)[1]), sch->Vectorize((*j)[1]), sch->Parallel((*j)[0])}) {
      if (!s.ok()) return s;
    }
  }
  ir::IRModuleBuilder builder;
  ir::PrimFunc f = sch->func();
  if (absl::Status s = builder.Add(sch->mod()->GetGlobalVar("matmul"),
                                   ir::WithFuncAttr(f, "tir.is_scheduled", ir::Bool(true)));
      !s.ok()) {
    return s;
  }
  return builder.Build();
}

runtime::Tensor RandomTensor(std::vector<int64_t> shape) {
  runtime::Tensor t = *runtime::Tensor::Empty(shape, *runtime::ParseDataType("float32"));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  float* p = static_cast<float*>(t.data());
  for (int64_t i = 0; i < t.NumElements(); ++i) p[i] = dist(rng);
  return t;
}

// args: TI, TJ, threads, tensorize (0: LLVM vectorizes j_1; 1: the AVX2/FMA micro-kernel).
void BM_ScheduledMatmul(benchmark::State& state) {
  absl::StatusOr<ir::IRModule> mod =
      ScheduledMatmul(state.range(0), state.range(1), state.range(3) != 0);
  if (!mod.ok()) {
    state.SkipWithError(mod.status().ToString().c_str());
    return;
  }
  absl::StatusOr<std::string> so = backend::BuildKernelLibrary(*mod, "llvm");
  if (!so.ok()) {
    state.SkipWithError(so.status().ToString().c_str());
    return;
  }
  auto lib = *runtime::KernelLibrary::LoadFromMemory(*so, "schedule_bench");
  auto pool = std::make_shared<runtime::ThreadPool>(static_cast<int>(state.range(2)));
  runtime::Function fn = *lib->GetFunction("matmul", pool);
  runtime::Tensor a = RandomTensor({kN, kN}), b = RandomTensor({kN, kN}),
                  c = RandomTensor({kN, kN});
  std::vector<runtime::Value> args = {a, b, c};
  for (auto _ : state) {
    if (!fn(args).ok()) state.SkipWithError("kernel failed");
  }
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * kN * kN * kN * state.iterations(), benchmark::Counter::kIsRate);
  runtime::Tensor ref = RandomTensor({kN, kN});
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kN, kN, kN, 1.0f,
              static_cast<float*>(a.data()), kN, static_cast<float*>(b.data()), kN, 0.0f,
              static_cast<float*>(ref.data()), kN);
  const float* got = static_cast<const float*>(c.data());
  const float* want = static_cast<const float*>(ref.data());
  for (int64_t e = 0; e < kN * kN; ++e) {
    if (std::abs(got[e] - want[e]) > 1e-3f * (1 + std::abs(want[e]))) {
      state.SkipWithError("the result differs from OpenBLAS");
      break;
    }
  }
}

void BM_OpenBlasSgemm(benchmark::State& state) {
  openblas_set_num_threads(static_cast<int>(state.range(0)));
  runtime::Tensor a = RandomTensor({kN, kN}), b = RandomTensor({kN, kN}),
                  c = RandomTensor({kN, kN});
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kN, kN, kN, 1.0f,
                static_cast<float*>(a.data()), kN, static_cast<float*>(b.data()), kN, 0.0f,
                static_cast<float*>(c.data()), kN);
  }
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * kN * kN * kN * state.iterations(), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_OpenBlasSgemm)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ScheduledMatmul)
    ->Args({4, 32, 1, 0})
    ->Args({4, 64, 1, 0})
    ->Args({8, 32, 1, 0})
    ->Args({4, 64, 2, 0})
    ->Args({8, 32, 2, 0})
    ->Args({4, 64, 1, 1})
    ->Args({4, 128, 1, 1})
    ->Args({4, 64, 2, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace kiln
