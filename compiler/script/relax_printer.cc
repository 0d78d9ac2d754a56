// The TVMScript printer's Relax: StructInfo, expressions, bindings and functions (printer_impl.h).
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
#include "compiler/script/printer_impl.h"
#include "compiler/script/script_common.h"

namespace kiln::script::printer {

// StructInfo; in a signature, symbolic dimensions are quoted ("n * 4").
std::string Printer::SInfo(const relax::StructInfo& s, bool signature) {
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
    if (sh->values) return absl::StrCat("R.Shape([", absl::StrJoin(dims(*sh->values), ", "), "])");
    return sh->ndim == -1 ? "R.Shape()" : absl::StrCat("R.Shape(ndim=", sh->ndim, ")");
  }
  if (const auto* t = s.as<TensorStructInfoNode>()) {
    std::vector<std::string> args;
    if (const std::vector<PrimExpr>* ds = t->dims()) {
      std::vector<std::string> parts = dims(*ds);
      args.push_back(absl::StrCat("(", absl::StrJoin(parts, ", "), parts.size() == 1 ? ",)" : ")"));
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

std::string Printer::RExprs(const std::vector<relax::Expr>& es) {
  std::vector<std::string> parts;
  for (const relax::Expr& e : es) parts.push_back(RExpr(e));
  return absl::StrJoin(parts, ", ");
}

std::string Printer::SInfoArgs(const std::vector<relax::StructInfo>& sinfos) {
  if (sinfos.size() == 1) return SInfo(sinfos[0], false);
  std::vector<std::string> parts;
  for (const relax::StructInfo& s : sinfos) parts.push_back(SInfo(s, false));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

std::string Printer::RExpr(const relax::Expr& e) {
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

std::string Printer::OpName(const std::string& name) {
  return absl::StartsWith(name, "relax.") ? absl::StrCat("R.", name.substr(6))
                                          : absl::StrCat("R.", name);
}

std::string Printer::CallText(const relax::CallNode& c) {
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
  for (const auto& [key, value] : c.attrs) args.push_back(absl::StrCat(key, "=", AttrValue(value)));
  if (!c.sinfo_args.empty()) args.push_back(absl::StrCat("sinfo_args=", SInfoArgs(c.sinfo_args)));
  return absl::StrCat(name, "(", absl::StrJoin(args, ", "), ")");
}

std::string Printer::ConstantText(const relax::ConstantNode& c) {
  int64_t count = 1;
  for (int64_t d : c.shape) count *= d;
  if (count > kMaxInlineElements) {
    auto [it, added] = metadata_index_.emplace(&c, metadata_.size());
    if (added) metadata_.push_back(&c);
    return absl::StrCat("metadata[\"relax.expr.Constant\"][", it->second, "]");
  }
  ConstantFormat fmt;
  std::string data = FormatConstantData(c.dtype, c.shape, c.bytes ? *c.bytes : std::string(), &fmt);
  std::string out = absl::StrCat("R.const(", data, ", ", Quote(c.dtype.ToString()));
  if (fmt.needs_shape) {
    std::vector<std::string> dims;
    for (int64_t d : c.shape) dims.push_back(absl::StrCat(d));
    absl::StrAppend(&out, ", shape=(", absl::StrJoin(dims, ", "), dims.size() == 1 ? ",)" : ")");
  }
  return out + ")";
}

// The shape variables a Relax function mentions, in first-appearance order.
void Printer::CollectShapeVars(const relax::FunctionNode& f, std::vector<const ir::VarNode*>* out) {
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

void Printer::PrintRelaxFunction(const std::string& name, const relax::FunctionNode& f, int indent,
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

bool Printer::UsesGlobals(const relax::FunctionNode& f) {
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
void Printer::PrintBody(const relax::Expr& e, int indent, const relax::Binding* result) {
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

std::string Printer::BindingLhs(const relax::Binding& b) {
  if (!b->var) return "_";
  std::string name = RVar(b->var.get());
  if (!b->var->struct_info()) return name;
  return absl::StrCat(name, ": ", SInfo(b->var->struct_info(), false));
}

void Printer::PrintBinding(const relax::Binding& b, int indent) {
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
  // TVM's form for a call made for its effect: a value of no fields bound to an unused `_` is
  // the bare expression.
  const auto* none = b->var && b->var->name_hint == "_" && b->var->struct_info()
                         ? b->var->struct_info().as<relax::TupleStructInfoNode>()
                         : nullptr;
  if (none != nullptr && none->fields.empty() && b->value.as<relax::CallNode>()) {
    Line(indent, RExpr(b->value));
    return;
  }
  Line(indent, absl::StrCat(BindingLhs(b), " = ", RExpr(b->value)));
}
}  // namespace kiln::script::printer
