// Block primitives: compute_at / reverse_compute_at, compute_inline / reverse_compute_inline,
// cache_read / cache_write, set_scope and decompose_reduction.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/arith/analyzer.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/tir/schedule/ir_util.h"
#include "compiler/tir/schedule/schedule.h"

namespace kiln::tir {

using namespace ir;  // NOLINT: TIR rewriting
namespace su = schedule_util;
using su::BlockNames;
using su::IsParam;
using su::Locate;
using su::Place;
using su::WithRootBlock;
using su::WithScopeBody;

namespace {

// `block` with `buffer` (appended to its allocations) or with its allocations filtered.
Stmt WithAllocations(const BlockNode& block, std::vector<Buffer> buffers) {
  BlockNode* copy = CopyBlock(block);
  Block owner(copy);
  copy->alloc_buffers = std::move(buffers);
  return owner;
}

class BufferReplacer : public StmtExprMutator {
 public:
  BufferReplacer(const BufferNode* from, Buffer to) : from_(from), to_(std::move(to)) {}
  Buffer VisitBuffer(const Buffer& b) override { return b.get() == from_ ? to_ : b; }
  Stmt VisitStmt(const Stmt& s) override {
    const auto* block = s.as<BlockNode>();
    if (block == nullptr) return DefaultVisitStmt(s);
    Stmt out = DefaultVisitStmt(s);
    const auto* changed = out.as<BlockNode>();
    bool allocates = std::any_of(changed->alloc_buffers.begin(), changed->alloc_buffers.end(),
                                 [&](const Buffer& b) { return b.get() == from_; });
    if (!allocates) return out;
    std::vector<Buffer> buffers;
    for (const Buffer& b : changed->alloc_buffers) buffers.push_back(b.get() == from_ ? to_ : b);
    return WithAllocations(*changed, std::move(buffers));
  }

