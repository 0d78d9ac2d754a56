#include "compiler/ir/tir_functor.h"
#include "compiler/tir/schedule_rules/rules.h"

namespace kiln::tir::rules {

// AddRFactor: a row reduction along the innermost dimension of what it reads (softmax's max and
// sum, a layer norm's mean) is split into vector-wide steps whose partial results stay in a
// vector of lanes (rfactor), the rows in parallel; the lanes are reduced after, per row.
// Returns whether it applied (decided; the heuristic applies it wherever it fits).
absl::StatusOr<bool> AddRFactor(Schedule& sch, Sampler& sampler, const BlockInfo& info,
                                const target::CpuPolicy& policy) {
  if (!info.plain || info.loops.size() < 2) return false;
  const size_t last = info.loops.size() - 1;
  if (info.loop_kinds[last] != IterKind::kReduce) return false;
  for (size_t k = 0; k < last; ++k) {
    if (info.loop_kinds[k] != IterKind::kSpatial) return false;
  }
  const int64_t* extent = ConstExtent(info.loops[last]);
  const int64_t full = policy.lanes, half = policy.lanes / 2;
  const int64_t lanes = extent == nullptr                 ? 0
                        : *extent % full == 0             ? full
                        : half > 1 && *extent % half == 0 ? half
                                                          : 0;
  if (lanes == 0 || *extent < 2 * lanes) return false;
  const std::vector<bool> along = InnermostIndexUses(info, info.loop_iter_vars[last]);
  if (std::find(along.begin(), along.end(), true) == along.end()) return false;
  absl::StatusOr<int64_t> apply = sampler.Choose({0, 1}, 1);
  if (!apply.ok()) return apply.status();
  if (*apply == 0) return false;
  absl::StatusOr<BlockRV> block = sch.GetBlock(info.name);
  if (!block.ok()) return block.status();
  absl::StatusOr<std::vector<LoopRV>> loops = sch.GetLoops(*block);
  if (!loops.ok()) return loops.status();
  absl::StatusOr<std::vector<LoopRV>> steps = sch.Split((*loops)[last], {Factor(), lanes});
  if (!steps.ok()) return steps.status();
  absl::StatusOr<BlockRV> rf = sch.RFactor((*steps)[1], -1);
  if (!rf.ok()) return false;  // a combiner rfactor does not take; the split stays harmless
  absl::StatusOr<std::vector<LoopRV>> rf_loops = sch.GetLoops(*rf);
  if (!rf_loops.ok() || rf_loops->size() != last + 2) return true;
  const std::vector<LoopRV> rows(rf_loops->begin(), rf_loops->begin() + last);
  absl::StatusOr<BlockRV> init = sch.DecomposeReduction(*rf, (*rf_loops)[last]);
  if (init.ok()) {
    absl::StatusOr<std::vector<LoopRV>> init_loops = sch.GetLoops(*init);
    if (init_loops.ok() && !init_loops->empty()) (void)sch.Vectorize(init_loops->back());
  }
  (void)sch.Vectorize(rf_loops->back());
  bool all_const = true;
  for (size_t d = 0; d < last; ++d) all_const = all_const && ConstExtent(info.loops[d]) != nullptr;
  absl::StatusOr<LoopRV> fused = all_const && rows.size() > 1 ? sch.Fuse(rows) : rows.front();
  if (fused.ok() && Iterations(info.loops, 0, last) > 1) (void)sch.Parallel(*fused);
  const std::vector<BlockInfo> now = Blocks(sch);
  if (const BlockInfo* final_block = Find(now, info.name)) {
    if (absl::Status s = ParallelVectorize(sch, sampler, *final_block, policy); !s.ok()) return s;
  }
  return true;
}

}  // namespace kiln::tir::rules
