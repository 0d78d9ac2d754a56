#include "compiler/ir/printer.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/module.h"

namespace kiln::ir {
namespace {

class Printer {
 public:
  std::string Print(const ObjectRef& node) {
    if (!node) return "None";
    if (const auto* mod = node.as<IRModuleNode>()) {
      PrintModule(*mod);
    } else if (node.as<PrimExprNode>()) {
      out_ += Expr(node.as_ref<PrimExprNode>());
    } else if (node.as<StmtNode>()) {
      PrintStmt(node.as_ref<StmtNode>(), 0);
    } else if (node.as<PrimFuncNode>()) {
      PrintPrimFunc("func", node.as_ref<PrimFuncNode>(), 0);
    } else if (const auto* f = node.as<relax::FunctionNode>()) {
      PrintFunction("func", *f, 0);
    } else if (node.as<relax::StructInfoNode>()) {
      out_ += SInfo(node.as_ref<relax::StructInfoNode>());
    } else if (node.as<relax::ExprNode>()) {
      out_ += RExpr(node.as_ref<relax::ExprNode>());
    } else if (node.as<relax::BindingNode>()) {
      PrintBinding(node.as_ref<relax::BindingNode>(), 0);
    } else if (const auto* b = node.as<BufferNode>()) {
      out_ += BufferDecl(*b);
    } else {
      out_ += NodeKindName(node->kind());
    }
    if (out_.size() > kMaxOutputBytes) {
      absl::StrAppend(&out_, "\n# ... stopped: the text passed ", kMaxOutputBytes >> 20, " MiB\n");
    }
    return out_;
  }

 private:
  // ---- names ----
  std::string Name(const Object* node, const std::string& hint) {
    auto it = names_.find(node);
    if (it != names_.end()) return it->second;
    std::string base = hint.empty() ? "v" : hint;
    std::string name = base;
    // Suffixes continue where the last name of this base stopped: a module of 10^5 variables
    // all called "x" is named in linear time.
    for (int& i = next_suffix_[base]; used_.count(name);) name = absl::StrCat(base, "_", ++i);
    used_.insert(name);
    names_[node] = name;
    return name;
  }

  // A module that shares sub-trees (a DAG, as the wire format allows) prints as the tree it
  // stands for, which may be far larger than the module: the printers stop adding text past this.
  static constexpr size_t kMaxOutputBytes = size_t{16} << 20;
  static bool Full(const std::string& s) { return s.size() > kMaxOutputBytes; }

  // Indentation stops growing at kMaxIndent levels: a statement nest 20,000 deep would otherwise
  // print gigabytes of spaces (this is a debugging format; nothing parses it back).
  static constexpr int kMaxIndent = 64;
  void Indent(int indent) {
    out_.append(static_cast<size_t>(std::min(indent, kMaxIndent)) * 4, ' ');
  }
  void Line(int indent, const std::string& text) {
    Indent(indent);
    out_ += text;
    out_ += "\n";
  }

  // ---- TIR ----
  // The expression printers append to `s`: returning strings would copy a nest of depth d O(d)
  // times, quadratic on the 20,000-deep chains the decoder accepts.
  std::string Exprs(const std::vector<PrimExpr>& es) {
    std::string s;
    ExprsTo(es, &s);
    return s;
  }
  void ExprsTo(const std::vector<PrimExpr>& es, std::string* s) {
    for (size_t i = 0; i < es.size(); ++i) {
      if (i > 0) *s += ", ";
      ExprTo(es[i], s);
    }
  }

