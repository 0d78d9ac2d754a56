// The front end on extreme inputs (tests/hostile_inputs.h): parse, normalize and structural hash
// of a 100,000-binding module and of the other generated shapes, each in a fresh process so that
// its peak memory is its own. Prints time per step and peak RSS above the process's start.
//   bazel run --config=opt //bench:frontend_stress_bench
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

#include "compiler/frontend/load_module.h"
#include "compiler/ir/structural.h"
#include "compiler/relax/block_builder.h"
#include "runtime/support/large_stack.h"
#include "tests/hostile_inputs.h"

namespace kiln {
namespace {

int64_t StatusKb(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(std::string(field).size()));
  }
  return -1;
}

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

struct Case {
  const char* name;
  frontend::SourceForm form;
  std::function<std::string()> make;
};

// In a child: parse, normalize, hash; one line of results.
void Measure(const Case& c) {
  std::string bytes = c.make();
  int64_t start_kb = StatusKb("VmRSS:");
  runtime::RunWithStack(runtime::kCompilerStackBytes, [&] {
    auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<ir::IRModule> parsed = frontend::ParseModule(c.form, bytes, c.name);
    double parse_ms = Since(t0);
    double normalize_ms = 0, hash_ms = 0;
    std::string outcome = "ok";
    if (parsed.ok()) {
      auto t1 = std::chrono::steady_clock::now();
      absl::StatusOr<ir::IRModule> normalized = ir::relax::NormalizeModule(*parsed);
      normalize_ms = Since(t1);
      if (normalized.ok()) {
        auto t2 = std::chrono::steady_clock::now();
        volatile uint64_t hash = ir::StructuralHash(*normalized);
        (void)hash;
        hash_ms = Since(t2);
      } else {
        outcome = "refused: " + std::string(normalized.status().message()).substr(0, 50);
      }
    } else {
      outcome = "refused: " + std::string(parsed.status().message()).substr(0, 50);
    }
    std::printf("%-28s %8.1f MB %9.1f %9.1f %9.1f %8lld  %s\n", c.name, bytes.size() / 1e6,
                parse_ms, normalize_ms, hash_ms,
                static_cast<long long>((StatusKb("VmHWM:") - start_kb) >> 10), outcome.c_str());
    return 0;
  });
}

}  // namespace
}  // namespace kiln

int main() {
  using kiln::frontend::SourceForm;
  namespace t = kiln::testing;
  const kiln::Case cases[] = {
      {"bindings_1e5.py", SourceForm::kTvmScript, [] { return t::RelaxBindings(100000); }},
      {"nested_calls_1e4.py", SourceForm::kTvmScript, [] { return t::RelaxNestedCalls(10000); }},
      {"tir_sum_chain_1e4.py", SourceForm::kTvmScript, [] { return t::TirSumChain(10000); }},
      {"tir_sum_chain_1e6.py", SourceForm::kTvmScript, [] { return t::TirSumChain(1000000); }},
      {"flat_tuple_1e6.py", SourceForm::kTvmScript, [] { return t::RelaxFlatTuple(1000000); }},
      {"chain_1e4.pb", SourceForm::kIrProto, [] { return t::ChainProto(10000); }},
      {"shared_dag_64.pb", SourceForm::kIrProto, [] { return t::SharedDagProto(64); }},
      {"flat_tuple_1e6.pb", SourceForm::kIrProto, [] { return t::FlatTupleProto(1000000); }},
      {"range_2^28.onnx", SourceForm::kOnnx, [] { return t::HugeRangeOnnx(int64_t{1} << 28); }},
  };
  std::printf("%-28s %11s %9s %9s %9s %8s\n", "input", "size", "parse ms", "norm ms", "hash ms",
              "peak MB");
  std::fflush(stdout);
  for (const kiln::Case& c : cases) {
    pid_t pid = fork();
    if (pid == 0) {
      kiln::Measure(c);
      std::fflush(stdout);
      std::_Exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status)) std::printf("%-28s crashed (status %d)\n", c.name, status);
  }
  return 0;
}
