// What the schedule rules share (schedule_rules.h is their interface): how a rule sees a block,
// the sampler that hands each rule its decisions, the numbers every rule uses, and the rules
// themselves, one file each:
//
//   auto_inline.cc               AutoInline
//   multi_level_tiling.cc        MultiLevelTiling
//   compute_location.cc          RandomComputeLocation
//   add_rfactor.cc               AddRFactor
//   parallel_vectorize.cc        ParallelVectorize
//
// Internal to compiler/tir/schedule_rules.
#ifndef KILN_COMPILER_TIR_SCHEDULE_RULES_RULES_H_
#define KILN_COMPILER_TIR_SCHEDULE_RULES_RULES_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/tir_stmt.h"
#include "compiler/target/cpu_policy.h"
#include "compiler/tir/schedule/schedule.h"
#include "compiler/tir/schedule_rules/schedule_rules.h"

namespace kiln::tir::rules {

using ir::ForNode;
using ir::IterKind;

// A block as the rules see it: its loops (inside its enclosing block, outermost first, as
// Schedule::GetLoops gives them) and how each drives the block.
struct BlockInfo {
  std::string name;
  const ir::BlockNode* block = nullptr;
  const ir::BlockRealizeNode* realize = nullptr;
  std::vector<const ForNode*> loops;
  // Per loop: the kind of the iter var it alone drives, or kOpaque when the block's iter values
  // are not plain loop variables; and that iter var.
  std::vector<IterKind> loop_kinds;
  std::vector<const ir::VarNode*> loop_iter_vars;
  bool plain = false;  // every iter value is a distinct loop variable, every loop drives one
  bool has_reduce = false;
  bool has_reuse = false;  // some read misses a spatial iter var
  bool writes_param = false;
};

// The blocks of the function `sch` schedules (the root block aside), outermost first.
std::vector<BlockInfo> Blocks(const Schedule& sch);
const BlockInfo* Find(const std::vector<BlockInfo>& blocks, const std::string& name);
// A loop's constant extent, or null.
const int64_t* ConstExtent(const ForNode* loop);
// The buffer a block writes (its first write), or null.
const ir::BufferNode* Output(const BlockInfo& info);
// The variables a buffer region's indices use.
std::set<const ir::VarNode*> VarsIn(const ir::BufferRegion& region);
// Per input of the block (each read of a buffer other than its output): whether the index of
// its innermost dimension uses `v`, i.e. whether the loop of `v` walks along that input's rows.
std::vector<bool> InnermostIndexUses(const BlockInfo& info, const ir::VarNode* v);
// The largest divisor of `extent` not above `limit`.
int64_t LargestDivisor(int64_t extent, int64_t limit);
// The vectorized inner tile of a loop: two vectors, one or half of one when it divides the
// extent, else the largest divisor up to one vector.
int64_t VectorTile(int64_t extent, const target::CpuPolicy& policy);
// Whether the iter vars `a` and `b` index different inputs of the block.
bool DisjointReads(const BlockInfo& info, const ir::VarNode* a, const ir::VarNode* b);
// Whether a read's innermost index steps by more than one along `v` while a spatial loop of the
// block does not index it (each strided vector is reused across that loop).
bool SharedStridedRead(const BlockInfo& info, const ir::VarNode* v);
// Whether the reduction loop `k` slides a window (oh * s + kh).
bool WindowReduction(const BlockInfo& info, size_t k);
// Whether every reduction of the block that iterates slides a window (a depthwise convolution,
// pooling): no loop sums over input channels, so outputs share only what their windows overlap.
// A grouped convolution's sum over its group's channels counts as one too (its index joins the
// output channel's group and the reduction), and gains as much from the same tiles, all of its
// reductions innermost (ResNeXt's 3x3 of 32 groups, AVX-512: 368 us, 556 without).
bool OnlyWindowReductions(const BlockInfo& info);
// Whether the spatial loop `k` indexes the reads that the vectorized loop's `v` indexes only
// plainly, never beside a window (a depthwise convolution's channel beside its vectorized
// columns): outputs along it share no input vector, so a register tile gains nothing by it.
bool PrivateToVectorReads(const BlockInfo& info, size_t k, const ir::VarNode* v);
// The product of the constant extents of loops[from, to) (a symbolic extent counts 1).
int64_t Iterations(const std::vector<const ForNode*>& loops, size_t from, size_t to);
// A reduction over a window whose innermost spatial loop walks the innermost dimension of what
// it reads (pooling): tiled like a convolution.
bool VectorizableWindow(const BlockInfo& info, int last_spatial);
// The innermost spatial loop of constant extent, or -1.
int LastConstSpatial(const BlockInfo& info);

// Packing an operand copies it once per call; it pays when this many rows reuse each panel.
constexpr int64_t kMinRowsToPack = 16;
// The inner tile of a spatial loop other than the vectorized one is at most one vector's lanes,
// or this many where vectors are narrower (a 7-row tile on NEON).
constexpr int64_t kMinInnerTileBound = 8;
inline int64_t InnerTileBound(const target::CpuPolicy& policy) {
  return std::max(policy.lanes, kMinInnerTileBound);
}
// At most this many copies of a loop body are unrolled.
constexpr int64_t kMaxUnrollSteps = 256;
// A write-back of at most this many vectors is unrolled whole (a register tile's: at most the
// register file).
constexpr int64_t kMaxWriteBackCopies = 32;

// Hands the rules their decisions in order; one not given is the rule's heuristic choice or a
// sample, and one that does not fit is sampled afresh.
class Sampler {
 public:
  Sampler(Schedule* sch, const Decisions& decisions, UnsetDecisions unset)
      : sch_(sch), decisions_(decisions), unset_(unset) {}

