#include "compiler/relax/well_formed.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/relax_functor.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/relax/op_registry.h"
#include "compiler/relax/struct_info.h"

namespace kiln::ir::relax {

std::string WellFormedViolation::ToString() const {
  std::string where;
  if (!function.empty()) where = absl::StrCat(" in function '", function, "'");
  if (!binding.empty())
    absl::StrAppend(&where, where.empty() ? " in" : ",", " binding '", binding, "'");
  return absl::StrCat("[", rule, "]", where, where.empty() ? " " : ": ", message);
}

namespace {

// Which global functions call which, directly or through others (for WF7 and WF8). Its strongly
// connected components are found once (Tarjan's algorithm, without recursion), so each question is
// answered in constant time: a depth-first search per function would cost a chain of n functions
// n^2.
class CallGraph {
 public:
  explicit CallGraph(const IRModuleNode& mod) {
    for (const auto& [name, entry] : mod.functions) {
      const auto* f = entry.second.as<FunctionNode>();
      if (f == nullptr) continue;
      std::set<std::string>& callees = edges_[name];
      CollectGlobals(Expr(f), &callees);
    }
    FindComponents();
  }
  // True when `f` can end up calling itself.
  bool Recursive(const std::string& f) const {
    auto it = index_.find(f);
    return it != index_.end() && cyclic_[component_[it->second]];
  }
  // True when `callee`, which `caller` calls, can end up calling `caller` again.
  bool CallsBack(const std::string& callee, const std::string& caller) const {
    auto a = index_.find(callee), b = index_.find(caller);
    return a != index_.end() && b != index_.end() && component_[a->second] == component_[b->second];
  }

 private:
  void FindComponents() {
    std::vector<std::vector<int>> out;
    for (const auto& [name, callees] : edges_)
      index_.emplace(name, static_cast<int>(index_.size()));
    out.resize(index_.size());
    std::vector<bool> self_call(index_.size(), false);
    for (const auto& [name, callees] : edges_) {
      const int from = index_.at(name);
      for (const std::string& g : callees) {
        auto it = index_.find(g);
        if (it == index_.end()) continue;  // a PrimFunc or an unknown name: calls nothing back
        out[from].push_back(it->second);
        if (it->second == from) self_call[from] = true;
      }
    }
    const int n = static_cast<int>(out.size());
    std::vector<int> order(n, -1), low(n, 0), stack;
    std::vector<bool> on_stack(n, false);
    component_.assign(n, -1);
    int next = 0;
    for (int root = 0; root < n; ++root) {
      if (order[root] >= 0) continue;
      std::vector<std::pair<int, size_t>> walk = {{root, 0}};  // node, next edge to follow
      order[root] = low[root] = next++;
      stack.push_back(root);
      on_stack[root] = true;
      while (!walk.empty()) {
        auto& [v, edge] = walk.back();
        if (edge < out[v].size()) {
          const int w = out[v][edge++];
          if (order[w] < 0) {
            order[w] = low[w] = next++;
            stack.push_back(w);
            on_stack[w] = true;
            walk.push_back({w, 0});
          } else if (on_stack[w]) {
            low[v] = std::min(low[v], order[w]);
          }
          continue;
        }
        const int done = v;
        walk.pop_back();
        if (!walk.empty()) low[walk.back().first] = std::min(low[walk.back().first], low[done]);
        if (low[done] != order[done]) continue;
        const int id = static_cast<int>(cyclic_.size());
        int size = 0, w = -1;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          component_[w] = id;
          ++size;
        } while (w != done);
        cyclic_.push_back(size > 1 || self_call[done]);
      }
    }
  }

