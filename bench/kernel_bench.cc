// Kernels compiled by Kiln against their peers, measured in the same run:
//   - float32 matmul n x n x n against OpenBLAS cblas_sgemm, on 1 and 2 threads;
//   - a batch-8 Linear layer (8 x 1024 -> 4096) against OpenBLAS, in GB/s of weights;
//   - a 16M-element float32 add against memcpy of the same bytes (bandwidth);
//   - a 1M-element float32 exp against glibc's expf;
//   - compile time of a module of 100 kernels.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "compiler/backend/build.h"
#include "compiler/backend/toolchain.h"
#include "compiler/script/script_parser.h"
#include "runtime/library.h"
#include "runtime/vm/vm.h"

namespace kiln {
namespace {

// Kernels written as TVM prints unscheduled TensorIR: the default schedule
// (tir/default_schedule.h) decides the loop order, parallelism and vectorization.

// A square float32 matmul PrimFunc of size n, named `name`.
std::string MatmulScript(const std::string& name, int64_t n) {
  return absl::StrReplaceAll(R"(
    @T.prim_func
    def NAME(A: T.Buffer((N, N), "float32"), B: T.Buffer((N, N), "float32"), C: T.Buffer((N, N), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        for i, j, k in T.grid(N, N, N):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)",
                             {{"NAME", name}, {"N", absl::StrCat(n)}});
}

constexpr const char* kAdd = R"(
    @T.prim_func
    def add(a: T.handle, b: T.handle, c: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        C = T.match_buffer(c, (n,), "float32")
        T.func_attr({"tir.noalias": T.bool(True)})
        for i in range(n):
            with T.block("C"):
                vi = T.axis.spatial(n, i)
                T.reads(A[vi], B[vi])
                T.writes(C[vi])
                C[vi] = A[vi] + B[vi]
)";

// exp over a 1M-element array: the default schedule vectorizes it with the fast float32 exp.
constexpr const char* kExp = R"(
    @T.prim_func
    def exp(A: T.Buffer((1048576,), "float32"), B: T.Buffer((1048576,), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        for i, j in T.grid(1024, 1024):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi * 1024 + vj])
                T.writes(B[vi * 1024 + vj])
                B[vi * 1024 + vj] = T.exp(A[vi * 1024 + vj])
)";

constexpr const char* kModuleHeader = "@I.ir_module\nclass Module:\n";

runtime::KernelLibrary& Library() {
  static auto* lib = [] {
    std::string text = kModuleHeader;
    for (int64_t n : {256, 512, 1024}) text += MatmulScript(absl::StrCat("matmul", n), n);
    text += kAdd;
    text += kExp;
    absl::StatusOr<ir::IRModule> mod = script::ParseScript(text);
    absl::StatusOr<std::string> so = backend::BuildKernelLibrary(*mod, "llvm");
    if (!so.ok()) std::abort();
    return new std::shared_ptr<runtime::KernelLibrary>(
        *runtime::KernelLibrary::LoadFromMemory(*so, "bench"));
  }();
  return **lib;
}

runtime::Tensor RandomTensor(std::vector<int64_t> shape) {
  runtime::Tensor t = *runtime::Tensor::Empty(shape, *runtime::ParseDataType("float32"));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  float* p = static_cast<float*>(t.data());
  for (int64_t i = 0; i < t.NumElements(); ++i) p[i] = dist(rng);
  return t;
}

void BM_KilnMatmul(benchmark::State& state) {
  int64_t n = state.range(0);
  int threads = static_cast<int>(state.range(1));
  auto pool = std::make_shared<runtime::ThreadPool>(threads);
  runtime::Function fn = *Library().GetFunction(absl::StrCat("matmul", n), pool);
  runtime::Tensor a = RandomTensor({n, n}), b = RandomTensor({n, n}), c = RandomTensor({n, n});
  std::vector<runtime::Value> args = {a, b, c};
  for (auto _ : state) {
    if (!fn(args).ok()) state.SkipWithError("kernel failed");
  }
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * n * n * n * state.iterations(), benchmark::Counter::kIsRate);
  // A fast wrong answer is no result: compare with OpenBLAS once.
  runtime::Tensor ref = RandomTensor({n, n});
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
              static_cast<float*>(a.data()), n, static_cast<float*>(b.data()), n, 0.0f,
              static_cast<float*>(ref.data()), n);
  const float* got = static_cast<const float*>(c.data());
  const float* want = static_cast<const float*>(ref.data());
  for (int64_t i = 0; i < n * n; ++i) {
    if (std::abs(got[i] - want[i]) > 1e-3f * (1 + std::abs(want[i]))) {
      state.SkipWithError("the result differs from OpenBLAS");
      break;
    }
  }
}

