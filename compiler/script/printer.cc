#include "compiler/script/printer.h"

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
#include "compiler/ir/tir_functor.h"
#include "compiler/script/metadata.h"
#include "compiler/script/script_common.h"

namespace kiln::script {
namespace {

using namespace ir;  // NOLINT: the printer touches every node type
namespace relax = ir::relax;

// ---- Literals ----------------------------------------------------------------------------------

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

bool IsLiteral(const PrimExpr& e) { return e.as<IntImmNode>() || e.as<FloatImmNode>(); }

// ---- Names -------------------------------------------------------------------------------------

class Namer {
 public:
  Namer() {
    for (const char* r :
         {"T",        "R",     "I",      "cls",    "metadata", "Module", "_",     "range",
          "True",     "False", "None",   "and",    "or",       "not",    "if",    "else",
          "elif",     "for",   "in",     "while",  "with",     "as",     "def",   "class",
          "return",   "pass",  "assert", "lambda", "import",   "from",   "is",    "del",
          "global",   "yield", "try",    "except", "finally",  "raise",  "break", "continue",
          "nonlocal", "async", "await"}) {
      used_.insert(r);
    }
  }
  const std::string& Name(const Object* node, const std::string& hint) {
    auto it = names_.find(node);
    if (it != names_.end()) return it->second;
    std::string base = Sanitize(hint);
    std::string name = base;
    for (int i = 1; used_.count(name) > 0; ++i) name = absl::StrCat(base, "_", i);
    used_.insert(name);
    return names_[node] = name;
  }
  bool Has(const Object* node) const { return names_.count(node) > 0; }

 private:
  static std::string Sanitize(const std::string& hint) {
    std::string s;
    for (char c : hint) {
      bool ok =
          (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
      s += ok ? c : '_';
    }
    if (s.empty() || (s[0] >= '0' && s[0] <= '9')) s = "v" + s;
    return s;
  }
  std::unordered_map<const Object*, std::string> names_;
  std::set<std::string> used_;
};

// ---- The printer -------------------------------------------------------------------------------

enum Prec {
  kPrecOr = 1,
  kPrecAnd = 2,
  kPrecNot = 3,
  kPrecCmp = 4,
  kPrecAdd = 5,
  kPrecMul = 6,
  kPrecAtom = 10
};

int Precedence(NodeKind k) {
  switch (k) {
    case NodeKind::kOr:
      return kPrecOr;
    case NodeKind::kAnd:
      return kPrecAnd;
    case NodeKind::kAdd:
    case NodeKind::kSub:
      return kPrecAdd;
    case NodeKind::kEQ:
    case NodeKind::kNE:
    case NodeKind::kLT:
    case NodeKind::kLE:
    case NodeKind::kGT:
    case NodeKind::kGE:
      return kPrecCmp;
    default:
      return kPrecMul;  // * / // %
  }
}

// The infix operator of a binary node, or null when it prints as a call. A float Div is `/`;
// an integer one prints as T.Div (Python's `/` is not truncating).
const char* InfixOp(NodeKind k, DataType dtype) {
  if (k == NodeKind::kDiv) return dtype.is_float() ? "/" : nullptr;
  return BinaryInfixSymbol(k);
}

class Printer {
 public:
  std::string Print(const IRModule& mod) {
    Line(0, "# from tvm.script import ir as I");
    Line(0, "# from tvm.script import tir as T");
    Line(0, "# from tvm.script import relax as R");
    Line(0, "");
    Line(0, "@I.ir_module");
    Line(0, "class Module:");
    if (!mod->attrs.empty()) Line(1, absl::StrCat("I.module_attrs(", AttrDict(mod->attrs), ")"));
    bool first = true;
    for (const auto& [name, entry] : mod->functions) {
      if (!first) Line(0, "");
      first = false;
      namer_ = Namer();
      declared_.clear();
      if (const auto* f = entry.second.as<PrimFuncNode>()) {
        PrintPrimFunc(name, *f, 1);
      } else if (const auto* f = entry.second.as<relax::FunctionNode>()) {
        PrintRelaxFunction(name, *f, 1, /*global=*/true);
      }
    }
    if (metadata_.empty()) return out_;
    // The weights travel ahead of the module, in TVM's form (JSON quotes escaped as TVM does).
    std::string json = PrintTvmMetadata(metadata_);
    std::string escaped;
    for (char ch : json) {
      if (ch == '"' || ch == '\\') escaped += '\\';
      escaped += ch;
    }
    return absl::StrCat("metadata = tvm.ir.load_json(\"\"\"", escaped, "\"\"\")\n", out_);
  }

