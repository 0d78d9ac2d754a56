// blockize and tensorize: a loop nest around one block becomes an outer block, and an outer
// block whose body computes what a tensor intrinsic's description does gets the intrinsic's
// implementation as its body, its buffers bound to the block's regions by match_buffer.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/arith/analyzer.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/tir/schedule/ir_util.h"
#include "compiler/tir/schedule/schedule.h"
#include "compiler/tir/schedule/tensor_intrin.h"

namespace kiln::tir {

using namespace ir;  // NOLINT: TIR rewriting
namespace su = schedule_util;

namespace {

// A perfect loop nest from `top` down to one block realize.
struct Nest {
  std::vector<const ForNode*> loops;
  const BlockRealizeNode* realize = nullptr;
};

// The loops of a nest that iterate more than once (a unit loop's variable is its minimum).
std::vector<const ForNode*> NonUnitLoops(const Nest& nest) {
  std::vector<const ForNode*> out;
  for (const ForNode* l : nest.loops) {
    if (!su::IsConst(l->extent, 1)) out.push_back(l);
  }
  return out;
}

Nest NestFrom(const Stmt& top) {
  Nest nest;
  Stmt s = top;
  while (const auto* loop = s.as<ForNode>()) {
    nest.loops.push_back(loop);
    s = loop->body;
  }
  nest.realize = s.as<BlockRealizeNode>();
  return nest;
}

PrimExpr Zero(DataType t) { return IntImm(t, 0); }

// The region `r` (over the block's iter vars, substituted by `binding`) covers as the loops of
// `inner` run: affine minimums relax to a constant-width window; anything else is the whole
// buffer dimension.
BufferRegion Relax(const BufferRegion& r, const std::function<PrimExpr(const Var&)>& binding,
                   const std::map<const VarNode*, const ForNode*>& inner) {
  std::set<const VarNode*> vars;
  for (const auto& [v, loop] : inner) vars.insert(v);
  std::vector<Range> region;
  for (size_t d = 0; d < r->region.size(); ++d) {
    PrimExpr min = Substitute(r->region[d]->min, binding);
    const int64_t* ext = AsConstInt(r->region[d]->extent);
    std::optional<su::AffineForm> form = su::Affine(min, vars);
    bool known = ext != nullptr && form.has_value();
    PrimExpr lo = known && form->rest ? form->rest : Zero(min->dtype);
    int64_t extent = known ? *ext : 0;
    for (const auto& [v, c] : known ? form->coeffs : std::map<const VarNode*, int64_t>{}) {
      const int64_t* n = AsConstInt(inner.at(v)->extent);
      if (n == nullptr) {
        known = false;
        break;
      }
      if (c < 0) lo = su::Add(lo, IntImm(min->dtype, c * (*n - 1)));
      extent += (c < 0 ? -c : c) * (*n - 1);
    }
    if (!known) {
      const PrimExpr& dim = r->buffer->shape[d];
      region.push_back(MakeRange(Zero(dim->dtype), dim));
      continue;
    }
    region.push_back(MakeRange(lo, IntImm(min->dtype, extent)));
  }
  return Make<BufferRegionNode>(r->buffer, std::move(region));
}

}  // namespace

absl::StatusOr<BlockRV> Schedule::Blockize(LoopRV loop) {
  absl::StatusOr<Var> loop_var = LoopVar(loop);
  if (!loop_var.ok()) return loop_var.status();
  PrimFunc f = func();
  std::vector<Stmt> path = su::PathToLoop(f->body, loop_var->get());
  const auto* top = path.back().as<ForNode>();
  std::string what = absl::StrCat("blockize at loop '", (*loop_var)->name, "'");
  Nest nest = NestFrom(path.back());
  if (nest.realize == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the loops under it must be a perfect nest around one block"));
  }
  const BlockNode& block = *nest.realize->block;
  if (!su::IsConst(nest.realize->predicate, 1)) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": block '", block.name, "' has a predicate"));
  }
  std::map<const VarNode*, const ForNode*> inner;
  std::set<const VarNode*> inner_vars;
  for (const ForNode* l : nest.loops) {
    const int64_t* ext = AsConstInt(l->extent);
    if (!su::IsConst(l->min, 0) || ext == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          what, ": loop '", l->loop_var->name, "' must start at 0 and have a constant extent"));
    }
    inner[l->loop_var.get()] = l;
    inner_vars.insert(l->loop_var.get());
  }
  arith::Analyzer analyzer;
  for (const Stmt& s : path) {
    if (const auto* l = s.as<ForNode>()) analyzer.Bind(l->loop_var, MakeRange(l->min, l->extent));
  }
  // Each binding splits as outer * inner_extent + inner, where the inner part is a dense mix
  // of the loops under `loop` (coefficients 1, n1, n1 * n2, ...) and the outer part uses none.
  std::set<std::string> names = su::UsedNames(f);
  auto* outer = new BlockNode();
  Block outer_owner(outer);
  std::vector<PrimExpr> outer_values, inner_values;
  std::map<const VarNode*, PrimExpr> inner_binding;  // iter var -> value over outer iter vars
  for (size_t k = 0; k < block.iter_vars.size(); ++k) {
    const IterVar& iv = block.iter_vars[k];
    const PrimExpr& value = nest.realize->iter_values[k];
    DataType t = iv->var->dtype;
    std::optional<su::AffineForm> form = su::Affine(value, inner_vars);
    const int64_t* dom = AsConstInt(iv->dom->extent);
    if (!form || dom == nullptr || !su::IsConst(iv->dom->min, 0)) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, ": the binding of iter var '", iv->var->name,
                       "' must be affine in the loops, over a domain [0, constant)"));
    }
    std::vector<std::pair<int64_t, const ForNode*>> terms;
    for (const auto& [v, c] : form->coeffs) {
      if (c != 0) terms.emplace_back(c, inner[v]);
    }
    std::sort(terms.begin(), terms.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    int64_t inner_extent = 1;
    PrimExpr inner_part;
    for (const auto& [c, l] : terms) {
      if (c != inner_extent) {
        return absl::FailedPreconditionError(
            absl::StrCat(what, ": the binding of iter var '", iv->var->name,
                         "' does not cover the loops under it densely (coefficient ", c, " where ",
                         inner_extent, " was expected)"));
      }
      PrimExpr var = l->loop_var->dtype == t ? PrimExpr(l->loop_var) : Cast(t, l->loop_var);
      inner_part = su::Add(inner_part, su::Mul(var, c));
      inner_extent *= *AsConstInt(l->extent);
    }
    PrimExpr rest = form->rest ? form->rest : Zero(t);
    if (*dom % inner_extent != 0 ||
        !analyzer.CanProve(Binary(NodeKind::kEQ, FloorMod(rest, IntImm(rest->dtype, inner_extent)),
                                  Zero(rest->dtype)))) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, ": iter var '", iv->var->name, "' (extent ", *dom,
                       ") does not split into whole blocks of ", inner_extent, " iterations"));
    }
    PrimExpr outer_value = analyzer.Simplify(FloorDiv(rest, IntImm(rest->dtype, inner_extent)));
    PrimExpr value_inside = inner_part ? inner_part : Zero(t);
    if (*dom / inner_extent > 1) {
      Var vo = MakeVar(su::FreshName(iv->var->name + "_o", &names), t);
      outer->iter_vars.push_back(
          Make<IterVarNode>(vo, MakeRange(Zero(t), IntImm(t, *dom / inner_extent)), iv->iter_kind));
      outer_values.push_back(outer_value);
      value_inside = su::Add(su::Mul(vo, inner_extent), inner_part);
      if (!value_inside) value_inside = Zero(t);
    }
    inner_values.push_back(value_inside);
    inner_binding[iv->var.get()] = value_inside;
  }
  auto by_binding = [&](const Var& v) -> PrimExpr {
    auto it = inner_binding.find(v.get());
    return it == inner_binding.end() ? PrimExpr() : it->second;
  };
  std::set<std::string> block_names;
  for (const BlockNode* b : su::AllBlocks(f->body)) block_names.insert(b->name);
  outer->name = su::FreshName(block.name + "_o", &block_names);
  for (const BufferRegion& r : block.reads) outer->reads.push_back(Relax(r, by_binding, inner));
  for (const BufferRegion& r : block.writes) outer->writes.push_back(Relax(r, by_binding, inner));
  Stmt inner_realize =
      Make<BlockRealizeNode>(inner_values, nest.realize->predicate, nest.realize->block);
  outer->body = su::Rebuild(Stmt(top), {{nest.realize, inner_realize}});
  Stmt outer_realize = Make<BlockRealizeNode>(outer_values, Bool(true), outer_owner);
  SetFunc(WithBody(f, su::Rebuild(f->body, {{top, outer_realize}})));
  v1::TraceInstruction* inst = Record("Blockize");
  inst->add_inputs()->set_rv(su::RvName(loop));
  BlockRV out = NewBlock(outer->name);
  inst->add_outputs(su::RvName(out));
  return out;
}

