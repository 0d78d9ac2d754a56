#include "compiler/ir/tir_functor.h"
#include "compiler/tir/schedule_rules/rules.h"

namespace kiln::tir::rules {
namespace {

// True when `producer`, computed under the consumer's loop number `at`, computes at most half
// as much again as computing it once (the halo rows of a padded image: an NHWC depthwise
// convolution of stride 2 reads 3 rows per output row, 1.47 times the image): each iteration of
// the loop needs its own part of the buffer.
bool ComputedOnceUnder(const Schedule& sch, const BlockInfo& producer, const std::string& consumer,
                       int64_t at) {
  Schedule trial = sch;
  absl::StatusOr<BlockRV> block = trial.GetBlock(producer.name);
  absl::StatusOr<LoopRV> loop =
      block.ok() ? trial.SampleComputeLocation(*block, at) : absl::StatusOr<LoopRV>(block.status());
  if (!loop.ok() || !trial.ComputeAt(*block, *loop).ok()) return false;
  const std::vector<BlockInfo> moved = Blocks(trial);
  const BlockInfo* b = Find(moved, producer.name);
  const BlockInfo* c = Find(moved, consumer);
  if (b == nullptr || c == nullptr) return false;
  const int64_t computed = Iterations(c->loops, 0, at + 1) * Iterations(b->loops, at + 1, SIZE_MAX);
  return 2 * computed <= 3 * Iterations(producer.loops, 0, SIZE_MAX);
}

// The rows of a block moved under a consumer's loop (`loops`: all that enclose it, the innermost
// vectorized) run in parallel when no enclosing loop already does. Its own loops are the perfect
// nest below the last loop it shares with the consumer; they are fused first, so that a padded
// image of 3 channels still splits evenly.
void ParallelRowsOutsideParallel(Schedule& sch, const std::string& name,
                                 const std::vector<LoopRV>& loops) {
  const std::vector<BlockInfo> now = Blocks(sch);
  const BlockInfo* moved = Find(now, name);
  if (moved == nullptr || moved->loops.size() != loops.size() || loops.size() < 2) return;
  size_t own = loops.size() - 1;  // the first of its own loops
  while (own > 0 && moved->loops[own - 1]->body.as<ForNode>() == moved->loops[own]) --own;
  for (const ForNode* loop : moved->loops) {
    if (loop->for_kind == ir::ForKind::kParallel) return;
  }
  std::vector<LoopRV> rows(loops.begin() + static_cast<std::ptrdiff_t>(own), loops.end() - 1);
  if (rows.empty() || Iterations(moved->loops, own, loops.size() - 1) < 2) return;
  absl::StatusOr<LoopRV> fused = rows.size() > 1 ? sch.Fuse(rows) : rows.front();
  if (fused.ok()) (void)sch.Parallel(*fused);
}

}  // namespace

// RandomComputeLocation of an elementwise producer (a convolution's padding) of a tiled block:
// left where it is, computing all of its buffer once, or computed under a loop of its consumer
// (decided). The heuristic moves it under the consumer's parallel loop when each iteration
// needs its own part of the buffer (a depthwise convolution's channel), so the copy runs in
// parallel and is read while in cache; not when every iteration needs all of it (a dense
// convolution reads every input channel), which would copy it once per iteration.
absl::Status RandomComputeLocation(Schedule& sch, Sampler& sampler, const BlockInfo& info,
                                   const std::string& consumer, const target::CpuPolicy& policy) {
  absl::StatusOr<BlockRV> block = sch.GetBlock(info.name);
  if (!block.ok()) return block.status();
  const std::vector<BlockInfo> all = Blocks(sch);
  const BlockInfo* c = Find(all, consumer);
  if (c == nullptr) return absl::OkStatus();
  int64_t parallel = -1;
  for (size_t k = 0; k < c->loops.size() && parallel < 0; ++k) {
    if (c->loops[k]->for_kind == ir::ForKind::kParallel) parallel = static_cast<int64_t>(k);
  }
  // Else under the consumer's outermost loop (the batch), where it is still computed once: the
  // copy shrinks to the part the consumer reads (a stride-2 convolution never reads the last
  // padded row and column, so no lane tests an upper bound), its rows in parallel. Copying the
  // whole padded buffer at the root made MobileNetV2's NHWC depthwise convolutions 10-15 %
  // slower, its first convolution 15-25 %.
  int64_t heuristic_at = -1;
  if (parallel >= 0 && ComputedOnceUnder(sch, info, consumer, parallel)) {
    heuristic_at = parallel;
  } else if (parallel != 0 && ComputedOnceUnder(sch, info, consumer, 0)) {
    heuristic_at = 0;
  }
  absl::StatusOr<int64_t> move = sampler.Choose({0, 1}, heuristic_at >= 0);
  if (!move.ok()) return move.status();
  if (*move == 0) return ParallelVectorize(sch, sampler, info, policy);
  absl::StatusOr<LoopRV> at =
      sampler.Location(*block, heuristic_at >= 0 ? heuristic_at : std::max<int64_t>(parallel, 0));
  if (!at.ok()) return at.status();
  if (!sch.ComputeAt(*block, *at).ok()) return ParallelVectorize(sch, sampler, info, policy);
  absl::StatusOr<std::vector<LoopRV>> loops = sch.GetLoops(*block);
  if (!loops.ok() || loops->empty()) return absl::OkStatus();
  (void)sch.Vectorize(loops->back());
  ParallelRowsOutsideParallel(sch, info.name, *loops);
  return absl::OkStatus();
}

}  // namespace kiln::tir::rules