  static void CollectGlobals(const Expr& e, std::set<std::string>* out) {
    if (!e) return;
    if (const auto* gv = e.as<GlobalVarNode>()) {
      out->insert(gv->name_hint);
    } else if (const auto* t = e.as<TupleNode>()) {
      for (const Expr& f : t->fields) CollectGlobals(f, out);
    } else if (const auto* c = e.as<CallNode>()) {
      CollectGlobals(c->op, out);
      for (const Expr& a : c->args) CollectGlobals(a, out);
    } else if (const auto* t = e.as<TupleGetItemNode>()) {
      CollectGlobals(t->tuple, out);
    } else if (const auto* i = e.as<IfNode>()) {
      CollectGlobals(i->cond, out);
      CollectGlobals(i->true_branch, out);
      CollectGlobals(i->false_branch, out);
    } else if (const auto* s = e.as<SeqExprNode>()) {
      for (const BindingBlock& b : s->blocks) {
        for (const Binding& binding : b->bindings) CollectGlobals(binding->value, out);
      }
      CollectGlobals(s->body, out);
    } else if (const auto* f = e.as<FunctionNode>()) {
      CollectGlobals(f->body, out);
    }
  }
  std::map<std::string, std::set<std::string>> edges_;
  std::map<std::string, int> index_;
  std::vector<int> component_;  // by index
  std::vector<bool> cyclic_;    // by component
};

// Where a StructInfo appears decides which shape variables it may bind.
enum class AnnotationSite {
  kParam,      // binds lone variables (declared by the caller beforehand)
  kMatchCast,  // binds lone variables that are not yet bound
  kUse,        // binds nothing: every variable must be in scope
  kInferred,   // a variable's StructInfo that may have been inferred
};

class Checker {
 public:
  Checker(const IRModule& mod, const WellFormedOptions& options)
      : mod_(mod), options_(options), calls_(*mod) {}

  std::vector<WellFormedViolation> Run() {
    CheckModuleRules();
    for (const auto& [name, entry] : mod_->functions) {
      const auto* f = entry.second.as<FunctionNode>();
      if (f == nullptr) continue;
      function_ = name;
      CollectBoundVars(Expr(f));
      VisitFunction(*f, /*is_global=*/true, /*self=*/nullptr);
      bound_anywhere_.clear();
      defined_ever_.clear();
    }
    return std::move(violations_);
  }

 private:
  // ---- Reporting ---------------------------------------------------------------------------
  void Report(int criterion, std::string message) {
    violations_.push_back({absl::StrCat("WF", criterion), function_, binding_, std::move(message)});
  }
  void ReportNF(int criterion, std::string message) {
    violations_.push_back({absl::StrCat("NF", criterion), function_, binding_, std::move(message)});
  }

  // ---- Module rules (WF12, WF13) -----------------------------------------------------------
  void CheckModuleRules() {
    bool any_external = false;
    for (const auto& [name, entry] : mod_->functions) {
      const Attrs* attrs = nullptr;
      if (const auto* f = entry.second.as<FunctionNode>()) attrs = &f->attrs;
      if (const auto* f = entry.second.as<PrimFuncNode>()) attrs = &f->attrs;
      if (attrs == nullptr) continue;
      ObjectRef symbol = GetAttr(*attrs, "global_symbol");
      if (!symbol) continue;
      any_external = true;
      const auto* s = symbol.as<ir::StringImmNode>();
      if (s == nullptr || s->value != entry.first->name_hint) {
        function_ = name;
        Report(13,
               absl::StrCat("global_symbol ",
                            s != nullptr ? absl::StrCat("'", s->value, "'") : "(not a string)",
                            " differs from the function's name '", entry.first->name_hint, "'"));
        function_.clear();
      }
    }
    if (!any_external && !mod_->functions.empty()) {
      Report(12, "no function has a global_symbol: the module has no entry point");
    }
  }

  // ---- Scopes ------------------------------------------------------------------------------
  struct Scope {
    std::unordered_set<const Object*> vars;        // Relax variables
    std::unordered_set<const Object*> shape_vars;  // TIR variables used as shape variables
  };
  bool VarInScope(const Object* v) const {
    for (const Scope& s : scopes_) {
      if (s.vars.count(v) > 0) return true;
    }
    return false;
  }
  bool ShapeVarInScope(const Object* v) const {
    for (const Scope& s : scopes_) {
      if (s.shape_vars.count(v) > 0) return true;
    }
    return false;
  }

