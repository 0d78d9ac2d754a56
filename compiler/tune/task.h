// Tuning tasks: the distinct kernels of a model. After legalization and fusion every PrimFunc a
// Relax function calls is a task, deduplicated by structural hash (two layers of the same shape
// share one), weighted by how many call sites the graph has for it: a task's share of the
// model's latency is weight x latency.
#ifndef KILN_COMPILER_TUNE_TASK_H_
#define KILN_COMPILER_TUNE_TASK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/backend/pipeline.h"
#include "compiler/ir/module.h"
#include "compiler/target/cpu_policy.h"

namespace kiln::tune {

// A symbolic dimension is tuned at this value (buffers are allocated with it when measuring);
// the tiling rules never split a loop of symbolic extent, so a schedule stays correct for all.
inline constexpr int64_t kRepresentativeExtent = 16;

struct TuneTask {
  std::string name;                        // the PrimFunc's name in the module it came from
  ir::IRModule mod;                        // that PrimFunc alone, under `name`
  uint64_t workload_hash;                  // ir::StructuralHash of the PrimFunc (the database key)
  int weight = 0;                          // call sites in the model
  std::vector<std::string> symbolic_dims;  // names of the shape variables, if any
  target::CpuPolicy policy;                // the target's: what the schedule rules read
};

// The PrimFunc `name` of `mod`, alone in a module, and its workload hash; its schedules are
// shaped by `policy` (by default this machine's).
absl::StatusOr<TuneTask> TaskFromPrimFunc(
    const ir::IRModule& mod, const std::string& name,
    const target::CpuPolicy& policy = target::PolicyFor(backend::HostCpuTarget()));

// The workload key of a PrimFunc: its structural hash as 16 hex digits.
std::string WorkloadKey(const ir::PrimFunc& func);

// Its family key: the structural hash with every integer constant alike (ir/structural.h), as
// 16 hex digits. One operator and epilogue at other shapes share it: the tuner starts a new task
// from the best records of its family.
std::string FamilyKey(const ir::PrimFunc& func);

// The target a workload's records are kept under: the target string resolved to its triple, CPU
// and features ("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver3 -mattr=+avx2,..."), so that
// "llvm" and "llvm -mcpu=native" on this host share records, and a record measured for one CPU
// is not applied to another. InvalidArgument for a target that does not parse.
absl::StatusOr<std::string> TuningTarget(const std::string& target);

// The ISA a tuning target's kernels are written for, as the schedule rules see it: the
// architecture, the vector width and register count, masked memory access ("x86_64 512x32
// masked"). Two CPUs of one ISA (a Zen 4 and an Ice Lake) differ in caches and timings, so a
// record of one is not applied to the other; but the other's records are where a search starts
// (tuner.cc, transfer). InvalidArgument for a target that does not parse.
absl::StatusOr<std::string> IsaClass(const std::string& target);

// Runs the pipeline up to (not including) DefaultSchedule and returns one task per distinct
// unscheduled PrimFunc, in order of first appearance by name. A module of PrimFuncs only (no
// Relax function) gives every PrimFunc weight 1.
absl::StatusOr<std::vector<TuneTask>> ExtractTasks(const ir::IRModule& mod,
                                                   const backend::BuildOptions& options = {});

// ExtractTasks for the target string `target` ("llvm -mcpu=haswell"): the passes and the tasks'
// schedule rules shaped for that CPU. InvalidArgument for a target that does not parse.
absl::StatusOr<std::vector<TuneTask>> ExtractTasksFor(const ir::IRModule& mod,
                                                      const std::string& target);

// The pipeline's passes before DefaultSchedule: what ExtractTasks runs, and so what `kiln
// compile` has done to a kernel when it looks up its tuning record.
std::vector<pass::PassPtr> PassesBeforeScheduling(const backend::BuildOptions& options);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_TASK_H_