// --- tensorize ---

namespace {

// An index expression in int64 (scripts index in int32, intrinsics in int64): immediates and
// arithmetic widened, narrower variables cast.
PrimExpr Widen(const PrimExpr& e) {
  DataType i64 = DataType::Int(64);
  if (e->dtype == i64 || !e->dtype.is_int()) return e;
  if (const auto* imm = e.as<IntImmNode>()) return IntImm(i64, imm->value);
  if (const auto* c = e.as<CastNode>()) return Widen(c->value);
  if (const auto* b = e.as<BinaryNode>()) return Binary(e->kind(), Widen(b->a), Widen(b->b));
  return Cast(i64, e);
}

// The store a loop nest around one block performs, over `loop_vars` (one per loop that
// iterates more than once): the iter vars replaced by their bindings, and each access made
// relative to where its region starts.
struct Computation {
  Stmt store;                            // a BufferStore
  std::vector<const BufferNode*> order;  // buffers in access order: the store's, then loads
};

std::optional<Computation> Normalize(
    const Nest& nest, const std::vector<Var>& loop_vars,
    const std::function<std::vector<PrimExpr>(const BufferNode*)>& region_min) {
  const BlockNode& block = *nest.realize->block;
  const auto* store = block.body.as<BufferStoreNode>();
  if (store == nullptr || block.init) return std::nullopt;
  std::map<const VarNode*, PrimExpr> to_loop;  // this nest's loops -> `loop_vars`
  arith::Analyzer analyzer;
  std::vector<const ForNode*> loops = NonUnitLoops(nest);
  for (const ForNode* l : nest.loops) to_loop[l->loop_var.get()] = l->min;
  for (size_t k = 0; k < loops.size(); ++k) {
    to_loop[loops[k]->loop_var.get()] = loop_vars[k];
    analyzer.Bind(loop_vars[k], MakeRange(loops[k]->min, loops[k]->extent));
  }
  std::map<const VarNode*, PrimExpr> binding;
  for (size_t k = 0; k < block.iter_vars.size(); ++k) {
    binding[block.iter_vars[k]->var.get()] =
        Substitute(nest.realize->iter_values[k], [&](const Var& v) -> PrimExpr {
          auto it = to_loop.find(v.get());
          return it == to_loop.end() ? PrimExpr() : it->second;
        });
  }
  auto bound = [&](const Var& v) -> PrimExpr {
    auto it = binding.find(v.get());
    return it == binding.end() ? PrimExpr() : it->second;
  };
  Computation out;
  bool ok = true;
  auto relative = [&](const BufferNode* buffer, const std::vector<PrimExpr>& indices) {
    std::vector<PrimExpr> mins = region_min(buffer);
    std::vector<PrimExpr> rel;
    if (mins.size() != indices.size()) ok = false;
    for (size_t d = 0; ok && d < indices.size(); ++d) {
      rel.push_back(analyzer.Simplify(Widen(Substitute(indices[d], bound)) - Widen(mins[d])));
    }
    return rel;
  };
  struct Loads : StmtExprMutator {
    std::function<std::vector<PrimExpr>(const BufferNode*, const std::vector<PrimExpr>&)> rel;
    std::vector<const BufferNode*>* order;
    PrimExpr VisitExpr(const PrimExpr& e) override {
      PrimExpr visited = DefaultVisitExpr(e);
      const auto* l = visited.as<BufferLoadNode>();
      if (l == nullptr) return visited;
      order->push_back(l->buffer.get());
      return Make<BufferLoadNode>(l->dtype, l->buffer, rel(l->buffer.get(), l->indices));
    }
  } loads;
  loads.rel = relative;
  loads.order = &out.order;
  out.order.push_back(store->buffer.get());
  std::vector<PrimExpr> indices = relative(store->buffer.get(), store->indices);
  PrimExpr value = loads.VisitExpr(store->value);
  if (!ok) return std::nullopt;
  out.store = Make<BufferStoreNode>(store->buffer, value, indices);
  return out;
}

// `s` (an implementation body) placed in a function: every loop variable replaced by a fresh
// one (so one implementation can be placed many times), and the integer index arithmetic in
// `index` (the block's iter var type: intrinsics are written in int64, scripts index in int32),
// so that later passes see one index type.
class PlaceImplementation : public StmtExprMutator {
 public:
  PlaceImplementation(DataType index, std::set<std::string>* names)
      : index_(index), names_(names) {}