  absl::StatusOr<std::vector<ExprRV>> Tile(LoopRV loop, int n, int64_t max_innermost,
                                           const std::vector<int64_t>& heuristic) {
    std::optional<std::vector<int64_t>> given = Next();
    if (!given && unset_ == UnsetDecisions::kHeuristic) given = heuristic;
    if (given) {
      absl::StatusOr<std::vector<ExprRV>> out =
          sch_->SamplePerfectTile(loop, n, max_innermost, given);
      if (out.ok()) return out;
    }
    return sch_->SamplePerfectTile(loop, n, max_innermost);
  }

  absl::StatusOr<int64_t> Choose(std::vector<int64_t> candidates, int64_t heuristic) {
    std::vector<double> p(candidates.size(), 1.0 / static_cast<double>(candidates.size()));
    std::optional<std::vector<int64_t>> given = Next();
    if (!given && unset_ == UnsetDecisions::kHeuristic) given = std::vector<int64_t>{heuristic};
    absl::StatusOr<ExprRV> rv = absl::UnknownError("");
    if (given && given->size() == 1) rv = sch_->SampleCategorical(candidates, p, (*given)[0]);
    if (!rv.ok()) rv = sch_->SampleCategorical(candidates, p);
    if (!rv.ok()) return rv.status();
    return sch_->Get(*rv);
  }

  absl::StatusOr<LoopRV> Location(BlockRV block, int64_t heuristic) {
    std::optional<std::vector<int64_t>> given = Next();
    if (!given && unset_ == UnsetDecisions::kHeuristic) given = std::vector<int64_t>{heuristic};
    if (given && given->size() == 1) {
      absl::StatusOr<LoopRV> out = sch_->SampleComputeLocation(block, (*given)[0]);
      if (out.ok()) return out;
    }
    return sch_->SampleComputeLocation(block);
  }

  absl::StatusOr<int64_t> Value(ExprRV rv) const { return sch_->Get(rv); }

 private:
  std::optional<std::vector<int64_t>> Next() {
    size_t k = next_++;
    return k < decisions_.size() ? decisions_[k] : std::nullopt;
  }

  Schedule* sch_;
  const Decisions& decisions_;
  UnsetDecisions unset_;
  size_t next_ = 0;
};

// The rules, in the order ApplyScheduleRules runs them (schedule_rules.h says what each does).
void AutoInline(Schedule& sch);
// Returns the blocks it placed (the tiled block and what it folded in).
absl::StatusOr<std::set<std::string>> MultiLevelTiling(Schedule& sch, Sampler& sampler,
                                                       const BlockInfo& info, int last_spatial,
                                                       const target::CpuPolicy& policy);
absl::Status RandomComputeLocation(Schedule& sch, Sampler& sampler, const BlockInfo& info,
                                   const std::string& consumer, const target::CpuPolicy& policy);
// Returns whether it applied.
absl::StatusOr<bool> AddRFactor(Schedule& sch, Sampler& sampler, const BlockInfo& info,
                                const target::CpuPolicy& policy);
absl::Status ParallelVectorize(Schedule& sch, Sampler& sampler, const BlockInfo& info,
                               const target::CpuPolicy& policy);

}  // namespace kiln::tir::rules

#endif  // KILN_COMPILER_TIR_SCHEDULE_RULES_RULES_H_
