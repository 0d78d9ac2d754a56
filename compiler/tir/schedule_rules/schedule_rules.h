// Schedule rules for CPUs: the one description of how a kernel is scheduled, shared by the
// default schedule (every untuned kernel) and the tuner's design space. Each choice a rule makes
// is a sampling instruction of the trace (tile sizes, where the write-back goes, unrolling,
// packing), so a schedule *is* its list of decisions. The default schedule is the rules with
// each decision chosen by a heuristic; a tuning candidate is the same rules with sampled or
// mutated decisions, measured. The rules, in order:
//
//   AutoInline          cheap elementwise producers (padding, casts) are computed inline where
//                       they are read; elementwise blocks read only by other elementwise blocks
//                       too, so an epilogue chain becomes one block
//   MultiLevelTiling    a reduction block with data reuse (matmul, conv2d, dense), or a window
//                       reduction along its input's rows (pooling), is tiled
//                       S0 S1 R0 S2 R1 S3 (spatial loops in four tiles, reductions in two), its
//                       result accumulated in a local buffer whose write-back, with the
//                       elementwise consumer folded in, goes at the end of the S0 or S1 tile; an
//                       operand read at [k, j] or [j, k] may be packed into [j / v, k, v] panels
//                       for the v-wide inner tile; the init split off; the outermost S0 loop
//                       the innermost S3 loop vectorized and the other S3 and R1 loops unrolled
//   RandomComputeLocation
//                       an elementwise producer of a tiled block (a convolution's padding) left
//                       at the root or computed under a loop of its consumer (decided; by
//                       heuristic under the parallel loop when each iteration needs its own part
//                       of the buffer, as a depthwise convolution's channels do)
//   AddRFactor          a row reduction along its input's innermost dimension (softmax's max
//                       and sum, a norm's mean) is split into vector-wide steps accumulated in
//                       a vector of partial results (rfactor, decided), rows in parallel
//   ParallelVectorize   every other block: spatial loops fused, split in two, the outer part
//                       parallel and the inner vectorized; a row reduction's spatial loops fused
//                       and parallel; a transpose (an input's innermost dimension walked by
//                       another loop than the output's) tiled by a vector's lanes of that loop
//                       outside a row of the output, serial (a gathered vector per row was
//                       slower than scalar copies whose input lines stay in L1)
//
// Every machine-dependent number comes from the target's policy (compiler/target/cpu_policy.h).
// Heuristic decisions (the default schedule): a register tile of the policy's accumulators (the
// FMA units' chains within the register file), the innermost spatial loop vectorized by two
// vectors, one or half of one when that divides its extent, the other spatial loops' inner tiles
// up to 8 each within that budget; the
// row loop (the spatial loop just outside the vectorized one) iterates serially inside the
// parallel column panels, so a panel of the reused operand stays in cache across the rows; the
// write-back at S1; S3 unrolled; an operand packed when at least 16 rows reuse each panel;
// budget the outer loops cannot use (no fitting divisor) goes back to the row loop; a row
// reduction rfactored wherever it fits.
//
// Loops of symbolic extent are never split or fused, so a schedule is correct for every value
// of the shape variables. A given decision that does not fit (a tile of the wrong product) is
// replaced, so any decision list yields a valid schedule.
#ifndef KILN_COMPILER_TIR_SCHEDULE_RULES_SCHEDULE_RULES_H_
#define KILN_COMPILER_TIR_SCHEDULE_RULES_SCHEDULE_RULES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "compiler/target/cpu_policy.h"
#include "compiler/tir/schedule/schedule.h"

namespace kiln::tir {

// One decision per sampling instruction, in the order the rules sample; nullopt: not given.
using Decisions = std::vector<std::optional<std::vector<int64_t>>>;

// How the rules fill a decision that is not given.
enum class UnsetDecisions {
  kHeuristic,  // the rule's own choice: the default schedule
  kSample,     // drawn from the schedule's random state: a tuning candidate
};

// Applies the rules for a CPU shaped by `policy` to the function `sch` schedules, taking
// decisions from `decisions` where given and filling the rest as `unset` says.
absl::Status ApplyScheduleRules(Schedule& sch, const target::CpuPolicy& policy,
                                const Decisions& decisions, UnsetDecisions unset);

// The decisions a trace recorded, in order.
Decisions DecisionsOf(const v1::TraceProto& trace);

}  // namespace kiln::tir

#endif  // KILN_COMPILER_TIR_SCHEDULE_RULES_SCHEDULE_RULES_H_
