#include "compiler/ir/relax_functor.h"

namespace kiln::ir::relax {

// Visitors and mutators tolerate null children (malformed IR built through the API): they skip
// them, and leave reporting to the checkers.
void ExprVisitor::VisitBinding(const Binding& b) {
  if (!b) return;
  VisitExpr(b->value);
  if (const auto* mc = b.as<MatchCastNode>()) VisitStructInfo(mc->struct_info);
  if (b->var) VisitVarDef(b->var);
}

void ExprVisitor::VisitBindingBlock(const BindingBlock& block) {
  if (!block) return;
  for (const Binding& b : block->bindings) VisitBinding(b);
}

void ExprVisitor::VisitStructInfo(const StructInfo& sinfo) {
  if (!sinfo) return;
  if (const auto* p = sinfo.as<PrimStructInfoNode>()) {
    if (p->value) VisitPrimExpr(p->value);
  } else if (const auto* s = sinfo.as<ShapeStructInfoNode>()) {
    if (s->values) {
      for (const PrimExpr& v : *s->values) VisitPrimExpr(v);
    }
  } else if (const auto* t = sinfo.as<TensorStructInfoNode>()) {
    if (t->shape) VisitExpr(t->shape);
  } else if (const auto* t = sinfo.as<TupleStructInfoNode>()) {
    for (const StructInfo& f : t->fields) VisitStructInfo(f);
  } else if (const auto* f = sinfo.as<FuncStructInfoNode>()) {
    if (f->params) {
      for (const StructInfo& p : *f->params) VisitStructInfo(p);
    }
    VisitStructInfo(f->ret);
  }
}

void ExprVisitor::DefaultVisitExpr(const Expr& e) {
  if (const auto* n = e.as<TupleNode>()) {
    for (const Expr& f : n->fields) VisitExpr(f);
  } else if (const auto* n = e.as<SeqExprNode>()) {
    for (const BindingBlock& b : n->blocks) VisitBindingBlock(b);
    VisitExpr(n->body);
  } else if (const auto* n = e.as<PrimValueNode>()) {
    VisitPrimExpr(n->value);
  } else if (const auto* n = e.as<ShapeExprNode>()) {
    for (const PrimExpr& v : n->values) VisitPrimExpr(v);
  } else if (const auto* n = e.as<FunctionNode>()) {
    for (const Var& p : n->params) {
      if (!p) continue;
      VisitStructInfo(p->struct_info());
      VisitVarDef(p);
    }
    VisitStructInfo(n->ret_struct_info);
    VisitExpr(n->body);
  } else if (const auto* n = e.as<CallNode>()) {
    VisitExpr(n->op);
    for (const Expr& a : n->args) VisitExpr(a);
    for (const StructInfo& s : n->sinfo_args) VisitStructInfo(s);
  } else if (const auto* n = e.as<TupleGetItemNode>()) {
    VisitExpr(n->tuple);
  } else if (const auto* n = e.as<IfNode>()) {
    VisitExpr(n->cond);
    VisitExpr(n->true_branch);
    VisitExpr(n->false_branch);
  }
  // Constant, Var, DataflowVar, GlobalVar, StringImm, DataTypeImm, ExternFunc, Op: leaves.
}

bool ExprMutator::VisitExprs(const std::vector<Expr>& in, std::vector<Expr>* out) {
  bool changed = false;
  out->clear();
  for (const Expr& e : in) {
    out->push_back(VisitExpr(e));
    changed |= out->back() != e;
  }
  return changed;
}

Binding ExprMutator::VisitBinding(const Binding& b) {
  if (!b) return b;
  Expr value = VisitExpr(b->value);
  if (value == b->value) return b;
  if (const auto* mc = b.as<MatchCastNode>()) return MakeMatchCast(b->var, value, mc->struct_info);
  return MakeBinding(b->var, value);
}

BindingBlock ExprMutator::VisitBindingBlock(const BindingBlock& block) {
  if (!block) return block;
  std::vector<Binding> bindings;
  bool changed = false;
  for (const Binding& b : block->bindings) {
    bindings.push_back(VisitBinding(b));
    changed |= bindings.back() != b;
  }
  if (!changed) return block;
  return Make<BindingBlockNode>(block->is_dataflow(), std::move(bindings));
}

Expr ExprMutator::DefaultVisitExpr(const Expr& e) {
  if (const auto* n = e.as<TupleNode>()) {
    std::vector<Expr> fields;
    return VisitExprs(n->fields, &fields) ? MakeTuple(std::move(fields)) : e;
  }
  if (const auto* n = e.as<SeqExprNode>()) {
    std::vector<BindingBlock> blocks;
    bool changed = false;
    for (const BindingBlock& b : n->blocks) {
      blocks.push_back(VisitBindingBlock(b));
      changed |= blocks.back() != b;
    }
    Expr body = VisitExpr(n->body);
    if (!changed && body == n->body) return e;
    return MakeSeq(std::move(blocks), body);
  }
  if (const auto* n = e.as<PrimValueNode>()) {
    PrimExpr v = VisitPrimExpr(n->value);
    return v == n->value ? e : Expr(Make<PrimValueNode>(v));
  }
  if (const auto* n = e.as<ShapeExprNode>()) {
    std::vector<PrimExpr> values;
    bool changed = false;
    for (const PrimExpr& v : n->values) {
      values.push_back(VisitPrimExpr(v));
      changed |= values.back() != v;
    }
    return changed ? MakeShape(std::move(values)) : e;
  }
  if (const auto* n = e.as<FunctionNode>()) {
    Expr body = VisitExpr(n->body);
    if (body == n->body) return e;
    return MakeFunction(n->params, body, n->ret_struct_info, n->is_pure, n->attrs);
  }
  if (const auto* n = e.as<CallNode>()) {
    Expr op = VisitExpr(n->op);
    std::vector<Expr> args;
    bool changed = VisitExprs(n->args, &args) || op != n->op;
    return changed ? MakeCall(op, std::move(args), n->sinfo_args, n->attrs) : e;
  }
  if (const auto* n = e.as<TupleGetItemNode>()) {
    Expr t = VisitExpr(n->tuple);
    return t == n->tuple ? e : Expr(Make<TupleGetItemNode>(t, n->index));
  }
  if (const auto* n = e.as<IfNode>()) {
    Expr c = VisitExpr(n->cond);
    Expr t = VisitExpr(n->true_branch);
    Expr f = VisitExpr(n->false_branch);
    if (c == n->cond && t == n->true_branch && f == n->false_branch) return e;
    return Make<IfNode>(c, t, f);
  }
  return e;
}

}  // namespace kiln::ir::relax
