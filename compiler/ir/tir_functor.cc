#include "compiler/ir/tir_functor.h"

#include <unordered_set>

namespace kiln::ir {

// ---- Visitor ------------------------------------------------------------------------------

void StmtExprVisitor::VisitBuffer(const Buffer& b) {
  for (const PrimExpr& e : b->shape) VisitExpr(e);
  for (const PrimExpr& e : b->strides) VisitExpr(e);
}

void StmtExprVisitor::VisitRegion(const BufferRegion& r) {
  VisitBuffer(r->buffer);
  for (const Range& range : r->region) {
    VisitExpr(range->min);
    VisitExpr(range->extent);
  }
}

void StmtExprVisitor::DefaultVisitExpr(const PrimExpr& e) {
  if (const auto* n = e.as<CastNode>()) {
    VisitExpr(n->value);
  } else if (const auto* n = e.as<BinaryNode>()) {
    VisitExpr(n->a);
    VisitExpr(n->b);
  } else if (const auto* n = e.as<NotNode>()) {
    VisitExpr(n->a);
  } else if (const auto* n = e.as<SelectNode>()) {
    VisitExpr(n->condition);
    VisitExpr(n->true_value);
    VisitExpr(n->false_value);
  } else if (const auto* n = e.as<BufferLoadNode>()) {
    VisitBuffer(n->buffer);
    for (const PrimExpr& i : n->indices) VisitExpr(i);
  } else if (const auto* n = e.as<RampNode>()) {
    VisitExpr(n->base);
    VisitExpr(n->stride);
  } else if (const auto* n = e.as<BroadcastNode>()) {
    VisitExpr(n->value);
  } else if (const auto* n = e.as<LetNode>()) {
    VisitExpr(n->var);
    VisitExpr(n->value);
    VisitExpr(n->body);
  } else if (const auto* n = e.as<CallNode>()) {
    for (const PrimExpr& a : n->args) VisitExpr(a);
  }
  // IntImm, FloatImm, StringImm, Var: leaves.
}

void StmtExprVisitor::DefaultVisitStmt(const Stmt& s) {
  if (const auto* n = s.as<LetStmtNode>()) {
    VisitExpr(n->var);
    VisitExpr(n->value);
    VisitStmt(n->body);
  } else if (const auto* n = s.as<AttrStmtNode>()) {
    VisitExpr(n->value);
    VisitStmt(n->body);
  } else if (const auto* n = s.as<AssertStmtNode>()) {
    VisitExpr(n->condition);
    VisitStmt(n->body);
  } else if (const auto* n = s.as<BufferStoreNode>()) {
    VisitBuffer(n->buffer);
    VisitExpr(n->value);
    for (const PrimExpr& i : n->indices) VisitExpr(i);
  } else if (const auto* n = s.as<AllocateNode>()) {
    VisitBuffer(n->buffer);
    VisitStmt(n->body);
  } else if (const auto* n = s.as<ForNode>()) {
    VisitExpr(n->loop_var);
    VisitExpr(n->min);
    VisitExpr(n->extent);
    VisitStmt(n->body);
  } else if (const auto* n = s.as<WhileNode>()) {
    VisitExpr(n->condition);
    VisitStmt(n->body);
  } else if (const auto* n = s.as<IfThenElseNode>()) {
    VisitExpr(n->condition);
    VisitStmt(n->then_case);
    if (n->else_case) VisitStmt(n->else_case);
  } else if (const auto* n = s.as<SeqStmtNode>()) {
    for (const Stmt& c : n->seq) VisitStmt(c);
  } else if (const auto* n = s.as<EvaluateNode>()) {
    VisitExpr(n->value);
  } else if (const auto* n = s.as<BlockNode>()) {
    for (const IterVar& iv : n->iter_vars) {
      VisitExpr(iv->var);
      VisitExpr(iv->dom->min);
      VisitExpr(iv->dom->extent);
    }
    for (const BufferRegion& r : n->reads) VisitRegion(r);
    for (const BufferRegion& r : n->writes) VisitRegion(r);
    for (const Buffer& b : n->alloc_buffers) VisitBuffer(b);
    for (const MatchBufferRegion& m : n->match_buffers) {
      VisitBuffer(m->buffer);
      VisitRegion(m->source);
    }
    if (n->init) VisitStmt(n->init);
    VisitStmt(n->body);
  } else if (const auto* n = s.as<BlockRealizeNode>()) {
    for (const PrimExpr& v : n->iter_values) VisitExpr(v);
    VisitExpr(n->predicate);
    VisitStmt(n->block);
  }
}

// ---- Mutator ------------------------------------------------------------------------------

bool StmtExprMutator::VisitExprs(const std::vector<PrimExpr>& in, std::vector<PrimExpr>* out) {
  bool changed = false;
  out->clear();
  out->reserve(in.size());
  for (const PrimExpr& e : in) {
    out->push_back(VisitExpr(e));
    changed |= out->back() != e;
  }
  return changed;
}

Range StmtExprMutator::VisitRange(const Range& r) {
  PrimExpr min = VisitExpr(r->min);
  PrimExpr extent = VisitExpr(r->extent);
  if (min == r->min && extent == r->extent) return r;
  return MakeRange(min, extent);
}

BufferRegion StmtExprMutator::VisitRegion(const BufferRegion& r) {
  Buffer buffer = VisitBuffer(r->buffer);
  bool changed = buffer != r->buffer;
  std::vector<Range> region;
  for (const Range& range : r->region) {
    region.push_back(VisitRange(range));
    changed |= region.back() != range;
  }
  if (!changed) return r;
  return Make<BufferRegionNode>(buffer, std::move(region));
}

PrimExpr StmtExprMutator::DefaultVisitExpr(const PrimExpr& e) {
  if (const auto* n = e.as<CastNode>()) {
    PrimExpr v = VisitExpr(n->value);
    return v == n->value ? e : Cast(n->dtype, v);
  }
  if (const auto* n = e.as<BinaryNode>()) {
    PrimExpr a = VisitExpr(n->a);
    PrimExpr b = VisitExpr(n->b);
    if (a == n->a && b == n->b) return e;
    return Make<BinaryNode>(n->kind(), n->dtype, a, b);
  }
  if (const auto* n = e.as<NotNode>()) {
    PrimExpr a = VisitExpr(n->a);
    return a == n->a ? e : Not(a);
  }
  if (const auto* n = e.as<SelectNode>()) {
    PrimExpr c = VisitExpr(n->condition);
    PrimExpr t = VisitExpr(n->true_value);
    PrimExpr f = VisitExpr(n->false_value);
    if (c == n->condition && t == n->true_value && f == n->false_value) return e;
    return Select(c, t, f);
  }
  if (const auto* n = e.as<BufferLoadNode>()) {
    Buffer buffer = VisitBuffer(n->buffer);
    std::vector<PrimExpr> indices;
    bool changed = VisitExprs(n->indices, &indices) || buffer != n->buffer;
    return changed ? Make<BufferLoadNode>(n->dtype, buffer, std::move(indices)) : e;
  }
  if (const auto* n = e.as<RampNode>()) {
    PrimExpr base = VisitExpr(n->base);
    PrimExpr stride = VisitExpr(n->stride);
    if (base == n->base && stride == n->stride) return e;
    return Make<RampNode>(base, stride, n->lanes);
  }
  if (const auto* n = e.as<BroadcastNode>()) {
    PrimExpr v = VisitExpr(n->value);
    return v == n->value ? e : Make<BroadcastNode>(v, n->lanes);
  }
  if (const auto* n = e.as<LetNode>()) {
    PrimExpr value = VisitExpr(n->value);
    PrimExpr body = VisitExpr(n->body);
    if (value == n->value && body == n->body) return e;
    return Make<LetNode>(n->var, value, body);
  }
  if (const auto* n = e.as<CallNode>()) {
    std::vector<PrimExpr> args;
    return VisitExprs(n->args, &args) ? Call(n->dtype, n->op, std::move(args)) : e;
  }
  return e;  // leaves
}

Stmt StmtExprMutator::DefaultVisitStmt(const Stmt& s) {
  if (const auto* n = s.as<LetStmtNode>()) {
    PrimExpr value = VisitExpr(n->value);
    Stmt body = VisitStmt(n->body);
    if (value == n->value && body == n->body) return s;
    return Make<LetStmtNode>(n->var, value, body);
  }
  if (const auto* n = s.as<AttrStmtNode>()) {
    PrimExpr value = VisitExpr(n->value);
    Stmt body = VisitStmt(n->body);
    if (value == n->value && body == n->body) return s;
    return Make<AttrStmtNode>(n->node, n->key, value, body);
  }
  if (const auto* n = s.as<AssertStmtNode>()) {
    PrimExpr c = VisitExpr(n->condition);
    Stmt body = VisitStmt(n->body);
    if (c == n->condition && body == n->body) return s;
    return Make<AssertStmtNode>(c, n->message, body);
  }
  if (const auto* n = s.as<BufferStoreNode>()) {
    Buffer buffer = VisitBuffer(n->buffer);
    PrimExpr value = VisitExpr(n->value);
    std::vector<PrimExpr> indices;
    bool changed = VisitExprs(n->indices, &indices) || buffer != n->buffer || value != n->value;
    return changed ? Make<BufferStoreNode>(buffer, value, std::move(indices)) : s;
  }
  if (const auto* n = s.as<AllocateNode>()) {
    Buffer buffer = VisitBuffer(n->buffer);
    Stmt body = VisitStmt(n->body);
    if (buffer == n->buffer && body == n->body) return s;
    return Make<AllocateNode>(buffer, body);
  }
  if (const auto* n = s.as<ForNode>()) {
    PrimExpr min = VisitExpr(n->min);
    PrimExpr extent = VisitExpr(n->extent);
    Stmt body = VisitStmt(n->body);
    if (min == n->min && extent == n->extent && body == n->body) return s;
    auto* copy = new ForNode();
    copy->loop_var = n->loop_var;
    copy->min = min;
    copy->extent = extent;
    copy->for_kind = n->for_kind;
    copy->thread_tag = n->thread_tag;
    copy->body = body;
    copy->annotations = n->annotations;
    return Stmt(copy);
  }
  if (const auto* n = s.as<WhileNode>()) {
    PrimExpr c = VisitExpr(n->condition);
    Stmt body = VisitStmt(n->body);
    if (c == n->condition && body == n->body) return s;
    return Make<WhileNode>(c, body);
  }
  if (const auto* n = s.as<IfThenElseNode>()) {
    PrimExpr c = VisitExpr(n->condition);
    Stmt then_case = VisitStmt(n->then_case);
    Stmt else_case = n->else_case ? VisitStmt(n->else_case) : Stmt();
    if (c == n->condition && then_case == n->then_case && else_case == n->else_case) return s;
    return Make<IfThenElseNode>(c, then_case, else_case);
  }
  if (const auto* n = s.as<SeqStmtNode>()) {
    std::vector<Stmt> seq;
    bool changed = false;
    for (const Stmt& c : n->seq) {
      seq.push_back(VisitStmt(c));
      changed |= seq.back() != c;
    }
    return changed ? Stmt(Make<SeqStmtNode>(std::move(seq))) : s;
  }
  if (const auto* n = s.as<EvaluateNode>()) {
    PrimExpr v = VisitExpr(n->value);
    return v == n->value ? s : Stmt(Make<EvaluateNode>(v));
  }
  if (const auto* n = s.as<BlockNode>()) {
    bool changed = false;
    std::vector<IterVar> iter_vars;
    for (const IterVar& iv : n->iter_vars) {
      Range dom = VisitRange(iv->dom);
      iter_vars.push_back(
          dom == iv->dom ? iv : Make<IterVarNode>(iv->var, dom, iv->iter_kind, iv->thread_tag));
      changed |= iter_vars.back() != iv;
    }
    auto regions = [&](const std::vector<BufferRegion>& in) {
      std::vector<BufferRegion> out;
      for (const BufferRegion& r : in) {
        out.push_back(VisitRegion(r));
        changed |= out.back() != r;
      }
      return out;
    };
    std::vector<BufferRegion> reads = regions(n->reads);
    std::vector<BufferRegion> writes = regions(n->writes);
    std::vector<Buffer> alloc_buffers;
    for (const Buffer& b : n->alloc_buffers) {
      alloc_buffers.push_back(VisitBuffer(b));
      changed |= alloc_buffers.back() != b;
    }
    std::vector<MatchBufferRegion> match_buffers;
    for (const MatchBufferRegion& m : n->match_buffers) {
      BufferRegion source = VisitRegion(m->source);
      Buffer buffer = VisitBuffer(m->buffer);
      match_buffers.push_back(source == m->source && buffer == m->buffer
                                  ? m
                                  : Make<MatchBufferRegionNode>(buffer, source));
      changed |= match_buffers.back() != m;
    }
    Stmt init = n->init ? VisitStmt(n->init) : Stmt();
    Stmt body = VisitStmt(n->body);
    changed |= init != n->init || body != n->body;
    if (!changed) return s;
    auto* copy = new BlockNode();
    copy->name = n->name;
    copy->iter_vars = std::move(iter_vars);
    copy->reads = std::move(reads);
    copy->writes = std::move(writes);
    copy->alloc_buffers = std::move(alloc_buffers);
    copy->match_buffers = std::move(match_buffers);
    copy->init = init;
    copy->body = body;
    copy->annotations = n->annotations;
    return Stmt(copy);
  }
  if (const auto* n = s.as<BlockRealizeNode>()) {
    std::vector<PrimExpr> values;
    bool changed = VisitExprs(n->iter_values, &values);
    PrimExpr predicate = VisitExpr(n->predicate);
    Stmt block = VisitStmt(n->block);
    changed |= predicate != n->predicate || block != n->block;
    if (!changed) return s;
    return Make<BlockRealizeNode>(std::move(values), predicate, block.as_ref<BlockNode>());
  }
  return s;
}

namespace {

class Substituter : public StmtExprMutator {
 public:
  explicit Substituter(const std::function<PrimExpr(const Var&)>& lookup) : lookup_(lookup) {}
  PrimExpr VisitExpr(const PrimExpr& e) override {
    if (const auto* v = e.as<VarNode>()) {
      PrimExpr replacement = lookup_(Var(v));
      if (replacement) return replacement;
      return e;
    }
    return DefaultVisitExpr(e);
  }

