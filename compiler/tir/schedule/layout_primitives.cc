// Layout primitives: storage_align (padded strides), transform_layout (split and permute a
// buffer's dimensions) and pad_einsum (pad an iteration domain to multiples).
#include <algorithm>
#include <numeric>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler/arith/analyzer.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/tir/schedule/ir_util.h"
#include "compiler/tir/schedule/schedule.h"

namespace kiln::tir {

using namespace ir;  // NOLINT: TIR rewriting
namespace su = schedule_util;

namespace {

// The buffer's constant shape, or nullopt.
std::optional<std::vector<int64_t>> ConstShape(const Buffer& b) {
  std::vector<int64_t> shape;
  for (const PrimExpr& d : b->shape) {
    const int64_t* c = AsConstInt(d);
    if (c == nullptr) return std::nullopt;
    shape.push_back(*c);
  }
  return shape;
}

// Rewrites every access of `from` as an access of `to` at `map(indices)`; regions of `from`
// become points when they are points, else the whole of `to`; its allocation becomes `to`'s.
class AccessRewriter : public StmtExprMutator {
 public:
  AccessRewriter(const BufferNode* from, Buffer to,
                 std::function<std::vector<PrimExpr>(const std::vector<PrimExpr>&)> map)
      : from_(from), to_(std::move(to)), map_(std::move(map)) {}

  PrimExpr VisitExpr(const PrimExpr& e) override {
    PrimExpr visited = DefaultVisitExpr(e);
    const auto* l = visited.as<BufferLoadNode>();
    if (l == nullptr || l->buffer.get() != from_) return visited;
    return Make<BufferLoadNode>(l->dtype, to_, map_(l->indices));
  }
  Stmt VisitStmt(const Stmt& s) override {
    Stmt visited = DefaultVisitStmt(s);
    if (const auto* st = visited.as<BufferStoreNode>(); st && st->buffer.get() == from_) {
      return Make<BufferStoreNode>(to_, st->value, map_(st->indices));
    }
    const auto* b = visited.as<BlockNode>();
    if (b == nullptr) return visited;
    BlockNode* copy = CopyBlock(*b);
    Block owner(copy);
    copy->reads = Regions(b->reads);
    copy->writes = Regions(b->writes);
    for (Buffer& a : copy->alloc_buffers) {
      if (a.get() == from_) a = to_;
    }
    return owner;
  }

 private:
  std::vector<BufferRegion> Regions(const std::vector<BufferRegion>& in) {
    std::vector<BufferRegion> out;
    for (const BufferRegion& r : in) {
      if (r->buffer.get() != from_) {
        out.push_back(r);
        continue;
      }
      bool point = std::all_of(r->region.begin(), r->region.end(),
                               [](const Range& x) { return su::IsConst(x->extent, 1); });
      if (!point) {
        out.push_back(FullRegion(to_));
        continue;
      }
      std::vector<PrimExpr> mins;
      for (const Range& x : r->region) mins.push_back(x->min);
      out.push_back(su::PointRegion(to_, map_(mins)));
    }
    return out;
  }

