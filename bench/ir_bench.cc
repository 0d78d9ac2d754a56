// The IR core on a Relax module with 10,000 bindings, each against the baseline of merely
// walking the module's fields (the floor any whole-module pass must pay):
//   - structural hashing and equality: the cost of an artifact-cache key for a large model;
//   - normalization with StructInfo inference (fresh, and of already-normal code);
//   - the well-formedness check.
#include <benchmark/benchmark.h>

#include "compiler/ir/structural.h"
#include "compiler/ir/testing/examples.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/well_formed.h"

namespace kiln::ir {
namespace {

constexpr int kBindings = 10000;

// Baseline: visit every node's field list without hashing or mapping anything.
size_t CountFields(const Object* node) {
  if (node == nullptr) return 0;
  size_t n = 1;
  for (const FieldVisitor::Field& f : FieldsOf(*node)) {
    if (f.type == FieldVisitor::Type::kObject) n += CountFields(f.object);
    if (f.type == FieldVisitor::Type::kObjectList) {
      for (const Object* o : f.objects) n += CountFields(o);
    }
  }
  return n;
}

void BM_FieldWalk(benchmark::State& state) {
  IRModule mod = testing::ChainModule(kBindings);
  for (auto _ : state) benchmark::DoNotOptimize(CountFields(mod.get()));
  state.counters["bindings"] = kBindings;
}
BENCHMARK(BM_FieldWalk)->Unit(benchmark::kMillisecond);

void BM_StructuralHash(benchmark::State& state) {
  IRModule mod = testing::ChainModule(kBindings);
  for (auto _ : state) benchmark::DoNotOptimize(StructuralHash(mod));
  state.counters["bindings"] = kBindings;
}
BENCHMARK(BM_StructuralHash)->Unit(benchmark::kMillisecond);

void BM_StructuralEqual(benchmark::State& state) {
  IRModule a = testing::ChainModule(kBindings);
  IRModule b = testing::ChainModule(kBindings);
  for (auto _ : state) benchmark::DoNotOptimize(StructuralEqual(a, b));
  state.counters["bindings"] = kBindings;
}
BENCHMARK(BM_StructuralEqual)->Unit(benchmark::kMillisecond);

// Fresh IR: every binding is inferred (call_tir checked against its PrimFunc) and annotated.
void BM_NormalizeFresh(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    IRModule mod = testing::ChainModule(kBindings);
    state.ResumeTiming();
    absl::StatusOr<IRModule> out = relax::NormalizeModule(mod);
    if (!out.ok()) state.SkipWithError(std::string(out.status().message()).c_str());
    benchmark::DoNotOptimize(out);
    state.PauseTiming();
    out = IRModule();  // free outside the timed region
    mod = IRModule();
    state.ResumeTiming();
  }
  state.counters["bindings"] = kBindings;
}
BENCHMARK(BM_NormalizeFresh)->Unit(benchmark::kMillisecond);

// Already-normal IR: the pass must return the same nodes, checking rather than rebuilding.
void BM_NormalizeAlreadyNormal(benchmark::State& state) {
  absl::StatusOr<IRModule> mod = relax::NormalizeModule(testing::ChainModule(kBindings));
  for (auto _ : state) benchmark::DoNotOptimize(relax::NormalizeModule(*mod));
  state.counters["bindings"] = kBindings;
}
BENCHMARK(BM_NormalizeAlreadyNormal)->Unit(benchmark::kMillisecond);

void BM_WellFormed(benchmark::State& state) {
  absl::StatusOr<IRModule> mod = relax::NormalizeModule(testing::ChainModule(kBindings));
  for (auto _ : state) benchmark::DoNotOptimize(relax::CheckWellFormed(*mod));
  state.counters["bindings"] = kBindings;
}
BENCHMARK(BM_WellFormed)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kiln::ir