 private:
  const BufferNode* from_;
  Buffer to_;
};

// Blocks (nested ones included) that store to / load from `buffer`.
std::vector<const BlockNode*> Writers(const Stmt& root, const BufferNode* buffer) {
  std::vector<const BlockNode*> out;
  for (const BlockNode* b : su::AllBlocks(root)) {
    if (su::StoredBuffers(*b).count(buffer)) out.push_back(b);
  }
  return out;
}
std::vector<const BlockNode*> Readers(const Stmt& root, const BufferNode* buffer) {
  std::vector<const BlockNode*> out;
  for (const BlockNode* b : su::AllBlocks(root)) {
    if (su::LoadedBuffers(*b).count(buffer)) out.push_back(b);
  }
  return out;
}

// A copy between two buffers of the same shape, one loop per dimension:
//   for ax0, ax1 in grid(shape): with block(name): v0, v1 = remap; dst[v0, v1] = src[v0, v1]
Stmt CopyNest(const std::string& name, const Buffer& src, const Buffer& dst,
              std::set<std::string>* names) {
  return su::GridBlock(
      name, src->shape, names, [&](const std::vector<PrimExpr>& v, BlockNode* block) {
        block->reads = {su::PointRegion(src, v)};
        block->writes = {su::PointRegion(dst, v)};
        block->body = Make<BufferStoreNode>(dst, Make<BufferLoadNode>(src->dtype, src, v), v);
      });
}

// The block at `place` reads (or writes) a new buffer in `scope` instead of `buffer`, copied
// from it by a block before the block's top-level statement (or to it, after); the copy's name
// in `copy_name`.
PrimFunc WithCache(const PrimFunc& f, const Place& place, const Buffer& buffer,
                   const std::string& scope, bool write, std::string* copy_name) {
  std::set<std::string> names = su::UsedNames(f);
  Buffer cache = MakeBuffer(su::FreshName(buffer->name + "_" + scope, &names), buffer->dtype,
                            buffer->shape, scope);
  Stmt rewritten = BufferReplacer(buffer.get(), cache).VisitStmt(Stmt(place.realize));
  std::set<std::string> block_names = BlockNames(f->body);
  *copy_name = su::FreshName(cache->name, &block_names);
  Stmt copy = write ? CopyNest(*copy_name, cache, buffer, &names)
                    : CopyNest(*copy_name, buffer, cache, &names);
  Stmt top = su::Rebuild(Stmt(place.top), {{place.realize, rewritten}});
  Stmt body =
      su::Rebuild(place.scope_body, {{place.top, write ? Seq({top, copy}) : Seq({copy, top})}});
  return WithScopeBody(f, place, body, cache);
}

// A block's store, checked to be `buffer[v0, v1, ...]` over distinct iter vars; the dimension
// each iter var indexes.
std::optional<std::map<const VarNode*, size_t>> DimsOfIterVars(const std::vector<PrimExpr>& idx,
                                                               const BlockNode& block) {
  std::map<const VarNode*, size_t> dims;
  for (size_t d = 0; d < idx.size(); ++d) {
    const auto* v = idx[d].as<VarNode>();
    bool is_iter = std::any_of(block.iter_vars.begin(), block.iter_vars.end(),
                               [&](const IterVar& iv) { return iv->var.get() == v; });
    if (v == nullptr || !is_iter || !dims.emplace(v, d).second) return std::nullopt;
  }
  return dims;
}

PrimExpr BindingOf(const BlockRealizeNode& r, const VarNode* iter_var) {
  for (size_t k = 0; k < r.iter_values.size(); ++k) {
    if (r.block->iter_vars[k]->var.get() == iter_var) return r.iter_values[k];
  }
  return PrimExpr();
}

}  // namespace

// --- cache_read / cache_write / set_scope ---

absl::StatusOr<BlockRV> Schedule::CacheWrite(BlockRV block, int write_index,
                                             const std::string& scope) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  PrimFunc f = WithRootBlock(func());
  Place place = Locate(f, *name);
  std::string what = absl::StrCat("cache_write of block '", *name, "'");
  if (write_index < 0 || write_index >= static_cast<int>(place.block->writes.size())) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": it has ", place.block->writes.size(),
                                                   " written buffers, not index ", write_index));
  }
  const Buffer& buffer = place.block->writes[write_index]->buffer;
  if (Writers(f->body, buffer.get()).size() != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": '", buffer->name, "' has other writers"));
  }
  // The write-back copies the whole buffer, so the block must write all of it.
  const auto* store = place.block->body.as<BufferStoreNode>();
  std::optional<std::map<const VarNode*, size_t>> dims =
      store && store->buffer.get() == buffer.get() ? DimsOfIterVars(store->indices, *place.block)
                                                   : std::nullopt;
  bool covers = dims.has_value() && dims->size() == buffer->shape.size();
  for (const IterVar& iv : place.block->iter_vars) {
    auto it = covers ? dims->find(iv->var.get()) : dims->end();
    if (!covers || it == dims->end()) continue;
    covers =
        su::IsConst(iv->dom->min, 0) && ExprDeepEqual(iv->dom->extent, buffer->shape[it->second]);
  }
  if (!covers) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": its body must store the whole of '", buffer->name,
                     "' indexed by its iter vars (buffer[v0, v1, ...])"));
  }
  std::string copy_name;
  SetFunc(WithCache(f, place, buffer, scope, /*write=*/true, &copy_name));
  v1::TraceInstruction* inst = Record("CacheWrite");
  inst->add_inputs()->set_rv(su::RvName(block));
  inst->add_attrs()->set_int_(write_index);
  inst->add_attrs()->set_str(scope);
  BlockRV out = NewBlock(copy_name);
  inst->add_outputs(su::RvName(out));
  return out;
}

absl::StatusOr<BlockRV> Schedule::CacheRead(BlockRV block, int read_index,
                                            const std::string& scope) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  PrimFunc f = WithRootBlock(func());
  Place place = Locate(f, *name);
  std::string what = absl::StrCat("cache_read of block '", *name, "'");
  if (read_index < 0 || read_index >= static_cast<int>(place.block->reads.size())) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": it has ", place.block->reads.size(),
                                                   " read buffers, not index ", read_index));
  }
  const Buffer& buffer = place.block->reads[read_index]->buffer;
  if (su::StoredBuffers(*place.block).count(buffer.get())) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the block also writes '", buffer->name, "'"));
  }
  // The copy goes before the block's top-level statement: nothing in it may write the buffer.
  for (const BlockRealizeNode* r : su::ChildRealizes(Stmt(place.top))) {
    if (su::StoredBuffers(*r->block).count(buffer.get())) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, ": block '", r->block->name, "' writes '", buffer->name,
                       "' in the same loop nest, so a copy before the nest would be stale"));
    }
  }
  std::string copy_name;
  SetFunc(WithCache(f, place, buffer, scope, /*write=*/false, &copy_name));
  v1::TraceInstruction* inst = Record("CacheRead");
  inst->add_inputs()->set_rv(su::RvName(block));
  inst->add_attrs()->set_int_(read_index);
  inst->add_attrs()->set_str(scope);
  BlockRV out = NewBlock(copy_name);
  inst->add_outputs(su::RvName(out));
  return out;
}