 private:
  const std::function<PrimExpr(const Var&)>& lookup_;
};

class PostOrder : public StmtExprVisitor {
 public:
  // `once`: each distinct node once, however many paths lead to it.
  PostOrder(const std::function<void(const PrimExpr&)>& f, bool once) : f_(f), once_(once) {}
  void VisitExpr(const PrimExpr& e) override {
    if (once_ && !visited_.insert(e.get()).second) return;
    DefaultVisitExpr(e);
    f_(e);
  }

 private:
  const std::function<void(const PrimExpr&)>& f_;
  const bool once_;
  std::unordered_set<const void*> visited_;
};

}  // namespace

PrimExpr Substitute(const PrimExpr& e, const std::function<PrimExpr(const Var&)>& lookup) {
  return Substituter(lookup).VisitExpr(e);
}
Stmt Substitute(const Stmt& s, const std::function<PrimExpr(const Var&)>& lookup) {
  return Substituter(lookup).VisitStmt(s);
}
void PostOrderVisit(const PrimExpr& e, const std::function<void(const PrimExpr&)>& f) {
  PostOrder(f, /*once=*/false).VisitExpr(e);
}

void PostOrderVisitOnce(const PrimExpr& e, const std::function<void(const PrimExpr&)>& f) {
  PostOrder(f, /*once=*/true).VisitExpr(e);
}

void PostOrderVisit(const Stmt& s, const std::function<void(const PrimExpr&)>& f) {
  PostOrder(f, /*once=*/false).VisitStmt(s);
}

std::vector<Var> UnboundVars(const PrimFuncNode& f) {
  struct Collector : StmtExprVisitor {
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<LetNode>()) bound.insert(l->var.get());
      if (const auto* v = e.as<VarNode>()) {
        if (seen.insert(v).second) order.push_back(e.as_ref<VarNode>());
      }
      DefaultVisitExpr(e);
    }
    void VisitStmt(const Stmt& s) override {
      if (const auto* l = s.as<LetStmtNode>()) bound.insert(l->var.get());
      if (const auto* f = s.as<ForNode>()) bound.insert(f->loop_var.get());
      if (const auto* b = s.as<BlockNode>()) {
        for (const IterVar& iv : b->iter_vars) bound.insert(iv->var.get());
        for (const Buffer& buf : b->alloc_buffers) bound.insert(buf->data.get());
        for (const MatchBufferRegion& m : b->match_buffers) bound.insert(m->buffer->data.get());
      }
      if (const auto* a = s.as<AllocateNode>()) bound.insert(a->buffer->data.get());
      DefaultVisitStmt(s);
    }
    std::unordered_set<const Object*> seen, bound;
    std::vector<Var> order;
  } c;
  for (const auto& [param, buffer] : f.buffer_map) c.VisitBuffer(buffer);
  if (f.body) c.VisitStmt(f.body);
  std::vector<Var> out;
  for (const Var& v : c.order) {
    if (c.bound.count(v.get()) == 0) out.push_back(v);
  }
  return out;
}

}  // namespace kiln::ir
