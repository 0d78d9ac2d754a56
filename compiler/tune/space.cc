#include "compiler/tune/space.h"

#include "absl/strings/str_cat.h"

namespace kiln::tune {

using tir::Schedule;

absl::StatusOr<Schedule> GenerateSchedule(const TuneTask& task, uint64_t seed,
                                          const Decisions& decisions, tir::UnsetDecisions unset) {
  absl::StatusOr<Schedule> sch = Schedule::Create(task.mod, task.name, seed);
  if (!sch.ok()) return sch.status();
  if (absl::Status s = tir::ApplyScheduleRules(*sch, task.policy, decisions, unset); !s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("schedule rules on '", task.name, "': ", s.message()));
  }
  return sch;
}

ir::IRModule ScheduledModule(const Schedule& sch) {
  ir::IRModuleBuilder builder(sch.mod());
  builder.Update(sch.mod()->GetGlobalVar(sch.func_name()),
                 ir::WithFuncAttr(sch.func(), "tir.is_scheduled", ir::Bool(true)));
  return builder.Build();
}

absl::StatusOr<Schedule> Mutate(const TuneTask& task, const v1::TraceProto& parent, uint64_t index,
                                uint64_t seed) {
  Decisions decisions = DecisionsOf(parent);
  if (decisions.empty()) return absl::NotFoundError("the schedule samples no decisions");
  const size_t k = index % decisions.size();
  const std::vector<int64_t> old = *decisions[k];
  decisions[k] = std::nullopt;
  absl::StatusOr<Schedule> out = absl::UnknownError("");
  // A few draws: a small loop has few tilings, and the same one again is no neighbour.
  for (uint64_t attempt = 0; attempt < 8; ++attempt) {
    out = GenerateSchedule(task, seed * 8 + attempt + 1, decisions);
    if (!out.ok()) return out;
    Decisions got = DecisionsOf(out->trace());
    if (k < got.size() && *got[k] != old) return out;
  }
  return out;
}

}  // namespace kiln::tune