  const BufferNode* from_;
  Buffer to_;
  std::function<std::vector<PrimExpr>(const std::vector<PrimExpr>&)> map_;
};

// The binding of each loop var of the nest above a realize, for simplifying divisions.
void BindLoops(const std::vector<Stmt>& path, arith::Analyzer* analyzer) {
  for (const Stmt& s : path) {
    if (const auto* l = s.as<ForNode>()) analyzer->Bind(l->loop_var, MakeRange(l->min, l->extent));
  }
}

}  // namespace

// --- storage_align ---

absl::Status Schedule::StorageAlign(BlockRV block, int write_index, int axis, int factor,
                                    int offset) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  PrimFunc f = func();
  su::Place place = su::Locate(f, *name);
  std::string what = absl::StrCat("storage_align of block '", *name, "'");
  if (write_index < 0 || write_index >= static_cast<int>(place.block->writes.size())) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": it has ", place.block->writes.size(),
                                                   " written buffers, not index ", write_index));
  }
  const Buffer& buffer = place.block->writes[write_index]->buffer;
  absl::StrAppend(&what, " on '", buffer->name, "'");
  if (su::IsParam(f, buffer.get())) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": it is a parameter of the function; its strides are the caller's"));
  }
  std::optional<std::vector<int64_t>> shape = ConstShape(buffer);
  int rank = static_cast<int>(buffer->shape.size());
  if (!shape) return absl::FailedPreconditionError(what + ": its shape is not constant");
  if (axis < 0 || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": axis ", axis, " is out of range for rank ", rank));
  }
  if (factor <= 0 || offset < 0 || offset >= factor) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": factor must be positive and 0 <= offset < factor (got ", factor, ", ",
                     offset, ")"));
  }
  // Strides from the innermost dimension out; the aligned one rounds up to factor * k + offset.
  std::vector<int64_t> strides(rank, 1);
  for (int d = 0; d < rank; ++d) {
    if (!buffer->strides.empty() && AsConstInt(buffer->strides[d])) {
      strides[d] = *AsConstInt(buffer->strides[d]);
    }
  }
  if (axis == rank - 1 && 1 % factor != offset) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": the innermost dimension's stride is 1, which is not ", factor, " * k + ", offset));
  }
  for (int d = rank - 2; d >= 0; --d) {
    int64_t compact = strides[d + 1] * (*shape)[d + 1];
    int64_t s = d < axis ? compact : std::max(compact, strides[d]);
    if (d == axis) {
      s = compact;
      while (s % factor != offset) ++s;
    }
    strides[d] = s;
  }
  BufferNode* node = su::CopyBuffer(buffer);
  Buffer aligned(node);
  node->strides.clear();
  for (int d = 0; d < rank; ++d) {
    node->strides.push_back(IntImm(buffer->shape[d]->dtype, strides[d]));
  }
  AccessRewriter rewriter(buffer.get(), aligned,
                          [](const std::vector<PrimExpr>& indices) { return indices; });
  SetFunc(WithBody(f, rewriter.VisitStmt(f->body)));
  v1::TraceInstruction* inst = Record("StorageAlign");
  inst->add_inputs()->set_rv(su::RvName(block));
  inst->add_attrs()->set_int_(write_index);
  inst->add_attrs()->set_int_(axis);
  inst->add_attrs()->set_int_(factor);
  inst->add_attrs()->set_int_(offset);
  return absl::OkStatus();
}

// --- transform_layout ---