  void CollectBoundVars(const Expr& e) {
    struct Collector : ExprVisitor {
      void VisitVarDef(const Var& v) override { out->insert(v.get()); }
      std::unordered_set<const Object*>* out;
    } collector;
    collector.out = &bound_anywhere_;
    collector.VisitExpr(e);
  }

  void DefineVar(const Var& v) {
    if (!defined_ever_.insert(v.get()).second) {
      Report(2, absl::StrCat("variable '", v->name_hint, "' is bound more than once"));
    }
    scopes_.back().vars.insert(v.get());
    if (v->is_dataflow()) live_dataflow_.insert(v.get());
  }

  // ---- StructInfo annotations (WF4, 5, 6, 10, 14-17, 19, 20, 22) ---------------------------
  void CheckDataType(DataType dtype, const char* what) {
    if (dtype.is_void()) return;
    int bits = dtype.bits();
    bool ok = false;
    switch (dtype.code()) {
      case DataType::Code::kInt:
      case DataType::Code::kUInt:
        ok = bits == 1 || bits == 8 || bits == 16 || bits == 32 || bits == 64;
        break;
      case DataType::Code::kFloat:
        ok = bits == 16 || bits == 32 || bits == 64;
        break;
      case DataType::Code::kBFloat:
        ok = bits == 16;
        break;
      case DataType::Code::kHandle:
        ok = false;  // only Void is a valid handle type in Relax
        break;
    }
    if (!ok || dtype.lanes() != 1) {
      Report(20, absl::StrCat("the ", what, " dtype ", dtype.ToString(),
                              " is not a Relax scalar type (int/uint 1-64 bits, float 16-64, one "
                              "lane, or void)"));
    }
  }

  // Variables used in `e` must be bound shape variables.
  void CheckShapeVarUses(const PrimExpr& e, int criterion, const std::string& where) {
    if (!e) return;
    PostOrderVisit(e, [&](const PrimExpr& sub) {
      const auto* v = sub.as<ir::VarNode>();
      if (v != nullptr && !ShapeVarInScope(v)) {
        Report(criterion, absl::StrCat("shape variable '", v->name, "' in ", where,
                                       " is used before it is bound"));
      }
    });
  }

  // Dimension lists: lone variables bind at param/match_cast sites (criterion 5).
  void CheckDims(const std::vector<PrimExpr>& dims, AnnotationSite site, int criterion,
                 const std::string& where) {
    for (const PrimExpr& d : dims) {
      if (!d) continue;
      if (!d->dtype.is_integral()) {
        Report(criterion, absl::StrCat("a dimension of ", where, " is not an integer"));
      }
      const auto* v = d.as<ir::VarNode>();
      if (v != nullptr && site == AnnotationSite::kMatchCast && !ShapeVarInScope(v)) {
        scopes_.back().shape_vars.insert(v);
        continue;
      }
      CheckShapeVarUses(d, criterion, where);
    }
  }