  std::string Expr(const PrimExpr& e) {
    std::string s;
    ExprTo(e, &s);
    return s;
  }
  void ExprTo(const PrimExpr& e, std::string* s) {
    if (Full(*s)) return;
    if (!e) {
      *s += "None";
    } else if (const auto* n = e.as<IntImmNode>()) {
      if (n->dtype == DataType::Int(64) || n->dtype == DataType::Int(32)) {
        absl::StrAppend(s, n->value);
      } else if (n->dtype.is_bool()) {
        *s += n->value ? "True" : "False";
      } else {
        absl::StrAppend(s, "T.", n->dtype.ToString(), "(", n->value, ")");
      }
    } else if (const auto* n = e.as<FloatImmNode>()) {
      absl::StrAppend(s, "T.", n->dtype.ToString(), "(", n->value, ")");
    } else if (const auto* n = e.as<StringImmNode>()) {
      absl::StrAppend(s, "\"", n->value, "\"");
    } else if (const auto* n = e.as<VarNode>()) {
      *s += Name(n, n->name);
    } else if (const auto* n = e.as<CastNode>()) {
      absl::StrAppend(s, "T.Cast(\"", n->dtype.ToString(), "\", ");
      ExprTo(n->value, s);
      *s += ")";
    } else if (const auto* n = e.as<BinaryNode>()) {
      if (const char* op = BinaryInfixSymbol(n->kind())) {
        *s += "(";
        ExprTo(n->a, s);
        absl::StrAppend(s, " ", op, " ");
        ExprTo(n->b, s);
      } else {
        absl::StrAppend(s, BinaryCallName(n->kind()), "(");
        ExprTo(n->a, s);
        *s += ", ";
        ExprTo(n->b, s);
      }
      *s += ")";
    } else if (const auto* n = e.as<NotNode>()) {
      *s += "(not ";
      ExprTo(n->a, s);
      *s += ")";
    } else if (const auto* n = e.as<SelectNode>()) {
      ExprsTo({n->condition, n->true_value, n->false_value}, &(*s += "T.Select("));
      *s += ")";
    } else if (const auto* n = e.as<BufferLoadNode>()) {
      absl::StrAppend(s, Name(n->buffer.get(), n->buffer->name), "[");
      ExprsTo(n->indices, s);
      *s += "]";
    } else if (const auto* n = e.as<RampNode>()) {
      ExprsTo({n->base, n->stride}, &(*s += "T.Ramp("));
      absl::StrAppend(s, ", ", n->lanes, ")");
    } else if (const auto* n = e.as<BroadcastNode>()) {
      ExprTo(n->value, &(*s += "T.Broadcast("));
      absl::StrAppend(s, ", ", n->lanes, ")");
    } else if (const auto* n = e.as<LetNode>()) {
      ExprsTo({n->var, n->value, n->body}, &(*s += "T.Let("));
      *s += ")";
    } else if (const auto* n = e.as<CallNode>()) {
      ExprsTo(n->args, &(*s += absl::StrCat("T.", n->op, "(")));
      *s += ")";
    } else {
      *s += NodeKindName(e->kind());
    }
  }

  std::string Shape(const std::vector<PrimExpr>& dims) {
    return absl::StrCat("(", Exprs(dims), dims.size() == 1 ? ",)" : ")");
  }

  // "((4, 4), \"float32\")": the arguments of T.Buffer and T.alloc_buffer.
  std::string BufferArgs(const BufferNode& b) {
    std::string s = absl::StrCat("(", Shape(b.shape), ", \"", b.dtype.ToString(), "\"");
    if (b.scope != "global") absl::StrAppend(&s, ", scope=\"", b.scope, "\"");
    return s + ")";
  }

  std::string BufferDecl(const BufferNode& b) { return "T.Buffer" + BufferArgs(b); }

  std::string Region(const BufferRegion& r) {
    std::vector<std::string> parts;
    for (const Range& range : r->region) {
      const int64_t* extent = AsConstInt(range->extent);
      if (extent != nullptr && *extent == 1) {
        parts.push_back(Expr(range->min));
      } else {
        parts.push_back(absl::StrCat(Expr(range->min), ":", Expr(range->min + range->extent)));
      }
    }
    return absl::StrCat(Name(r->buffer.get(), r->buffer->name), "[", absl::StrJoin(parts, ", "),
                        "]");
  }

