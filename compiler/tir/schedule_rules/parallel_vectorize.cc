#include "compiler/ir/tir_functor.h"
#include "compiler/tir/schedule_rules/rules.h"

namespace kiln::tir::rules {
namespace {

// The loop of a transpose: for a plain elementwise block whose output's innermost index is its
// last loop, the loop (not the last) whose variable alone indexes some input's innermost
// dimension (an NHWC -> NCHW permute_dims reads in[n, h, w, c] writing out[n, c, h, w]: the c
// loop); -1 when there is none.
int TransposedLoop(const BlockInfo& info) {
  const size_t last = info.loops.size() - 1;
  const ir::BufferNode* out = Output(info);
  if (out == nullptr || info.block->writes[0]->region.empty() ||
      info.block->writes[0]->region.back()->min.get() != info.loop_iter_vars[last]) {
    return -1;
  }
  for (const ir::BufferRegion& r : info.block->reads) {
    if (r->buffer.get() == out || r->region.size() < 2) continue;
    const auto* v = r->region.back()->min.as<ir::VarNode>();
    for (size_t k = 0; v != nullptr && k < last; ++k) {
      if (info.loop_iter_vars[k] == v) return static_cast<int>(k);
    }
  }
  return -1;
}

// A transpose (see TransposedLoop) in tiles: the input's innermost loop split by a vector's
// lanes, its tile just outside the vectorized tile of the output's rows, so that the input lines
// a gathered vector touches are read from L1 for every element of theirs rather than once per
// output row. The outer loops fused and parallel. Returns whether it applied.
absl::StatusOr<bool> TileTranspose(Schedule& sch, Sampler& sampler, const BlockInfo& info,
                                   const std::vector<LoopRV>& loops,
                                   const target::CpuPolicy& policy) {
  const int k_in = TransposedLoop(info);
  if (k_in < 0) return false;
  const size_t last = loops.size() - 1;
  const int64_t in_extent = *ConstExtent(info.loops[k_in]);
  const int64_t row = *ConstExtent(info.loops[last]);
  const int64_t in_tile = LargestDivisor(in_extent, policy.lanes);
  const int64_t row_tile = LargestDivisor(row, policy.max_vector_tile);
  if (in_tile < policy.lanes / 2 || row_tile < policy.lanes / 2) return false;
  absl::StatusOr<std::vector<ExprRV>> in_tiles =
      sampler.Tile(loops[k_in], 2, policy.lanes, {in_extent / in_tile, in_tile});
  if (!in_tiles.ok()) return in_tiles.status();
  absl::StatusOr<std::vector<ExprRV>> row_tiles =
      sampler.Tile(loops[last], 2, policy.max_vector_tile, {row / row_tile, row_tile});
  if (!row_tiles.ok()) return row_tiles.status();
  absl::StatusOr<std::vector<LoopRV>> in_split =
      sch.Split(loops[k_in], {(*in_tiles)[0], (*in_tiles)[1]});
  if (!in_split.ok()) return in_split.status();
  absl::StatusOr<std::vector<LoopRV>> row_split =
      sch.Split(loops[last], {(*row_tiles)[0], (*row_tiles)[1]});
  if (!row_split.ok()) return row_split.status();
  std::vector<LoopRV> outer;
  for (size_t k = 0; k < last; ++k) {
    outer.push_back(static_cast<int>(k) == k_in ? (*in_split)[0] : loops[k]);
  }
  outer.push_back((*row_split)[0]);
  std::vector<LoopRV> order = outer;
  order.push_back((*in_split)[1]);
  order.push_back((*row_split)[1]);
  if (absl::Status s = sch.Reorder(order); !s.ok()) return s;
  absl::StatusOr<LoopRV> fused = sch.Fuse(outer);
  if (fused.ok()) (void)sch.Parallel(*fused);
  return true;
}

}  // namespace

// ParallelVectorize of a block whose loops it alone owns.
absl::Status ParallelVectorize(Schedule& sch, Sampler& sampler, const BlockInfo& info,
                               const target::CpuPolicy& policy) {
  if (info.loops.empty() || !info.plain) return absl::OkStatus();
  absl::StatusOr<BlockRV> block = sch.GetBlock(info.name);
  if (!block.ok()) return block.status();
  absl::StatusOr<std::vector<LoopRV>> loops = sch.GetLoops(*block);
  if (!loops.ok()) return loops.status();
  // The leading spatial loops.
  size_t n_spatial = 0;
  bool all_const = true;
  int64_t extent = 1;
  while (n_spatial < info.loops.size() && info.loop_kinds[n_spatial] == IterKind::kSpatial) {
    const int64_t* e = ConstExtent(info.loops[n_spatial]);
    all_const = all_const && e != nullptr;
    if (e != nullptr) extent *= *e;
    ++n_spatial;
  }
  if (n_spatial == 0) return absl::OkStatus();
  std::vector<LoopRV> spatial(loops->begin(), loops->begin() + n_spatial);
  if (!all_const) {
    (void)sch.Parallel(spatial.front());
    if (!info.has_reduce && n_spatial > 1) (void)sch.Vectorize(spatial.back());
    return absl::OkStatus();
  }
  if (!info.has_reduce && n_spatial == info.loops.size() && n_spatial > 1) {
    absl::StatusOr<bool> transposed = TileTranspose(sch, sampler, info, spatial, policy);
    if (!transposed.ok()) return transposed.status();
    if (*transposed) return absl::OkStatus();
  }
  // Vectors within the innermost loop: one that crossed its rows would index by div and mod.
  const int64_t inner = *ConstExtent(info.loops[n_spatial - 1]);
  const int64_t widest = policy.max_elementwise_vector, half = policy.lanes / 2;
  const int64_t lanes = LargestDivisor(inner, widest);
  if (!info.has_reduce && lanes < half && inner >= half && n_spatial > 1) {
    // No wide divisor (a padded row of 226): the row is vectorized whole, its tail scalar, and
    // the rows run in parallel.
    std::vector<LoopRV> rows(spatial.begin(), spatial.end() - 1);
    absl::StatusOr<LoopRV> outer = rows.size() > 1 ? sch.Fuse(rows) : rows.front();
    if (outer.ok() && extent / inner > 1) (void)sch.Parallel(*outer);
    return sch.Vectorize(spatial.back());
  }
  LoopRV fused = spatial.front();
  if (spatial.size() > 1) {
    absl::StatusOr<LoopRV> f = sch.Fuse(spatial);
    if (!f.ok()) return absl::OkStatus();
    fused = *f;
  }
  if (info.has_reduce) return extent > 1 ? sch.Parallel(fused) : absl::OkStatus();
  absl::StatusOr<std::vector<ExprRV>> tiles =
      sampler.Tile(fused, 2, widest, {extent / lanes, lanes});
  if (!tiles.ok()) return tiles.status();
  absl::StatusOr<std::vector<LoopRV>> split = sch.Split(fused, {(*tiles)[0], (*tiles)[1]});
  if (!split.ok()) return split.status();
  if (*sampler.Value((*tiles)[0]) > 1) (void)sch.Parallel((*split)[0]);
  (void)sch.Vectorize((*split)[1]);
  return absl::OkStatus();
}

}  // namespace kiln::tir::rules
