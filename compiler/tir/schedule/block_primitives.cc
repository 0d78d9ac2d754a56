// Block primitives: compute_inline / reverse_compute_inline, cache_read / cache_write, set_scope
// and decompose_reduction (compute_at / reverse_compute_at: compute_at.cc).
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
      store && store->buffer.get() == buffer.get()
          ? su::DimsOfIterVars(store->indices, *place.block)
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
      su::DimsOfIterVars(store->indices, *place.block);
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
    std::optional<std::map<const VarNode*, size_t>> d =
        su::DimsOfIterVars(l->indices, *place.block);
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