  void CheckAnnotation(const StructInfo& sinfo, AnnotationSite site, const std::string& where) {
    if (!sinfo) return;
    if (const auto* p = sinfo.as<PrimStructInfoNode>()) {
      if (!p->dtype.is_integral() && p->dtype.code() != DataType::Code::kFloat &&
          p->dtype.code() != DataType::Code::kBFloat) {
        Report(19, absl::StrCat("R.Prim in ", where, " has dtype ", p->dtype.ToString(),
                                "; only int, uint and float are allowed"));
      } else {
        CheckDataType(p->dtype, "R.Prim");
      }
      if (p->value) {
        if (p->value->dtype != p->dtype) {
          Report(22, absl::StrCat("R.Prim in ", where, " has dtype ", p->dtype.ToString(),
                                  " but its value is ", p->value->dtype.ToString()));
        }
        CheckDims({p->value}, site, 16, where);
      }
    } else if (const auto* s = sinfo.as<ShapeStructInfoNode>()) {
      if (s->values) {
        if (static_cast<int>(s->values->size()) != s->ndim) {
          Report(10, absl::StrCat("R.Shape in ", where, " has ndim ", s->ndim, " but ",
                                  s->values->size(), " values"));
        }
        CheckDims(*s->values, site, 15, where);
      }
    } else if (const auto* t = sinfo.as<TensorStructInfoNode>()) {
      CheckDataType(t->dtype, "R.Tensor");
      if (t->shape) {
        if (const auto* shape = t->shape.as<ShapeExprNode>()) {
          if (static_cast<int>(shape->values.size()) != t->ndim) {
            Report(10, absl::StrCat("R.Tensor in ", where, " has ndim ", t->ndim,
                                    " but a shape of ", shape->values.size(), " dimensions"));
          }
          CheckDims(shape->values, site, 14, where);
        } else if (const auto* var = t->shape.as<VarNode>()) {
          if (!VarInScope(var)) {
            Report(14, absl::StrCat("R.Tensor in ", where, " uses shape variable '", var->name_hint,
                                    "', which is not in scope"));
          }
        } else {
          Report(14, absl::StrCat("R.Tensor in ", where, " has a ", NodeKindName(t->shape->kind()),
                                  " as its shape; only a ShapeExpr or a Var is allowed"));
        }
      }
    } else if (const auto* t = sinfo.as<TupleStructInfoNode>()) {
      for (const StructInfo& f : t->fields) CheckAnnotation(f, site, where);
    } else if (const auto* f = sinfo.as<FuncStructInfoNode>()) {
      bool has_derive = !f->derive_func.empty();
      if (f->params && has_derive) {
        Report(17, absl::StrCat("R.Callable in ", where, " defines both params and derive_func"));
      } else if (!f->params && !has_derive && site != AnnotationSite::kInferred) {
        Report(17,
               absl::StrCat("R.Callable in ", where, " defines neither params nor derive_func"));
      }
      // A function type's parameters bind their own shape variables, scoped to the type.
      scopes_.emplace_back();
      if (f->params) {
        for (const StructInfo& p : *f->params) {
          for (const ir::Var& v : BindableShapeVars(p)) scopes_.back().shape_vars.insert(v.get());
        }
        for (const StructInfo& p : *f->params) CheckAnnotation(p, AnnotationSite::kUse, where);
      }
      CheckAnnotation(f->ret, AnnotationSite::kUse, where);
      scopes_.pop_back();
    }
  }

