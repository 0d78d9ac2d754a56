// The design space: the schedule rules (compiler/tir/schedule_rules) applied to a task with
// sampled decisions, so that a candidate is its list of decisions and a neighbour is the same
// list with one decision resampled. The default schedule is the same rules with the rules'
// heuristic decisions: the point of the space the search starts from.
#ifndef KILN_COMPILER_TUNE_SPACE_H_
#define KILN_COMPILER_TUNE_SPACE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/tir/schedule/schedule.h"
#include "compiler/tir/schedule_rules/schedule_rules.h"
#include "compiler/tune/task.h"

namespace kiln::tune {

// One decision per sampling instruction, in the order the rules sample; nullopt: sample it.
using Decisions = tir::Decisions;
using tir::DecisionsOf;

// Applies the rules to the task's PrimFunc, taking decisions from `decisions` where given and
// sampling the rest from `seed` (or, with `unset` kHeuristic, taking the rules' own choices).
absl::StatusOr<tir::Schedule> GenerateSchedule(
    const TuneTask& task, uint64_t seed, const Decisions& decisions = {},
    tir::UnsetDecisions unset = tir::UnsetDecisions::kSample);

// The module of `sch` with its function marked "tir.is_scheduled" (what a builder compiles).
ir::IRModule ScheduledModule(const tir::Schedule& sch);

// A neighbour of `parent`: the decision at `index` (modulo the count) sampled again from `seed`,
// the rest kept. NotFound when the trace has no decisions.
absl::StatusOr<tir::Schedule> Mutate(const TuneTask& task, const v1::TraceProto& parent,
                                     uint64_t index, uint64_t seed);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_SPACE_H_