void BM_OpenBlasSgemm(benchmark::State& state) {
  int64_t n = state.range(0);
  openblas_set_num_threads(static_cast<int>(state.range(1)));
  runtime::Tensor a = RandomTensor({n, n}), b = RandomTensor({n, n}), c = RandomTensor({n, n});
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                static_cast<float*>(a.data()), n, static_cast<float*>(b.data()), n, 0.0f,
                static_cast<float*>(c.data()), n);
  }
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * n * n * n * state.iterations(), benchmark::Counter::kIsRate);
}

void MatmulArgs(benchmark::internal::Benchmark* b) {
  for (int64_t n : {256, 512, 1024}) {
    for (int64_t threads : {1, 2}) b->Args({n, threads});
  }
}
BENCHMARK(BM_KilnMatmul)->Apply(MatmulArgs)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OpenBlasSgemm)->Apply(MatmulArgs)->Unit(benchmark::kMillisecond)->UseRealTime();

// A batch-8 Linear layer, 1024 -> 4096 (16 MB of float32 weights): the shape of every small-batch
// linear layer, bound by how fast the weights stream. Kiln's weight in the blocked layout
// PackConstantWeights gives a constant one ([N / 16, K, 16], b_layout="NK16n"), compiled through
// the whole pipeline and run by the VM; the peer is OpenBLAS on the PyTorch layout [N, K].
constexpr int64_t kLinearRows = 8, kLinearIn = 1024, kLinearOut = 4096;

void BM_KilnLinear8x1024x4096(benchmark::State& state) {
  const std::string text = absl::StrCat(
      "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((", kLinearRows, ", ",
      kLinearIn, "), dtype=\"float32\"), w: R.Tensor((", kLinearOut / 16, ", ", kLinearIn,
      ", 16), dtype=\"float32\")):\n        with R.dataflow():\n",
      "            y = R.matmul(x, w, b_layout=\"NK16n\")\n            R.output(y)\n",
      "        return y\n");
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text);
  absl::StatusOr<backend::BuiltModule> built =
      mod.ok() ? backend::Build(*mod, "llvm") : absl::StatusOr<backend::BuiltModule>(mod.status());
  if (!built.ok()) {
    state.SkipWithError(std::string(built.status().message()).c_str());
    return;
  }
  auto lib = runtime::KernelLibrary::LoadFromMemory(built->kernels, "linear");
  auto exec = runtime::vm::Executable::Deserialize(built->executable);
  auto vm = runtime::vm::VirtualMachine::Create(
      std::make_shared<const runtime::vm::Executable>(std::move(*exec)), *lib,
      std::make_shared<runtime::ThreadPool>(static_cast<int>(state.range(0))), nullptr);
  runtime::Tensor x = RandomTensor({kLinearRows, kLinearIn});
  runtime::Tensor w = RandomTensor({kLinearOut / 16, kLinearIn, 16});
  std::vector<runtime::Value> args = {x, w};
  absl::StatusOr<runtime::Value> y;
  for (auto _ : state) {
    y = (*vm)->Invoke("main", args);
    if (!y.ok()) state.SkipWithError("the model failed");
  }
  state.SetBytesProcessed(state.iterations() * kLinearIn * kLinearOut * 4);  // the weights
  // Checked against OpenBLAS on the unblocked weight.
  std::vector<float> plain(kLinearIn * kLinearOut), want(kLinearRows * kLinearOut);
  const float* wb = static_cast<const float*>(w.data());
  for (int64_t k = 0; k < kLinearIn; ++k)
    for (int64_t j = 0; j < kLinearOut; ++j)
      plain[k * kLinearOut + j] = wb[((j / 16) * kLinearIn + k) * 16 + j % 16];
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kLinearRows, kLinearOut, kLinearIn, 1.0f,
              static_cast<const float*>(x.data()), kLinearIn, plain.data(), kLinearOut, 0.0f,
              want.data(), kLinearOut);
  const float* got = y.ok() ? static_cast<const float*>(y->as_tensor()->data()) : nullptr;
  for (int64_t i = 0; got != nullptr && i < kLinearRows * kLinearOut; ++i) {
    if (std::abs(got[i] - want[i]) > 1e-3f * (1 + std::abs(want[i]))) {
      state.SkipWithError("the result differs from OpenBLAS");
      break;
    }
  }
}
BENCHMARK(BM_KilnLinear8x1024x4096)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_OpenBlasLinear8x1024x4096(benchmark::State& state) {
  openblas_set_num_threads(static_cast<int>(state.range(0)));
  runtime::Tensor x = RandomTensor({kLinearRows, kLinearIn});
  runtime::Tensor w = RandomTensor({kLinearOut, kLinearIn}),
                  y = RandomTensor({kLinearRows, kLinearOut});
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, kLinearRows, kLinearOut, kLinearIn, 1.0f,
                static_cast<const float*>(x.data()), kLinearIn, static_cast<const float*>(w.data()),
                kLinearIn, 0.0f, static_cast<float*>(y.data()), kLinearOut);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(state.iterations() * kLinearIn * kLinearOut * 4);
}
BENCHMARK(BM_OpenBlasLinear8x1024x4096)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