  // ---- Functions ---------------------------------------------------------------------------
  // `self`: the variable a local function is bound to (for recursion), if any.
  void VisitFunction(const FunctionNode& f, bool is_global, const VarNode* self) {
    // A local function sees no DataflowVar of the block it is defined in (WF11).
    std::unordered_set<const Object*> saved_live = std::move(live_dataflow_);
    std::unordered_set<const Object*> saved_hidden = hidden_dataflow_;
    hidden_dataflow_.insert(saved_live.begin(), saved_live.end());
    live_dataflow_.clear();
    bool saved_in_dataflow = in_dataflow_;
    in_dataflow_ = false;
    const VarNode* saved_self = local_self_;
    local_self_ = self;
    std::string saved_binding = binding_;
    binding_.clear();

    scopes_.emplace_back();
    // WF6: parameters may bind each other's shape variables in any order.
    for (const Var& p : f.params) {
      if (!p) continue;
      for (const ir::Var& v : BindableShapeVars(p->struct_info())) {
        scopes_.back().shape_vars.insert(v.get());
      }
    }
    for (const Var& p : f.params) {
      if (!p) continue;
      if (p->is_dataflow())
        Report(1, absl::StrCat("parameter '", p->name_hint, "' is a DataflowVar"));
      if (!p->struct_info()) {
        Report(14, absl::StrCat("parameter '", p->name_hint, "' has no StructInfo annotation"));
      }
      for (const ir::Var& v : ShapeVarsIn(p->struct_info())) {
        if (!ShapeVarInScope(v.get())) {
          Report(6, absl::StrCat("shape variable '", v->name, "' of parameter '", p->name_hint,
                                 "' never appears in a binding position of the signature"));
          scopes_.back().shape_vars.insert(v.get());  // report once
        }
      }
      CheckAnnotation(p->struct_info(), AnnotationSite::kParam,
                      absl::StrCat("parameter '", p->name_hint, "'"));
      DefineVar(p);
    }
    if (f.ret_struct_info) {
      for (const ir::Var& v : ShapeVarsIn(f.ret_struct_info)) {
        if (!ShapeVarInScope(v.get())) {
          Report(4, absl::StrCat("the return annotation uses shape variable '", v->name,
                                 "', which is not bound by the parameters or an outer scope"));
        }
      }
      CheckAnnotation(f.ret_struct_info, AnnotationSite::kUse, "the return annotation");
    }
    bool recursive =
        is_global ? calls_.Recursive(function_) : self != nullptr && UsesVar(f.body, self);
    if (recursive && !f.ret_struct_info) {
      Report(8, "the function is recursive but has no return StructInfo annotation");
    }
    if (ObjectRef force_pure = GetAttr(f.attrs, "relax.force_pure")) {
      const auto* flag = force_pure.as<IntImmNode>();
      if ((flag == nullptr || flag->value != 0) && !f.is_pure) {
        Report(21, "the function has relax.force_pure but is_pure is false");
      }
    }
    if (options_.check_normal_form && !f.body.as<SeqExprNode>()) {
      ReportNF(3, "the function body is not a SeqExpr");
    }
    VisitScope(f.body);
    scopes_.pop_back();

    binding_ = saved_binding;
    local_self_ = saved_self;
    in_dataflow_ = saved_in_dataflow;
    hidden_dataflow_ = std::move(saved_hidden);
    live_dataflow_ = std::move(saved_live);
  }

  static bool UsesVar(const Expr& e, const VarNode* var) {
    struct Finder : ExprVisitor {
      void VisitExpr(const Expr& e) override {
        if (e.get() == target) found = true;
        if (!found) ExprVisitor::VisitExpr(e);
      }
      const Object* target = nullptr;
      bool found = false;
    } finder;
    finder.target = var;
    finder.VisitExpr(e);
    return finder.found;
  }

  // A function body or If branch: a scope of its own.
  void VisitScope(const Expr& e) {
    scopes_.emplace_back();
    if (const auto* seq = e.as<SeqExprNode>()) {
      VisitSeqContents(*seq);
    } else {
      VisitExpr(e);
    }
    scopes_.pop_back();
  }

  void VisitSeqContents(const SeqExprNode& seq) {
    for (size_t i = 0; i < seq.blocks.size(); ++i) {
      const BindingBlock& block = seq.blocks[i];
      if (options_.check_normal_form) {
        if (block->bindings.empty()) ReportNF(4, "an empty binding block");
        if (i > 0 && seq.blocks[i - 1]->is_dataflow() == block->is_dataflow()) {
          ReportNF(4, "adjacent binding blocks of the same kind are not consolidated");
        }
      }
      VisitBlock(block);
    }
    if (options_.check_normal_form && seq.body && !IsNormalLeaf(seq.body)) {
      ReportNF(1, absl::StrCat("the body of a SeqExpr is a ", NodeKindName(seq.body->kind()),
                               ", not a leaf"));
    }
    VisitExpr(seq.body);
  }

  void VisitBlock(const BindingBlock& block) {
    in_dataflow_ = block->is_dataflow();
    for (const Binding& b : block->bindings) VisitBinding(b);
    in_dataflow_ = false;
    // DataflowVars leave scope with their block.
    for (const Object* v : live_dataflow_) {
      scopes_.back().vars.erase(v);
      dead_dataflow_.insert(v);
    }
    live_dataflow_.clear();
  }

