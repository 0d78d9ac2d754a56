// Structural hashing and equality of a Relax module with 10,000 bindings: the cost of computing
// an artifact-cache key for a large model, against the baseline of merely walking the module's
// fields (the floor any field-driven hash must pay).
#include <benchmark/benchmark.h>

#include "compiler/ir/structural.h"
#include "compiler/ir/testing/examples.h"

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

}  // namespace
}  // namespace kiln::ir
