#include <map>

#include "compiler/ir/tir_functor.h"
#include "compiler/tir/schedule_rules/rules.h"

namespace kiln::tir::rules {
namespace {

// The innermost tile of each loop of the block with `vec` lanes: the register tile.
std::vector<int64_t> InnerTiles(const BlockInfo& info, int last_spatial, int64_t vec,
                                bool windows_only, const target::CpuPolicy& policy) {
  const size_t n = info.loops.size();
  std::vector<int64_t> inner(n, 1);
  inner[last_spatial] = vec;
  const int64_t whole_budget = std::max<int64_t>(1, policy.TileAccumulators() / vec);
  int64_t budget = whole_budget;
  // Registers one row of the tile takes.
  const int64_t row_registers = std::max<int64_t>(1, (vec + policy.lanes - 1) / policy.lanes);
  // A strided input row (a stride-2 convolution's) costs two loads and a shuffle per vector:
  // where output channels share it, fewer rows, so that each vector serves more of them.
  const int64_t rows = SharedStridedRead(info, info.loop_iter_vars[last_spatial]) ? 2 : 4;
  int row_loop = -1;
  for (int k = last_spatial - 1; k >= 0; --k) {
    const int64_t* extent = ConstExtent(info.loops[k]);
    if (info.loop_kinds[k] != IterKind::kSpatial || extent == nullptr) continue;
    // A depthwise convolution's channels (or a pool's) share no input vector: the budget goes
    // to the rows, whose windows overlap.
    if (windows_only && PrivateToVectorReads(info, k, info.loop_iter_vars[last_spatial])) continue;
    // The row loop shares its budget with the next loop out (a conv's output channels), so a
    // tile reuses both each input vector and each broadcast weight.
    inner[k] = LargestDivisor(*extent, std::min<int64_t>(row_loop < 0 ? rows : 8, budget));
    // A row of prime extent (7) has no divisor in the budget: whole, while it is at most twice
    // the budget and its accumulators fit the register file beside the streamed operands (one
    // row alone left an NHWC 3x3 convolution over a 7x7 image at a fifth of the machine's rate).
    // Where only the register file keeps it from fitting (7 rows of two 8-lane vectors are 14
    // of AVX2's 16 registers), the rows go whole at one vector each instead.
    if (row_loop < 0 && inner[k] == 1 && *extent <= 2 * budget &&
        *extent <= InnerTileBound(policy)) {
      if (*extent * row_registers <= policy.tile_registers) {
        inner[k] = *extent;
      } else if (row_registers > 1 && vec % policy.lanes == 0 && *extent <= policy.tile_registers) {
        inner[last_spatial] = policy.lanes;
        inner[k] = *extent;
        budget = policy.accumulator_registers;
      }
    }
    budget = std::max<int64_t>(1, budget / inner[k]);
    if (row_loop < 0 && *extent > 1) row_loop = k;
  }
  // Budget the outer loops could not use (their extents have no fitting divisor: 125 column
  // blocks of 8) goes back to the row loop: fewer independent accumulators than the FMA latency
  // covers would leave the multiply-adds waiting on each other. Its room is the whole budget
  // over what the other loops' tiles take (the leftover divided step by step rounds down: 63
  // panels of a batch-1 classifier got 3 rows, not 7).
  if (row_loop >= 0 && budget > 1) {
    int64_t others = 1;
    for (size_t k = 0; k < n; ++k) {
      if (static_cast<int>(k) != row_loop && static_cast<int>(k) != last_spatial)
        others *= inner[k];
    }
    const int64_t room = std::max(inner[row_loop] * budget, whole_budget / others);
    const int64_t grown = LargestDivisor(*ConstExtent(info.loops[row_loop]), room);
    if (grown > inner[row_loop]) inner[row_loop] = grown;
  }
  return inner;
}

// The heuristic decisions of MultiLevelTiling: per loop of the block, its tiles (empty for a
// loop of symbolic extent).
std::vector<std::vector<int64_t>> HeuristicTiles(const BlockInfo& info, int last_spatial,
                                                 const target::CpuPolicy& policy) {
  const size_t n = info.loops.size();
  // A block whose reductions all slide windows (a depthwise convolution, pooling): the window
  // goes innermost (R1), unrolled around the register tile, so that LLVM loads each input
  // vector once for every tap and output that overlaps it; and the columns iterate inside the
  // rows (S1), so that a band of rows stays in L1 while the tile walks along it; its register
  // tile gives the rows the budget its channels would share (InnerTiles).
  const bool windows_only = OnlyWindowReductions(info);
  const int64_t extent = *ConstExtent(info.loops[last_spatial]);
  const std::vector<int64_t> inner =
      InnerTiles(info, last_spatial, VectorTile(extent, policy), windows_only, policy);
  int row_loop = -1;
  for (int k = last_spatial - 1; k >= 0; --k) {
    const int64_t* e = ConstExtent(info.loops[k]);
    if (info.loop_kinds[k] == IterKind::kSpatial && e != nullptr && *e > 1) {
      row_loop = k;
      break;
    }
  }
  // A convolution's pixel loops read only the image and its channel loops only the weight: the
  // pixels iterate inside each block of output channels (S1), so that the block's weights are
  // read from cache for every pixel rather than streamed once per row of the image (a deep
  // layer's weights are megabytes, far more than its image).
  int reductions = 0;
  for (IterKind kind : info.loop_kinds) reductions += kind == IterKind::kReduce;
  std::vector<bool> inner_pixels(n, false);
  for (size_t k = 0; k < n && reductions >= 3; ++k) {
    if (info.loop_kinds[k] != IterKind::kSpatial || static_cast<int>(k) == last_spatial) continue;
    inner_pixels[k] =
        DisjointReads(info, info.loop_iter_vars[k], info.loop_iter_vars[last_spatial]);
  }
  std::vector<std::vector<int64_t>> tiles(n);
  for (size_t k = 0; k < n; ++k) {
    const int64_t* extent = ConstExtent(info.loops[k]);
    if (extent == nullptr) continue;
    if (info.loop_kinds[k] != IterKind::kSpatial) {
      tiles[k] = windows_only ? std::vector<int64_t>{1, *extent} : std::vector<int64_t>{*extent, 1};
      continue;
    }
    const int64_t rest = *extent / inner[k];
    const bool s1 = static_cast<int>(k) == row_loop || inner_pixels[k] ||
                    (windows_only && static_cast<int>(k) == last_spatial);
    tiles[k] = s1 ? std::vector<int64_t>{1, rest, 1, inner[k]}
                  : std::vector<int64_t>{rest, 1, 1, inner[k]};
  }
  // A strided input row that output channels share (the stride-2 image of a network's first
  // convolution): its window loops go innermost (R1) and a block of up to a vector's lanes of
  // channels around them (S2), so that the window's shuffled input vectors, the same for every
  // channel, are built once per input channel and serve the block (LLVM hoists them out of the
  // channel loop). With only the register tile's few channels, the shuffles bound the kernel.
  if (SharedStridedRead(info, info.loop_iter_vars[last_spatial])) {
    for (size_t k = 0; k < n; ++k) {
      const int64_t* extent = ConstExtent(info.loops[k]);
      if (extent == nullptr) continue;
      if (info.loop_kinds[k] == IterKind::kReduce) {
        if (WindowReduction(info, k)) tiles[k] = {1, *extent};
      } else if (static_cast<int>(k) != last_spatial && static_cast<int>(k) != row_loop &&
                 *extent > 1) {
        const int64_t block = LargestDivisor(*extent, policy.lanes);
        tiles[k] = {*extent / block, 1, block, 1};
      }
    }
  }
  return tiles;
}

// An operand of a one-reduction block read at [k, j] or [j, k] (plain iter vars, its whole
// extent), with j the block's vectorized loop: what MultiLevelTiling may pack into panels.
struct PanelOperand {
  int read_index = -1;
  bool j_first = false;
};

PanelOperand FindPanelOperand(const BlockInfo& info, int last_spatial) {
  PanelOperand out;
  int reduce_loop = -1;
  for (size_t k = 0; k < info.loops.size(); ++k) {
    if (info.loop_kinds[k] != IterKind::kReduce) continue;
    if (reduce_loop >= 0 || !ConstExtent(info.loops[k])) return out;
    reduce_loop = static_cast<int>(k);
  }
  if (reduce_loop < 0) return out;
  int64_t rows = 1;
  for (size_t k = 0; k < info.loops.size(); ++k) {
    const int64_t* extent = ConstExtent(info.loops[k]);
    if (info.loop_kinds[k] == IterKind::kSpatial && static_cast<int>(k) != last_spatial)
      rows *= extent ? *extent : kMinRowsToPack;
  }
  if (rows < kMinRowsToPack) return out;
  const ir::VarNode* kv = info.loop_iter_vars[reduce_loop];
  const ir::VarNode* jv = info.loop_iter_vars[last_spatial];
  const ir::BufferNode* written = Output(info);
  for (size_t r = 0; r < info.block->reads.size(); ++r) {
    const ir::BufferRegion& region = info.block->reads[r];
    if (region->buffer.get() == written || region->region.size() != 2) continue;
    const auto* d0 = region->region[0]->min.as<ir::VarNode>();
    const auto* d1 = region->region[1]->min.as<ir::VarNode>();
    const bool kj = d0 == kv && d1 == jv, jk = d0 == jv && d1 == kv;
    if (!kj && !jk) continue;
    out.read_index = static_cast<int>(r);
    out.j_first = jk;
    return out;
  }
  return out;
}

// Packs the operand into [j / width, k, width] panels by a copy before the block's nest, read
// contiguously by the width-lane inner tile; the copy runs parallel over the panels. Returns the
// copy block's name.
absl::StatusOr<std::string> PackPanels(Schedule& sch, BlockRV block, const PanelOperand& operand,
                                       int64_t width) {
  absl::StatusOr<BlockRV> copy = sch.CacheRead(block, operand.read_index, "global");
  if (!copy.ok()) return copy.status();
  const int j_dim = operand.j_first ? 0 : 1;
  std::vector<int64_t> factors = {1, 1};
  factors[j_dim] = width;
  // The split dimensions: j_first (j / w, j % w, k), else (k, j / w, j % w).
  std::vector<int> order = operand.j_first ? std::vector<int>{0, 2, 1} : std::vector<int>{1, 0, 2};
  if (absl::Status s = sch.TransformLayout(*copy, 0, true, factors, order); !s.ok()) return s;
  absl::StatusOr<std::vector<LoopRV>> loops = sch.GetLoops(*copy);
  if (!loops.ok()) return loops.status();
  if (loops->size() != 2) return sch.BlockName(*copy);
  absl::StatusOr<std::vector<LoopRV>> j = sch.Split((*loops)[j_dim], {Factor(), width});
  if (!j.ok()) return j.status();
  if (absl::Status s = sch.Reorder({(*j)[0], (*loops)[1 - j_dim], (*j)[1]}); !s.ok()) return s;
  (void)sch.Parallel((*j)[0]);
  (void)sch.Vectorize((*j)[1]);
  return sch.BlockName(*copy);
}

// Unrolls `loops` (their constant `extents`; -1 for a symbolic one), all but the one at
// `vectorized`, where they make at most kMaxWriteBackCopies copies: a register tile's zeroing
// or write-back, so that every access to the accumulators is at a constant offset and LLVM keeps
// them in registers (one loop over 14 rows of them kept the whole tile in memory, and each
// multiply-add loaded and stored its accumulator).
void UnrollTileLoops(Schedule& sch, const std::vector<LoopRV>& loops,
                     const std::vector<int64_t>& extents, size_t vectorized) {
  if (extents.size() != loops.size()) return;
  int64_t copies = 1;
  for (size_t k = 0; k < loops.size(); ++k) {
    if (k == vectorized) continue;
    if (extents[k] < 0) return;
    copies *= extents[k];
  }
  if (copies > kMaxWriteBackCopies) return;
  for (size_t k = 0; k < loops.size(); ++k) {
    if (k != vectorized && extents[k] > 1) (void)sch.Unroll(loops[k]);
  }
}

// Vectorizes a write-back placed under `at` along the rows of what it writes. Its innermost
// loop may instead walk a packed convolution's block of output channels, unpacked into NCHW:
// one lane per channel plane, a scatter. Then the innermost loop under `at` that walks the
// output's rows is moved innermost and vectorized: whole row segments are stored, each lane
// read from the accumulator tile (shuffles of registers).
void VectorizeWriteBack(Schedule& sch, BlockRV block, LoopRV at) {
  absl::StatusOr<std::vector<LoopRV>> loops = sch.GetLoops(block);
  absl::StatusOr<std::string> at_name = sch.LoopName(at);
  absl::StatusOr<std::string> name = sch.BlockName(block);
  if (!loops.ok() || loops->empty() || !at_name.ok() || !name.ok()) return;
  std::vector<LoopRV> inner;  // the loops under `at`, outermost first (loop names are unique)
  for (size_t k = loops->size(); k-- > 0;) {
    absl::StatusOr<std::string> loop = sch.LoopName((*loops)[k]);
    if (!loop.ok() || *loop == *at_name) break;
    inner.insert(inner.begin(), (*loops)[k]);
  }
  const std::vector<BlockInfo> all = Blocks(sch);
  const BlockInfo* info = Find(all, *name);
  // The loops the output's row index uses, through the block's bindings.
  std::set<std::string> row_loops;
  if (info != nullptr && !info->block->writes.empty()) {
    ir::PostOrderVisit(info->block->writes[0]->region.back()->min, [&](const ir::PrimExpr& e) {
      for (size_t k = 0; k < info->block->iter_vars.size(); ++k) {
        if (info->block->iter_vars[k]->var.get() != e.get()) continue;
        ir::PostOrderVisit(info->realize->iter_values[k], [&](const ir::PrimExpr& x) {
          if (const auto* v = x.as<ir::VarNode>()) row_loops.insert(v->name);
        });
      }
    });
  }
  auto walks_row = [&](size_t k) {
    absl::StatusOr<std::string> loop = sch.LoopName(inner[k]);
    const int64_t* extent = ConstExtent(info->loops[info->loops.size() - inner.size() + k]);
    return loop.ok() && row_loops.count(*loop) > 0 && extent != nullptr && *extent > 1;
  };
  // The extents of the loops under `at`, before any reorder.
  std::vector<int64_t> extents;
  for (size_t k = 0; k < inner.size() && info != nullptr; ++k) {
    const int64_t* extent = ConstExtent(info->loops[info->loops.size() - inner.size() + k]);
    extents.push_back(extent != nullptr ? *extent : -1);
  }
  size_t vectorized = inner.size() - 1;
  if (!inner.empty() && !row_loops.empty() && !walks_row(inner.size() - 1)) {
    for (size_t k = inner.size() - 1; k-- > 0;) {
      if (!walks_row(k)) continue;
      std::vector<LoopRV> order = inner;
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(k));
      order.push_back(inner[k]);
      if (sch.Reorder(order).ok()) vectorized = k;
      break;
    }
  }
  if (inner.empty()) {
    (void)sch.Vectorize(loops->back());
    return;
  }
  (void)sch.Vectorize(inner[vectorized]);
  UnrollTileLoops(sch, inner, extents, vectorized);
}

}  // namespace