absl::Status Schedule::TransformLayout(BlockRV block, int buffer_index, bool write,
                                       std::vector<int64_t> inner_factors, std::vector<int> order) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  PrimFunc f = func();
  su::Place place = su::Locate(f, *name);
  std::string what = absl::StrCat("transform_layout of block '", *name, "'");
  const std::vector<BufferRegion>& regions = write ? place.block->writes : place.block->reads;
  if (buffer_index < 0 || buffer_index >= static_cast<int>(regions.size())) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": it has ", regions.size(), " ",
                                                   write ? "written" : "read",
                                                   " buffers, not index ", buffer_index));
  }
  const Buffer& buffer = regions[buffer_index]->buffer;
  absl::StrAppend(&what, " on '", buffer->name, "'");
  if (su::IsParam(f, buffer.get())) {
    return absl::FailedPreconditionError(absl::StrCat(
        what,
        ": it is a parameter of the function; its layout is the caller's (cache_read or "
        "cache_write makes a copy to transform)"));
  }
  std::optional<std::vector<int64_t>> shape = ConstShape(buffer);
  if (!shape) return absl::FailedPreconditionError(what + ": its shape is not constant");
  if (inner_factors.size() != shape->size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", inner_factors.size(), " factors for a buffer of rank ", shape->size()));
  }
  std::vector<int64_t> expanded;  // the shape after splitting
  for (size_t d = 0; d < shape->size(); ++d) {
    int64_t fct = inner_factors[d];
    if (fct <= 1) {
      expanded.push_back((*shape)[d]);
      continue;
    }
    if ((*shape)[d] % fct != 0) {
      return absl::FailedPreconditionError(absl::StrCat(what, ": dimension ", d, " (", (*shape)[d],
                                                        ") is not a multiple of its factor ", fct,
                                                        " (pad_einsum pads)"));
    }
    expanded.push_back((*shape)[d] / fct);
    expanded.push_back(fct);
  }
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> identity(expanded.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (sorted != identity) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": the order must be a permutation of the ", expanded.size(), " split dimensions"));
  }
  std::vector<PrimExpr> new_shape;
  DataType t = buffer->shape[0]->dtype;
  for (int k : order) new_shape.push_back(IntImm(t, expanded[k]));
  std::set<std::string> names = su::UsedNames(f);
  Buffer transformed = MakeBuffer(buffer->name, buffer->dtype, new_shape, buffer->scope);
  arith::Analyzer analyzer;
  BindLoops(place.path, &analyzer);
  auto map = [&](const std::vector<PrimExpr>& indices) {
    std::vector<PrimExpr> parts;
    for (size_t d = 0; d < indices.size(); ++d) {
      const PrimExpr& i = indices[d];
      int64_t fct = inner_factors[d];
      if (fct <= 1) {
        parts.push_back(i);
        continue;
      }
      parts.push_back(analyzer.Simplify(FloorDiv(i, IntImm(i->dtype, fct))));
      parts.push_back(analyzer.Simplify(FloorMod(i, IntImm(i->dtype, fct))));
    }
    std::vector<PrimExpr> out;
    for (int k : order) out.push_back(parts[k]);
    return out;
  };
  AccessRewriter rewriter(buffer.get(), transformed, map);
  SetFunc(WithBody(f, rewriter.VisitStmt(f->body)));
  v1::TraceInstruction* inst = Record("TransformLayout");
  inst->add_inputs()->set_rv(su::RvName(block));
  inst->add_attrs()->set_int_(buffer_index);
  inst->add_attrs()->set_int_(write ? 1 : 0);
  inst->add_attrs()->set_int_(static_cast<int64_t>(inner_factors.size()));
  for (int64_t fct : inner_factors) inst->add_attrs()->set_int_(fct);
  for (int k : order) inst->add_attrs()->set_int_(k);
  return absl::OkStatus();
}

// --- pad_einsum ---

