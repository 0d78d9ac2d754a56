// rfactor: a reduction over a loop turned into partial results indexed by that loop, then a
// (shorter) reduction of the partials. What makes a reduction parallel or vectorizable over its
// reduction loop.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/tir/schedule/ir_util.h"
#include "compiler/tir/schedule/schedule.h"

namespace kiln::tir {

using namespace ir;  // NOLINT: TIR rewriting
namespace su = schedule_util;

namespace {

// A reduction update `buf[idx] = combine(buf[idx], rhs)` with combine one of + * max min.
struct Update {
  const BufferStoreNode* store = nullptr;
  NodeKind combine = NodeKind::kAdd;
  PrimExpr rhs;
};

std::optional<Update> MatchUpdate(const BlockNode& block) {
  const auto* store = block.body.as<BufferStoreNode>();
  const auto* init = block.init ? block.init.as<BufferStoreNode>() : nullptr;
  if (store == nullptr || init == nullptr || init->buffer.get() != store->buffer.get()) {
    return std::nullopt;
  }
  const auto* op = store->value.as<BinaryNode>();
  NodeKind k = store->value->kind();
  if (op == nullptr ||
      (k != NodeKind::kAdd && k != NodeKind::kMul && k != NodeKind::kMax && k != NodeKind::kMin)) {
    return std::nullopt;
  }
  auto is_self = [&](const PrimExpr& e) {
    const auto* l = e.as<BufferLoadNode>();
    if (l == nullptr || l->buffer.get() != store->buffer.get()) return false;
    for (size_t d = 0; d < l->indices.size(); ++d) {
      if (!ExprDeepEqual(l->indices[d], store->indices[d])) return false;
    }
    return true;
  };
  if (is_self(op->a)) return Update{store, k, op->b};
  if (is_self(op->b)) return Update{store, k, op->a};
  return std::nullopt;
}

std::vector<PrimExpr> Inserted(std::vector<PrimExpr> indices, size_t axis, PrimExpr index) {
  indices.insert(indices.begin() + static_cast<std::ptrdiff_t>(axis), std::move(index));
  return indices;
}

std::function<PrimExpr(const Var&)> Lookup(const std::map<const VarNode*, PrimExpr>& map) {
  return [&map](const Var& v) -> PrimExpr {
    auto it = map.find(v.get());
    return it == map.end() ? PrimExpr() : it->second;
  };
}

}  // namespace

absl::StatusOr<BlockRV> Schedule::RFactor(LoopRV loop, int factor_axis) {
  absl::StatusOr<Var> loop_var = LoopVar(loop);
  if (!loop_var.ok()) return loop_var.status();
  PrimFunc f = su::WithRootBlock(func());
  std::vector<Stmt> loop_path = su::PathToLoop(f->body, loop_var->get());
  const auto* rf_loop = loop_path.back().as<ForNode>();
  std::string what = absl::StrCat("rfactor at loop '", (*loop_var)->name, "'");
  std::vector<const BlockRealizeNode*> under = su::ChildRealizes(Stmt(rf_loop));
  if (under.size() != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the loop must hold exactly one block, not ", under.size()));
  }
  su::Place place = su::Locate(f, under[0]->block->name);
  const BlockNode& b = *place.block;
  absl::StrAppend(&what, " (block '", b.name, "')");
  std::optional<Update> update = MatchUpdate(b);
  if (!update) {
    return absl::FailedPreconditionError(
        absl::StrCat(what,
                     ": the block must be a reduction with an init and a body buf[...] = "
                     "buf[...] op value, op one of + * max min"));
  }
  if (su::ChildRealizes(Stmt(place.top)).size() != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the block shares its loop nest with other blocks"));
  }
  if (!su::IsConst(place.realize->predicate, 1)) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": the block has a predicate"));
  }
  // Loops driving spatial iter vars, and loops driving reduction ones: they must not mix.
  std::set<const VarNode*> spatial_loops, reduce_loops;
  for (size_t k = 0; k < b.iter_vars.size(); ++k) {
    std::set<const VarNode*>* into =
        b.iter_vars[k]->iter_kind == IterKind::kSpatial ? &spatial_loops : &reduce_loops;
    PostOrderVisit(place.realize->iter_values[k], [&](const PrimExpr& e) {
      if (const auto* v = e.as<VarNode>()) into->insert(v);
    });
  }
  std::vector<const ForNode*> loops = su::LoopsInScope(place.path);
  for (const ForNode* l : loops) {
    if (spatial_loops.count(l->loop_var.get()) && reduce_loops.count(l->loop_var.get())) {
      return absl::FailedPreconditionError(absl::StrCat(
          what, ": loop '", l->loop_var->name, "' drives both spatial and reduction iter vars"));
    }
  }
  if (!reduce_loops.count(rf_loop->loop_var.get())) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the loop drives no reduction iter var"));
  }
  if (rf_loop->for_kind != ForKind::kSerial || !AsConstInt(rf_loop->extent)) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the loop must be serial with a constant extent"));
  }
  const Buffer& buffer = update->store->buffer;
  int rank = static_cast<int>(buffer->shape.size());
  if (factor_axis < -(rank + 1) || factor_axis > rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": factor_axis ", factor_axis, " is out of range for rank ", rank + 1));
  }
  size_t axis = static_cast<size_t>(factor_axis < 0 ? factor_axis + rank + 1 : factor_axis);
  for (const PrimExpr& i : update->store->indices) {
    bool reduce_index = false;
    PostOrderVisit(i, [&](const PrimExpr& e) {
      for (const IterVar& iv : b.iter_vars) {
        if (iv->iter_kind != IterKind::kSpatial && e.get() == iv->var.get()) reduce_index = true;
      }
    });
    if (reduce_index) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, ": the block stores at an index that uses a reduction iter var"));
    }
  }

  std::set<std::string> names = su::UsedNames(f);
  std::set<std::string> block_names = su::BlockNames(f->body);
  std::vector<PrimExpr> rf_shape = buffer->shape;
  rf_shape.insert(rf_shape.begin() + static_cast<std::ptrdiff_t>(axis), rf_loop->extent);
  Buffer rf = MakeBuffer(su::FreshName(buffer->name + "_rf", &names), buffer->dtype, rf_shape);

  // The rfactor block, in the original nest: the spatial iter vars, one iter var per reduction
  // loop (spatial for the factored loop), the reduction iter vars substituted away.
  auto* rf_block = new BlockNode();
  Block rf_owner(rf_block);
  rf_block->name = su::FreshName(b.name + "_rf", &block_names);
  std::vector<PrimExpr> rf_values;
  std::map<const VarNode*, PrimExpr> rf_map;  // old iter vars -> expressions of new ones
  std::map<const VarNode*, PrimExpr> loop_to_iter;
  PrimExpr rf_index;
  for (size_t k = 0; k < b.iter_vars.size(); ++k) {
    const IterVar& iv = b.iter_vars[k];
    if (iv->iter_kind != IterKind::kSpatial) continue;
    Var v = MakeVar(iv->var->name, iv->var->dtype);
    rf_map[iv->var.get()] = v;
    rf_block->iter_vars.push_back(Make<IterVarNode>(v, iv->dom, IterKind::kSpatial));
    rf_values.push_back(place.realize->iter_values[k]);
  }
  for (const ForNode* l : loops) {
    if (!reduce_loops.count(l->loop_var.get())) continue;
    bool factored = l == rf_loop;
    Var v = MakeVar(su::FreshName("v" + l->loop_var->name, &names), l->loop_var->dtype);
    loop_to_iter[l->loop_var.get()] = v;
    if (factored) rf_index = v;
    rf_block->iter_vars.push_back(Make<IterVarNode>(
        v, MakeRange(l->min, l->extent), factored ? IterKind::kSpatial : IterKind::kReduce));
    rf_values.push_back(l->loop_var);
  }
  for (size_t k = 0; k < b.iter_vars.size(); ++k) {
    const IterVar& iv = b.iter_vars[k];
    if (iv->iter_kind == IterKind::kSpatial) continue;
    rf_map[iv->var.get()] = Substitute(place.realize->iter_values[k], Lookup(loop_to_iter));
  }
  std::vector<PrimExpr> out_indices;
  for (const PrimExpr& i : update->store->indices) {
    out_indices.push_back(Substitute(i, Lookup(rf_map)));
  }
  std::vector<PrimExpr> rf_indices = Inserted(out_indices, axis, rf_index);
  PrimExpr rf_load = Make<BufferLoadNode>(rf->dtype, rf, rf_indices);
  PrimExpr rhs = Substitute(update->rhs, Lookup(rf_map));
  rf_block->body = Make<BufferStoreNode>(rf, Binary(update->combine, rf_load, rhs), rf_indices);
  rf_block->init = Make<BufferStoreNode>(
      rf, Substitute(b.init.as<BufferStoreNode>()->value, Lookup(rf_map)), rf_indices);
  for (const BufferRegion& r : su::DeriveReadRegions(*rf_block)) {
    if (r->buffer.get() != rf.get()) rf_block->reads.push_back(r);
  }
  rf_block->writes = {su::PointRegion(rf, rf_indices)};
  Stmt rf_nest = su::Rebuild(
      Stmt(place.top), {{place.realize, Make<BlockRealizeNode>(rf_values, Bool(true), rf_owner)}});

  // The write-back block keeps the name: over the spatial loops and the factored one, it
  // reduces the partials into the buffer.
  auto* wb = new BlockNode();
  Block wb_owner(wb);
  wb->name = b.name;
  std::map<const VarNode*, PrimExpr> wb_loops;  // old loop -> cloned loop var
  std::vector<std::pair<const ForNode*, Var>> wb_nest;
  for (const ForNode* l : loops) {
    if (!spatial_loops.count(l->loop_var.get()) && l != rf_loop) continue;
    Var v = MakeVar(su::FreshName(l->loop_var->name, &names), l->loop_var->dtype);
    wb_loops[l->loop_var.get()] = v;
    wb_nest.emplace_back(l, v);
  }
  std::vector<PrimExpr> wb_values;
  std::map<const VarNode*, PrimExpr> wb_map;
  for (size_t k = 0; k < b.iter_vars.size(); ++k) {
    const IterVar& iv = b.iter_vars[k];
    if (iv->iter_kind != IterKind::kSpatial) continue;
    Var v = MakeVar(iv->var->name, iv->var->dtype);
    wb_map[iv->var.get()] = v;
    wb->iter_vars.push_back(Make<IterVarNode>(v, iv->dom, IterKind::kSpatial));
    wb_values.push_back(Substitute(place.realize->iter_values[k], Lookup(wb_loops)));
  }
  Var vrf = MakeVar(su::FreshName("v" + rf_loop->loop_var->name, &names), rf_loop->loop_var->dtype);
  wb->iter_vars.push_back(
      Make<IterVarNode>(vrf, MakeRange(rf_loop->min, rf_loop->extent), IterKind::kReduce));
  wb_values.push_back(wb_loops.at(rf_loop->loop_var.get()));
  std::vector<PrimExpr> wb_indices;
  for (const PrimExpr& i : update->store->indices) {
    wb_indices.push_back(Substitute(i, Lookup(wb_map)));
  }
  std::vector<PrimExpr> partial = Inserted(wb_indices, axis, vrf);
  wb->body = Make<BufferStoreNode>(
      buffer,
      Binary(update->combine, Make<BufferLoadNode>(buffer->dtype, buffer, wb_indices),
             Make<BufferLoadNode>(rf->dtype, rf, partial)),
      wb_indices);
  wb->init = Substitute(b.init, Lookup(wb_map));
  wb->reads = {su::PointRegion(rf, partial)};
  wb->writes = {su::PointRegion(buffer, wb_indices)};
  Stmt wb_stmt = Make<BlockRealizeNode>(wb_values, Bool(true), wb_owner);
  for (size_t k = wb_nest.size(); k-- > 0;) {
    ForNode* copy = su::CopyFor(*wb_nest[k].first);
    Stmt owner(copy);
    copy->loop_var = wb_nest[k].second;
    copy->min = Substitute(copy->min, Lookup(wb_loops));
    copy->extent = Substitute(copy->extent, Lookup(wb_loops));
    copy->body = wb_stmt;
    wb_stmt = owner;
  }
  Stmt body = su::Rebuild(place.scope_body, {{place.top, Seq({rf_nest, wb_stmt})}});
  SetFunc(su::WithScopeBody(f, place, body, rf));
  v1::TraceInstruction* inst = Record("RFactor");
  inst->add_inputs()->set_rv(su::RvName(loop));
  inst->add_attrs()->set_int_(factor_axis);
  BlockRV out = NewBlock(rf_block->name);
  inst->add_outputs(su::RvName(out));
  return out;
}

}  // namespace kiln::tir