// MultiLevelTiling of one block (see schedule_rules.h); returns the names of the blocks it
// placed.
absl::StatusOr<std::set<std::string>> MultiLevelTiling(Schedule& sch, Sampler& sampler,
                                                       const BlockInfo& info, int last_spatial,
                                                       const target::CpuPolicy& policy) {
  std::set<std::string> placed = {info.name};
  absl::StatusOr<BlockRV> block = sch.GetBlock(info.name);
  if (!block.ok()) return block.status();
  absl::StatusOr<std::vector<LoopRV>> loops = sch.GetLoops(*block);
  if (!loops.ok()) return loops.status();
  const std::vector<std::vector<int64_t>> heuristic = HeuristicTiles(info, last_spatial, policy);
  std::vector<std::vector<ExprRV>> tiles(info.loops.size());
  for (size_t k = 0; k < info.loops.size(); ++k) {
    if (!ConstExtent(info.loops[k])) continue;
    const bool spatial = info.loop_kinds[k] == IterKind::kSpatial;
    // The sampled innermost tiles: up to four vectors along the vectorized loop and a
    // reduction, up to InnerTileBound along the other spatial loops.
    const int64_t wide = policy.max_elementwise_vector;
    const int64_t innermost = static_cast<int>(k) == last_spatial ? wide
                              : spatial                           ? InnerTileBound(policy)
                                                                  : wide;
    absl::StatusOr<std::vector<ExprRV>> t =
        sampler.Tile((*loops)[k], spatial ? 4 : 2, innermost, heuristic[k]);
    if (!t.ok()) return t.status();
    tiles[k] = *t;
  }
  // Packing the operand the vectorized tile streams, in panels as wide as that tile.
  const PanelOperand operand = FindPanelOperand(info, last_spatial);
  if (operand.read_index >= 0) {
    absl::StatusOr<int64_t> pack = sampler.Choose({0, 1}, 1);
    if (!pack.ok()) return pack.status();
    absl::StatusOr<int64_t> width = sampler.Value(tiles[last_spatial].back());
    if (!width.ok()) return width.status();
    if (*pack == 1 && *width > 1) {
      absl::StatusOr<std::string> copy = PackPanels(sch, *block, operand, *width);
      if (!copy.ok()) return copy.status();
      placed.insert(*copy);
      loops = sch.GetLoops(*block);
      if (!loops.ok()) return loops.status();
    }
  }
  // Loops of symbolic extent stay whole: a spatial one goes outermost, a reduction one at the
  // head of the R0 level, inside the tiles that own the accumulator (outside them, each of its
  // iterations would start the accumulator over).
  std::vector<LoopRV> symbolic, symbolic_reduce;
  std::vector<std::vector<LoopRV>> s_tiles(4), r_tiles(2);
  std::map<int, int64_t> extents;  // of each tile loop, by LoopRV id
  for (size_t k = 0; k < info.loops.size(); ++k) {
    const bool spatial = info.loop_kinds[k] == IterKind::kSpatial;
    if (tiles[k].empty()) {
      (spatial ? symbolic : symbolic_reduce).push_back((*loops)[k]);
      continue;
    }
    std::vector<Factor> factors(tiles[k].begin(), tiles[k].end());
    absl::StatusOr<std::vector<LoopRV>> split = sch.Split((*loops)[k], factors);
    if (!split.ok()) return split.status();
    for (size_t t = 0; t < split->size(); ++t) {
      (spatial ? s_tiles : r_tiles)[t].push_back((*split)[t]);
      absl::StatusOr<int64_t> extent = sampler.Value(tiles[k][t]);
      if (!extent.ok()) return extent.status();
      extents[(*split)[t].id] = *extent;
    }
  }
  std::vector<LoopRV> order = symbolic;
  for (const std::vector<LoopRV>* level : {&s_tiles[0], &s_tiles[1], &symbolic_reduce, &r_tiles[0],
                                           &s_tiles[2], &r_tiles[1], &s_tiles[3]}) {
    order.insert(order.end(), level->begin(), level->end());
  }
  if (absl::Status s = sch.Reorder(order); !s.ok()) return s;
  // The result accumulates in a local buffer; its write-back, with the elementwise consumer
  // folded in (or else placed after it), goes at the end of the S0 or S1 tile.
  absl::StatusOr<int64_t> level = sampler.Choose({0, 1}, 1);
  if (!level.ok()) return level.status();
  LoopRV at = s_tiles[*level].back();
  // A block without an init adds to what the output holds: it accumulates in place.
  std::optional<BlockRV> write_back;
  if (info.block->init) {
    absl::StatusOr<BlockRV> local = sch.CacheWrite(*block, 0, "local");
    if (!local.ok()) return local.status();
    write_back = *local;
  }
  // Consumers fold in one after another: a packed convolution's unpacking, then its epilogue.
  std::optional<BlockRV> epilogue;
  for (bool folded = true; folded;) {
    folded = false;
    absl::StatusOr<std::vector<BlockRV>> consumers =
        sch.GetConsumers(write_back ? *write_back : *block);
    if (!consumers.ok() || consumers->size() != 1) break;
    const std::vector<BlockInfo> all = Blocks(sch);
    const BlockInfo* c = Find(all, *sch.BlockName((*consumers)[0]));
    if (c == nullptr || c->has_reduce) break;
    folded = write_back && sch.ReverseComputeInline((*consumers)[0]).ok();
    // Under the tile only when this block alone produces what it reads (an average pool's
    // division also reads the window counts, computed after).
    absl::StatusOr<std::vector<BlockRV>> producers = sch.GetProducers((*consumers)[0]);
    if (!folded && producers.ok() && producers->size() == 1) epilogue = (*consumers)[0];
  }
  for (std::optional<BlockRV> b : {write_back, epilogue}) {
    if (!b || !sch.ReverseComputeAt(*b, at).ok()) continue;
    placed.insert(*sch.BlockName(*b));
    VectorizeWriteBack(sch, *b, at);
  }
  if (!symbolic_reduce.empty() || !r_tiles[0].empty()) {
    LoopRV first_reduce = !symbolic_reduce.empty() ? symbolic_reduce.front() : r_tiles[0].front();
    absl::StatusOr<BlockRV> init = sch.DecomposeReduction(*block, first_reduce);
    if (init.ok()) {
      placed.insert(*sch.BlockName(*init));
      absl::StatusOr<std::vector<LoopRV>> inner = sch.GetLoops(*init);
      if (inner.ok() && !inner->empty()) (void)sch.Vectorize(inner->back());
      // Its loops over the tile (S2 and S3) unrolled, as the write-back's are.
      const std::vector<BlockInfo> all = Blocks(sch);
      const BlockInfo* init_info = Find(all, *sch.BlockName(*init));
      const size_t tile_loops = s_tiles[2].size() + s_tiles[3].size();
      if (inner.ok() && init_info != nullptr && inner->size() >= tile_loops &&
          init_info->loops.size() == inner->size()) {
        const size_t first = inner->size() - tile_loops;
        std::vector<LoopRV> tile(inner->begin() + static_cast<std::ptrdiff_t>(first), inner->end());
        std::vector<int64_t> extents;
        for (size_t k = first; k < inner->size(); ++k) {
          const int64_t* extent = ConstExtent(init_info->loops[k]);
          extents.push_back(extent != nullptr ? *extent : -1);
        }
        UnrollTileLoops(sch, tile, extents, tile.size() - 1);
      }
    }
  }
  // Parallel: the outermost of the symbolic and S0 loops that iterates (not fused, so that each
  // iteration's accumulator window stays an affine function of its loops and the allocation
  // compacts to the tile); the innermost S3 loop vectorized, the rest of S3 and R1 unrolled.
  std::vector<LoopRV> outer = symbolic;
  outer.insert(outer.end(), s_tiles[0].begin(), s_tiles[0].end());
  std::vector<bool> iterates(symbolic.size(), true);
  for (size_t k = 0; k < info.loops.size(); ++k) {
    if (info.loop_kinds[k] == IterKind::kSpatial && !tiles[k].empty())
      iterates.push_back(*sampler.Value(tiles[k][0]) > 1);
  }
  for (size_t k = 0; k < outer.size(); ++k) {
    if (iterates[k]) {
      (void)sch.Parallel(outer[k]);
      break;
    }
  }
  (void)sch.Vectorize(s_tiles[3].back());
  absl::StatusOr<int64_t> unroll = sampler.Choose({0, 1}, 1);
  if (!unroll.ok()) return unroll.status();
  if (*unroll == 1) {
    // From the innermost loop outward, while the unrolled body stays within kMaxUnrollSteps
    // copies (as TVM's auto_unroll_max_step bounds it): a 16 x 3 x 3 x 8 x 8 nest unrolled whole
    // kept LLVM busy past the builder's minute, and such code thrashes the instruction cache.
    std::vector<LoopRV> inner_first(s_tiles[3].rbegin() + 1, s_tiles[3].rend());
    inner_first.insert(inner_first.end(), r_tiles[1].rbegin(), r_tiles[1].rend());
    int64_t steps = 1;
    for (LoopRV loop : inner_first) {
      steps *= extents.at(loop.id);
      if (steps > kMaxUnrollSteps) break;
      (void)sch.Unroll(loop);
    }
  }
  return placed;
}

}  // namespace kiln::tir::rules