  PrimExpr VisitExpr(const PrimExpr& e) override {
    if (const auto* imm = e.as<IntImmNode>(); imm && e->dtype.is_int() && e->dtype.lanes() == 1) {
      return IntImm(index_, imm->value);
    }
    if (const auto* v = e.as<VarNode>()) {
      auto it = fresh_.find(v);
      return it == fresh_.end() ? e : PrimExpr(it->second);
    }
    if (const auto* c = e.as<CastNode>(); c && e->dtype.is_int()) return VisitExpr(c->value);
    if (const auto* b = e.as<BinaryNode>())
      return Binary(e->kind(), VisitExpr(b->a), VisitExpr(b->b));
    if (const auto* r = e.as<RampNode>()) {
      return Make<RampNode>(VisitExpr(r->base), VisitExpr(r->stride), r->lanes);
    }
    return DefaultVisitExpr(e);
  }
  Stmt VisitStmt(const Stmt& s) override {
    const auto* loop = s.as<ForNode>();
    if (loop == nullptr) return DefaultVisitStmt(s);
    Var v = MakeVar(su::FreshName(loop->loop_var->name, names_), index_);
    fresh_[loop->loop_var.get()] = v;
    ForNode* copy = su::CopyFor(*loop);
    Stmt owner(copy);
    copy->loop_var = v;
    copy->min = VisitExpr(loop->min);
    copy->extent = VisitExpr(loop->extent);
    copy->body = VisitStmt(loop->body);
    return owner;
  }

