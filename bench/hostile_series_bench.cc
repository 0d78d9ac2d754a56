// What a kiln-worker spends on each class of hostile input (issue 52, tests/hostile_inputs.h) at
// sizes 10^2 ... 10^5: load (parse, import, normalize) and build for llvm, each in a fresh process
// under a CPU-time limit, so the series shows whether the work grows linearly with the input.
// Prints seconds, peak RSS and the outcome (built, or the error's start) per size.
//   bazel run --config=opt //bench:hostile_series_bench -- [class substring] [largest n] [first n]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

#include "compiler/backend/build.h"
#include "compiler/frontend/load_module.h"
#include "runtime/support/large_stack.h"
#include "tests/hostile_inputs.h"

namespace kiln {
namespace {

constexpr int kCpuLimitSeconds = 120;

int64_t PeakMb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) >> 10;
  }
  return -1;
}

struct Series {
  const char* name;
  frontend::SourceForm form;
  std::function<std::string(int)> make;
  int largest;  // sizes past it are not generated (the input itself would be gigabytes)
};

// In a child: the worker's path, one line of results.
void Measure(const Series& s, int n) {
  const std::string bytes = s.make(n);
  runtime::RunWithStack(runtime::kCompilerStackBytes, [&] {
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<ir::IRModule> mod = frontend::LoadModule(s.form, bytes, s.name);
    absl::Status status = mod.status();
    if (mod.ok()) status = backend::BuildArtifact(*mod, "llvm").status();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string outcome =
        status.ok() ? "built" : "refused: " + std::string(status.message()).substr(0, 70);
    std::printf("%-24s %7d %10zu %9.3f %7lld  %s\n", s.name, n, bytes.size(), seconds,
                static_cast<long long>(PeakMb()), outcome.c_str());
    return 0;
  });
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  using kiln::frontend::SourceForm;
  namespace t = kiln::testing;
  const std::string only = argc > 1 ? argv[1] : "";
  const int largest = argc > 2 ? std::atoi(argv[2]) : 100000;
  const int first = argc > 3 ? std::atoi(argv[3]) : 100;
  const kiln::Series series[] = {
      {"tir_sum_chain", SourceForm::kTvmScript, t::TirSumChain, 100000},
      {"tir_or_chain", SourceForm::kTvmScript, t::TirOrChain, 100000},
      {"tir_elif_chain", SourceForm::kTvmScript, t::TirElifChain, 100000},
      {"tir_block_axes", SourceForm::kTvmScript, t::TirBlockAxes, 100000},
      {"tir_many_functions", SourceForm::kTvmScript, t::TirManyFunctions, 100000},
      {"relax_nested_calls", SourceForm::kTvmScript, t::RelaxNestedCalls, 100000},
      {"relax_bindings", SourceForm::kTvmScript, t::RelaxBindings, 100000},
      {"relax_flat_tuple", SourceForm::kTvmScript, t::RelaxFlatTuple, 100000},
      {"relax_tuple_access", SourceForm::kTvmScript, t::RelaxNestedTupleAccess, 100000},
      {"relax_call_chain", SourceForm::kTvmScript, t::RelaxCallChain, 100000},
      {"proto_chain", SourceForm::kIrProto, t::ChainProto, 100000},
      {"proto_flat_tuple", SourceForm::kIrProto, t::FlatTupleProto, 100000},
      {"proto_shared_dag", SourceForm::kIrProto, t::SharedDagProto, 100000},
      {"onnx_high_rank", SourceForm::kOnnx, t::HighRankOnnx, 100000},
      {"onnx_wide_sequence", SourceForm::kOnnx, t::WideSequenceOnnx, 1000000},
      {"onnx_wide_graph", SourceForm::kOnnx, t::WideGraphOnnx, 100000},
      {"onnx_squared_dimension", SourceForm::kOnnx, t::SquaredDimensionOnnx, 100},
  };
  std::printf("%-24s %7s %10s %9s %7s  %s\n", "class", "n", "bytes", "seconds", "peak MB",
              "outcome");
  std::fflush(stdout);
  for (const kiln::Series& s : series) {
    if (std::string(s.name).find(only) == std::string::npos) continue;
    for (int n = first; n <= std::min(largest, s.largest); n *= 10) {
      pid_t pid = fork();
      if (pid == 0) {
        rlimit cpu{kiln::kCpuLimitSeconds, kiln::kCpuLimitSeconds + 1};
        setrlimit(RLIMIT_CPU, &cpu);
        kiln::Measure(s, n);
        std::fflush(stdout);
        std::_Exit(0);
      }
      int status = 0;
      waitpid(pid, &status, 0);
      if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU) {
        std::printf("%-24s %7d %10s %9s %7s  over %d s of CPU\n", s.name, n, "", "", "",
                    kiln::kCpuLimitSeconds);
        std::fflush(stdout);
        break;  // the larger sizes take longer still
      } else if (!WIFEXITED(status)) {
        std::printf("%-24s %7d crashed (status %d)\n", s.name, n, status);
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
