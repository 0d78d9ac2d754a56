#include "compiler/tir/schedule_rules/schedule_rules.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "compiler/ir/tir_functor.h"
#include "compiler/target/cpu_policy.h"

namespace kiln::tir {
namespace {

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

// The variables a buffer region's indices use.
std::set<const ir::VarNode*> VarsIn(const ir::BufferRegion& region) {
  std::set<const ir::VarNode*> vars;
  for (const ir::Range& range : region->region) {
    ir::PostOrderVisit(range->min, [&](const ir::PrimExpr& e) {
      if (const auto* v = e.as<ir::VarNode>()) vars.insert(v);
    });
  }
  return vars;
}

class BlockCollector : public ir::StmtExprVisitor {
 public:
  explicit BlockCollector(const ir::PrimFunc& f) {
    for (const auto& [param, buffer] : f->buffer_map) params_.insert(buffer.get());
    VisitStmt(f->body);
  }
  std::vector<BlockInfo> blocks;

  void VisitStmt(const ir::Stmt& s) override {
    if (const auto* loop = s.as<ForNode>()) {
      loops_.push_back(loop);
      DefaultVisitStmt(s);
      loops_.pop_back();
      return;
    }
    if (const auto* realize = s.as<ir::BlockRealizeNode>()) {
      if (realize->block->name != "root") blocks.push_back(Describe(*realize));
      std::vector<const ForNode*> outer;
      outer.swap(loops_);
      DefaultVisitStmt(s);
      loops_.swap(outer);
      return;
    }
    DefaultVisitStmt(s);
  }

 private:
  BlockInfo Describe(const ir::BlockRealizeNode& realize) const {
    const ir::BlockNode& block = *realize.block;
    BlockInfo info;
    info.name = block.name;
    info.block = &block;
    info.realize = &realize;
    info.loops = loops_;
    info.loop_kinds.assign(loops_.size(), IterKind::kOpaque);
    info.loop_iter_vars.assign(loops_.size(), nullptr);
    std::map<const ir::VarNode*, size_t> loop_of;
    for (size_t k = 0; k < loops_.size(); ++k) loop_of[loops_[k]->loop_var.get()] = k;
    info.plain = realize.iter_values.size() == loops_.size();
    std::set<size_t> used;
    for (size_t k = 0; k < block.iter_vars.size(); ++k) {
      IterKind kind = block.iter_vars[k]->iter_kind;
      if (kind == IterKind::kReduce) info.has_reduce = true;
      if (kind != IterKind::kSpatial && kind != IterKind::kReduce) info.plain = false;
      const auto* v = realize.iter_values[k].as<ir::VarNode>();
      auto it = v ? loop_of.find(v) : loop_of.end();
      if (it == loop_of.end() || !used.insert(it->second).second) {
        info.plain = false;
        continue;
      }
      info.loop_kinds[it->second] = kind;
      info.loop_iter_vars[it->second] = block.iter_vars[k]->var.get();
    }
    for (const ir::BufferRegion& w : block.writes) {
      if (params_.count(w->buffer.get())) info.writes_param = true;
    }
    for (const ir::BufferRegion& r : block.reads) {
      const std::set<const ir::VarNode*> touched = VarsIn(r);
      for (const ir::IterVar& iv : block.iter_vars) {
        // An iter var of extent 1 (a kept dimension of a row reduction's output) reuses nothing.
        const int64_t* extent = ir::AsConstInt(iv->dom->extent);
        if (extent != nullptr && *extent == 1) continue;
        if (iv->iter_kind == IterKind::kSpatial && !touched.count(iv->var.get()) &&
            r->buffer.get() != (block.writes.empty() ? nullptr : block.writes[0]->buffer.get())) {
          info.has_reuse = true;
        }
      }
    }
    return info;
  }

