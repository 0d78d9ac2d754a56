// TVMScript parse and print throughput on a ~5 MB module (a normalized chain of call_tir
// bindings, every variable annotated), against the protobuf wire form of the same module
// measured in the same run.
#include <benchmark/benchmark.h>

#include "compiler/ir/testing/examples.h"
#include "compiler/relax/block_builder.h"
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "compiler/wire/ir_proto.h"

namespace kiln {
namespace {

const ir::IRModule& BigModule() {
  static const ir::IRModule* mod = [] {
    absl::StatusOr<ir::IRModule> m = ir::relax::NormalizeModule(ir::testing::ChainModule(34000));
    return new ir::IRModule(*m);
  }();
  return *mod;
}

void BM_PrintScript(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = script::PrintScript(BigModule());
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_PrintScript)->Unit(benchmark::kMillisecond);

void BM_ParseScript(benchmark::State& state) {
  std::string text = script::PrintScript(BigModule());
  for (auto _ : state) {
    absl::StatusOr<ir::IRModule> mod = script::ParseScript(text);
    if (!mod.ok()) state.SkipWithError(std::string(mod.status().message()).c_str());
    benchmark::DoNotOptimize(mod);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["MB"] = static_cast<double>(text.size()) / 1e6;
}
BENCHMARK(BM_ParseScript)->Unit(benchmark::kMillisecond);

void BM_SerializeProto(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    std::string wire = wire::SerializeModule(BigModule());
    bytes = wire.size();
    benchmark::DoNotOptimize(wire);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_SerializeProto)->Unit(benchmark::kMillisecond);

void BM_DeserializeProto(benchmark::State& state) {
  std::string wire = wire::SerializeModule(BigModule());
  for (auto _ : state) {
    absl::StatusOr<ir::IRModule> mod = wire::DeserializeModule(wire);
    if (!mod.ok()) state.SkipWithError(std::string(mod.status().message()).c_str());
    benchmark::DoNotOptimize(mod);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * wire.size()));
  state.counters["MB"] = static_cast<double>(wire.size()) / 1e6;
}
BENCHMARK(BM_DeserializeProto)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kiln
