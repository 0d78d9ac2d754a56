#include "compiler/tune/space.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/ir/tir_functor.h"

namespace kiln::tune {
namespace {

using ir::ForNode;
using ir::IterKind;
using tir::BlockRV;
using tir::ExprRV;
using tir::LoopRV;
using tir::Schedule;

// A block as the rules see it: its loops (inside its enclosing block, outermost first, as
// Schedule::GetLoops gives them) and how each drives the block.
struct BlockInfo {
  std::string name;
  const ir::BlockNode* block = nullptr;
  std::vector<const ForNode*> loops;
  // Per loop: the kind of the iter var it alone drives, or kOpaque when the block's iter values
  // are not plain loop variables.
  std::vector<IterKind> loop_kinds;
  bool plain = false;  // every iter value is a distinct loop variable, every loop drives one
  bool has_reduce = false;
  bool has_reuse = false;  // some read misses a spatial iter var
  bool writes_param = false;
};

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
    info.loops = loops_;
    info.loop_kinds.assign(loops_.size(), IterKind::kOpaque);
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
    }
    for (const ir::BufferRegion& w : block.writes) {
      if (params_.count(w->buffer.get())) info.writes_param = true;
    }
    for (const ir::BufferRegion& r : block.reads) {
      std::set<const ir::VarNode*> touched;
      for (const ir::Range& range : r->region) {
        ir::PostOrderVisit(range->min, [&](const ir::PrimExpr& e) {
          if (const auto* v = e.as<ir::VarNode>()) touched.insert(v);
        });
      }
      for (const ir::IterVar& iv : block.iter_vars) {
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

bool ConstExtent(const ForNode* loop) { return ir::AsConstInt(loop->extent) != nullptr; }

// Hands the rules their decisions in order; one that does not fit is sampled afresh.
class Sampler {
 public:
  Sampler(Schedule* sch, const Decisions& decisions) : sch_(sch), decisions_(decisions) {}

  absl::StatusOr<std::vector<ExprRV>> Tile(LoopRV loop, int n, int64_t max_innermost) {
    std::optional<std::vector<int64_t>> given = Next();
    if (given) {
      absl::StatusOr<std::vector<ExprRV>> out =
          sch_->SamplePerfectTile(loop, n, max_innermost, given);
      if (out.ok()) return out;
    }
    return sch_->SamplePerfectTile(loop, n, max_innermost);
  }

  absl::StatusOr<int64_t> Choose(std::vector<int64_t> candidates) {
    std::vector<double> p(candidates.size(), 1.0 / static_cast<double>(candidates.size()));
    std::optional<std::vector<int64_t>> given = Next();
    absl::StatusOr<ExprRV> rv = absl::UnknownError("");
    if (given && given->size() == 1) rv = sch_->SampleCategorical(candidates, p, (*given)[0]);
    if (!rv.ok()) rv = sch_->SampleCategorical(candidates, p);
    if (!rv.ok()) return rv.status();
    return sch_->Get(*rv);
  }

 private:
  std::optional<std::vector<int64_t>> Next() {
    size_t k = next_++;
    return k < decisions_.size() ? decisions_[k] : std::nullopt;
  }

  Schedule* sch_;
  const Decisions& decisions_;
  size_t next_ = 0;
};

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

// MultiLevelTiling of one block (see space.h); returns the names of the blocks it placed.
absl::StatusOr<std::set<std::string>> MultiLevelTiling(Schedule& sch, Sampler& sampler,
                                                       const BlockInfo& info) {
  std::set<std::string> placed = {info.name};
  absl::StatusOr<BlockRV> block = sch.GetBlock(info.name);
  if (!block.ok()) return block.status();
  absl::StatusOr<std::vector<LoopRV>> loops = sch.GetLoops(*block);
  if (!loops.ok()) return loops.status();
  std::vector<LoopRV> symbolic;
  std::vector<std::vector<LoopRV>> s_tiles(4), r_tiles(2);
  int last_spatial = -1;
  for (size_t k = 0; k < info.loops.size(); ++k) {
    if (info.loop_kinds[k] == IterKind::kSpatial && ConstExtent(info.loops[k])) last_spatial = k;
  }
  for (size_t k = 0; k < info.loops.size(); ++k) {
    const bool spatial = info.loop_kinds[k] == IterKind::kSpatial;
    if (!ConstExtent(info.loops[k])) {
      symbolic.push_back((*loops)[k]);
      continue;
    }
    const int n = spatial ? 4 : 2;
    const int64_t innermost = static_cast<int>(k) == last_spatial ? 64 : spatial ? 16 : 64;
    absl::StatusOr<std::vector<ExprRV>> tiles = sampler.Tile((*loops)[k], n, innermost);
    if (!tiles.ok()) return tiles.status();
    std::vector<tir::Factor> factors(tiles->begin(), tiles->end());
    absl::StatusOr<std::vector<LoopRV>> split = sch.Split((*loops)[k], factors);
    if (!split.ok()) return split.status();
    for (int t = 0; t < n; ++t) (spatial ? s_tiles : r_tiles)[t].push_back((*split)[t]);
  }
  std::vector<LoopRV> order = symbolic;
  for (const std::vector<LoopRV>* level :
       {&s_tiles[0], &s_tiles[1], &r_tiles[0], &s_tiles[2], &r_tiles[1], &s_tiles[3]}) {
    order.insert(order.end(), level->begin(), level->end());
  }
  if (absl::Status s = sch.Reorder(order); !s.ok()) return s;
  // The write: an elementwise consumer fused at the end of the S0 or S1 tile, or else a local
  // accumulator written back there.
  absl::StatusOr<int64_t> level = sampler.Choose({0, 1});
  if (!level.ok()) return level.status();
  LoopRV at = s_tiles[*level].back();
  std::vector<BlockInfo> all = Blocks(sch);
  absl::StatusOr<std::vector<BlockRV>> consumers = sch.GetConsumers(*block);
  bool fused = false;
  if (consumers.ok() && consumers->size() == 1) {
    const BlockInfo* c = Find(all, *sch.BlockName((*consumers)[0]));
    if (c != nullptr && !c->has_reduce && sch.ReverseComputeAt((*consumers)[0], at).ok()) {
      placed.insert(c->name);
      fused = true;
      absl::StatusOr<std::vector<LoopRV>> inner = sch.GetLoops((*consumers)[0]);
      if (inner.ok() && !inner->empty()) (void)sch.Vectorize(inner->back());
    }
  }
  if (!fused) {
    absl::StatusOr<BlockRV> write_back = sch.CacheWrite(*block, 0, "local");
    if (write_back.ok()) {
      placed.insert(*sch.BlockName(*write_back));
      (void)sch.ReverseComputeAt(*write_back, at);
    }
  }
  if (!r_tiles[0].empty()) {
    absl::StatusOr<BlockRV> init = sch.DecomposeReduction(*block, r_tiles[0].front());
    if (init.ok()) placed.insert(*sch.BlockName(*init));
  }
  // Parallel over the symbolic loops and S0; the innermost S3 loop vectorized, the rest of S3
  // unrolled (sampled).
  std::vector<LoopRV> outer = symbolic;
  outer.insert(outer.end(), s_tiles[0].begin(), s_tiles[0].end());
  if (outer.size() > 1) {
    absl::StatusOr<LoopRV> f = sch.Fuse(outer);
    if (f.ok()) outer = {*f};
  }
  if (!outer.empty()) (void)sch.Parallel(outer.front());
  if (last_spatial >= 0) (void)sch.Vectorize(s_tiles[3].back());
  absl::StatusOr<int64_t> unroll = sampler.Choose({0, 1});
  if (!unroll.ok()) return unroll.status();
  if (*unroll == 1) {
    for (size_t t = 0; t + 1 < s_tiles[3].size(); ++t) (void)sch.Unroll(s_tiles[3][t]);
    for (LoopRV r : r_tiles[1]) (void)sch.Unroll(r);
  }
  return placed;
}

// ParallelVectorize of a block whose loops it alone owns.
absl::Status ParallelVectorize(Schedule& sch, Sampler& sampler, const BlockInfo& info) {
  if (info.loops.empty() || !info.plain) return absl::OkStatus();
  absl::StatusOr<BlockRV> block = sch.GetBlock(info.name);
  if (!block.ok()) return block.status();
  absl::StatusOr<std::vector<LoopRV>> loops = sch.GetLoops(*block);
  if (!loops.ok()) return loops.status();
  // The leading spatial loops.
  size_t n_spatial = 0;
  bool all_const = true;
  while (n_spatial < info.loops.size() && info.loop_kinds[n_spatial] == IterKind::kSpatial) {
    all_const = all_const && ConstExtent(info.loops[n_spatial]);
    ++n_spatial;
  }
  if (n_spatial == 0) return absl::OkStatus();
  std::vector<LoopRV> spatial(loops->begin(), loops->begin() + n_spatial);
  if (!all_const) {
    (void)sch.Parallel(spatial.front());
    if (!info.has_reduce && n_spatial > 1) (void)sch.Vectorize(spatial.back());
    return absl::OkStatus();
  }
  LoopRV fused = spatial.front();
  if (spatial.size() > 1) {
    absl::StatusOr<LoopRV> f = sch.Fuse(spatial);
    if (!f.ok()) return absl::OkStatus();
    fused = *f;
  }
  if (info.has_reduce) return sch.Parallel(fused);
  absl::StatusOr<std::vector<ExprRV>> tiles = sampler.Tile(fused, 2, 64);
  if (!tiles.ok()) return tiles.status();
  absl::StatusOr<std::vector<LoopRV>> split = sch.Split(fused, {(*tiles)[0], (*tiles)[1]});
  if (!split.ok()) return split.status();
  (void)sch.Parallel((*split)[0]);
  (void)sch.Vectorize((*split)[1]);
  return absl::OkStatus();
}

absl::Status ApplyRules(Schedule& sch, const Decisions& decisions) {
  Sampler sampler(&sch, decisions);
  AutoInline(sch);
  std::set<std::string> placed;
  for (const BlockInfo& info : Blocks(sch)) {
    if (placed.count(info.name) || !info.plain || !info.has_reduce || !info.has_reuse) continue;
    const std::vector<BlockInfo> current = Blocks(sch);
    const BlockInfo* now = Find(current, info.name);
    if (now == nullptr || !now->plain) continue;
    absl::StatusOr<std::set<std::string>> tiled = MultiLevelTiling(sch, sampler, *now);
    if (!tiled.ok()) return tiled.status();
    placed.insert(tiled->begin(), tiled->end());
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
    if (absl::Status s = ParallelVectorize(sch, sampler, *now); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Schedule> GenerateSchedule(const TuneTask& task, uint64_t seed,
                                          const Decisions& decisions) {
  absl::StatusOr<Schedule> sch = Schedule::Create(task.mod, task.name, seed);
  if (!sch.ok()) return sch.status();
  if (absl::Status s = ApplyRules(*sch, decisions); !s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("schedule rules on '", task.name, "': ", s.message()));
  }
  return sch;
}

Decisions DecisionsOf(const v1::TraceProto& trace) {
  Decisions out;
  for (const v1::TraceInstruction& inst : trace.instructions()) {
    if (inst.has_decision())
      out.emplace_back(std::vector<int64_t>(inst.decision().begin(), inst.decision().end()));
  }
  return out;
}

ir::IRModule ScheduledModule(const Schedule& sch) {
  ir::IRModuleBuilder builder(sch.mod());
  builder.Update(sch.mod()->GetGlobalVar(sch.func_name()),
                 ir::WithFuncAttr(sch.func(), "tir.is_scheduled", ir::Bool(true)));
  return builder.Build();
}

absl::StatusOr<Schedule> Mutate(const TuneTask& task, const v1::TraceProto& parent, uint64_t index,
                                uint64_t seed) {
  Decisions decisions = DecisionsOf(parent);
  if (decisions.empty()) return absl::NotFoundError("the schedule samples no decisions");
  const size_t k = index % decisions.size();
  const std::vector<int64_t> old = *decisions[k];
  decisions[k] = std::nullopt;
  absl::StatusOr<Schedule> out = absl::UnknownError("");
  // A few draws: a small loop has few tilings, and the same one again is no neighbour.
  for (uint64_t attempt = 0; attempt < 8; ++attempt) {
    out = GenerateSchedule(task, seed * 8 + attempt + 1, decisions);
    if (!out.ok()) return out;
    Decisions got = DecisionsOf(out->trace());
    if (k < got.size() && *got[k] != old) return out;
  }
  return out;
}

}  // namespace kiln::tune