  std::string Regions(const std::vector<BufferRegion>& rs) {
    std::vector<std::string> parts;
    for (const BufferRegion& r : rs) parts.push_back(Region(r));
    return absl::StrJoin(parts, ", ");
  }

  void PrintStmt(const Stmt& s, int indent) {
    if (!s || Full(out_)) return;
    if (const auto* n = s.as<SeqStmtNode>()) {
      for (const Stmt& c : n->seq) PrintStmt(c, indent);
    } else if (const auto* n = s.as<LetStmtNode>()) {
      Line(indent, absl::StrCat(Expr(n->var), " = ", Expr(n->value)));
      PrintStmt(n->body, indent);
    } else if (const auto* n = s.as<AttrStmtNode>()) {
      Line(indent, absl::StrCat("with T.attr(\"", n->key, "\", ", Expr(n->value), "):"));
      PrintStmt(n->body, indent + 1);
    } else if (const auto* n = s.as<AssertStmtNode>()) {
      Line(indent, absl::StrCat("assert ", Expr(n->condition), ", \"", n->message, "\""));
      PrintStmt(n->body, indent);
    } else if (const auto* n = s.as<BufferStoreNode>()) {
      Line(indent, absl::StrCat(Name(n->buffer.get(), n->buffer->name), "[", Exprs(n->indices),
                                "] = ", Expr(n->value)));
    } else if (const auto* n = s.as<AllocateNode>()) {
      Line(indent, absl::StrCat(Name(n->buffer.get(), n->buffer->name), " = T.alloc_buffer",
                                BufferArgs(*n->buffer)));
      PrintStmt(n->body, indent);
    } else if (const auto* n = s.as<ForNode>()) {
      std::string range = absl::StrCat(Expr(n->extent));
      const int64_t* min = AsConstInt(n->min);
      if (min == nullptr || *min != 0)
        range = absl::StrCat(Expr(n->min), ", ", Expr(n->min + n->extent));
      std::string kind = n->for_kind == ForKind::kThreadBinding
                             ? absl::StrCat("thread_binding(", range, ", \"", n->thread_tag, "\")")
                             : absl::StrCat(ForKindName(n->for_kind), "(", range, ")");
      Line(indent, absl::StrCat("for ", Expr(n->loop_var), " in T.", kind, ":"));
      PrintStmt(n->body, indent + 1);
    } else if (const auto* n = s.as<WhileNode>()) {
      Line(indent, absl::StrCat("while ", Expr(n->condition), ":"));
      PrintStmt(n->body, indent + 1);
    } else if (const auto* n = s.as<IfThenElseNode>()) {
      Line(indent, absl::StrCat("if ", Expr(n->condition), ":"));
      PrintStmt(n->then_case, indent + 1);
      if (n->else_case) {
        Line(indent, "else:");
        PrintStmt(n->else_case, indent + 1);
      }
    } else if (const auto* n = s.as<EvaluateNode>()) {
      Line(indent, absl::StrCat("T.evaluate(", Expr(n->value), ")"));
    } else if (const auto* n = s.as<BlockRealizeNode>()) {
      PrintBlock(*n->block, &n->iter_values, n->predicate, indent);
    } else if (const auto* n = s.as<BlockNode>()) {
      PrintBlock(*n, nullptr, nullptr, indent);
    }
  }

