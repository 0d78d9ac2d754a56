#include "compiler/tir/default_schedule.h"

#include "compiler/ir/relax_expr.h"
#include "compiler/tir/schedule_rules/schedule_rules.h"

namespace kiln::tir {

absl::StatusOr<Schedule> DefaultSchedule(const ir::IRModule& mod, const std::string& func_name,
                                         const target::CpuPolicy& policy) {
  absl::StatusOr<Schedule> sch = Schedule::Create(mod, func_name, /*seed=*/1);
  if (!sch.ok()) return sch.status();
  if (absl::Status s = ApplyScheduleRules(*sch, policy, {}, UnsetDecisions::kHeuristic); !s.ok())
    return s;
  return sch;
}

ir::PrimFunc ApplyDefaultSchedule(const ir::PrimFunc& f, const target::CpuPolicy& policy) {
  if (ir::GetAttr(f->attrs, "tir.is_scheduled")) return f;
  ir::IRModuleBuilder one;
  const std::string name = "kernel";
  if (!one.Add(ir::relax::MakeGlobalVar(name), f).ok()) return f;
  absl::StatusOr<Schedule> sch = DefaultSchedule(one.Build(), name, policy);
  return sch.ok() ? sch->func() : f;
}

ir::IRModule ApplyDefaultSchedule(const ir::IRModule& mod, const target::CpuPolicy& policy) {
  ir::IRModuleBuilder builder(mod);
  for (const auto& [name, entry] : mod->functions) {
    if (auto f = entry.second.as_ref<ir::PrimFuncNode>())
      builder.Update(entry.first, ApplyDefaultSchedule(f, policy));
  }
  return builder.Build();
}

ir::PrimFunc ApplyDefaultScheduleAndMark(const ir::PrimFunc& f, const target::CpuPolicy& policy) {
  if (ir::GetAttr(f->attrs, "tir.is_scheduled")) return f;
  return ir::WithFuncAttr(ApplyDefaultSchedule(f, policy), "tir.is_scheduled", ir::Bool(true));
}

pass::PassPtr DefaultSchedulePass(const target::CpuPolicy& policy) {
  return pass::MakePrimFuncPass("DefaultSchedule",
                                [policy](const ir::PrimFunc& f) -> absl::StatusOr<ir::PrimFunc> {
                                  return ApplyDefaultScheduleAndMark(f, policy);
                                });
}

}  // namespace kiln::tir