 private:
  void Line(int indent, const std::string& text) {
    if (!text.empty()) out_.append(static_cast<size_t>(indent) * 4, ' ');
    out_ += text;
    out_ += "\n";
  }

  // ---- Literals and attributes ----
  std::string Lit(const PrimExpr& e, DataType hint) {
    if (const auto* i = e.as<IntImmNode>()) {
      if (i->dtype.is_bool()) return i->value ? "T.bool(True)" : "T.bool(False)";
      if (i->dtype == IntHint(hint)) return absl::StrCat(i->value);
      return absl::StrCat("T.", i->dtype.ToString(), "(", i->value, ")");
    }
    const auto* f = e.as<FloatImmNode>();
    if (std::isnan(f->value) || std::isinf(f->value)) {
      const char* text = std::isnan(f->value) ? "nan" : (f->value > 0 ? "inf" : "-inf");
      return absl::StrCat("T.", f->dtype.ToString(), "(\"", text, "\")");
    }
    if (f->dtype == FloatHint(hint)) return FloatRepr(f->value);
    return absl::StrCat("T.", f->dtype.ToString(), "(", FloatRepr(f->value), ")");
  }

  std::string AttrValue(const ObjectRef& v) {
    if (!v) return "None";
    if (const auto* s = v.as<StringImmNode>()) return Quote(s->value);
    if (v.as<IntImmNode>() || v.as<FloatImmNode>())
      return Lit(v.as_ref<PrimExprNode>(), DataType());
    if (const auto* a = v.as<ArrayNode>()) {
      std::vector<std::string> items;
      for (const ObjectRef& item : a->items) items.push_back(AttrValue(item));
      return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
    }
    if (auto e = v.as_ref<PrimExprNode>()) return Expr(e);
    return "None";
  }
  std::string AttrDict(const Attrs& attrs) {
    std::vector<std::string> parts;
    for (const auto& [key, value] : attrs)
      parts.push_back(absl::StrCat(Quote(key), ": ", AttrValue(value)));
    return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
  }

  // ---- TIR expressions ----
  std::string Expr(const PrimExpr& e, DataType hint = DataType(), int min_prec = 0) {
    int prec = kPrecAtom;
    std::string text = ExprInner(e, hint, &prec);
    return prec < min_prec ? absl::StrCat("(", text, ")") : text;
  }

  std::string Exprs(const std::vector<PrimExpr>& es, DataType hint = DataType()) {
    std::vector<std::string> parts;
    for (const PrimExpr& e : es) parts.push_back(Expr(e, hint));
    return absl::StrJoin(parts, ", ");
  }

  std::string VarName(const ir::VarNode* v) { return namer_.Name(v, v->name); }

  std::string ExprInner(const PrimExpr& e, DataType hint, int* prec) {
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
      return absl::StrCat(BufferName(l->buffer), "[", Exprs(l->indices), "]");
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
      std::string args = Exprs(c->args);
      return absl::StrCat("T.call_extern(", Quote(c->dtype.ToString()), ", ", Quote(c->op),
                          args.empty() ? "" : ", ", args, ")");
    }
    return "None";
  }
  bool PrintsBare(const PrimExpr& lit, DataType hint) {
    if (const auto* i = lit.as<IntImmNode>())
      return !i->dtype.is_bool() && i->dtype == IntHint(hint);
    const auto* f = lit.as<FloatImmNode>();
    return std::isfinite(f->value) && f->dtype == FloatHint(hint);
  }
  std::string Typed(const PrimExpr& lit) {
    // DataType(kHandle...) matches neither an int nor a float literal: always typed.
    return Lit(lit, DataType::Handle());
  }