  void PrintBlock(const BlockNode& b, const std::vector<PrimExpr>* values, const PrimExpr& pred,
                  int indent) {
    Line(indent, absl::StrCat("with T.block(\"", b.name, "\"):"));
    int in = indent + 1;
    for (size_t i = 0; i < b.iter_vars.size(); ++i) {
      const IterVarNode& iv = *b.iter_vars[i];
      std::string binding = values != nullptr && i < values->size() ? Expr((*values)[i]) : "?";
      Line(in, absl::StrCat(Expr(iv.var), " = T.axis.", IterKindName(iv.iter_kind), "(",
                            Expr(iv.dom->extent), ", ", binding, ")"));
    }
    if (pred) {
      const int64_t* c = AsConstInt(pred);
      if (c == nullptr || *c != 1) Line(in, absl::StrCat("T.where(", Expr(pred), ")"));
    }
    Line(in, absl::StrCat("T.reads(", Regions(b.reads), ")"));
    Line(in, absl::StrCat("T.writes(", Regions(b.writes), ")"));
    for (const Buffer& buf : b.alloc_buffers) {
      Line(in, absl::StrCat(Name(buf.get(), buf->name), " = T.alloc_buffer", BufferArgs(*buf)));
    }
    for (const MatchBufferRegion& m : b.match_buffers) {
      Line(in, absl::StrCat(Name(m->buffer.get(), m->buffer->name), " = T.match_buffer(",
                            Region(m->source), ", ", Shape(m->buffer->shape), ")"));
    }
    if (b.init) {
      Line(in, "with T.init():");
      PrintStmt(b.init, in + 1);
    }
    PrintStmt(b.body, in);
  }

  void PrintPrimFunc(const std::string& name, const PrimFunc& f, int indent) {
    Line(indent, "@T.prim_func");
    std::vector<std::string> params;
    for (const Var& p : f->params) {
      Buffer b = f->BufferOf(p);
      params.push_back(b ? absl::StrCat(Name(b.get(), b->name), ": ", BufferDecl(*b))
                         : absl::StrCat(Expr(p), ": T.", p->dtype.ToString()));
    }
    Line(indent, absl::StrCat("def ", name, "(", absl::StrJoin(params, ", "), "):"));
    PrintStmt(f->body, indent + 1);
  }

  // ---- Relax ----
  // As with ExprTo: the recursive printers append, so deep nests print in linear time.
  std::string SInfo(const relax::StructInfo& si) {
    std::string s;
    SInfoTo(si, &s);
    return s;
  }
  void SInfosTo(const std::vector<relax::StructInfo>& sis, std::string* s) {
    for (size_t i = 0; i < sis.size(); ++i) {
      if (i > 0) *s += ", ";
      SInfoTo(sis[i], s);
    }
  }
  void SInfoTo(const relax::StructInfo& si, std::string* s) {
    using namespace relax;
    if (Full(*s)) return;
    if (!si) {
      *s += "None";
    } else if (si.as<ObjectStructInfoNode>()) {
      *s += "R.Object";
    } else if (const auto* p = si.as<PrimStructInfoNode>()) {
      if (p->value) {
        ExprTo(p->value, &(*s += "R.Prim(value="));
        *s += ")";
      } else {
        absl::StrAppend(s, "R.Prim(\"", p->dtype.ToString(), "\")");
      }
    } else if (const auto* sh = si.as<ShapeStructInfoNode>()) {
      if (sh->values) {
        ExprsTo(*sh->values, &(*s += "R.Shape(["));
        *s += "])";
      } else {
        absl::StrAppend(s, "R.Shape(ndim=", sh->ndim, ")");
      }
    } else if (const auto* t = si.as<TensorStructInfoNode>()) {
      std::string dtype = absl::StrCat("\"", t->dtype.ToString(), "\"");
      if (const std::vector<PrimExpr>* dims = t->dims()) {
        absl::StrAppend(s, "R.Tensor(", Shape(*dims), ", ", dtype, ")");
      } else if (t->shape) {
        RExprTo(t->shape, &(*s += "R.Tensor("));
        absl::StrAppend(s, ", ", dtype, ")");
      } else {
        absl::StrAppend(s, "R.Tensor(", dtype, ", ndim=", t->ndim, ")");
      }
    } else if (const auto* t = si.as<TupleStructInfoNode>()) {
      SInfosTo(t->fields, &(*s += "R.Tuple("));
      *s += ")";
    } else if (const auto* f = si.as<FuncStructInfoNode>()) {
      *s += "R.Callable((";
      if (f->params) SInfosTo(*f->params, s);
      *s += "), ";
      SInfoTo(f->ret, s);
      *s += f->purity ? ")" : ", purity=False)";
    } else {
      *s += "?";
    }
  }