absl::Status Schedule::SetScope(BlockRV block, int write_index, const std::string& scope) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  PrimFunc f = func();
  Place place = Locate(f, *name);
  std::string what = absl::StrCat("set_scope of block '", *name, "'");
  if (write_index < 0 || write_index >= static_cast<int>(place.block->writes.size())) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": it has ", place.block->writes.size(),
                                                   " written buffers, not index ", write_index));
  }
  const Buffer& buffer = place.block->writes[write_index]->buffer;
  if (IsParam(f, buffer.get())) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": '", buffer->name, "' is a parameter of the function; its scope is the caller's"));
  }
  if (scope.empty()) return absl::InvalidArgumentError(absl::StrCat(what, ": empty scope"));
  BufferNode* changed = su::CopyBuffer(buffer);
  Buffer owner(changed);
  changed->scope = scope;
  SetFunc(WithBody(f, BufferReplacer(buffer.get(), owner).VisitStmt(f->body)));
  v1::TraceInstruction* inst = Record("SetScope");
  inst->add_inputs()->set_rv(su::RvName(block));
  inst->add_attrs()->set_int_(write_index);
  inst->add_attrs()->set_str(scope);
  return absl::OkStatus();
}

// --- decompose_reduction ---

absl::StatusOr<BlockRV> Schedule::DecomposeReduction(BlockRV block, LoopRV loop) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  absl::StatusOr<Var> loop_var = LoopVar(loop);
  if (!loop_var.ok()) return loop_var.status();
  PrimFunc f = func();
  Place place = Locate(f, *name);
  std::string what =
      absl::StrCat("decompose_reduction of block '", *name, "' at loop '", (*loop_var)->name, "'");
  if (!place.block->init) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": the block has no init"));
  }
  std::vector<const ForNode*> loops = su::LoopsInScope(place.path);
  auto at = std::find_if(loops.begin(), loops.end(),
                         [&](const ForNode* l) { return l->loop_var.get() == loop_var->get(); });
  if (at == loops.end()) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": the loop is not around the block"));
  }
  std::vector<const ForNode*> below(at, loops.end());
  // The loops below that drive spatial iter vars are repeated for the init; the rest are not.
  const BlockNode& b = *place.block;
  std::set<const VarNode*> spatial_uses;
  for (size_t k = 0; k < b.iter_vars.size(); ++k) {
    if (b.iter_vars[k]->iter_kind != IterKind::kSpatial) continue;
    PostOrderVisit(place.realize->iter_values[k], [&](const PrimExpr& e) {
      if (const auto* v = e.as<VarNode>()) spatial_uses.insert(v);
    });
  }
  std::set<std::string> names = su::UsedNames(f);
  std::map<const VarNode*, PrimExpr> loop_map;
  std::set<const VarNode*> dropped;
  std::vector<std::pair<const ForNode*, Var>> init_loops;
  for (const ForNode* l : below) {
    if (!spatial_uses.count(l->loop_var.get())) {
      dropped.insert(l->loop_var.get());
      continue;
    }
    Var v = MakeVar(su::FreshName(l->loop_var->name + "_init", &names), l->loop_var->dtype);
    loop_map[l->loop_var.get()] = v;
    init_loops.emplace_back(l, v);
  }
  auto on_loops = [&](const Var& v) -> PrimExpr {
    auto it = loop_map.find(v.get());
    return it == loop_map.end() ? PrimExpr() : it->second;
  };
  bool predicate_on_dropped = false;
  PostOrderVisit(place.realize->predicate, [&](const PrimExpr& e) {
    if (const auto* v = e.as<VarNode>(); v && dropped.count(v)) predicate_on_dropped = true;
  });
  if (predicate_on_dropped) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the block's predicate depends on a reduction loop"));
  }
  // The init block: the spatial iter vars (fresh), the init as its body.
  auto* init = new BlockNode();
  Block init_owner(init);
  std::set<std::string> block_names = BlockNames(f->body);
  init->name = su::FreshName(b.name + "_init", &block_names);
  std::map<const VarNode*, PrimExpr> iter_map;
  std::vector<PrimExpr> values;
  for (size_t k = 0; k < b.iter_vars.size(); ++k) {
    const IterVar& iv = b.iter_vars[k];
    if (iv->iter_kind != IterKind::kSpatial) continue;
    Var v = MakeVar(iv->var->name, iv->var->dtype);
    iter_map[iv->var.get()] = v;
    init->iter_vars.push_back(Make<IterVarNode>(v, iv->dom, IterKind::kSpatial));
    values.push_back(Substitute(place.realize->iter_values[k], on_loops));
  }
  auto on_iters = [&](const Var& v) -> PrimExpr {
    auto it = iter_map.find(v.get());
    return it == iter_map.end() ? PrimExpr() : it->second;
  };
  init->body = Substitute(b.init, on_iters);
  for (const BufferRegion& w : b.writes) {
    std::vector<Range> region;
    for (const Range& r : w->region) {
      region.push_back(MakeRange(Substitute(r->min, on_iters), Substitute(r->extent, on_iters)));
    }
    init->writes.push_back(Make<BufferRegionNode>(w->buffer, std::move(region)));
  }
  Stmt init_nest =
      Make<BlockRealizeNode>(values, Substitute(place.realize->predicate, on_loops), init_owner);
  for (size_t k = init_loops.size(); k-- > 0;) {
    const ForNode* l = init_loops[k].first;
    init_nest = MakeFor(init_loops[k].second, l->min, l->extent, ForKind::kSerial, init_nest);
  }
  BlockNode* update = CopyBlock(b);
  Block update_owner(update);
  update->init = Stmt();
  Stmt loop_stmt = su::Rebuild(Stmt(*at), {{place.block, update_owner}});
  SetFunc(WithBody(f, su::Rebuild(f->body, {{*at, Seq({init_nest, loop_stmt})}})));
  v1::TraceInstruction* inst = Record("DecomposeReduction");
  inst->add_inputs()->set_rv(su::RvName(block));
  inst->add_inputs()->set_rv(su::RvName(loop));
  BlockRV out = NewBlock(init->name);
  inst->add_outputs(su::RvName(out));
  return out;
}