  void VisitBinding(const Binding& b) {
    binding_ = b->var ? b->var->name_hint : "_";
    const Var& var = b->var;
    if (var && var->is_dataflow() && !in_dataflow_) {
      Report(1,
             absl::StrCat("DataflowVar '", var->name_hint, "' is bound outside a dataflow block"));
    }
    if (const auto* mc = b.as<MatchCastNode>()) {
      if (options_.check_normal_form && mc->value && !IsNormalLeaf(mc->value)) {
        ReportNF(1, "the value of a match_cast is not a leaf");
      }
      VisitExpr(mc->value);
      CheckAnnotation(mc->struct_info, AnnotationSite::kMatchCast, "the match_cast target");
      if (var) {
        CheckAnnotation(var->struct_info(), AnnotationSite::kInferred,
                        absl::StrCat("the annotation of '", var->name_hint, "'"));
        DefineVar(var);
      }
    } else if (!var) {
      Report(2, "a binding without a variable");
    } else if (const auto* f = b->value.as<FunctionNode>()) {
      DefineVar(var);  // in scope in its own body: local recursion
      CheckAnnotation(var->struct_info(), AnnotationSite::kInferred,
                      absl::StrCat("the annotation of '", var->name_hint, "'"));
      VisitFunction(*f, /*is_global=*/false, var.get());
      binding_ = var->name_hint;
    } else {
      if (options_.check_normal_form) CheckNormalValue(b->value);
      current_var_ = var.get();
      VisitExpr(b->value);
      current_var_ = nullptr;
      CheckAnnotation(var->struct_info(), AnnotationSite::kInferred,
                      absl::StrCat("the annotation of '", var->name_hint, "'"));
      DefineVar(var);
    }
    binding_.clear();
  }

  // ---- Normal form -------------------------------------------------------------------------
  static bool IsNormalLeaf(const Expr& e) {
    if (!e) return true;
    if (const auto* t = e.as<TupleNode>()) {
      for (const Expr& f : t->fields) {
        if (!IsNormalLeaf(f)) return false;
      }
      return true;
    }
    return IsLeaf(e) && !e.as<OpNode>();
  }

  void CheckNormalValue(const Expr& value) {
    if (!value) return;
    auto require_leaf = [&](const Expr& e, const char* what) {
      if (e && !IsNormalLeaf(e)) {
        ReportNF(1, absl::StrCat("the ", what, " is a nested ", NodeKindName(e->kind()),
                                 "; bind it to a variable first"));
      }
    };
    if (value.as<SeqExprNode>()) {
      ReportNF(2, "a SeqExpr as a binding value; flatten it into the enclosing block");
    } else if (const auto* c = value.as<CallNode>()) {
      if (c->op && !c->op.as<OpNode>()) require_leaf(c->op, "callee");
      for (const Expr& a : c->args) require_leaf(a, "call argument");
    } else if (const auto* t = value.as<TupleGetItemNode>()) {
      require_leaf(t->tuple, "tuple of a TupleGetItem");
    } else if (const auto* i = value.as<IfNode>()) {
      require_leaf(i->cond, "If condition");
      if (!i->true_branch.as<SeqExprNode>() || !i->false_branch.as<SeqExprNode>()) {
        ReportNF(3, "an If branch is not a SeqExpr");
      }
    } else {
      require_leaf(value, "value");
    }
  }

