// Measuring candidates, behind two small interfaces so that builders can later run in kilnd's
// worker pool and runners on device agents:
//
//   Builder  scheduled modules -> kernel libraries (bytes) or build errors
//   Runner   kernel libraries  -> seconds per call, or run errors; every candidate is checked
//            against the task's reference library (the untuned kernel) on random inputs first,
//            and a wrong one is an error, never a time
//
// The local ones run each candidate in a forked child process: a candidate that crashes the
// compiler or itself, or runs past the timeout, is killed and becomes an error; the tuner goes on.
#ifndef KILN_COMPILER_TUNE_MEASURE_H_
#define KILN_COMPILER_TUNE_MEASURE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"
#include "compiler/tune/task.h"
#include "proto/kiln/v1/agent.pb.h"

namespace kiln::tune {

struct BuildResult {
  std::string library;  // the shared object's bytes; empty on error
  std::string error;
};

struct RunResult {
  std::optional<double> seconds;  // median seconds per call; absent on error
  std::string error;
};

class Builder {
 public:
  virtual ~Builder() = default;
  virtual std::vector<BuildResult> Build(const std::vector<ir::IRModule>& modules) = 0;
};

class Runner {
 public:
  virtual ~Runner() = default;
  virtual std::vector<RunResult> Run(const TuneTask& task, const std::string& reference,
                                     const std::vector<std::string>& libraries) = 0;
};

// What a local builder does in its child: a module to a library's bytes.
using BuildFn = std::function<absl::StatusOr<std::string>(const ir::IRModule&)>;

struct LocalBuilderOptions {
  std::string target = "llvm";
  int jobs = 2;           // children at once
  double timeout_s = 60;  // per candidate
  BuildFn build;          // default: backend::BuildKernelLibrary for `target`
};

struct LocalRunnerOptions {
  int threads = 1;        // the kernel's thread pool
  double timeout_s = 20;  // per candidate: checking and timing
  int repeat = 3;
  int min_repeat_ms = 20;
  double tolerance = 1e-3;  // |got - want| <= tolerance * (1 + |want|)
};

// What measuring a candidate of `task` takes, wherever it runs (runtime/kernel_measure.h): both
// libraries, the kernel's name and its arguments (symbolic dimensions at the representative
// extent), with `options`' timing and tolerance.
absl::StatusOr<v1::KernelMeasure> MeasureRequest(const TuneTask& task, const std::string& reference,
                                                 const std::string& library,
                                                 const LocalRunnerOptions& options);

// Whether `library` computes what `reference` does for `task` (a measurement's check, timed
// once), run here in a child process: what kiln-worker asks before a time an agent reported
// for a candidate can become a record, so that an agent's word that it matched is not the only
// one. OK, or the reason (a wrong result, a crash).
absl::Status CheckCandidate(const TuneTask& task, const std::string& reference,
                            const std::string& library, const LocalRunnerOptions& options);

// The same check made by a kiln-agent built for the target, as its task child: `agent_command`
// (say {"/usr/bin/qemu-aarch64", "/opt/kiln-agent/bin/kiln-agent"}, for a board's target this
// machine runs only under an emulator) gets "--run-task" and a LocalTask on stdin, and gives up
// what `confinement` says before it loads either library.
absl::Status CheckCandidateIn(const std::vector<std::string>& agent_command,
                              const v1::TaskConfinement& confinement, const TuneTask& task,
                              const std::string& reference, const std::string& library,
                              const LocalRunnerOptions& options);

std::unique_ptr<Builder> MakeLocalBuilder(LocalBuilderOptions options);
std::unique_ptr<Runner> MakeLocalRunner(LocalRunnerOptions options);

// Runs each of `work` in a forked child, `jobs` at a time, each killed after `timeout_s`: its
// returned bytes, or its error, or why the child died. Exposed for tests.
std::vector<absl::StatusOr<std::string>> RunInChildren(
    const std::vector<std::function<absl::StatusOr<std::string>()>>& work, int jobs,
    double timeout_s);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_MEASURE_H_