  std::set<const ir::BufferNode*> params_;
  std::vector<const ForNode*> loops_;
};

std::vector<BlockInfo> Blocks(const Schedule& sch) { return BlockCollector(sch.func()).blocks; }

const BlockInfo* Find(const std::vector<BlockInfo>& blocks, const std::string& name) {
  for (const BlockInfo& b : blocks) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

const int64_t* ConstExtent(const ForNode* loop) { return ir::AsConstInt(loop->extent); }

// The buffer a block writes (its first write), or null.
const ir::BufferNode* Output(const BlockInfo& info) {
  return info.block->writes.empty() ? nullptr : info.block->writes[0]->buffer.get();
}

// Per input of the block (each read of a buffer other than its output): whether the index of
// its innermost dimension uses `v`, i.e. whether the loop of `v` walks along that input's rows.
std::vector<bool> InnermostIndexUses(const BlockInfo& info, const ir::VarNode* v) {
  std::vector<bool> uses;
  for (const ir::BufferRegion& r : info.block->reads) {
    if (r->buffer.get() == Output(info) || r->region.empty()) continue;
    bool found = false;
    ir::PostOrderVisit(r->region.back()->min, [&](const ir::PrimExpr& e) {
      if (e.get() == v) found = true;
    });
    uses.push_back(found);
  }
  return uses;
}

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

// The largest divisor of `extent` not above `limit`.
int64_t LargestDivisor(int64_t extent, int64_t limit) {
  for (int64_t d = std::min(extent, std::max<int64_t>(limit, 1)); d > 1; --d) {
    if (extent % d == 0) return d;
  }
  return 1;
}

// The vectorized inner tile of a loop: two vectors, one or half of one when it divides the
// extent, else the largest divisor up to one vector (a 7-wide image row stays one 7-lane
// vector). Never one and a half: LLVM takes such a vector apart lane by lane (an NHWC
// convolution of 144 channels in 24-lane vectors ran at 11 GFLOP/s).
int64_t VectorTile(int64_t extent, const target::CpuPolicy& policy) {
  for (int64_t d : {policy.max_vector_tile, policy.lanes, policy.lanes / 2}) {
    if (d > 1 && extent % d == 0) return d;
  }
  return LargestDivisor(extent, policy.lanes);
}

// Packing an operand copies it once per call; it pays when this many rows reuse each panel.
constexpr int64_t kMinRowsToPack = 16;
// The inner tile of a spatial loop other than the vectorized one is at most one vector's lanes,
// or this many where vectors are narrower (a 7-row tile on NEON).
constexpr int64_t kMinInnerTileBound = 8;
int64_t InnerTileBound(const target::CpuPolicy& policy) {
  return std::max(policy.lanes, kMinInnerTileBound);
}
// At most this many copies of a loop body are unrolled.
constexpr int64_t kMaxUnrollSteps = 256;

// Whether the iter vars `a` and `b` index different inputs of the block: no read (other than
// of its output) uses both, and each is used by some read.
bool DisjointReads(const BlockInfo& info, const ir::VarNode* a, const ir::VarNode* b) {
  if (a == nullptr || b == nullptr) return false;
  bool a_used = false, b_used = false;
  for (const ir::BufferRegion& r : info.block->reads) {
    if (r->buffer.get() == Output(info)) continue;
    const std::set<const ir::VarNode*> vars = VarsIn(r);
    const bool has_a = vars.count(a) > 0, has_b = vars.count(b) > 0;
    if (has_a && has_b) return false;
    a_used |= has_a;
    b_used |= has_b;
  }
  return a_used && b_used;
}

// Whether a read's innermost index steps by more than one along the vectorized loop's `v`
// (v * 2 + k) while a spatial loop of the block does not index it: each strided vector is
// reused across that loop (a dense convolution's output channels; a depthwise one reads each
// channel's own).
bool SharedStridedRead(const BlockInfo& info, const ir::VarNode* v) {
  for (const ir::BufferRegion& r : info.block->reads) {
    if (r->buffer.get() == Output(info) || r->region.empty()) continue;
    bool strided = false;
    ir::PostOrderVisit(r->region.back()->min, [&](const ir::PrimExpr& e) {
      const auto* mul = e.as<ir::BinaryNode>();
      if (mul == nullptr || mul->kind() != ir::NodeKind::kMul) return;
      const int64_t* c = ir::AsConstInt(mul->b);
      if (mul->a.get() == v && c != nullptr && *c > 1) strided = true;
    });
    if (!strided) continue;
    const std::set<const ir::VarNode*> used = VarsIn(r);
    for (size_t k = 0; k < info.loops.size(); ++k) {
      const int64_t* extent = ConstExtent(info.loops[k]);
      if (info.loop_kinds[k] == IterKind::kSpatial && extent != nullptr && *extent > 1 &&
          !used.count(info.loop_iter_vars[k]))
        return true;
    }
  }
  return false;
}

// Whether the reduction loop `k` slides a window: some read indexes by its iter var together
// with a spatial one (oh * s + kh), unlike an input channel's loop (ci alone).
bool WindowReduction(const BlockInfo& info, size_t k) {
  const ir::VarNode* r = info.loop_iter_vars[k];
  for (const ir::BufferRegion& read : info.block->reads) {
    for (const ir::Range& range : read->region) {
      bool has_r = false, has_spatial = false;
      ir::PostOrderVisit(range->min, [&](const ir::PrimExpr& e) {
        const auto* v = e.as<ir::VarNode>();
        if (v == nullptr) return;
        has_r |= v == r;
        for (size_t j = 0; j < info.loops.size(); ++j) {
          has_spatial |= info.loop_kinds[j] == IterKind::kSpatial && info.loop_iter_vars[j] == v;
        }
      });
      if (has_r && has_spatial) return true;
    }
  }
  return false;
}

// The innermost tile of each loop of the block with `vec` lanes: the register tile.
std::vector<int64_t> InnerTiles(const BlockInfo& info, int last_spatial, int64_t vec,
                                const target::CpuPolicy& policy) {
  const size_t n = info.loops.size();
  std::vector<int64_t> inner(n, 1);
  inner[last_spatial] = vec;
  int64_t budget = std::max<int64_t>(1, policy.TileAccumulators() / vec);
  // Registers one row of the tile takes.
  const int64_t row_registers = std::max<int64_t>(1, (vec + policy.lanes - 1) / policy.lanes);
  // A strided input row (a stride-2 convolution's) costs two loads and a shuffle per vector:
  // where output channels share it, fewer rows, so that each vector serves more of them.
  const int64_t rows = SharedStridedRead(info, info.loop_iter_vars[last_spatial]) ? 2 : 4;
  int row_loop = -1;
  for (int k = last_spatial - 1; k >= 0; --k) {
    const int64_t* extent = ConstExtent(info.loops[k]);
    if (info.loop_kinds[k] != IterKind::kSpatial || extent == nullptr) continue;
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
  // covers would leave the multiply-adds waiting on each other.
  if (row_loop >= 0 && budget > 1) {
    const int64_t grown =
        LargestDivisor(*ConstExtent(info.loops[row_loop]), inner[row_loop] * budget);
    if (grown > inner[row_loop]) inner[row_loop] = grown;
  }
  return inner;
}

// The heuristic decisions of MultiLevelTiling: per loop of the block, its tiles (empty for a
// loop of symbolic extent).
std::vector<std::vector<int64_t>> HeuristicTiles(const BlockInfo& info, int last_spatial,
                                                 const target::CpuPolicy& policy) {
  const size_t n = info.loops.size();
  const int64_t extent = *ConstExtent(info.loops[last_spatial]);
  const std::vector<int64_t> inner =
      InnerTiles(info, last_spatial, VectorTile(extent, policy), policy);
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
  // read from cache for every pixel rather than streamed once per row of the image (a 3x3
  // convolution of 512 channels has 9.4 MB of them; over 7x7 pixels in NHWC, rows outside,
  // it ran at 67 GFLOP/s).
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
      tiles[k] = {*extent, 1};
      continue;
    }
    const int64_t rest = *extent / inner[k];
    tiles[k] = static_cast<int>(k) == row_loop || inner_pixels[k]
                   ? std::vector<int64_t>{1, rest, 1, inner[k]}
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

// A value cheap enough to recompute at every use: at most one arithmetic operation.
bool Cheap(const ir::BlockNode& block) {
  const auto* store = block.body.as<ir::BufferStoreNode>();
  if (store == nullptr) return false;
  int ops = 0;
  ir::PostOrderVisit(store->value, [&](const ir::PrimExpr& e) {
    if (!e.as<ir::VarNode>() && !e.as<ir::BufferLoadNode>() && !e.as<ir::IntImmNode>() &&
        !e.as<ir::FloatImmNode>() && !e.as<ir::CastNode>()) {
      ++ops;
    }
  });
  return ops <= 3;  // padding: if_then_else(bounds, load, 0) with its comparisons
}

// AutoInline: elementwise blocks writing an intermediate, computed where they are read.
void AutoInline(Schedule& sch) {
  for (bool changed = true; changed;) {
    changed = false;
    for (const BlockInfo& info : Blocks(sch)) {
      if (info.has_reduce || info.writes_param || info.block->init || !info.plain ||
          !info.block->body.as<ir::BufferStoreNode>()) {
        continue;
      }
      absl::StatusOr<BlockRV> b = sch.GetBlock(info.name);
      if (!b.ok()) continue;
      bool into_elementwise = true;
      absl::StatusOr<std::vector<BlockRV>> consumers = sch.GetConsumers(*b);
      if (!consumers.ok() || consumers->empty()) continue;
      std::vector<BlockInfo> all = Blocks(sch);
      for (BlockRV c : *consumers) {
        const BlockInfo* ci = Find(all, *sch.BlockName(c));
        if (ci == nullptr || ci->has_reduce) into_elementwise = false;
      }
      if (!into_elementwise && !Cheap(*info.block)) continue;
      if (sch.ComputeInline(*b).ok()) {
        changed = true;
        break;
      }
    }
  }
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
  if (!inner.empty() && !row_loops.empty() && !walks_row(inner.size() - 1)) {
    for (size_t k = inner.size() - 1; k-- > 0;) {
      if (!walks_row(k)) continue;
      std::vector<LoopRV> order = inner;
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(k));
      order.push_back(inner[k]);
      if (sch.Reorder(order).ok()) {
        (void)sch.Vectorize(inner[k]);
        return;
      }
      break;
    }
  }
  (void)sch.Vectorize(loops->back());
}

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

// The product of the constant extents of loops[from, to) (a symbolic extent counts 1).
int64_t Iterations(const std::vector<const ForNode*>& loops, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t k = from; k < to && k < loops.size(); ++k)
    n *= ConstExtent(loops[k]) ? *ConstExtent(loops[k]) : 1;
  return n;
}

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

// A reduction over a window whose innermost spatial loop walks the innermost dimension of what
// it reads (pooling: in[.., oh * s + kh, ow * s + kw]): tiled like a convolution, the window
// outside a vector of outputs, though nothing is reused. A row reduction (x[i, k], k reduced)
// reads across its innermost loop's vector and stays one parallel loop.
bool VectorizableWindow(const BlockInfo& info, int last_spatial) {
  if (last_spatial < 0) return false;
  const std::vector<bool> along = InnermostIndexUses(info, info.loop_iter_vars[last_spatial]);
  return !along.empty() && std::find(along.begin(), along.end(), false) == along.end();
}

// The innermost spatial loop of constant extent, or -1.
int LastConstSpatial(const BlockInfo& info) {
  int last = -1;
  for (size_t k = 0; k < info.loops.size(); ++k) {
    if (info.loop_kinds[k] == IterKind::kSpatial && ConstExtent(info.loops[k]))
      last = static_cast<int>(k);
  }
  return last;
}

}  // namespace

absl::Status ApplyScheduleRules(Schedule& sch, const target::CpuPolicy& policy,
                                const Decisions& decisions, UnsetDecisions unset) {
  Sampler sampler(&sch, decisions, unset);
  AutoInline(sch);
  std::set<std::string> placed;
  for (const BlockInfo& info : Blocks(sch)) {
    if (placed.count(info.name) || !info.plain || !info.has_reduce) continue;
    const std::vector<BlockInfo> current = Blocks(sch);
    const BlockInfo* now = Find(current, info.name);
    if (now == nullptr || !now->plain) continue;
    const int last_spatial = LastConstSpatial(*now);
    if (last_spatial < 0 || !(now->has_reuse || VectorizableWindow(*now, last_spatial))) continue;
    absl::StatusOr<std::set<std::string>> tiled =
        MultiLevelTiling(sch, sampler, *now, last_spatial, policy);
    if (!tiled.ok()) return tiled.status();
    placed.insert(tiled->begin(), tiled->end());
  }
  std::set<std::string> tiled_blocks = placed;
  for (const BlockInfo& info : Blocks(sch)) {
    if (placed.count(info.name) || info.has_reduce || !info.plain || info.loops.empty()) continue;
    absl::StatusOr<BlockRV> b = sch.GetBlock(info.name);
    absl::StatusOr<std::vector<BlockRV>> consumers =
        b.ok() ? sch.GetConsumers(*b) : absl::StatusOr<std::vector<BlockRV>>(b.status());
    if (!consumers.ok() || consumers->size() != 1) continue;
    const std::string consumer = *sch.BlockName((*consumers)[0]);
    if (!tiled_blocks.count(consumer)) continue;
    const std::vector<BlockInfo> current = Blocks(sch);
    const BlockInfo* now = Find(current, info.name);
    if (now == nullptr) continue;
    if (absl::Status s = RandomComputeLocation(sch, sampler, *now, consumer, policy); !s.ok())
      return s;
    placed.insert(info.name);
  }
  for (const BlockInfo& info : Blocks(sch)) {
    if (placed.count(info.name)) continue;
    // Blocks another block's loops enclose (placed by compute-at) are left where they are.
    const std::vector<BlockInfo> current = Blocks(sch);
    const BlockInfo* now = Find(current, info.name);
    if (now == nullptr) continue;
    bool shared = false;
    for (const BlockInfo& other : current) {
      if (other.name != now->name && !now->loops.empty() && !other.loops.empty() &&
          other.loops.front() == now->loops.front()) {
        shared = true;
      }
    }
    if (shared) continue;
    if (now->has_reduce) {
      absl::StatusOr<bool> factored = AddRFactor(sch, sampler, *now, policy);
      if (!factored.ok()) return factored.status();
      if (*factored) continue;
    }
    if (absl::Status s = ParallelVectorize(sch, sampler, *now, policy); !s.ok()) return s;
  }
  return absl::OkStatus();
}

Decisions DecisionsOf(const v1::TraceProto& trace) {
  Decisions out;
  for (const v1::TraceInstruction& inst : trace.instructions()) {
    if (inst.has_decision())
      out.emplace_back(std::vector<int64_t>(inst.decision().begin(), inst.decision().end()));
  }
  return out;
}

}  // namespace kiln::tir