  // ---- Expressions -------------------------------------------------------------------------
  void VisitVarUse(const VarNode* v) {
    if (v == current_var_) {
      Report(2, absl::StrCat("variable '", v->name_hint,
                             "' is used in its own binding (only functions may recurse)"));
      return;
    }
    if (hidden_dataflow_.count(v) > 0) {
      Report(11, absl::StrCat("local function uses DataflowVar '", v->name_hint,
                              "' of the enclosing dataflow block"));
      return;
    }
    if (VarInScope(v)) return;
    if (dead_dataflow_.count(v) > 0) {
      Report(1, absl::StrCat("DataflowVar '", v->name_hint,
                             "' is used outside the dataflow block that defines it"));
    } else if (bound_anywhere_.count(v) > 0) {
      Report(3, absl::StrCat("variable '", v->name_hint, "' is used before it is bound"));
    } else {
      Report(2, absl::StrCat("variable '", v->name_hint,
                             "' is neither a parameter nor bound by any binding"));
    }
  }

  void VisitExpr(const Expr& e) {
    if (!e) {
      Report(2, "a null expression");
      return;
    }
    if (const auto* v = e.as<VarNode>()) {
      VisitVarUse(v);
    } else if (const auto* gv = e.as<GlobalVarNode>()) {
      if (!mod_->Lookup(gv->name_hint)) {
        Report(2, absl::StrCat("global function '", gv->name_hint, "' is not in the module"));
      }
    } else if (const auto* op = e.as<OpNode>()) {
      Report(9, absl::StrCat("operator '", op->name, "' appears outside the callee of a call"));
    } else if (const auto* c = e.as<ConstantNode>()) {
      CheckDataType(c->dtype, "constant");
    } else if (const auto* t = e.as<TupleNode>()) {
      for (const Expr& f : t->fields) VisitExpr(f);
    } else if (const auto* s = e.as<ShapeExprNode>()) {
      for (const PrimExpr& d : s->values) CheckShapeVarUses(d, 5, "a shape expression");
    } else if (const auto* p = e.as<PrimValueNode>()) {
      const PrimExpr& v = p->value;
      bool is_imm = v && (v.as<IntImmNode>() || v.as<FloatImmNode>()) && v->dtype.lanes() == 1;
      if (!is_imm) Report(18, "a PrimValue must hold an IntImm or FloatImm with one lane");
    } else if (const auto* c = e.as<CallNode>()) {
      VisitCall(*c);
    } else if (const auto* t = e.as<TupleGetItemNode>()) {
      VisitExpr(t->tuple);
    } else if (const auto* i = e.as<IfNode>()) {
      if (in_dataflow_) Report(7, "an If inside a dataflow block");
      VisitExpr(i->cond);
      bool saved = in_dataflow_;
      in_dataflow_ = false;
      VisitScope(i->true_branch);
      VisitScope(i->false_branch);
      in_dataflow_ = saved;
    } else if (const auto* s = e.as<SeqExprNode>()) {
      scopes_.emplace_back();
      VisitSeqContents(*s);
      scopes_.pop_back();
    } else if (const auto* f = e.as<FunctionNode>()) {
      VisitFunction(*f, /*is_global=*/false, nullptr);
    }
    // StringImm, DataTypeImm, ExternFunc: nothing to check.
  }

  void VisitCall(const CallNode& c) {
    if (!c.op) {
      Report(2, "a call without a callee");
    } else if (!c.op.as<OpNode>()) {
      VisitExpr(c.op);
    }
    if (in_dataflow_ && c.op) {
      if (const auto* gv = c.op.as<GlobalVarNode>()) {
        if (gv->name_hint == function_) {
          Report(7, absl::StrCat("recursive call to '", function_, "' inside a dataflow block"));
        } else if (calls_.CallsBack(gv->name_hint, function_)) {
          Report(7,
                 absl::StrCat("call to '", gv->name_hint, "', which is mutually recursive with '",
                              function_, "', inside a dataflow block"));
        }
      } else if (c.op.get() == local_self_) {
        Report(7, "recursive call to the enclosing local function inside a dataflow block");
      } else if (const auto* op = c.op.as<OpNode>()) {
        const OpInfo* info = LookupOp(op->name);
        if (info != nullptr && !info->pure) {
          Report(7, absl::StrCat("impure operator '", op->name, "' inside a dataflow block"));
        }
      } else if (c.op.as<ExternFuncNode>()) {
        Report(7, "a packed-function call (impure) inside a dataflow block");
      }
    }
    for (const Expr& a : c.args) VisitExpr(a);
    for (const StructInfo& s : c.sinfo_args) CheckAnnotation(s, AnnotationSite::kUse, "sinfo_args");
  }