// --- compute_at / reverse_compute_at ---

namespace {

struct Span {
  PrimExpr min;
  int64_t extent;
};

// Moves `block` (alone in its loop nest) under `loop`, iterating over the part of `buffer` the
// blocks under the loop touch in one of its iterations. `reverse`: the block consumes what they
// produce (placed after them); otherwise it produces what they consume (placed before).
absl::StatusOr<PrimFunc> MoveUnder(const PrimFunc& f, const std::string& name, const Var& loop_var,
                                   bool reverse) {
  const char* primitive = reverse ? "reverse_compute_at" : "compute_at";
  std::string what =
      absl::StrCat(primitive, " of block '", name, "' at loop '", loop_var->name, "'");
  Place place = Locate(f, name);
  std::vector<Stmt> loop_path = su::PathToLoop(f->body, loop_var.get());
  const auto* loop = loop_path.back().as<ForNode>();
  int loop_scope = su::ScopeIndex(loop_path);
  const BlockNode* scope_of_loop =
      loop_scope >= 0 ? loop_path[loop_scope].as<BlockNode>() : nullptr;
  if (scope_of_loop != place.scope) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the loop is not in the block's scope"));
  }
  if (su::ChildRealizes(Stmt(place.top)).size() != 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": the block shares its loop nest with other blocks; it must be alone in it"));
  }
  const StmtNode* loop_top = su::TopLevelStmt(place.scope_body, loop);
  if (loop_top == place.top) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the block is already inside the loop's nest"));
  }
  // Program order in the scope: a producer goes before its consumers' loop, a consumer after.
  std::vector<Stmt> tops = place.scope_body.as<SeqStmtNode>()
                               ? place.scope_body.as<SeqStmtNode>()->seq
                               : std::vector<Stmt>{place.scope_body};
  size_t block_pos = 0, loop_pos = 0;
  for (size_t k = 0; k < tops.size(); ++k) {
    if (tops[k].get() == place.top) block_pos = k;
    if (tops[k].get() == loop_top) loop_pos = k;
  }
  if (reverse ? block_pos < loop_pos : block_pos > loop_pos) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the block comes ", reverse ? "before" : "after", " the loop's nest; ",
                     primitive, " moves a ", reverse ? "consumer" : "producer"));
  }
  if (!su::IsConst(place.realize->predicate, 1)) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": the block has a predicate"));
  }
  // The buffers linking the block with the blocks under the loop.
  std::set<const BufferNode*> mine =
      reverse ? su::LoadedBuffers(*place.block) : su::StoredBuffers(*place.block);
  std::map<const BufferNode*, std::vector<Span>> spans;  // per buffer, per dimension
  std::set<const VarNode*> outer;                        // the loop and the loops around it
  arith::Analyzer analyzer;
  for (const Stmt& s : loop_path) {
    if (const auto* l = s.as<ForNode>()) {
      outer.insert(l->loop_var.get());
      analyzer.Bind(l->loop_var, MakeRange(l->min, l->extent));
    }
  }
  for (const BlockRealizeNode* r : su::ChildRealizes(loop->body)) {
    std::vector<Stmt> path = su::PathToBlock(loop->body, r->block->name);
    std::set<const VarNode*> inner;
    std::map<const VarNode*, const ForNode*> inner_loops;
    for (const Stmt& s : path) {
      if (const auto* l = s.as<ForNode>()) {
        inner.insert(l->loop_var.get());
        inner_loops[l->loop_var.get()] = l;
      }
    }
    // Accesses of the linking buffers in this block, as loop expressions.
    std::vector<std::pair<const BufferNode*, std::vector<PrimExpr>>> accesses;
    auto on_access = [&](const BufferNode* buffer, const std::vector<PrimExpr>& indices) {
      if (!mine.count(buffer)) return;
      std::vector<PrimExpr> bound;
      for (const PrimExpr& i : indices) {
        bound.push_back(Substitute(i, [&](const Var& v) { return BindingOf(*r, v.get()); }));
      }
      accesses.emplace_back(buffer, std::move(bound));
    };
    struct Visitor : StmtExprVisitor {
      std::function<void(const BufferNode*, const std::vector<PrimExpr>&)> on;
      bool stores = false;
      void VisitExpr(const PrimExpr& e) override {
        if (const auto* l = e.as<BufferLoadNode>(); l && !stores) on(l->buffer.get(), l->indices);
        DefaultVisitExpr(e);
      }
      void VisitStmt(const Stmt& s) override {
        if (const auto* st = s.as<BufferStoreNode>(); st && stores) {
          on(st->buffer.get(), st->indices);
        }
        DefaultVisitStmt(s);
      }
    } visitor;
    visitor.on = on_access;
    visitor.stores = reverse;
    visitor.VisitStmt(r->block->body);
    if (r->block->init) visitor.VisitStmt(r->block->init);
    for (const auto& [buffer, indices] : accesses) {
      std::vector<Span> span;
      for (const PrimExpr& index : indices) {
        std::optional<su::AffineForm> form = su::Affine(index, inner);
        if (!form) {
          return absl::FailedPreconditionError(absl::StrCat(
              what, ": block '", r->block->name, "' accesses '", buffer->name,
              "' at an index that is not affine in the loops inside '", loop_var->name, "'"));
        }
        PrimExpr lo = form->rest;
        int64_t extent = 1;
        for (const auto& [v, c] : form->coeffs) {
          const ForNode* l = inner_loops[v];
          const int64_t* min = AsConstInt(l->min);
          const int64_t* ext = AsConstInt(l->extent);
          if (min == nullptr || ext == nullptr) {
            return absl::FailedPreconditionError(
                absl::StrCat(what, ": loop '", v->name, "' inside it has a symbolic range"));
          }
          int64_t low = c > 0 ? c * *min : c * (*min + *ext - 1);
          lo = su::Add(lo, IntImm(index->dtype, low));
          extent += (c > 0 ? c : -c) * (*ext - 1);
        }
        if (!lo) lo = IntImm(index->dtype, 0);
        span.push_back({lo, extent});
      }
      auto& known = spans[buffer];
      if (known.empty()) {
        known = span;
        continue;
      }
      for (size_t d = 0; d < span.size(); ++d) {  // union, for offsets that are constants
        const int64_t* delta = nullptr;
        PrimExpr diff = analyzer.Simplify(span[d].min - known[d].min);
        delta = AsConstInt(diff);
        if (delta == nullptr) {
          return absl::FailedPreconditionError(
              absl::StrCat(what, ": the accesses of '", buffer->name,
                           "' under the loop do not differ by constants"));
        }
        int64_t lo = std::min<int64_t>(0, *delta);
        int64_t hi = std::max(known[d].extent, *delta + span[d].extent);
        if (lo < 0) known[d].min = span[d].min;
        known[d].extent = hi - lo;
      }
    }
  }
  if (spans.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": no block under the loop ", reverse ? "writes" : "reads",
                     " what the block ", reverse ? "reads" : "writes"));
  }
  if (spans.size() > 1) {
    return absl::UnimplementedError(absl::StrCat(
        what, ": the block is linked to the loop's blocks through more than one buffer"));
  }
  const BufferNode* buffer = spans.begin()->first;
  const std::vector<Span>& span = spans.begin()->second;
  // How the block indexes that buffer: by distinct iter vars, one per dimension.
  std::optional<std::map<const VarNode*, size_t>> dims;
  bool consistent = true;
  auto check = [&](const std::vector<PrimExpr>& indices) {
    std::optional<std::map<const VarNode*, size_t>> d = DimsOfIterVars(indices, *place.block);
    if (!d || (dims && *d != *dims)) consistent = false;
    dims = d;
  };
  std::function<void(const Stmt&)> scan = [&](const Stmt& s) {
    if (!s) return;
    if (reverse) {
      PostOrderVisit(s, [&](const PrimExpr& e) {
        if (const auto* l = e.as<BufferLoadNode>(); l && l->buffer.get() == buffer) {
          check(l->indices);
        }
      });
    } else {
      struct Stores : StmtExprVisitor {
        std::function<void(const BufferStoreNode&)> on;
        void VisitStmt(const Stmt& x) override {
          if (const auto* st = x.as<BufferStoreNode>()) on(*st);
          DefaultVisitStmt(x);
        }
      } stores;
      stores.on = [&](const BufferStoreNode& st) {
        if (st.buffer.get() == buffer) check(st.indices);
      };
      stores.VisitStmt(s);
    }
  };
  scan(place.block->body);
  scan(place.block->init);
  if (!consistent || !dims) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the block must access '", buffer->name,
                     "' at its iter vars (buffer[v0, v1, ...]), the same way everywhere"));
  }
  // New loops over the span; other iter vars keep their whole domain.
  std::set<std::string> names = su::UsedNames(f);
  std::vector<PrimExpr> values;
  std::vector<std::pair<Var, int64_t>> new_loops;
  PrimExpr predicate = Bool(true);
  for (const IterVar& iv : place.block->iter_vars) {
    DataType t = iv->var->dtype;
    PrimExpr lo = iv->dom->min;
    const int64_t* full = AsConstInt(iv->dom->extent);
    int64_t extent;
    auto it = dims->find(iv->var.get());
    if (it != dims->end()) {
      lo = span[it->second].min;
      extent = span[it->second].extent;
    } else if (full != nullptr) {
      extent = *full;
    } else {
      return absl::FailedPreconditionError(
          absl::StrCat(what, ": iter var '", iv->var->name, "' has a symbolic domain"));
    }
    if (lo->dtype != t) lo = Cast(t, lo);
    PrimExpr value = lo;
    if (extent > 1) {
      Var ax = MakeVar(su::FreshName(absl::StrCat("ax", new_loops.size()), &names), t);
      new_loops.emplace_back(ax, extent);
      value = su::Add(lo, ax);
    }
    values.push_back(value);
    if (it != dims->end()) {
      PrimExpr end = iv->dom->min + iv->dom->extent;
      if (!analyzer.CanProve(lo + IntImm(t, extent) <= end)) {
        predicate = su::And(predicate, value < end);
      }
    }
  }
  Stmt nest = Make<BlockRealizeNode>(values, predicate, place.realize->block);
  for (size_t k = new_loops.size(); k-- > 0;) {
    DataType t = new_loops[k].first->dtype;
    nest = MakeFor(new_loops[k].first, IntImm(t, 0), IntImm(t, new_loops[k].second),
                   ForKind::kSerial, nest);
  }
  Stmt body = reverse ? Seq({loop->body, nest}) : Seq({nest, loop->body});
  Stmt moved = su::WithLoopBody(*loop, su::Rebuild(body, {}));
  std::map<const StmtNode*, Stmt> edits = {{place.top, Stmt()}, {loop, moved}};
  return WithBody(f, su::Rebuild(f->body, edits));
}

}  // namespace