constexpr int64_t kAddElements = 16 * 1024 * 1024;

void BM_KilnAdd16M(benchmark::State& state) {
  auto pool = std::make_shared<runtime::ThreadPool>(static_cast<int>(state.range(0)));
  runtime::Function fn = *Library().GetFunction("add", pool);
  runtime::Tensor a = RandomTensor({kAddElements}), b = RandomTensor({kAddElements}),
                  c = RandomTensor({kAddElements});
  std::vector<runtime::Value> args = {a, b, c};
  for (auto _ : state) {
    if (!fn(args).ok()) state.SkipWithError("kernel failed");
  }
  // Bytes moved: two reads and one write.
  state.SetBytesProcessed(state.iterations() * kAddElements * 12);
}
BENCHMARK(BM_KilnAdd16M)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Memcpy16M(benchmark::State& state) {
  runtime::Tensor a = RandomTensor({kAddElements}), c = RandomTensor({kAddElements});
  for (auto _ : state) {
    std::memcpy(c.data(), a.data(), kAddElements * 4);
    benchmark::DoNotOptimize(c.data());
  }
  // Bytes moved: one read and one write.
  state.SetBytesProcessed(state.iterations() * kAddElements * 8);
}
BENCHMARK(BM_Memcpy16M)->Unit(benchmark::kMillisecond)->UseRealTime();

constexpr int64_t kExpElements = 1 << 20;

void BM_KilnExp1M(benchmark::State& state) {
  runtime::Function fn = *Library().GetFunction("exp", nullptr);
  runtime::Tensor a = RandomTensor({kExpElements}), b = RandomTensor({kExpElements});
  std::vector<runtime::Value> args = {a, b};
  for (auto _ : state) {
    if (!fn(args).ok()) state.SkipWithError("kernel failed");
  }
  state.SetItemsProcessed(state.iterations() * kExpElements);
}
BENCHMARK(BM_KilnExp1M)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The peer: glibc's expf in a plain loop, one thread like the Kiln kernel above.
void BM_LibmExpf1M(benchmark::State& state) {
  runtime::Tensor a = RandomTensor({kExpElements}), b = RandomTensor({kExpElements});
  const float* x = static_cast<const float*>(a.data());
  float* y = static_cast<float*>(b.data());
  for (auto _ : state) {
    for (int64_t i = 0; i < kExpElements; ++i) y[i] = std::exp(x[i]);
    benchmark::DoNotOptimize(y);
  }
  state.SetItemsProcessed(state.iterations() * kExpElements);
}
BENCHMARK(BM_LibmExpf1M)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Compile time: a module of 100 distinct kernels (50 matmuls, 50 adds), TVMScript to .so.
void BM_Compile100Kernels(benchmark::State& state) {
  std::string text = kModuleHeader;
  for (int k = 0; k < 50; ++k) {
    text += MatmulScript(absl::StrCat("mm", k), 64);
    absl::StrAppend(&text, "    @T.prim_func\n    def add", k,
                    "(A: T.Buffer((4096,), \"float32\"), B: T.Buffer((4096,), \"float32\")):\n",
                    "        for i in range(4096):\n            B[i] = A[i] + T.float32(", k,
                    ")\n");
  }
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text);
  if (!mod.ok()) {
    state.SkipWithError(std::string(mod.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    absl::StatusOr<std::string> so = backend::BuildKernelLibrary(*mod, "llvm");
    if (!so.ok()) state.SkipWithError(std::string(so.status().message()).c_str());
    benchmark::DoNotOptimize(so);
  }
  state.counters["kernels"] = 100;
}
BENCHMARK(BM_Compile100Kernels)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace
}  // namespace kiln
