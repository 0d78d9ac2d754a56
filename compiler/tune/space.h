// The design space: schedule rules for CPUs that turn a task's PrimFunc into a schedule, each
// choice a sampling instruction of the trace (tile sizes, where the write-back goes, unrolling),
// so that a candidate is its list of decisions and a neighbour is the same list with one
// decision resampled. The rules, in order:
//
//   AutoInline          cheap elementwise producers (padding, casts) are computed inline where
//                       they are read; elementwise blocks read only by other elementwise blocks
//                       too, so an epilogue chain becomes one block
//   MultiLevelTiling    a reduction block with data reuse (matmul, conv2d, dense) is tiled
//                       S0 S1 R0 S2 R1 S3 (spatial loops in four sampled tiles, reductions in
//                       two); its elementwise consumer, or else a local accumulator's
//                       write-back, computed at the end of the S0 or S1 tile (sampled); the
//                       init split off; S0 fused and parallel; the innermost S3 loop vectorized
//                       and the other S3 loops unrolled (sampled)
//   ParallelVectorize   every other block: spatial loops fused, split in two (sampled), the
//                       outer part parallel and the inner vectorized; a row reduction's spatial
//                       loops fused and parallel
//
// Loops of symbolic extent are never split or fused, so a schedule is correct for every value
// of the shape variables. A decision that does not fit (a tile of the wrong product) is sampled
// afresh, so any decision list yields a valid schedule.
#ifndef KILN_COMPILER_TUNE_SPACE_H_
#define KILN_COMPILER_TUNE_SPACE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/tir/schedule/schedule.h"
#include "compiler/tune/task.h"

namespace kiln::tune {

// One decision per sampling instruction, in the order the rules sample; nullopt: sample it.
using Decisions = std::vector<std::optional<std::vector<int64_t>>>;

// Applies the rules to the task's PrimFunc, taking decisions from `decisions` where given and
// sampling the rest from `seed`. The result's function carries "tir.is_scheduled".
absl::StatusOr<tir::Schedule> GenerateSchedule(const TuneTask& task, uint64_t seed,
                                               const Decisions& decisions = {});

// The decisions a trace recorded, in order.
Decisions DecisionsOf(const v1::TraceProto& trace);

// The module of `sch` with its function marked "tir.is_scheduled" (what a builder compiles).
ir::IRModule ScheduledModule(const tir::Schedule& sch);

// A neighbour of `parent`: the decision at `index` (modulo the count) sampled again from `seed`,
// the rest kept. NotFound when the trace has no decisions.
absl::StatusOr<tir::Schedule> Mutate(const TuneTask& task, const v1::TraceProto& parent,
                                     uint64_t index, uint64_t seed);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_SPACE_H_