absl::Status Schedule::ComputeAt(BlockRV block, LoopRV loop) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  absl::StatusOr<Var> var = LoopVar(loop);
  if (!var.ok()) return var.status();
  absl::StatusOr<PrimFunc> moved = MoveUnder(func(), *name, *var, /*reverse=*/false);
  if (!moved.ok()) return moved.status();
  SetFunc(*moved);
  v1::TraceInstruction* inst = Record("ComputeAt");
  inst->add_inputs()->set_rv(su::RvName(block));
  inst->add_inputs()->set_rv(su::RvName(loop));
  return absl::OkStatus();
}

absl::Status Schedule::ReverseComputeAt(BlockRV block, LoopRV loop) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  absl::StatusOr<Var> var = LoopVar(loop);
  if (!var.ok()) return var.status();
  absl::StatusOr<PrimFunc> moved = MoveUnder(func(), *name, *var, /*reverse=*/true);
  if (!moved.ok()) return moved.status();
  SetFunc(*moved);
  v1::TraceInstruction* inst = Record("ReverseComputeAt");
  inst->add_inputs()->set_rv(su::RvName(block));
  inst->add_inputs()->set_rv(su::RvName(loop));
  return absl::OkStatus();
}

// --- compute_inline / reverse_compute_inline ---

namespace {

// `block` with each load of `buffer` replaced by `value(indices)`, and its read regions
// re-derived for the buffers that brings in.
Stmt InlineLoads(const BlockNode& block, const BufferNode* buffer,
                 const std::function<PrimExpr(const std::vector<PrimExpr>&)>& value) {
  struct Inliner : StmtExprMutator {
    const BufferNode* buffer;
    const std::function<PrimExpr(const std::vector<PrimExpr>&)>* value;
    PrimExpr VisitExpr(const PrimExpr& e) override {
      PrimExpr out = DefaultVisitExpr(e);
      const auto* l = out.as<BufferLoadNode>();
      if (l == nullptr || l->buffer.get() != buffer) return out;
      return (*value)(l->indices);
    }
    Stmt VisitStmt(const Stmt& s) override {
      if (s.as<BlockNode>()) return s;  // nested blocks are handled on their own
      return DefaultVisitStmt(s);
    }
  } inliner;
  inliner.buffer = buffer;
  inliner.value = &value;
  BlockNode* copy = CopyBlock(block);
  Block owner(copy);
  copy->body = inliner.VisitStmt(block.body);
  if (block.init) copy->init = inliner.VisitStmt(block.init);
  std::vector<BufferRegion> reads;
  std::set<const BufferNode*> present;
  for (const BufferRegion& r : block.reads) {
    if (r->buffer.get() == buffer) continue;
    reads.push_back(r);
    present.insert(r->buffer.get());
  }
  for (const BufferRegion& r : su::DeriveReadRegions(*copy)) {
    if (!present.count(r->buffer.get())) reads.push_back(r);
  }
  copy->reads = std::move(reads);
  return owner;
}

// The allocating block of `buffer`, with the allocation dropped when nothing uses it anymore.
Stmt DropUnusedAllocation(const Stmt& body, const BufferNode* buffer) {
  bool used = false;
  struct Uses : StmtExprVisitor {
    const BufferNode* buffer;
    bool* used;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>(); l && l->buffer.get() == buffer) *used = true;
      DefaultVisitExpr(e);
    }
    void VisitStmt(const Stmt& s) override {
      if (const auto* st = s.as<BufferStoreNode>(); st && st->buffer.get() == buffer) *used = true;
      DefaultVisitStmt(s);
    }
  } uses;
  uses.buffer = buffer;
  uses.used = &used;
  uses.VisitStmt(body);
  if (used) return body;
  for (const BlockNode* b : su::AllBlocks(body)) {
    std::vector<Buffer> kept;
    for (const Buffer& a : b->alloc_buffers) {
      if (a.get() != buffer) kept.push_back(a);
    }
    if (kept.size() != b->alloc_buffers.size()) {
      return su::Rebuild(body, {{b, WithAllocations(*b, std::move(kept))}});
    }
  }
  return body;
}

