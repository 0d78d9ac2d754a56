// The schedule untuned code gets: the schedule rules (schedule_rules/schedule_rules.h) with every
// decision chosen by their heuristics, so that the default is the tuner's design space at one
// point (and the tuner's starting point), not a second description of how to schedule. A
// function the rules refuse is left unscheduled (its plain loops are correct, only slower).
// Functions with the attribute "tir.is_scheduled" are left alone.
#ifndef KILN_COMPILER_TIR_DEFAULT_SCHEDULE_H_
#define KILN_COMPILER_TIR_DEFAULT_SCHEDULE_H_

#include <string>

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"
#include "compiler/pass/pass.h"
#include "compiler/target/cpu_policy.h"
#include "compiler/tir/schedule/schedule.h"

namespace kiln::tir {

// The default schedule, for a CPU shaped by `policy`, of the PrimFunc `func_name` of `mod`, with
// its trace (its decisions are the heuristics').
absl::StatusOr<Schedule> DefaultSchedule(const ir::IRModule& mod, const std::string& func_name,
                                         const target::CpuPolicy& policy);

ir::PrimFunc ApplyDefaultSchedule(const ir::PrimFunc& f, const target::CpuPolicy& policy);
ir::IRModule ApplyDefaultSchedule(const ir::IRModule& mod, const target::CpuPolicy& policy);

// ApplyDefaultSchedule, then the attribute "tir.is_scheduled" (what the pass does to each kernel).
ir::PrimFunc ApplyDefaultScheduleAndMark(const ir::PrimFunc& f, const target::CpuPolicy& policy);

// The pipeline's DefaultSchedule pass: every PrimFunc not yet scheduled gets the default schedule
// and the attribute "tir.is_scheduled" (a tuned or hand-written schedule is left alone).
pass::PassPtr DefaultSchedulePass(const target::CpuPolicy& policy);

}  // namespace kiln::tir

#endif  // KILN_COMPILER_TIR_DEFAULT_SCHEDULE_H_
