// The TVMScript printer's TIR: expressions, buffers, regions, statements and PrimFuncs
// (printer_impl.h).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/relax_functor.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/script/metadata.h"
#include "compiler/script/printer_impl.h"
#include "compiler/script/script_common.h"

namespace kiln::script::printer {

namespace {
// A zero-dimensional buffer is indexed by the empty tuple, as in Python: `B[()]`.
std::string IndexList(const std::string& indices) { return indices.empty() ? "()" : indices; }
}  // namespace

std::string Printer::Expr(const PrimExpr& e, DataType hint, int min_prec) {
  int prec = kPrecAtom;
  std::string text = ExprInner(e, hint, &prec);
  return prec < min_prec ? absl::StrCat("(", text, ")") : text;
}

std::string Printer::Exprs(const std::vector<PrimExpr>& es, DataType hint) {
  std::vector<std::string> parts;
  for (const PrimExpr& e : es) parts.push_back(Expr(e, hint));
  return absl::StrJoin(parts, ", ");
}

std::string Printer::ExprInner(const PrimExpr& e, DataType hint, int* prec) {
  if (!e) return "None";
  if (IsLiteral(e)) return Lit(e, hint);
  if (const auto* v = e.as<ir::VarNode>()) return VarName(v);
  if (const auto* s = e.as<ir::StringImmNode>()) return Quote(s->value);
  if (const auto* b = e.as<BinaryNode>()) {
    const char* op = InfixOp(b->kind(), b->dtype);
    if (op == nullptr) {
      return absl::StrCat(BinaryCallName(b->kind()), "(", Expr(b->a), ", ", Expr(b->b), ")");
    }
    int p = Precedence(b->kind());
    *prec = p;
    // A bare literal takes its dtype from its sibling (or the context if both are literals).
    DataType ha = hint, hb = hint;
    bool a_lit = IsLiteral(b->a), b_lit = IsLiteral(b->b);
    if (a_lit && b_lit) {
      bool both_bare = PrintsBare(b->a, hint) && PrintsBare(b->b, hint);
      ha = hb = both_bare ? hint : DataType::Void();
      if (!both_bare) return absl::StrCat(Typed(b->a), " ", op, " ", Typed(b->b));
    } else if (a_lit) {
      ha = b->b->dtype;
    } else if (b_lit) {
      hb = b->a->dtype;
    }
    int right_prec = p + 1;
    int left_prec = p == kPrecCmp ? p + 1 : p;
    return absl::StrCat(Expr(b->a, ha, left_prec), " ", op, " ", Expr(b->b, hb, right_prec));
  }
  if (const auto* n = e.as<NotNode>()) {
    *prec = kPrecNot;
    return absl::StrCat("not ", Expr(n->a, DataType(), kPrecNot));
  }
  if (const auto* c = e.as<CastNode>()) {
    return absl::StrCat("T.Cast(", Quote(c->dtype.ToString()), ", ", Expr(c->value), ")");
  }
  if (const auto* s = e.as<SelectNode>()) {
    return absl::StrCat("T.Select(", Expr(s->condition), ", ", Expr(s->true_value), ", ",
                        Expr(s->false_value), ")");
  }
  if (const auto* l = e.as<BufferLoadNode>()) {
    return absl::StrCat(BufferName(l->buffer), "[", IndexList(Exprs(l->indices)), "]");
  }
  if (const auto* r = e.as<RampNode>()) {
    return absl::StrCat("T.Ramp(", Expr(r->base), ", ", Expr(r->stride), ", ", r->lanes, ")");
  }
  if (const auto* b = e.as<BroadcastNode>()) {
    return absl::StrCat("T.Broadcast(", Expr(b->value), ", ", b->lanes, ")");
  }
  if (const auto* l = e.as<LetNode>()) {
    return absl::StrCat("T.Let(", Expr(l->body), ", where={", VarName(l->var.get()), ": ",
                        Expr(l->value), "})");
  }
  if (const auto* c = e.as<ir::CallNode>()) {
    bool math =
        IsMathIntrinsic(c->op) && !c->args.empty() && c->args[0] && c->args[0]->dtype == c->dtype;
    if (math) return absl::StrCat("T.", c->op, "(", Exprs(c->args), ")");
    if (c->op == "if_then_else" && c->args.size() == 3)
      return absl::StrCat("T.if_then_else(", Exprs(c->args), ")");
    std::string args = Exprs(c->args);
    return absl::StrCat("T.call_extern(", Quote(c->dtype.ToString()), ", ", Quote(c->op),
                        args.empty() ? "" : ", ", args, ")");
  }
  return "None";
}

bool Printer::PrintsBare(const PrimExpr& lit, DataType hint) {
  if (const auto* i = lit.as<IntImmNode>()) return !i->dtype.is_bool() && i->dtype == IntHint(hint);
  const auto* f = lit.as<FloatImmNode>();
  return std::isfinite(f->value) && f->dtype == FloatHint(hint);
}

std::string Printer::Typed(const PrimExpr& lit) {
  // DataType(kHandle...) matches neither an int nor a float literal: always typed.
  return Lit(lit, DataType::Handle());
}

std::string Printer::BufferArgs(const BufferNode& b) {
  std::string shape = Exprs(b.shape);
  std::string out =
      absl::StrCat("(", shape, b.shape.size() == 1 ? ",)" : ")", ", ", Quote(b.dtype.ToString()));
  if (!b.strides.empty()) {
    absl::StrAppend(&out, ", strides=(", Exprs(b.strides), b.strides.size() == 1 ? ",)" : ")");
  }
  const auto* offset = b.elem_offset.as<IntImmNode>();
  bool default_offset =
      offset != nullptr && offset->value == 0 && offset->dtype == DataType::Int(64);
  if (!b.elem_offset) {
    absl::StrAppend(&out, ", elem_offset=None");
  } else if (!default_offset) {
    absl::StrAppend(&out, ", elem_offset=", Expr(b.elem_offset));
  }
  if (b.scope != "global") absl::StrAppend(&out, ", scope=", Quote(b.scope));
  if (b.data_alignment != 64) absl::StrAppend(&out, ", align=", b.data_alignment);
  return out;
}

std::string Printer::Region(const BufferRegion& r) {
  if (!r) return "None";
  std::vector<std::string> dims;
  for (const Range& range : r->region) dims.push_back(RangeText(range, /*point_ok=*/true));
  return absl::StrCat(BufferName(r->buffer), "[", IndexList(absl::StrJoin(dims, ", ")), "]");
}

// `min` for a unit range, else `min:min + extent` (folded when both are constants).
std::string Printer::RangeText(const Range& range, bool point_ok) {
  const auto* extent = range->extent.as<IntImmNode>();
  if (point_ok && extent != nullptr && extent->value == 1 && range->min &&
      extent->dtype == range->min->dtype) {
    return Expr(range->min);
  }
  return absl::StrCat(StartText(range), ":", StopText(range));
}

std::string Printer::StartText(const Range& range) {
  // A literal 0 start takes the stop's dtype.
  if (IsZero(range->min) && range->extent) return Expr(range->min, range->extent->dtype);
  return Expr(range->min);
}

std::string Printer::StopText(const Range& range) {
  if (IsZero(range->min)) return Expr(range->extent);
  const auto* a = range->min.as<IntImmNode>();
  const auto* b = range->extent.as<IntImmNode>();
  if (a != nullptr && b != nullptr && a->dtype == b->dtype) {
    return Lit(IntImm(a->dtype, a->value + b->value), DataType());
  }
  return Expr(Binary(NodeKind::kAdd, range->min, range->extent), DataType(), kPrecAdd);
}

bool Printer::IsZero(const PrimExpr& e) {
  const auto* i = e.as<IntImmNode>();
  return i != nullptr && i->value == 0 && !i->dtype.is_bool();
}

namespace {

bool ConstantShape(const BufferNode& b) {
  for (const PrimExpr& d : b.shape) {
    if (!d.as<IntImmNode>()) return false;
  }
  for (const PrimExpr& d : b.strides) {
    if (!d.as<IntImmNode>()) return false;
  }
  return true;
}

bool ContainsBlock(const Stmt& s) {
  struct Finder : StmtExprVisitor {
    void VisitStmt(const Stmt& x) override {
      found = found || x.as<BlockRealizeNode>() != nullptr;
      if (!found) DefaultVisitStmt(x);
    }
    bool found = false;
  } finder;
  if (s) finder.VisitStmt(s);
  return finder.found;
}

// The root block TVM leaves implicit: nothing but a name, buffers and a body holding blocks.
const BlockNode* ImplicitRoot(const Stmt& body) {
  const auto* r = body.as<BlockRealizeNode>();
  if (r == nullptr || !r->iter_values.empty() || !r->block) return nullptr;
  const auto* pred = r->predicate.as<IntImmNode>();
  const BlockNode* b = r->block.get();
  if (pred == nullptr || pred->value != 1 || b->name != "root" || !b->iter_vars.empty() ||
      !b->reads.empty() || !b->writes.empty() || !b->annotations.empty() ||
      !b->match_buffers.empty() || b->init) {
    return nullptr;
  }
  return b;
}

}  // namespace

// TVM's form: a buffer parameter with a symbolic shape is a handle matched in the body, after the
// declarations of the variables its shape uses; the root block is implicit.
void Printer::PrintPrimFunc(const std::string& name, const PrimFuncNode& f, int indent) {
  Attrs attrs = f.attrs;
  bool is_private = PopGlobalSymbol(&attrs, name);
  Line(indent, is_private ? "@T.prim_func(private=True)" : "@T.prim_func");
  std::vector<std::string> params, matches;
  std::unordered_set<const Object*> defined;
  for (const Var& p : f.params) {
    defined.insert(p.get());
    Buffer b = f.BufferOf(p);
    if (!b) {
      params.push_back(absl::StrCat(VarName(p.get()), ": T.", p->dtype.ToString()));
      continue;
    }
    defined.insert(b->data.get());
    if (ConstantShape(*b)) {
      params.push_back(absl::StrCat(BufferName(b), ": T.Buffer(", BufferArgs(*b), ")"));
      continue;
    }
    std::string buffer = BufferName(b);
    std::string handle = namer_.Name(p.get(), "var_" + buffer);
    params.push_back(absl::StrCat(handle, ": T.handle"));
    matches.push_back(
        absl::StrCat(buffer, " = T.match_buffer(", handle, ", ", BufferArgs(*b), ")"));
  }
  Line(indent, absl::StrCat("def ", name, "(", absl::StrJoin(params, ", "), "):"));
  int in = indent + 1;
  if (!attrs.empty()) Line(in, absl::StrCat("T.func_attr(", AttrDict(attrs), ")"));
  DeclareFreeVars(f, defined, in);
  for (const std::string& m : matches) Line(in, m);
  const BlockNode* root = ImplicitRoot(f.body);
  if (root == nullptr) {
    if (ContainsBlock(f.body)) Line(in, "# with T.block(\"root\"):");
    StmtList(f.body, in);
    return;
  }
  Line(in, "# with T.block(\"root\"):");
  for (const Buffer& buf : root->alloc_buffers) {
    Line(in, absl::StrCat(BufferName(buf), " = T.alloc_buffer(", BufferArgs(*buf), ")"));
  }
  StmtList(root->body, in);
}

// Declares (`n = T.int64()`) the variables used but not bound by the function itself.
void Printer::DeclareFreeVars(const PrimFuncNode& f, std::unordered_set<const Object*> defined,
                              int indent) {
  for (const ir::Var& var : UnboundVars(f)) {
    const ir::VarNode* v = var.get();
    if (defined.count(v) > 0) continue;
    Line(indent, absl::StrCat(VarName(v), " = T.", v->dtype.ToString(), "(",
                              v->is_size_var ? "is_size_var=True" : "", ")"));
  }
}

// Prints a statement; a SeqStmt prints as its elements, one per line.
void Printer::StmtList(const Stmt& s, int indent) {
  if (const auto* seq = s.as<SeqStmtNode>()) {
    for (size_t i = 0; i < seq->seq.size(); ++i)
      PrintStmt(seq->seq[i], indent, i + 1 == seq->seq.size());
    if (seq->seq.empty()) Line(indent, "T.evaluate(0)");
    return;
  }
  PrintStmt(s, indent, /*last=*/true);
}

void Printer::PrintStmt(const Stmt& s, int indent, bool last) {
  if (!s) {
    Line(indent, "pass");
    return;
  }
  if (const auto* l = s.as<LetStmtNode>()) {
    if (last) {
      Line(indent, absl::StrCat(VarName(l->var.get()), ": T.", l->var->dtype.ToString(), " = ",
                                Expr(l->value)));
      StmtList(l->body, indent);
    } else {
      Line(indent,
           absl::StrCat("with T.LetStmt(", Expr(l->value), ") as ", VarName(l->var.get()), ":"));
      StmtList(l->body, indent + 1);
    }
    return;
  }
  if (const auto* a = s.as<AssertStmtNode>()) {
    if (last) {
      Line(indent, absl::StrCat("assert ", Expr(a->condition), ", ", Quote(a->message)));
      StmtList(a->body, indent);
    } else {
      Line(indent,
           absl::StrCat("with T.Assert(", Expr(a->condition), ", ", Quote(a->message), "):"));
      StmtList(a->body, indent + 1);
    }
    return;
  }
  if (const auto* a = s.as<AttrStmtNode>()) {
    std::string node = "None";
    if (auto e = a->node.as_ref<PrimExprNode>()) node = Expr(e);
    if (auto b = a->node.as_ref<BufferNode>()) node = BufferName(b);
    Line(indent,
         absl::StrCat("with T.attr(", node, ", ", Quote(a->key), ", ", Expr(a->value), "):"));
    StmtList(a->body, indent + 1);
    return;
  }
  if (const auto* st = s.as<BufferStoreNode>()) {
    Line(indent, absl::StrCat(BufferName(st->buffer), "[", IndexList(Exprs(st->indices)),
                              "] = ", Expr(st->value)));
    return;
  }
  if (const auto* a = s.as<AllocateNode>()) {
    std::string args = a->buffer ? BufferArgs(*a->buffer) : "";
    Line(indent, absl::StrCat("with T.decl_buffer(", args, ") as ", BufferName(a->buffer), ":"));
    StmtList(a->body, indent + 1);
    return;
  }
  if (s.as<ForNode>()) {
    PrintFor(s, indent);
    return;
  }
  if (const auto* w = s.as<WhileNode>()) {
    Line(indent, absl::StrCat("while ", Expr(w->condition), ":"));
    StmtList(w->body, indent + 1);
    return;
  }
  if (const auto* i = s.as<IfThenElseNode>()) {
    Line(indent, absl::StrCat("if ", Expr(i->condition), ":"));
    StmtList(i->then_case, indent + 1);
    if (i->else_case) {
      Line(indent, "else:");
      StmtList(i->else_case, indent + 1);
    }
    return;
  }
  if (const auto* e = s.as<EvaluateNode>()) {
    Line(indent, absl::StrCat("T.evaluate(", Expr(e->value), ")"));
    return;
  }
  if (const auto* r = s.as<BlockRealizeNode>()) {
    PrintBlock(*r, indent);
    return;
  }
  if (s.as<SeqStmtNode>()) {
    // A sequence nested in a sequence (not produced by Seq()): keep it distinct.
    Line(indent, "with T.seq():");
    StmtList(s, indent + 1);
    return;
  }
  Line(indent, "pass");
}

bool Printer::IsGridLoop(const Stmt& s) {
  const auto* f = s.as<ForNode>();
  return f != nullptr && f->for_kind == ForKind::kSerial && f->annotations.empty() &&
         f->thread_tag.empty() && IsZero(f->min) && f->extent &&
         f->min->dtype == f->extent->dtype && f->loop_var && f->loop_var->dtype == f->extent->dtype;
}

void Printer::PrintFor(const Stmt& s, int indent) {
  const auto* f = s.as<ForNode>();
  if (IsGridLoop(s)) {
    std::vector<std::string> vars, extents;
    Stmt cur = s;
    std::vector<const ir::VarNode*> loop_vars;
    while (IsGridLoop(cur)) {
      const auto* loop = cur.as<ForNode>();
      vars.push_back(VarName(loop->loop_var.get()));
      extents.push_back(Expr(loop->extent));
      loop_vars.push_back(loop->loop_var.get());
      enclosing_loops_[loop->loop_var.get()] = loop;
      cur = loop->body;
    }
    if (vars.size() == 1) {
      Line(indent, absl::StrCat("for ", vars[0], " in range(", extents[0], "):"));
    } else {
      Line(indent, absl::StrCat("for ", absl::StrJoin(vars, ", "), " in T.grid(",
                                absl::StrJoin(extents, ", "), "):"));
    }
    StmtList(cur, indent + 1);
    for (const ir::VarNode* v : loop_vars) enclosing_loops_.erase(v);
    return;
  }
  static const char* kKinds[] = {"T.serial", "T.parallel", "T.vectorized", "T.unroll",
                                 "T.thread_binding"};
  Range range = MakeRange(f->min, f->extent);
  std::string args = IsZero(f->min) && f->extent && f->min->dtype == f->extent->dtype
                         ? Expr(f->extent)
                         : absl::StrCat(Expr(f->min), ", ", StopText(range));
  if (f->for_kind == ForKind::kThreadBinding)
    absl::StrAppend(&args, ", thread=", Quote(f->thread_tag));
  if (!f->annotations.empty()) absl::StrAppend(&args, ", annotations=", AttrDict(f->annotations));
  Line(indent, absl::StrCat("for ", VarName(f->loop_var.get()), " in ",
                            kKinds[static_cast<int>(f->for_kind)], "(", args, "):"));
  enclosing_loops_[f->loop_var.get()] = f;
  StmtList(f->body, indent + 1);
  enclosing_loops_.erase(f->loop_var.get());
}

bool Printer::IsRemapped(const BlockRealizeNode& r, size_t i) const {
  const IterVar& iv = r.block->iter_vars[i];
  if (i >= r.iter_values.size() ||
      (iv->iter_kind != IterKind::kSpatial && iv->iter_kind != IterKind::kReduce)) {
    return false;
  }
  const auto* v = r.iter_values[i].as<ir::VarNode>();
  auto loop = v ? enclosing_loops_.find(v) : enclosing_loops_.end();
  return loop != enclosing_loops_.end() && ExprDeepEqual(loop->second->min, iv->dom->min) &&
         ExprDeepEqual(loop->second->extent, iv->dom->extent);
}

void Printer::PrintBlock(const BlockRealizeNode& r, int indent) {
  const BlockNode* b = r.block.get();
  if (b == nullptr) {
    Line(indent, "pass");
    return;
  }
  Line(indent, absl::StrCat("with T.block(", Quote(b->name), "):"));
  int in = indent + 1;
  static const char* kAxis[] = {"spatial", "reduce", "opaque", "opaque"};
  auto single = [&](size_t i) {
    const IterVar& iv = b->iter_vars[i];
    std::string dom =
        IsZero(iv->dom->min) && iv->dom->extent && iv->dom->min->dtype == iv->dom->extent->dtype
            ? Expr(iv->dom->extent)
            : absl::StrCat("(", Expr(iv->dom->min), ", ", StopText(iv->dom), ")");
    std::string value = i < r.iter_values.size() ? Expr(r.iter_values[i]) : "None";
    Line(in, absl::StrCat(VarName(iv->var.get()), " = T.axis.",
                          kAxis[static_cast<int>(iv->iter_kind)], "(", dom, ", ", value, ")"));
  };
  // Runs of remapped iter vars print as one T.axis.remap; a run of one prints on its own.
  for (size_t i = 0; i < b->iter_vars.size();) {
    size_t end = i;
    while (end < b->iter_vars.size() && IsRemapped(r, end)) ++end;
    if (end - i < 2) {
      single(i++);
      continue;
    }
    std::vector<std::string> names, loops;
    std::string kinds;
    for (; i < end; ++i) {
      names.push_back(VarName(b->iter_vars[i]->var.get()));
      loops.push_back(Expr(r.iter_values[i]));
      kinds += b->iter_vars[i]->iter_kind == IterKind::kSpatial ? 'S' : 'R';
    }
    Line(in, absl::StrCat(absl::StrJoin(names, ", "), " = T.axis.remap(\"", kinds, "\", [",
                          absl::StrJoin(loops, ", "), "])"));
  }
  const auto* pred = r.predicate.as<IntImmNode>();
  if (!(pred != nullptr && pred->dtype.is_bool() && pred->value == 1)) {
    Line(in, absl::StrCat("T.where(", Expr(r.predicate), ")"));
  }
  std::vector<std::string> reads, writes;
  for (const BufferRegion& reg : b->reads) reads.push_back(Region(reg));
  for (const BufferRegion& reg : b->writes) writes.push_back(Region(reg));
  Line(in, absl::StrCat("T.reads(", absl::StrJoin(reads, ", "), ")"));
  Line(in, absl::StrCat("T.writes(", absl::StrJoin(writes, ", "), ")"));
  if (!b->annotations.empty())
    Line(in, absl::StrCat("T.block_attr(", AttrDict(b->annotations), ")"));
  for (const Buffer& buf : b->alloc_buffers) {
    Line(in, absl::StrCat(BufferName(buf), " = T.alloc_buffer(", BufferArgs(*buf), ")"));
  }
  for (const MatchBufferRegion& m : b->match_buffers) {
    Line(in, absl::StrCat(BufferName(m->buffer), " = T.match_buffer(", Region(m->source), ", ",
                          BufferArgs(*m->buffer), ")"));
  }
  if (b->init) {
    Line(in, "with T.init():");
    StmtList(b->init, in + 1);
  }
  StmtList(b->body, in);
}

// Removes global_symbol when it equals the function's name; true if the function is private.
bool Printer::PopGlobalSymbol(Attrs* attrs, const std::string& name) {
  for (auto it = attrs->begin(); it != attrs->end(); ++it) {
    if (it->first != "global_symbol") continue;
    const auto* s = it->second.as<StringImmNode>();
    if (s != nullptr && s->value == name) attrs->erase(it);
    return false;
  }
  return true;
}
}  // namespace kiln::script::printer