// An elementwise block: spatial iter vars only, no init, one store `buffer[v...] = value`.
const BufferStoreNode* ElementwiseStore(const BlockNode& block, std::string* why) {
  if (block.init) {
    *why = "it is a reduction (it has an init)";
    return nullptr;
  }
  for (const IterVar& iv : block.iter_vars) {
    if (iv->iter_kind != IterKind::kSpatial) {
      *why = absl::StrCat("its iter var '", iv->var->name, "' is ", IterKindName(iv->iter_kind));
      return nullptr;
    }
  }
  const auto* store = block.body.as<BufferStoreNode>();
  if (store == nullptr) *why = "its body is not a single buffer store";
  return store;
}

}  // namespace

absl::Status Schedule::ComputeInline(BlockRV block) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  PrimFunc f = func();
  Place place = Locate(f, *name);
  std::string what = absl::StrCat("compute_inline of block '", *name, "'");
  std::string why;
  const BufferStoreNode* store = ElementwiseStore(*place.block, &why);
  if (store == nullptr) return absl::FailedPreconditionError(absl::StrCat(what, ": ", why));
  std::optional<std::map<const VarNode*, size_t>> dims =
      DimsOfIterVars(store->indices, *place.block);
  if (!dims || dims->size() != place.block->iter_vars.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": it must store at its iter vars, each once (buffer[v0, v1, ...])"));
  }
  const BufferNode* buffer = store->buffer.get();
  if (IsParam(f, buffer)) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": '", buffer->name, "' is an output of the function"));
  }
  if (Writers(f->body, buffer).size() != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": '", buffer->name, "' has other writers"));
  }
  for (const BufferNode* loaded : su::LoadedBuffers(*place.block)) {
    if (loaded == buffer) {
      return absl::FailedPreconditionError(absl::StrCat(what, ": it reads what it writes"));
    }
  }
  std::function<PrimExpr(const std::vector<PrimExpr>&)> value =
      [&](const std::vector<PrimExpr>& indices) {
        return Substitute(store->value, [&](const Var& v) -> PrimExpr {
          auto it = dims->find(v.get());
          return it == dims->end() ? PrimExpr() : indices[it->second];
        });
      };
  std::map<const StmtNode*, Stmt> edits = {{place.realize, Stmt()}};
  for (const BlockNode* reader : Readers(f->body, buffer)) {
    edits[reader] = InlineLoads(*reader, buffer, value);
  }
  Stmt body = DropUnusedAllocation(su::Rebuild(f->body, edits), buffer);
  SetFunc(WithBody(f, body));
  Record("ComputeInline")->add_inputs()->set_rv(su::RvName(block));
  return absl::OkStatus();
}

