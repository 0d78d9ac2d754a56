#include <map>

#include "compiler/ir/tir_functor.h"
#include "compiler/tir/schedule_rules/rules.h"

namespace kiln::tir::rules {

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

namespace {

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

}  // namespace

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

// The largest divisor of `extent` not above `limit`.
int64_t LargestDivisor(int64_t extent, int64_t limit) {
  for (int64_t d = std::min(extent, std::max<int64_t>(limit, 1)); d > 1; --d) {
    if (extent % d == 0) return d;
  }
  return 1;
}

// The vectorized inner tile of a loop: two vectors, one or half of one when it divides the
// extent, else the largest divisor up to one vector (a 7-wide image row stays one 7-lane
// vector). Never one and a half: LLVM takes such a vector apart lane by lane, and the kernel
// runs scalar.
int64_t VectorTile(int64_t extent, const target::CpuPolicy& policy) {
  for (int64_t d : {policy.max_vector_tile, policy.lanes, policy.lanes / 2}) {
    if (d > 1 && extent % d == 0) return d;
  }
  return LargestDivisor(extent, policy.lanes);
}

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

bool OnlyWindowReductions(const BlockInfo& info) {
  bool any = false;
  for (size_t k = 0; k < info.loops.size(); ++k) {
    if (info.loop_kinds[k] != IterKind::kReduce) continue;
    const int64_t* extent = ConstExtent(info.loops[k]);
    if (extent == nullptr) return false;
    if (*extent == 1) continue;  // a depthwise convolution's one input channel per group
    if (!WindowReduction(info, k)) return false;
    any = true;
  }
  return any;
}

bool PrivateToVectorReads(const BlockInfo& info, size_t k, const ir::VarNode* v) {
  const ir::VarNode* own = info.loop_iter_vars[k];
  // The reduction variables that iterate (extent above 1).
  std::set<const ir::VarNode*> reducing;
  for (size_t j = 0; j < info.loops.size(); ++j) {
    const int64_t* extent = ConstExtent(info.loops[j]);
    if (info.loop_kinds[j] == IterKind::kReduce && (extent == nullptr || *extent > 1))
      reducing.insert(info.loop_iter_vars[j]);
  }
  bool plain = false;
  for (const ir::BufferRegion& r : info.block->reads) {
    if (r->buffer.get() == Output(info) || !VarsIn(r).count(v)) continue;
    for (const ir::Range& range : r->region) {
      bool has_own = false, slides = false;
      ir::PostOrderVisit(range->min, [&](const ir::PrimExpr& e) {
        const auto* var = e.as<ir::VarNode>();
        has_own |= var == own;
        slides |= var != nullptr && reducing.count(var) > 0;
      });
      if (has_own && slides) return false;
      plain |= has_own;
    }
  }
  return plain;
}

// The product of the constant extents of loops[from, to) (a symbolic extent counts 1).
int64_t Iterations(const std::vector<const ForNode*>& loops, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t k = from; k < to && k < loops.size(); ++k)
    n *= ConstExtent(loops[k]) ? *ConstExtent(loops[k]) : 1;
  return n;
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

}  // namespace kiln::tir::rules
