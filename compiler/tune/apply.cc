#include "compiler/tune/apply.h"

#include "absl/strings/str_cat.h"
#include "compiler/tir/schedule/trace.h"
#include "compiler/tune/task.h"
#include "runtime/artifact.h"

namespace kiln::tune {

namespace {

// The record the pass applies to `workload`, if any: its best, where it beat the untuned kernel
// measured beside it (RecordBeatsUntuned).
absl::StatusOr<std::optional<TuningRecord>> AppliedRecord(const TuningDatabase& db,
                                                          const WorkloadId& workload) {
  absl::StatusOr<std::optional<TuningRecord>> best = db.Best(workload);
  if (!best.ok() || !best->has_value()) return best;
  absl::StatusOr<std::optional<double>> untuned = db.DefaultSeconds(workload);
  if (untuned.ok() && untuned->has_value() && !RecordBeatsUntuned(*(*best)->seconds, **untuned)) {
    return std::optional<TuningRecord>();
  }
  return best;
}

}  // namespace

absl::StatusOr<std::string> AppliedRecordsDigest(const TuningDatabase& db,
                                                 const std::string& target) {
  absl::StatusOr<std::string> resolved = TuningTarget(target);
  if (!resolved.ok()) return resolved.status();
  absl::StatusOr<std::vector<WorkloadId>> workloads = db.Workloads();
  if (!workloads.ok()) return workloads.status();
  std::string applied;
  for (const WorkloadId& w : *workloads) {
    if (w.target != *resolved || !w.device_key.empty()) continue;
    absl::StatusOr<std::optional<TuningRecord>> record = AppliedRecord(db, w);
    if (!record.ok()) return record.status();
    if (record->has_value())
      absl::StrAppend(&applied, w.workload_key, " ", (*record)->candidate_key, "\n");
  }
  return applied.empty() ? "" : runtime::Sha256Hex(applied);
}

pass::PassPtr ApplyTuningRecordsPass(std::shared_ptr<const TuningDatabase> db, std::string target,
                                     std::function<void(const std::string&)> warn) {
  return pass::MakeModulePass(
      "ApplyTuningRecords",
      [db, target_string = std::move(target),
       warn](const ir::IRModule& mod) -> absl::StatusOr<ir::IRModule> {
        absl::StatusOr<std::string> target = TuningTarget(target_string);
        if (!target.ok()) return target.status();
        ir::IRModuleBuilder builder(mod);
        for (const auto& [name, entry] : mod->functions) {
          ir::PrimFunc f = entry.second.as_ref<ir::PrimFuncNode>();
          if (!f || ir::GetAttr(f->attrs, "tir.is_scheduled")) continue;
          const std::string key = WorkloadKey(f);
          absl::StatusOr<std::optional<TuningRecord>> best = AppliedRecord(*db, {key, *target, ""});
          if (!best.ok()) {
            warn(absl::StrCat("kernel ", name, ": ", best.status().message(),
                              "; using the default schedule"));
            continue;
          }
          if (!best->has_value()) continue;
          absl::StatusOr<TuneTask> task = TaskFromPrimFunc(mod, name);
          if (!task.ok()) return task.status();
          v1::TraceProto trace = (*best)->trace;
          trace.set_func_name(name);
          absl::StatusOr<tir::Schedule> sch = tir::ReplayTrace(task->mod, trace);
          if (!sch.ok()) {
            warn(absl::StrCat("kernel ", name, ": its tuning record (workload ", key,
                              ") no longer replays: ", sch.status().message(),
                              "; using the default schedule"));
            continue;
          }
          ir::PrimFunc tuned = ir::WithFuncAttr(sch->func(), "tir.is_scheduled", ir::Bool(true));
          builder.Update(entry.first, ir::WithFuncAttr(tuned, "kiln.tuned", ir::Bool(true)));
        }
        return builder.Build();
      },
      {"LegalizeOps"});
}

}  // namespace kiln::tune