absl::Status Schedule::ReverseComputeInline(BlockRV block) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  PrimFunc f = func();
  Place place = Locate(f, *name);
  std::string what = absl::StrCat("reverse_compute_inline of block '", *name, "'");
  std::string why;
  const BufferStoreNode* store = ElementwiseStore(*place.block, &why);
  if (store == nullptr) return absl::FailedPreconditionError(absl::StrCat(what, ": ", why));
  // The one loaded buffer that another block produces.
  const BufferNode* buffer = nullptr;
  const BlockNode* producer = nullptr;
  for (const BufferNode* loaded : su::LoadedBuffers(*place.block)) {
    std::vector<const BlockNode*> writers = Writers(f->body, loaded);
    writers.erase(std::remove(writers.begin(), writers.end(), place.block), writers.end());
    if (writers.empty()) continue;
    if (buffer != nullptr || writers.size() > 1) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, ": it must have exactly one producer block"));
    }
    buffer = loaded;
    producer = writers[0];
  }
  if (buffer == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": no block produces what it reads"));
  }
  if (IsParam(f, buffer)) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": '", buffer->name, "' is a parameter of the function, so it must be written"));
  }
  if (Readers(f->body, buffer).size() != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": other blocks read '", buffer->name, "' too"));
  }
  std::string producer_why;
  const BufferStoreNode* produced = ElementwiseStore(*producer, &producer_why);
  if (produced == nullptr || produced->buffer.get() != buffer) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": its producer '", producer->name, "' must be elementwise: ",
                     producer_why.empty() ? "it stores to another buffer" : producer_why));
  }
  // Every load of the buffer at the same distinct iter vars, covering all of them.
  std::optional<std::map<const VarNode*, size_t>> dims;
  bool consistent = true;
  PostOrderVisit(store->value, [&](const PrimExpr& e) {
    const auto* l = e.as<BufferLoadNode>();
    if (l == nullptr || l->buffer.get() != buffer) return;
    std::optional<std::map<const VarNode*, size_t>> d = DimsOfIterVars(l->indices, *place.block);
    if (!d || (dims && *d != *dims)) consistent = false;
    dims = d;
  });
  if (!consistent || !dims || dims->size() != place.block->iter_vars.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": it must load '", buffer->name,
                     "' at all of its iter vars, each once, the same way everywhere"));
  }
  // The consumer's iter var for dimension d is the producer's store index d.
  auto to_producer = [&](const Var& v) -> PrimExpr {
    auto it = dims->find(v.get());
    return it == dims->end() ? PrimExpr() : produced->indices[it->second];
  };
  struct Fold : StmtExprMutator {
    const BufferNode* buffer;
    PrimExpr produced_value;
    PrimExpr VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>(); l && l->buffer.get() == buffer) {
        return produced_value;
      }
      return DefaultVisitExpr(e);
    }
  } fold;
  fold.buffer = buffer;
  fold.produced_value = produced->value;
  PrimExpr value = fold.VisitExpr(Substitute(store->value, to_producer));
  std::vector<PrimExpr> indices;
  for (const PrimExpr& i : store->indices) indices.push_back(Substitute(i, to_producer));
  BlockNode* merged = CopyBlock(*producer);
  Block owner(merged);
  merged->body = Make<BufferStoreNode>(store->buffer, value, indices);
  merged->writes = {su::PointRegion(store->buffer, indices)};
  merged->reads = su::DeriveReadRegions(*merged);
  std::map<const StmtNode*, Stmt> edits = {{place.realize, Stmt()}, {producer, owner}};
  Stmt body = DropUnusedAllocation(su::Rebuild(f->body, edits), buffer);
  SetFunc(WithBody(f, body));
  Record("ReverseComputeInline")->add_inputs()->set_rv(su::RvName(block));
  return absl::OkStatus();
}

}  // namespace kiln::tir
