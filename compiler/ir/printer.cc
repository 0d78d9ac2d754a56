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

  // Indentation stops growing at kMaxIndent levels: a statement nest 20,000 deep would otherwise
  // print gigabytes of spaces (this is a debugging format; nothing parses it back).
  static constexpr int kMaxIndent = 64;
  void Line(int indent, const std::string& text) {
    out_.append(static_cast<size_t>(std::min(indent, kMaxIndent)) * 4, ' ');
    out_ += text;
    out_ += "\n";
  }

  // ---- TIR ----
  std::string Exprs(const std::vector<PrimExpr>& es) {
    std::vector<std::string> parts;
    for (const PrimExpr& e : es) parts.push_back(Expr(e));
    return absl::StrJoin(parts, ", ");
  }

  std::string Expr(const PrimExpr& e) {
    if (!e) return "None";
    if (const auto* n = e.as<IntImmNode>()) {
      if (n->dtype == DataType::Int(64) || n->dtype == DataType::Int(32)) {
        return absl::StrCat(n->value);
      }
      if (n->dtype.is_bool()) return n->value ? "True" : "False";
      return absl::StrCat("T.", n->dtype.ToString(), "(", n->value, ")");
    }
    if (const auto* n = e.as<FloatImmNode>()) {
      return absl::StrCat("T.", n->dtype.ToString(), "(", n->value, ")");
    }
    if (const auto* n = e.as<StringImmNode>()) return absl::StrCat("\"", n->value, "\"");
    if (const auto* n = e.as<VarNode>()) return Name(n, n->name);
    if (const auto* n = e.as<CastNode>()) {
      return absl::StrCat("T.Cast(\"", n->dtype.ToString(), "\", ", Expr(n->value), ")");
    }
    if (const auto* n = e.as<BinaryNode>()) {
      if (const char* op = BinaryInfixSymbol(n->kind())) {
        return absl::StrCat("(", Expr(n->a), " ", op, " ", Expr(n->b), ")");
      }
      return absl::StrCat(BinaryCallName(n->kind()), "(", Expr(n->a), ", ", Expr(n->b), ")");
    }
    if (const auto* n = e.as<NotNode>()) return absl::StrCat("(not ", Expr(n->a), ")");
    if (const auto* n = e.as<SelectNode>()) {
      return absl::StrCat("T.Select(", Expr(n->condition), ", ", Expr(n->true_value), ", ",
                          Expr(n->false_value), ")");
    }
    if (const auto* n = e.as<BufferLoadNode>()) {
      return absl::StrCat(Name(n->buffer.get(), n->buffer->name), "[", Exprs(n->indices), "]");
    }
    if (const auto* n = e.as<RampNode>()) {
      return absl::StrCat("T.Ramp(", Expr(n->base), ", ", Expr(n->stride), ", ", n->lanes, ")");
    }
    if (const auto* n = e.as<BroadcastNode>()) {
      return absl::StrCat("T.Broadcast(", Expr(n->value), ", ", n->lanes, ")");
    }
    if (const auto* n = e.as<LetNode>()) {
      return absl::StrCat("T.Let(", Expr(n->var), ", ", Expr(n->value), ", ", Expr(n->body), ")");
    }
    if (const auto* n = e.as<CallNode>()) {
      return absl::StrCat("T.", n->op, "(", Exprs(n->args), ")");
    }
    return NodeKindName(e->kind());
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
    if (!s) return;
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
  std::string SInfo(const relax::StructInfo& s) {
    using namespace relax;
    if (!s) return "None";
    if (s.as<ObjectStructInfoNode>()) return "R.Object";
    if (const auto* p = s.as<PrimStructInfoNode>()) {
      if (p->value) return absl::StrCat("R.Prim(value=", Expr(p->value), ")");
      return absl::StrCat("R.Prim(\"", p->dtype.ToString(), "\")");
    }
    if (const auto* sh = s.as<ShapeStructInfoNode>()) {
      if (sh->values) return absl::StrCat("R.Shape([", Exprs(*sh->values), "])");
      return absl::StrCat("R.Shape(ndim=", sh->ndim, ")");
    }
    if (const auto* t = s.as<TensorStructInfoNode>()) {
      std::string dtype = absl::StrCat("\"", t->dtype.ToString(), "\"");
      if (const std::vector<PrimExpr>* dims = t->dims()) {
        return absl::StrCat("R.Tensor(", Shape(*dims), ", ", dtype, ")");
      }
      if (t->shape) return absl::StrCat("R.Tensor(", RExpr(t->shape), ", ", dtype, ")");
      return absl::StrCat("R.Tensor(", dtype, ", ndim=", t->ndim, ")");
    }
    if (const auto* t = s.as<TupleStructInfoNode>()) {
      std::vector<std::string> parts;
      for (const StructInfo& f : t->fields) parts.push_back(SInfo(f));
      return absl::StrCat("R.Tuple(", absl::StrJoin(parts, ", "), ")");
    }
    if (const auto* f = s.as<FuncStructInfoNode>()) {
      std::vector<std::string> parts;
      if (f->params) {
        for (const StructInfo& p : *f->params) parts.push_back(SInfo(p));
      }
      return absl::StrCat("R.Callable((", absl::StrJoin(parts, ", "), "), ", SInfo(f->ret),
                          f->purity ? "" : ", purity=False", ")");
    }
    return "?";
  }

  std::string RExprs(const std::vector<relax::Expr>& es) {
    std::vector<std::string> parts;
    for (const relax::Expr& e : es) parts.push_back(RExpr(e));
    return absl::StrJoin(parts, ", ");
  }

  std::string RExpr(const relax::Expr& e) {
    using namespace relax;
    if (!e) return "None";
    if (const auto* n = e.as<relax::VarNode>()) return Name(n, n->name_hint);
    if (const auto* n = e.as<GlobalVarNode>()) return absl::StrCat("cls.", n->name_hint);
    if (const auto* n = e.as<ConstantNode>()) {
      std::vector<std::string> dims;
      for (int64_t d : n->shape) dims.push_back(absl::StrCat(d));
      return absl::StrCat("R.const(<", n->dtype.ToString(), " (", absl::StrJoin(dims, ", "), ")>)");
    }
    if (const auto* n = e.as<TupleNode>()) {
      return absl::StrCat("(", RExprs(n->fields), n->fields.size() == 1 ? ",)" : ")");
    }
    if (const auto* n = e.as<ShapeExprNode>())
      return absl::StrCat("R.shape([", Exprs(n->values), "])");
    if (const auto* n = e.as<PrimValueNode>())
      return absl::StrCat("R.prim_value(", Expr(n->value), ")");
    if (const auto* n = e.as<relax::StringImmNode>())
      return absl::StrCat("R.str(\"", n->value, "\")");
    if (const auto* n = e.as<DataTypeImmNode>()) {
      return absl::StrCat("R.dtype(\"", n->value.ToString(), "\")");
    }
    if (const auto* n = e.as<ExternFuncNode>()) {
      return absl::StrCat("R.ExternFunc(\"", n->global_symbol, "\")");
    }
    if (const auto* n = e.as<OpNode>()) return n->name;
    if (const auto* n = e.as<TupleGetItemNode>())
      return absl::StrCat(RExpr(n->tuple), "[", n->index, "]");
    if (const auto* n = e.as<relax::CallNode>()) {
      std::vector<std::string> parts;
      for (const relax::Expr& a : n->args) parts.push_back(RExpr(a));
      for (const auto& [key, value] : n->attrs) {
        parts.push_back(absl::StrCat(
            key, "=", value.as<PrimExprNode>() ? Expr(value.as_ref<PrimExprNode>()) : "..."));
      }
      if (!n->sinfo_args.empty()) {
        std::vector<std::string> sinfos;
        for (const StructInfo& si : n->sinfo_args) sinfos.push_back(SInfo(si));
        parts.push_back(absl::StrCat("sinfo_args=[", absl::StrJoin(sinfos, ", "), "]"));
      }
      std::string s = absl::StrCat(RExpr(n->op), "(", absl::StrJoin(parts, ", "));
      return s + ")";
    }
    // If, SeqExpr and Function are statement-like: print them on their own lines.
    std::string saved;
    saved.swap(out_);
    if (const auto* n = e.as<FunctionNode>()) {
      PrintFunction("local", *n, 0);
    } else {
      PrintBody(e, 0, /*is_return=*/false);
    }
    std::string text;
    text.swap(out_);
    out_ = std::move(saved);
    return absl::StrCat("{\n", text, "}");
  }

  void PrintBinding(const relax::Binding& b, int indent) {
    using namespace relax;
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
    Line(indent, absl::StrCat(lhs, " = ", RExpr(b->value)));
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