 private:
  DataType index_;
  std::set<std::string>* names_;
  std::map<const VarNode*, Var> fresh_;
};

}  // namespace

absl::Status Schedule::Tensorize(BlockRV block, const std::string& intrin_name) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  std::string what = absl::StrCat("tensorize of block '", *name, "' with '", intrin_name, "'");
  absl::StatusOr<TensorIntrin> intrin = LookupTensorIntrin(intrin_name);
  if (!intrin.ok())
    return absl::Status(intrin.status().code(),
                        what + ": " + std::string(intrin.status().message()));
  PrimFunc f = func();
  std::vector<Stmt> path = su::PathToBlock(f->body, *name);
  const auto* realize = path.back().as<BlockRealizeNode>();
  const BlockNode& outer = *realize->block;
  if (outer.init) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the block has an init; decompose_reduction first"));
  }
  Nest nest = NestFrom(outer.body);
  Stmt desc_body = intrin->desc->body;
  if (const auto* r = desc_body.as<BlockRealizeNode>(); r && r->block->iter_vars.empty()) {
    desc_body = r->block->body;
  }
  Nest desc = NestFrom(desc_body);
  if (nest.realize == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": its body must be a loop nest around one block (blockize makes one)"));
  }
  if (nest.realize->block->init) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": block '", nest.realize->block->name,
                                                      "' has an init; decompose_reduction first"));
  }
  auto extents = [](const Nest& n) {
    std::vector<std::string> out;
    for (const ForNode* l : NonUnitLoops(n)) {
      const int64_t* e = AsConstInt(l->extent);
      out.push_back(e && su::IsConst(l->min, 0) ? absl::StrCat(*e) : "?");
    }
    return absl::StrJoin(out, ", ");
  };
  if (extents(nest) != extents(desc) || extents(nest).find('?') != std::string::npos) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": its loops have extents (", extents(nest),
                     "), the intrinsic's description (", extents(desc), ")"));
  }
  // Both computations over the description's loop variables, accesses relative to their regions.
  std::vector<Var> loop_vars;
  for (const ForNode* l : NonUnitLoops(desc)) loop_vars.push_back(l->loop_var);
  std::map<const BufferNode*, const BufferRegionNode*> regions;
  for (const BufferRegion& r : outer.reads) regions[r->buffer.get()] = r.get();
  for (const BufferRegion& r : outer.writes) regions[r->buffer.get()] = r.get();
  std::optional<Computation> mine = Normalize(nest, loop_vars, [&](const BufferNode* b) {
    std::vector<PrimExpr> mins;
    auto it = regions.find(b);
    if (it != regions.end()) {
      for (const Range& r : it->second->region) mins.push_back(r->min);
    }
    return mins;
  });
  std::optional<Computation> theirs = Normalize(desc, loop_vars, [](const BufferNode* b) {
    return std::vector<PrimExpr>(b->shape.size(), IntImm(DataType::Int(64), 0));
  });
  if (!theirs) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the description's block is not a single store without init"));
  }
  // Pair the buffers in access order, then compare with variables and buffers by identity.
  std::map<const BufferNode*, Buffer> to_desc;  // the block's buffer -> the description's
  bool same = mine.has_value() && mine->order.size() == theirs->order.size();
  std::map<const BufferNode*, const BufferNode*> paired, reverse;  // one to one
  for (size_t k = 0; same && k < mine->order.size(); ++k) {
    auto it = paired.emplace(mine->order[k], theirs->order[k]).first;
    auto back = reverse.emplace(theirs->order[k], mine->order[k]).first;
    same = it->second == theirs->order[k] && back->second == mine->order[k];
  }
  std::vector<std::pair<const BufferNode*, size_t>> params;  // the block's buffer, param index
  std::set<const BufferNode*> seen;
  for (const BufferNode* m : same ? mine->order : std::vector<const BufferNode*>{}) {
    if (!seen.insert(m).second) continue;
    const BufferNode* d = paired.at(m);
    size_t index = intrin->desc->buffer_map.size();
    for (size_t p = 0; p < intrin->desc->buffer_map.size(); ++p) {
      if (intrin->desc->buffer_map[p].second.get() == d) index = p;
    }
    same = same && index < intrin->desc->buffer_map.size() && regions.count(m);
    if (!same) break;
    to_desc[m] = intrin->desc->buffer_map[index].second;
    params.emplace_back(m, index);
  }
  if (same) {
    same = ExprDeepEqual(su::ReplaceBuffers(mine->store, to_desc), theirs->store);
  }
  if (!same) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": block '", nest.realize->block->name,
                     "' does not compute what the intrinsic's description does"));
  }
  // Each buffer's region must have the description's shape.
  std::map<const BufferNode*, Buffer> to_view;  // implementation buffer -> view of the block's
  std::vector<MatchBufferRegion> views;
  std::set<std::string> names = su::UsedNames(f);
  for (const auto& [m, index] : params) {
    const Buffer& want = intrin->desc->buffer_map[index].second;
    const BufferRegionNode* region = regions.at(m);
    for (size_t d = 0; d < want->shape.size(); ++d) {
      const int64_t* have = AsConstInt(region->region[d]->extent);
      const int64_t* need = AsConstInt(want->shape[d]);
      if (have == nullptr || need == nullptr || *have != *need) {
        return absl::FailedPreconditionError(
            absl::StrCat(what, ": the block's region of '", region->buffer->name,
                         "' does not have the shape of the intrinsic's '", want->name, "'"));
      }
    }
    const Buffer& impl = intrin->impl->buffer_map[index].second;
    Buffer view = MakeBuffer(su::FreshName(region->buffer->name + "_view", &names), impl->dtype,
                             impl->shape, region->buffer->scope);
    to_view[impl.get()] = view;
    views.push_back(Make<MatchBufferRegionNode>(view, Ref<BufferRegionNode>(region)));
  }
  Stmt impl_body = intrin->impl->body;
  if (const auto* r = impl_body.as<BlockRealizeNode>(); r && r->block->iter_vars.empty()) {
    impl_body = r->block->body;
  }
  BlockNode* copy = CopyBlock(outer);
  Block owner(copy);
  DataType index = nest.realize->block->iter_vars.empty()
                       ? DataType::Int(64)
                       : nest.realize->block->iter_vars[0]->var->dtype;
  copy->body = PlaceImplementation(index, &names).VisitStmt(su::ReplaceBuffers(impl_body, to_view));
  copy->match_buffers = std::move(views);
  copy->annotations = WithAttr(copy->annotations, "tensorized", Make<StringImmNode>(intrin_name));
  SetFunc(WithBody(f, su::Rebuild(f->body, {{&outer, owner}})));
  v1::TraceInstruction* inst = Record("Tensorize");
  inst->add_inputs()->set_rv(su::RvName(block));
  inst->add_attrs()->set_str(intrin_name);
  return absl::OkStatus();
}

absl::StatusOr<BlockRV> Schedule::Tensorize(LoopRV loop, const std::string& intrin) {
  ir::IRModule before = mod_;
  v1::TraceProto trace_before = trace_;
  absl::StatusOr<BlockRV> outer = Blockize(loop);
  if (!outer.ok()) return outer.status();
  if (absl::Status s = Tensorize(*outer, intrin); !s.ok()) {
    mod_ = before;  // a failed primitive leaves the schedule as it was
    trace_ = trace_before;
    blocks_.pop_back();
    return s;
  }
  return outer;
}

}  // namespace kiln::tir