absl::Status Schedule::PadEinsum(BlockRV block, std::vector<int64_t> padding) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  PrimFunc f = su::WithRootBlock(func());
  su::Place place = su::Locate(f, *name);
  const BlockNode& b = *place.block;
  std::string what = absl::StrCat("pad_einsum of block '", *name, "'");
  if (padding.size() != b.iter_vars.size()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", padding.size(), " paddings for ",
                                                   b.iter_vars.size(), " iter vars"));
  }
  if (su::ChildRealizes(Stmt(place.top)).size() != 1 || !su::IsConst(place.realize->predicate, 1)) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the block must be alone in its loop nest, without a predicate"));
  }
  // Each iter var bound to its own loop over its whole domain [0, n).
  std::map<const VarNode*, const ForNode*> loop_of;
  std::map<const VarNode*, int64_t> extent, padded;
  std::vector<const ForNode*> loops = su::LoopsInScope(place.path);
  bool reduce_padded = false;
  for (size_t k = 0; k < b.iter_vars.size(); ++k) {
    const IterVar& iv = b.iter_vars[k];
    const auto* v = place.realize->iter_values[k].as<VarNode>();
    auto l = std::find_if(loops.begin(), loops.end(),
                          [&](const ForNode* x) { return x->loop_var.get() == v; });
    const int64_t* n = AsConstInt(iv->dom->extent);
    if (v == nullptr || l == loops.end() || n == nullptr || !su::IsConst(iv->dom->min, 0) ||
        !su::IsConst((*l)->min, 0) || !su::IsConst((*l)->extent, *n) || padding[k] < 1) {
      return absl::FailedPreconditionError(absl::StrCat(
          what, ": iter var '", iv->var->name,
          "' must be bound to a loop over its whole constant domain, with a padding >= 1"));
    }
    loop_of[iv->var.get()] = *l;
    extent[iv->var.get()] = *n;
    padded[iv->var.get()] = (*n + padding[k] - 1) / padding[k] * padding[k];
    if (iv->iter_kind != IterKind::kSpatial && padded[iv->var.get()] != *n) reduce_padded = true;
  }
  // Every access indexes by plain iter vars; the one stored buffer is the output.
  const auto* store = b.body.as<BufferStoreNode>();
  if (store == nullptr) {
    return absl::FailedPreconditionError(what + ": its body must be a single buffer store");
  }
  std::map<const BufferNode*, std::vector<const VarNode*>> dims;
  bool plain = true;
  auto note = [&](const Buffer& buf, const std::vector<PrimExpr>& indices) {
    std::vector<const VarNode*> vars;
    for (const PrimExpr& i : indices) {
      const auto* v = i.as<VarNode>();
      if (v == nullptr || !extent.count(v)) plain = false;
      vars.push_back(v);
    }
    auto [it, fresh] = dims.emplace(buf.get(), vars);
    if (!fresh && it->second != vars) plain = false;
  };
  std::map<const BufferNode*, Buffer> buffers;
  std::vector<Buffer> inputs;  // in the order the block loads them
  auto visit = [&](const Stmt& s) {
    PostOrderVisit(s, [&](const PrimExpr& e) {
      if (const auto* l = e.as<BufferLoadNode>()) {
        note(l->buffer, l->indices);
        if (buffers.emplace(l->buffer.get(), l->buffer).second) inputs.push_back(l->buffer);
      }
    });
  };
  visit(b.body);
  if (b.init) visit(b.init);
  note(store->buffer, store->indices);
  if (const auto* init = b.init ? b.init.as<BufferStoreNode>() : nullptr) {
    note(init->buffer, init->indices);
  }
  if (!plain) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": every access must index by plain iter vars, the same way for each buffer"));
  }
  // Padded reduction steps must add nothing: a sum of products of zero-padded inputs.
  const auto* sum = store->value.as<BinaryNode>();
  if (reduce_padded && (store->value->kind() != NodeKind::kAdd || sum == nullptr)) {
    return absl::FailedPreconditionError(
        what + ": padding a reduction needs a sum (buf = buf + ...), where padded terms are 0");
  }
  const Buffer& out = store->buffer;
  auto padded_shape = [&](const BufferNode* buf, bool* changed) {
    std::vector<PrimExpr> shape;
    *changed = false;
    for (size_t d = 0; d < dims[buf].size(); ++d) {
      const VarNode* v = dims[buf][d];
      *changed |= padded[v] != extent[v];
      shape.push_back(IntImm(
          buffers.count(buf) ? buffers[buf]->shape[d]->dtype : out->shape[d]->dtype, padded[v]));
    }
    return shape;
  };
  std::set<std::string> names = su::UsedNames(f);
  std::set<std::string> block_names = su::BlockNames(f->body);
  std::map<const BufferNode*, Buffer> to_padded;
  std::vector<Stmt> before, after;
  std::vector<Buffer> allocations;
  // A zero-padded copy of each input whose shape grows.
  for (const Buffer& buf : inputs) {
    const BufferNode* node = buf.get();
    if (node == out.get()) continue;
    bool changed = false;
    std::vector<PrimExpr> shape = padded_shape(node, &changed);
    if (!changed) continue;
    Buffer pad =
        MakeBuffer(su::FreshName(buf->name + "_pad", &names), buf->dtype, shape, buf->scope);
    to_padded[node] = pad;
    allocations.push_back(pad);
    Stmt nest = su::GridBlock(
        su::FreshName(pad->name, &block_names), shape, &names,
        [&](const std::vector<PrimExpr>& v, BlockNode* copy) {
          PrimExpr inside;
          for (size_t d = 0; d < v.size(); ++d) {
            inside = su::And(inside, Binary(NodeKind::kLT, v[d], buf->shape[d]));
          }
          copy->reads = {FullRegion(buf)};
          copy->writes = {su::PointRegion(pad, v)};
          copy->body = Make<IfThenElseNode>(
              inside, Make<BufferStoreNode>(pad, Make<BufferLoadNode>(buf->dtype, buf, v), v),
              Make<BufferStoreNode>(pad, MakeConst(buf->dtype, 0), v));
        });
    before.push_back(nest);
  }
  // The output: computed padded, the part that exists copied back.
  bool out_changed = false;
  std::vector<PrimExpr> out_shape = padded_shape(out.get(), &out_changed);
  if (out_changed) {
    Buffer pad =
        MakeBuffer(su::FreshName(out->name + "_pad", &names), out->dtype, out_shape, out->scope);
    to_padded[out.get()] = pad;
    allocations.push_back(pad);
    Stmt nest = su::GridBlock(su::FreshName(out->name + "_unpad", &block_names), out->shape, &names,
                              [&](const std::vector<PrimExpr>& v, BlockNode* copy) {
                                copy->reads = {su::PointRegion(pad, v)};
                                copy->writes = {su::PointRegion(out, v)};
                                copy->body = Make<BufferStoreNode>(
                                    out, Make<BufferLoadNode>(out->dtype, pad, v), v);
                              });
    after.push_back(nest);
  }
  // The block over the padded domain, on the padded buffers.
  BlockNode* padded_block = CopyBlock(b);
  Block block_owner(padded_block);
  for (IterVar& iv : padded_block->iter_vars) {
    iv = Make<IterVarNode>(
        iv->var, MakeRange(iv->dom->min, IntImm(iv->dom->extent->dtype, padded[iv->var.get()])),
        iv->iter_kind, iv->thread_tag);
  }
  padded_block->body = su::ReplaceBuffers(b.body, to_padded);
  if (b.init) padded_block->init = su::ReplaceBuffers(b.init, to_padded);
  auto regions = [&](const std::vector<BufferRegion>& in) {
    std::vector<BufferRegion> result;
    for (const BufferRegion& r : in) {
      auto it = to_padded.find(r->buffer.get());
      result.push_back(it == to_padded.end() ? r : Make<BufferRegionNode>(it->second, r->region));
    }
    return result;
  };
  padded_block->reads = regions(b.reads);
  padded_block->writes = regions(b.writes);
  std::map<const StmtNode*, Stmt> edits;  // loops whose extent grows
  for (const auto& [iv, loop] : loop_of) {
    if (padded[iv] == extent[iv]) continue;
    ForNode* copy = su::CopyFor(*loop);
    copy->extent = IntImm(loop->extent->dtype, padded[iv]);
    edits[loop] = Stmt(copy);
  }
  // The loops are rebuilt inside out: a replaced loop keeps the rebuilt body below it.
  Stmt nest = Stmt(place.top);
  {
    std::function<Stmt(const Stmt&)> rebuild = [&](const Stmt& s) -> Stmt {
      if (const auto* l = s.as<ForNode>()) {
        Stmt body = rebuild(l->body);
        auto it = edits.find(l);
        const ForNode& base = it != edits.end() ? *it->second.as<ForNode>() : *l;
        return su::WithLoopBody(base, body);
      }
      if (s.get() == place.realize) {
        return Make<BlockRealizeNode>(place.realize->iter_values, place.realize->predicate,
                                      block_owner);
      }
      return s;
    };
    nest = rebuild(nest);
  }
  std::vector<Stmt> seq = before;
  seq.push_back(nest);
  seq.insert(seq.end(), after.begin(), after.end());
  Stmt body = su::Rebuild(place.scope_body, {{place.top, Seq(seq)}});
  if (place.scope == nullptr) {
    return absl::InternalError(what + ": no scope block");  // WithRootBlock made one
  }
  BlockNode* scope = CopyBlock(*place.scope);
  Block scope_owner(scope);
  scope->body = body;
  for (const Buffer& a : allocations) scope->alloc_buffers.push_back(a);
  SetFunc(WithBody(f, su::Rebuild(f->body, {{place.scope, scope_owner}})));
  v1::TraceInstruction* inst = Record("PadEinsum");
  inst->add_inputs()->set_rv(su::RvName(block));
  for (int64_t p : padding) inst->add_attrs()->set_int_(p);
  return absl::OkStatus();
}

}  // namespace kiln::tir