  IRModule mod_;
  WellFormedOptions options_;
  CallGraph calls_;
  std::vector<WellFormedViolation> violations_;
  std::string function_;
  std::string binding_;
  std::vector<Scope> scopes_;
  std::unordered_set<const Object*> bound_anywhere_;  // every binding LHS/param of the function
  std::unordered_set<const Object*> defined_ever_;
  std::unordered_set<const Object*> live_dataflow_;  // DataflowVars of the open block
  std::unordered_set<const Object*> dead_dataflow_;  // DataflowVars of closed blocks
  std::unordered_set<const Object*>
      hidden_dataflow_;  // outer DataflowVars, inside a local function
  bool in_dataflow_ = false;
  const VarNode* local_self_ = nullptr;
  const VarNode* current_var_ = nullptr;
};

}  // namespace

std::vector<WellFormedViolation> FindWellFormedViolations(const IRModule& mod,
                                                          const WellFormedOptions& options) {
  if (!mod) return {{"WF2", "", "", "null module"}};
  return Checker(mod, options).Run();
}

absl::Status CheckWellFormed(const IRModule& mod, const WellFormedOptions& options) {
  std::vector<WellFormedViolation> violations = FindWellFormedViolations(mod, options);
  if (violations.empty()) return absl::OkStatus();
  std::vector<std::string> lines;
  for (const WellFormedViolation& v : violations) lines.push_back(v.ToString());
  return absl::InvalidArgumentError(absl::StrCat("the module is not well formed (",
                                                 violations.size(), " violations):\n",
                                                 absl::StrJoin(lines, "\n")));
}

namespace {

// A tensor whose shape is all constants but whose bytes do not fit in 64 bits cannot exist
// anywhere; compiling it would only fail later, at run time. The first such variable, or "".
class ImpossibleTensors : public ExprVisitor {
 public:
  std::string found;
  void VisitVarDef(const Var& v) override {
    if (!found.empty()) return;
    if (std::string why = Impossible(v->struct_info()); !why.empty()) {
      found = absl::StrCat("'", v->name_hint, "' is a ", ToString(v->struct_info()), ", ", why);
    }
  }

 private:
  // Why no tensor of `sinfo` can exist, or "".
  static std::string Impossible(const StructInfo& sinfo) {
    if (const auto* t = sinfo.as<TensorStructInfoNode>()) {
      const std::vector<PrimExpr>* dims = t->dims();
      if (dims == nullptr || t->dtype.is_void()) return "";
      bool all_known = true;
      for (const PrimExpr& d : *dims) {
        const int64_t* c = AsConstInt(d);
        // A shape computed past 2^63 wraps negative (Pad by 2^62: issue 52).
        if (c != nullptr && *c < 0) return "a negative dimension";
        all_known = all_known && c != nullptr;
      }
      if (all_known && !StaticTensorBytes(sinfo).has_value()) return "more than 2^63 bytes";
      return "";
    }
    if (const auto* t = sinfo.as<TupleStructInfoNode>()) {
      for (const StructInfo& f : t->fields) {
        if (std::string why = Impossible(f); !why.empty()) return why;
      }
    }
    return "";
  }
};

}  // namespace

absl::Status CheckTensorSizes(const IRModule& mod) {
  for (const auto& [name, entry] : mod->functions) {
    auto f = entry.second.as_ref<FunctionNode>();
    if (!f) continue;
    ImpossibleTensors check;
    check.VisitExpr(f);
    if (!check.found.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("in function '", name, "': ", check.found));
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::ir::relax