  std::string RExpr(const relax::Expr& e) {
    std::string s;
    RExprTo(e, &s);
    return s;
  }
  void RExprsTo(const std::vector<relax::Expr>& es, std::string* s) {
    for (size_t i = 0; i < es.size(); ++i) {
      if (i > 0) *s += ", ";
      RExprTo(es[i], s);
    }
  }
  void RExprTo(const relax::Expr& e, std::string* s) {
    using namespace relax;
    if (Full(*s)) return;
    if (!e) {
      *s += "None";
    } else if (const auto* n = e.as<relax::VarNode>()) {
      *s += Name(n, n->name_hint);
    } else if (const auto* n = e.as<GlobalVarNode>()) {
      absl::StrAppend(s, "cls.", n->name_hint);
    } else if (const auto* n = e.as<ConstantNode>()) {
      std::vector<std::string> dims;
      for (int64_t d : n->shape) dims.push_back(absl::StrCat(d));
      absl::StrAppend(s, "R.const(<", n->dtype.ToString(), " (", absl::StrJoin(dims, ", "), ")>)");
    } else if (const auto* n = e.as<TupleNode>()) {
      RExprsTo(n->fields, &(*s += "("));
      *s += n->fields.size() == 1 ? ",)" : ")";
    } else if (const auto* n = e.as<ShapeExprNode>()) {
      ExprsTo(n->values, &(*s += "R.shape(["));
      *s += "])";
    } else if (const auto* n = e.as<PrimValueNode>()) {
      ExprTo(n->value, &(*s += "R.prim_value("));
      *s += ")";
    } else if (const auto* n = e.as<relax::StringImmNode>()) {
      absl::StrAppend(s, "R.str(\"", n->value, "\")");
    } else if (const auto* n = e.as<DataTypeImmNode>()) {
      absl::StrAppend(s, "R.dtype(\"", n->value.ToString(), "\")");
    } else if (const auto* n = e.as<ExternFuncNode>()) {
      absl::StrAppend(s, "R.ExternFunc(\"", n->global_symbol, "\")");
    } else if (const auto* n = e.as<OpNode>()) {
      *s += n->name;
    } else if (const auto* n = e.as<TupleGetItemNode>()) {
      RExprTo(n->tuple, s);
      absl::StrAppend(s, "[", n->index, "]");
    } else if (const auto* n = e.as<relax::CallNode>()) {
      RExprTo(n->op, s);
      *s += "(";
      RExprsTo(n->args, s);
      bool first = n->args.empty();
      for (const auto& [key, value] : n->attrs) {
        absl::StrAppend(s, first ? "" : ", ", key, "=");
        if (value.as<PrimExprNode>()) {
          ExprTo(value.as_ref<PrimExprNode>(), s);
        } else {
          *s += "...";
        }
        first = false;
      }
      if (!n->sinfo_args.empty()) {
        SInfosTo(n->sinfo_args, &(*s += absl::StrCat(first ? "" : ", ", "sinfo_args=[")));
        *s += "]";
      }
      *s += ")";
    } else {
      // If, SeqExpr and Function are statement-like: print them on their own lines, into `s`
      // (moved in and out of out_, which the line printers append to).
      std::string saved;
      if (s != &out_) {
        saved = std::move(out_);
        out_ = std::move(*s);
      }
      out_ += "{\n";
      if (const auto* n = e.as<FunctionNode>()) {
        PrintFunction("local", *n, 0);
      } else {
        PrintBody(e, 0, /*is_return=*/false);
      }
      out_ += "}";
      if (s != &out_) {
        *s = std::move(out_);
        out_ = std::move(saved);
      }
    }
  }

