// End-to-end latency of a compiled model through the VM, with and without operator fusion (the
// peer in the same run): the TVM-imported MLP of compiler/script/testdata/tvm_mlp.py (batch 4,
// 64 -> 32 -> 8), one thread. Fusion merges matmul + bias + relu into one kernel whose epilogue
// is applied to the accumulator tiles, and FoldConstant transposes the weights at compile time.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "compiler/backend/build.h"
#include "compiler/backend/testing/model_test_util.h"
#include "compiler/script/script_parser.h"
#include "runtime/library.h"
#include "runtime/vm/vm.h"

namespace kiln::backend {
namespace {

std::unique_ptr<runtime::vm::VirtualMachine> CompileMlp(bool fuse) {
  std::ifstream in("compiler/script/testdata/tvm_mlp.py");
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text.str(), "tvm_mlp.py");
  BuildOptions options;
  options.fuse = fuse;
  absl::StatusOr<BuiltModule> built = Build(*mod, "llvm", options);
  if (!built.ok()) return nullptr;
  auto lib = runtime::KernelLibrary::LoadFromMemory(built->kernels, "mlp");
  auto exec = runtime::vm::Executable::Deserialize(built->executable);
  auto vm = runtime::vm::VirtualMachine::Create(
      std::make_shared<const runtime::vm::Executable>(std::move(*exec)), *lib,
      std::make_shared<runtime::ThreadPool>(1), nullptr);
  return vm.ok() ? std::move(*vm) : nullptr;
}

void BM_Mlp(benchmark::State& state) {
  std::unique_ptr<runtime::vm::VirtualMachine> vm = CompileMlp(state.range(0) == 1);
  if (vm == nullptr) {
    state.SkipWithError("the MLP did not compile");
    return;
  }
  std::vector<runtime::Value> input = {testing::ToTensor(testing::Random({4, 64}, 1))};
  for (auto _ : state) benchmark::DoNotOptimize((*vm).Invoke("main", input));
  state.SetLabel(state.range(0) == 1 ? "fused" : "unfused");
}
BENCHMARK(BM_Mlp)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kiln::backend

BENCHMARK_MAIN();