  // ---- Buffers and regions ----
  std::string BufferName(const Buffer& b) { return b ? namer_.Name(b.get(), b->name) : "None"; }

  std::string BufferArgs(const BufferNode& b) {
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

  std::string Region(const BufferRegion& r) {
    if (!r) return "None";
    std::vector<std::string> dims;
    for (const Range& range : r->region) dims.push_back(RangeText(range, /*point_ok=*/true));
    return absl::StrCat(BufferName(r->buffer), "[", absl::StrJoin(dims, ", "), "]");
  }

  // `min` for a unit range, else `min:min + extent` (folded when both are constants).
  std::string RangeText(const Range& range, bool point_ok) {
    const auto* extent = range->extent.as<IntImmNode>();
    if (point_ok && extent != nullptr && extent->value == 1 && range->min &&
        extent->dtype == range->min->dtype) {
      return Expr(range->min);
    }
    return absl::StrCat(StartText(range), ":", StopText(range));
  }
  std::string StartText(const Range& range) {
    // A literal 0 start takes the stop's dtype.
    if (IsZero(range->min) && range->extent) return Expr(range->min, range->extent->dtype);
    return Expr(range->min);
  }
  std::string StopText(const Range& range) {
    if (IsZero(range->min)) return Expr(range->extent);
    const auto* a = range->min.as<IntImmNode>();
    const auto* b = range->extent.as<IntImmNode>();
    if (a != nullptr && b != nullptr && a->dtype == b->dtype) {
      return Lit(IntImm(a->dtype, a->value + b->value), DataType());
    }
    return Expr(Binary(NodeKind::kAdd, range->min, range->extent), DataType(), kPrecAdd);
  }
  static bool IsZero(const PrimExpr& e) {
    const auto* i = e.as<IntImmNode>();
    return i != nullptr && i->value == 0 && !i->dtype.is_bool();
  }

  // ---- TIR statements ----
  void PrintPrimFunc(const std::string& name, const PrimFuncNode& f, int indent) {
    Attrs attrs = f.attrs;
    bool is_private = PopGlobalSymbol(&attrs, name);
    Line(indent, is_private ? "@T.prim_func(private=True)" : "@T.prim_func");
    std::vector<std::string> params;
    std::unordered_set<const Object*> defined;
    for (const Var& p : f.params) {
      defined.insert(p.get());
      Buffer b = f.BufferOf(p);
      if (b) {
        params.push_back(absl::StrCat(BufferName(b), ": T.Buffer(", BufferArgs(*b), ")"));
        defined.insert(b->data.get());
      } else {
        params.push_back(absl::StrCat(VarName(p.get()), ": T.", p->dtype.ToString()));
      }
    }
    Line(indent, absl::StrCat("def ", name, "(", absl::StrJoin(params, ", "), "):"));
    DeclareFreeVars(f, defined, indent + 1);
    if (!attrs.empty()) Line(indent + 1, absl::StrCat("T.func_attr(", AttrDict(attrs), ")"));
    StmtList(f.body, indent + 1);
  }

  // Declares (`n = T.int64()`) the variables used but not bound by the function itself.
  void DeclareFreeVars(const PrimFuncNode& f, std::unordered_set<const Object*> defined,
                       int indent) {
    struct Collector : StmtExprVisitor {
      void VisitExpr(const PrimExpr& e) override {
        if (const auto* l = e.as<LetNode>()) bound.insert(l->var.get());
        if (const auto* v = e.as<ir::VarNode>()) {
          if (seen.insert(v).second) order.push_back(v);
        }
        StmtExprVisitor::VisitExpr(e);
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
        StmtExprVisitor::VisitStmt(s);
      }
      void VisitBuffer(const Buffer& b) override {
        for (const PrimExpr& e : b->shape) VisitExpr(e);
        for (const PrimExpr& e : b->strides) VisitExpr(e);
        if (b->elem_offset) VisitExpr(b->elem_offset);
      }
      std::unordered_set<const Object*> seen, bound;
      std::vector<const ir::VarNode*> order;
    } c;
    for (const auto& [param, buffer] : f.buffer_map) c.VisitBuffer(buffer);
    if (f.body) c.VisitStmt(f.body);
    for (const ir::VarNode* v : c.order) {
      if (defined.count(v) > 0 || c.bound.count(v) > 0) continue;
      Line(indent, absl::StrCat(VarName(v), " = T.", v->dtype.ToString(), "(",
                                v->is_size_var ? "is_size_var=True" : "", ")"));
    }
  }

  // Prints a statement; a SeqStmt prints as its elements, one per line.
  void StmtList(const Stmt& s, int indent) {
    if (const auto* seq = s.as<SeqStmtNode>()) {
      for (size_t i = 0; i < seq->seq.size(); ++i)
        PrintStmt(seq->seq[i], indent, i + 1 == seq->seq.size());
      if (seq->seq.empty()) Line(indent, "T.evaluate(0)");
      return;
    }
    PrintStmt(s, indent, /*last=*/true);
  }

  void PrintStmt(const Stmt& s, int indent, bool last) {
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
      Line(indent,
           absl::StrCat(BufferName(st->buffer), "[", Exprs(st->indices), "] = ", Expr(st->value)));
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

  static bool IsGridLoop(const Stmt& s) {
    const auto* f = s.as<ForNode>();
    return f != nullptr && f->for_kind == ForKind::kSerial && f->annotations.empty() &&
           f->thread_tag.empty() && IsZero(f->min) && f->extent &&
           f->min->dtype == f->extent->dtype && f->loop_var &&
           f->loop_var->dtype == f->extent->dtype;
  }

  void PrintFor(const Stmt& s, int indent) {
    const auto* f = s.as<ForNode>();
    if (IsGridLoop(s)) {
      std::vector<std::string> vars, extents;
      Stmt cur = s;
      while (IsGridLoop(cur)) {
        const auto* loop = cur.as<ForNode>();
        vars.push_back(VarName(loop->loop_var.get()));
        extents.push_back(Expr(loop->extent));
        cur = loop->body;
      }
      if (vars.size() == 1) {
        Line(indent, absl::StrCat("for ", vars[0], " in range(", extents[0], "):"));
      } else {
        Line(indent, absl::StrCat("for ", absl::StrJoin(vars, ", "), " in T.grid(",
                                  absl::StrJoin(extents, ", "), "):"));
      }
      StmtList(cur, indent + 1);
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
    StmtList(f->body, indent + 1);
  }

  void PrintBlock(const BlockRealizeNode& r, int indent) {
    const BlockNode* b = r.block.get();
    if (b == nullptr) {
      Line(indent, "pass");
      return;
    }
    Line(indent, absl::StrCat("with T.block(", Quote(b->name), "):"));
    int in = indent + 1;
    static const char* kAxis[] = {"spatial", "reduce", "opaque", "opaque"};
    for (size_t i = 0; i < b->iter_vars.size(); ++i) {
      const IterVar& iv = b->iter_vars[i];
      std::string dom =
          IsZero(iv->dom->min) && iv->dom->extent && iv->dom->min->dtype == iv->dom->extent->dtype
              ? Expr(iv->dom->extent)
              : absl::StrCat("(", Expr(iv->dom->min), ", ", StopText(iv->dom), ")");
      std::string value = i < r.iter_values.size() ? Expr(r.iter_values[i]) : "None";
      Line(in, absl::StrCat(VarName(iv->var.get()), " = T.axis.",
                            kAxis[static_cast<int>(iv->iter_kind)], "(", dom, ", ", value, ")"));
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
  static bool PopGlobalSymbol(Attrs* attrs, const std::string& name) {
    for (auto it = attrs->begin(); it != attrs->end(); ++it) {
      if (it->first != "global_symbol") continue;
      const auto* s = it->second.as<StringImmNode>();
      if (s != nullptr && s->value == name) attrs->erase(it);
      return false;
    }
    return true;
  }

  // ---- Relax ----
  std::string RVar(const relax::VarNode* v) { return namer_.Name(v, v->name_hint); }

  // StructInfo; in a signature, symbolic dimensions are quoted ("n * 4").
  std::string SInfo(const relax::StructInfo& s, bool signature) {
    using namespace relax;
    if (!s) return "R.Object";
    auto dim = [&](const PrimExpr& d) {
      std::string text = Expr(d, DataType::Int(64));
      return signature && !IsLiteral(d) ? Quote(text) : text;
    };
    auto dims = [&](const std::vector<PrimExpr>& ds) {
      std::vector<std::string> parts;
      for (const PrimExpr& d : ds) parts.push_back(dim(d));
      return parts;
    };
    if (s.as<ObjectStructInfoNode>()) return "R.Object";
    if (const auto* p = s.as<PrimStructInfoNode>()) {
      if (!p->value) return absl::StrCat("R.Prim(", Quote(p->dtype.ToString()), ")");
      if (p->value->dtype == p->dtype) return absl::StrCat("R.Prim(value=", dim(p->value), ")");
      return absl::StrCat("R.Prim(", Quote(p->dtype.ToString()), ", value=", dim(p->value), ")");
    }
    if (const auto* sh = s.as<ShapeStructInfoNode>()) {
      if (sh->values)
        return absl::StrCat("R.Shape([", absl::StrJoin(dims(*sh->values), ", "), "])");
      return sh->ndim == -1 ? "R.Shape()" : absl::StrCat("R.Shape(ndim=", sh->ndim, ")");
    }
    if (const auto* t = s.as<TensorStructInfoNode>()) {
      std::vector<std::string> args;
      if (const std::vector<PrimExpr>* ds = t->dims()) {
        std::vector<std::string> parts = dims(*ds);
        args.push_back(
            absl::StrCat("(", absl::StrJoin(parts, ", "), parts.size() == 1 ? ",)" : ")"));
      } else if (const auto* v = t->shape.as<relax::VarNode>()) {
        args.push_back(RVar(v));
      }
      if (!t->dtype.is_void()) args.push_back(absl::StrCat("dtype=", Quote(t->dtype.ToString())));
      if (!t->dims() && t->ndim != -1) args.push_back(absl::StrCat("ndim=", t->ndim));
      return absl::StrCat("R.Tensor(", absl::StrJoin(args, ", "), ")");
    }
    if (const auto* t = s.as<TupleStructInfoNode>()) {
      std::vector<std::string> parts;
      for (const StructInfo& f : t->fields) parts.push_back(SInfo(f, signature));
      return absl::StrCat("R.Tuple(", absl::StrJoin(parts, ", "), ")");
    }
    const auto* f = s.as<FuncStructInfoNode>();
    std::string params = "None";
    if (f->params) {
      std::vector<std::string> parts;
      for (const StructInfo& p : *f->params) parts.push_back(SInfo(p, signature));
      params = absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
    }
    std::string out = absl::StrCat("R.Callable(", params, ", ", SInfo(f->ret, signature));
    if (!f->purity) absl::StrAppend(&out, ", purity=False");
    if (!f->derive_func.empty()) absl::StrAppend(&out, ", derive_func=", Quote(f->derive_func));
    return out + ")";
  }

  std::string RExprs(const std::vector<relax::Expr>& es) {
    std::vector<std::string> parts;
    for (const relax::Expr& e : es) parts.push_back(RExpr(e));
    return absl::StrJoin(parts, ", ");
  }

  std::string SInfoArgs(const std::vector<relax::StructInfo>& sinfos) {
    if (sinfos.size() == 1) return SInfo(sinfos[0], false);
    std::vector<std::string> parts;
    for (const relax::StructInfo& s : sinfos) parts.push_back(SInfo(s, false));
    return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
  }

  std::string RExpr(const relax::Expr& e) {
    using namespace relax;
    if (!e) return "None";
    if (const auto* v = e.as<relax::VarNode>()) return RVar(v);
    if (const auto* g = e.as<GlobalVarNode>()) return absl::StrCat("cls.", g->name_hint);
    if (const auto* t = e.as<TupleNode>()) {
      if (t->fields.empty()) return "R.tuple()";
      return absl::StrCat("(", RExprs(t->fields), t->fields.size() == 1 ? ",)" : ")");
    }
    if (const auto* t = e.as<TupleGetItemNode>())
      return absl::StrCat(RExpr(t->tuple), "[", t->index, "]");
    if (const auto* p = e.as<PrimValueNode>())
      return absl::StrCat("R.prim_value(", Expr(p->value, DataType::Int(64)), ")");
    if (const auto* s = e.as<relax::StringImmNode>())
      return absl::StrCat("R.str(", Quote(s->value), ")");
    if (const auto* d = e.as<DataTypeImmNode>())
      return absl::StrCat("R.dtype(", Quote(d->value.ToString()), ")");
    if (const auto* s = e.as<ShapeExprNode>()) {
      std::vector<std::string> parts;
      for (const PrimExpr& v : s->values) parts.push_back(Expr(v, DataType::Int(64)));
      return absl::StrCat("R.shape([", absl::StrJoin(parts, ", "), "])");
    }
    if (const auto* x = e.as<ExternFuncNode>())
      return absl::StrCat("R.ExternFunc(", Quote(x->global_symbol), ")");
    if (const auto* o = e.as<OpNode>()) return OpName(o->name);
    if (const auto* c = e.as<ConstantNode>()) return ConstantText(*c);
    if (const auto* c = e.as<relax::CallNode>()) return CallText(*c);
    return "None";
  }

  static std::string OpName(const std::string& name) {
    return absl::StartsWith(name, "relax.") ? absl::StrCat("R.", name.substr(6))
                                            : absl::StrCat("R.", name);
  }

  std::string CallText(const relax::CallNode& c) {
    using namespace relax;
    const auto* op = c.op.as<OpNode>();
    std::vector<std::string> args;
    std::string name;
    size_t first = 0;
    if (op != nullptr && (op->name == "relax.call_tir" || op->name == "relax.call_dps_packed") &&
        c.args.size() >= 2 && c.args.size() <= 3 && c.sinfo_args.size() == 1 && c.attrs.empty() &&
        (op->name == "relax.call_tir" ? c.args[0].as<GlobalVarNode>() != nullptr
                                      : c.args[0].as<ExternFuncNode>() != nullptr)) {
      name = OpName(op->name);
      args.push_back(op->name == "relax.call_tir"
                         ? RExpr(c.args[0])
                         : Quote(c.args[0].as<ExternFuncNode>()->global_symbol));
      args.push_back(c.args[1].as<TupleNode>() ? RExpr(c.args[1]) : RExpr(c.args[1]));
      args.push_back(absl::StrCat("out_sinfo=", SInfo(c.sinfo_args[0], false)));
      if (c.args.size() == 3) args.push_back(absl::StrCat("tir_vars=", RExpr(c.args[2])));
      return absl::StrCat(name, "(", absl::StrJoin(args, ", "), ")");
    }
    if (op != nullptr && op->name == "relax.call_pure_packed" && !c.args.empty() &&
        c.args[0].as<ExternFuncNode>()) {
      name = "R.call_pure_packed";
      args.push_back(Quote(c.args[0].as<ExternFuncNode>()->global_symbol));
      first = 1;
    } else if (const auto* x = c.op.as<ExternFuncNode>()) {
      name = "R.call_packed";
      args.push_back(Quote(x->global_symbol));
    } else if (op != nullptr) {
      name = OpName(op->name);
    } else {
      name = RExpr(c.op);
    }
    for (size_t i = first; i < c.args.size(); ++i) args.push_back(RExpr(c.args[i]));
    for (const auto& [key, value] : c.attrs)
      args.push_back(absl::StrCat(key, "=", AttrValue(value)));
    if (!c.sinfo_args.empty()) args.push_back(absl::StrCat("sinfo_args=", SInfoArgs(c.sinfo_args)));
    return absl::StrCat(name, "(", absl::StrJoin(args, ", "), ")");
  }

  // Constants beyond this many elements go to the metadata section, as TVM prints them.
  static constexpr int64_t kMaxInlineElements = 16;

  std::string ConstantText(const relax::ConstantNode& c) {
    int64_t count = 1;
    for (int64_t d : c.shape) count *= d;
    if (count > kMaxInlineElements) {
      auto [it, added] = metadata_index_.emplace(&c, metadata_.size());
      if (added) metadata_.push_back(&c);
      return absl::StrCat("metadata[\"relax.expr.Constant\"][", it->second, "]");
    }
    ConstantFormat fmt;
    std::string data =
        FormatConstantData(c.dtype, c.shape, c.bytes ? *c.bytes : std::string(), &fmt);
    std::string out = absl::StrCat("R.const(", data, ", ", Quote(c.dtype.ToString()));
    if (fmt.needs_shape) {
      std::vector<std::string> dims;
      for (int64_t d : c.shape) dims.push_back(absl::StrCat(d));
      absl::StrAppend(&out, ", shape=(", absl::StrJoin(dims, ", "), dims.size() == 1 ? ",)" : ")");
    }
    return out + ")";
  }

  // The shape variables a Relax function mentions, in first-appearance order.
  void CollectShapeVars(const relax::FunctionNode& f, std::vector<const ir::VarNode*>* out) {
    struct Collector : relax::ExprVisitor {
      void VisitPrimExpr(const PrimExpr& e) override {
        PostOrderVisit(e, [&](const PrimExpr& sub) {
          if (const auto* v = sub.as<ir::VarNode>(); v != nullptr && seen.insert(v).second)
            order->push_back(v);
        });
      }
      void VisitBinding(const relax::Binding& b) override {
        if (b && b->var) VisitStructInfo(b->var->struct_info());
        relax::ExprVisitor::VisitBinding(b);
      }
      void VisitExpr(const relax::Expr& e) override {
        if (e.as<relax::FunctionNode>() && e.get() != root)
          return;  // nested functions declare their own
        relax::ExprVisitor::VisitExpr(e);
      }
      std::unordered_set<const Object*> seen;
      std::vector<const ir::VarNode*>* order;
      const Object* root;
    } c;
    c.order = out;
    c.root = &f;
    c.VisitExpr(relax::Expr(relax::Function(&f)));
  }

  void PrintRelaxFunction(const std::string& name, const relax::FunctionNode& f, int indent,
                          bool global) {
    Attrs attrs = f.attrs;
    bool is_private = global ? PopGlobalSymbol(&attrs, name) : false;
    std::vector<std::string> flags;
    if (is_private) flags.push_back("private=True");
    if (!f.is_pure) flags.push_back("pure=False");
    Line(indent, flags.empty() ? "@R.function"
                               : absl::StrCat("@R.function(", absl::StrJoin(flags, ", "), ")"));
    std::vector<std::string> params;
    for (const relax::Var& p : f.params) {
      if (!p) continue;
      std::string annotation =
          p->struct_info() ? absl::StrCat(": ", SInfo(p->struct_info(), true)) : "";
      params.push_back(absl::StrCat(RVar(p.get()), annotation));
    }
    std::string ret = f.ret_struct_info ? absl::StrCat(" -> ", SInfo(f.ret_struct_info, true)) : "";
    Line(indent, absl::StrCat("def ", name, "(", absl::StrJoin(params, ", "), ")", ret, ":"));
    int in = indent + 1;
    std::vector<const ir::VarNode*> shape_vars;
    CollectShapeVars(f, &shape_vars);
    for (const ir::VarNode* v : shape_vars) {
      if (declared_.insert(v).second) {
        Line(in, absl::StrCat(VarName(v), " = T.", v->dtype.ToString(), "(",
                              v->is_size_var ? "is_size_var=True" : "", ")"));
      }
    }
    if (!attrs.empty()) Line(in, absl::StrCat("R.func_attr(", AttrDict(attrs), ")"));
    if (global && UsesGlobals(f)) Line(in, "cls = Module");
    PrintBody(f.body, in, /*result_var=*/nullptr);
  }

  static bool UsesGlobals(const relax::FunctionNode& f) {
    struct Finder : relax::ExprVisitor {
      void VisitExpr(const relax::Expr& e) override {
        if (e.as<relax::GlobalVarNode>()) found = true;
        if (!found) relax::ExprVisitor::VisitExpr(e);
      }
      bool found = false;
    } finder;
    finder.VisitExpr(f.body);
    return finder.found;
  }

  // Prints a SeqExpr's blocks, then `return body` (result_var null) or `result = body`.
  void PrintBody(const relax::Expr& e, int indent, const relax::Binding* result) {
    using namespace relax;
    const auto* seq = e.as<SeqExprNode>();
    if (seq != nullptr) {
      for (const BindingBlock& block : seq->blocks) {
        if (!block) continue;
        if (block->is_dataflow()) {
          Line(indent, "with R.dataflow():");
          std::vector<std::string> outputs;
          for (const Binding& b : block->bindings) {
            PrintBinding(b, indent + 1);
            if (b && b->var && !b->var->is_dataflow()) outputs.push_back(RVar(b->var.get()));
          }
          Line(indent + 1, absl::StrCat("R.output(", absl::StrJoin(outputs, ", "), ")"));
        } else {
          for (const Binding& b : block->bindings) PrintBinding(b, indent);
        }
      }
    }
    const relax::Expr& value = seq != nullptr ? seq->body : e;
    if (result == nullptr) {
      Line(indent, absl::StrCat("return ", RExpr(value)));
    } else {
      Line(indent, absl::StrCat(BindingLhs(*result), " = ", RExpr(value)));
    }
  }

  std::string BindingLhs(const relax::Binding& b) {
    if (!b->var) return "_";
    std::string name = RVar(b->var.get());
    if (!b->var->struct_info()) return name;
    return absl::StrCat(name, ": ", SInfo(b->var->struct_info(), false));
  }

  void PrintBinding(const relax::Binding& b, int indent) {
    using namespace relax;
    if (!b) return;
    if (const auto* mc = b.as<MatchCastNode>()) {
      Line(indent, absl::StrCat(BindingLhs(b), " = R.match_cast(", RExpr(mc->value), ", ",
                                SInfo(mc->struct_info, false), ")"));
      return;
    }
    if (const auto* i = b->value.as<IfNode>()) {
      Line(indent, absl::StrCat("if ", RExpr(i->cond), ":"));
      PrintBody(i->true_branch, indent + 1, &b);
      Line(indent, "else:");
      PrintBody(i->false_branch, indent + 1, &b);
      return;
    }
    if (const auto* f = b->value.as<FunctionNode>()) {
      PrintRelaxFunction(RVar(b->var.get()), *f, indent, /*global=*/false);
      return;
    }
    Line(indent, absl::StrCat(BindingLhs(b), " = ", RExpr(b->value)));
  }

  std::string out_;
  std::vector<const relax::ConstantNode*> metadata_;
  std::unordered_map<const relax::ConstantNode*, size_t> metadata_index_;
  Namer namer_;
  std::unordered_set<const Object*> declared_;
};

}  // namespace

std::string PrintScript(const ir::IRModule& mod) {
  if (!mod) return "";
  return Printer().Print(mod);
}

}  // namespace kiln::script