  void PrintBinding(const relax::Binding& b, int indent) {
    using namespace relax;
    if (Full(out_)) return;
    if (!b) {
      Line(indent, "<null binding>");
      return;
    }
    std::string lhs =
        b->var ? absl::StrCat(RExpr(b->var), ": ", SInfo(b->var->struct_info())) : "_";
    if (const auto* mc = b.as<MatchCastNode>()) {
      Line(indent, absl::StrCat(lhs, " = R.match_cast(", RExpr(b->value), ", ",
                                SInfo(mc->struct_info), ")"));
      return;
    }
    if (const auto* iff = b->value.as<IfNode>()) {
      Line(indent, absl::StrCat("if ", RExpr(iff->cond), ":"));
      PrintBody(iff->true_branch, indent + 1, false);
      Line(indent + 1, absl::StrCat(lhs, " = ", RExpr(BranchResult(iff->true_branch))));
      Line(indent, "else:");
      PrintBody(iff->false_branch, indent + 1, false);
      Line(indent + 1, absl::StrCat(lhs, " = ", RExpr(BranchResult(iff->false_branch))));
      return;
    }
    if (const auto* f = b->value.as<FunctionNode>()) {
      PrintFunction(RExpr(b->var), *f, indent);
      return;
    }
    // Straight into out_: a value nesting further bindings is not copied once per level.
    Indent(indent);
    absl::StrAppend(&out_, lhs, " = ");
    RExprTo(b->value, &out_);
    out_ += "\n";
  }

  static relax::Expr BranchResult(const relax::Expr& e) {
    if (const auto* seq = e.as<relax::SeqExprNode>()) return seq->body;
    return e;
  }

  // Prints the bindings of a SeqExpr (or a bare expression) and, if is_return, the return.
  void PrintBody(const relax::Expr& e, int indent, bool is_return) {
    using namespace relax;
    if (const auto* seq = e.as<SeqExprNode>()) {
      for (const BindingBlock& block : seq->blocks) {
        if (!block) {
          Line(indent, "<null block>");
        } else if (block->is_dataflow()) {
          Line(indent, "with R.dataflow():");
          std::vector<std::string> outputs;
          for (const Binding& b : block->bindings) {
            PrintBinding(b, indent + 1);
            if (b && b->var && !b->var->is_dataflow()) outputs.push_back(RExpr(b->var));
          }
          Line(indent + 1, absl::StrCat("R.output(", absl::StrJoin(outputs, ", "), ")"));
        } else {
          for (const Binding& b : block->bindings) PrintBinding(b, indent);
        }
      }
      if (is_return) Line(indent, absl::StrCat("return ", RExpr(seq->body)));
    } else if (is_return) {
      Line(indent, absl::StrCat("return ", RExpr(e)));
    }
  }

  void PrintFunction(const std::string& name, const relax::FunctionNode& f, int indent) {
    Line(indent, f.is_pure ? "@R.function" : "@R.function(pure=False)");
    std::vector<std::string> params;
    for (const relax::Var& p : f.params) {
      params.push_back(p ? absl::StrCat(RExpr(p), ": ", SInfo(p->struct_info())) : "None");
    }
    std::string ret = f.ret_struct_info ? absl::StrCat(" -> ", SInfo(f.ret_struct_info)) : "";
    Line(indent, absl::StrCat("def ", name, "(", absl::StrJoin(params, ", "), ")", ret, ":"));
    PrintBody(f.body, indent + 1, true);
  }

  void PrintModule(const IRModuleNode& mod) {
    Line(0, "@I.ir_module");
    Line(0, "class Module:");
    bool first = true;
    for (const auto& [name, entry] : mod.functions) {
      if (!first) out_ += "\n";
      first = false;
      if (const auto* f = entry.second.as<relax::FunctionNode>()) {
        PrintFunction(name, *f, 1);
      } else {
        PrintPrimFunc(name, entry.second.as_ref<PrimFuncNode>(), 1);
      }
    }
  }

  std::string out_;
  absl::flat_hash_map<const Object*, std::string> names_;
  absl::flat_hash_set<std::string> used_;
  absl::flat_hash_map<std::string, int> next_suffix_;
};

}  // namespace

std::string DebugPrint(const ObjectRef& node) { return Printer().Print(node); }

}  // namespace kiln::ir
