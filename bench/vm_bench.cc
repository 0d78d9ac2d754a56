// The Relax VM's interpretation overhead: a bytecode loop whose calls do next to nothing, so the
// time is the VM's own (argument marshalling, the call through runtime::Function, If/Goto).
//   count(n): i = 0; while i < n: i = i + 1   -- 4 instructions an iteration
// Reported as ns per instruction, and the cost of invoking an empty function from C++.
#include <benchmark/benchmark.h>

#include "runtime/vm/exec_builder.h"
#include "runtime/vm/vm.h"

namespace kiln::runtime::vm {
namespace {

const FunctionRegistry& Ops() {
  static const FunctionRegistry* r = [] {
    auto* r = new FunctionRegistry();
    r->Replace("add", [](absl::Span<const Value> a) -> absl::StatusOr<Value> {
      return Value(*a[0].as_int() + *a[1].as_int());
    });
    r->Replace("less", [](absl::Span<const Value> a) -> absl::StatusOr<Value> {
      return Value(int64_t{*a[0].as_int() < *a[1].as_int()});
    });
    return r;
  }();
  return *r;
}

std::unique_ptr<VirtualMachine> CountingVM() {
  ExecBuilder b;
  b.BeginFunction("count", {"n"});
  int64_t i = b.NewRegister(), more = b.NewRegister();
  b.EmitCall(i, "add", {Arg::Immediate(0), Arg::Immediate(0)});
  int64_t loop = b.EmitGoto();  // jump to the test
  int64_t body = b.Here();
  b.EmitCall(i, "add", {Arg::Register(i), Arg::Immediate(1)});
  b.SetJumpTarget(loop);
  b.EmitCall(more, "less", {Arg::Register(i), Arg::Register(0)});
  int64_t exit = b.EmitIf(more);
  b.SetJumpTarget(b.EmitGoto(), body);
  b.SetJumpTarget(exit);
  b.EmitRet(i);
  b.EndFunction();
  b.BeginFunction("empty", {"x"});
  b.EmitRet(0);
  b.EndFunction();
  absl::StatusOr<Executable> exec = b.Build();
  if (!exec.ok()) std::abort();
  auto vm = VirtualMachine::Create(std::make_shared<const Executable>(std::move(*exec)), nullptr,
                                   nullptr, &Ops());
  if (!vm.ok()) std::abort();
  return std::move(*vm);
}

void BM_VMInstruction(benchmark::State& state) {
  auto vm = CountingVM();
  const int64_t n = 100000;
  for (auto _ : state) {
    absl::StatusOr<Value> r = vm->Invoke("count", {Value(n)});
    if (!r.ok() || *r->as_int() != n) state.SkipWithError("wrong count");
  }
  // add, less, if, goto per iteration.
  state.counters["ns_per_instruction"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * n * 4,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_VMInstruction)->Unit(benchmark::kMillisecond);

void BM_VMInvokeEmpty(benchmark::State& state) {
  auto vm = CountingVM();
  std::vector<Value> args = {Value(int64_t{1})};
  for (auto _ : state) benchmark::DoNotOptimize(vm->Invoke("empty", args));
}
BENCHMARK(BM_VMInvokeEmpty);

}  // namespace
}  // namespace kiln::runtime::vm
