// DeadCodeElimination (transform.h).
#include <algorithm>
#include <deque>
#include <set>
#include <unordered_set>

#include "compiler/ir/relax_functor.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/op_registry.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/relax/transform/utils.h"
#include "runtime/support/status_macros.h"

namespace kiln::ir::relax {
namespace {

class BindingEliminator : public ExprMutator {
 public:
  explicit BindingEliminator(const IRModuleNode& mod) : mod_(mod) {}

  Expr VisitExpr(const Expr& e) override {
    const auto* seq = e.as<SeqExprNode>();
    if (seq == nullptr) return DefaultVisitExpr(e);
    Expr body = VisitExpr(seq->body);
    std::unordered_set<const VarNode*> used;
    Collect(body, &used);
    std::vector<BindingBlock> blocks;
    for (size_t k = seq->blocks.size(); k-- > 0;) {
      const BindingBlock& block = seq->blocks[k];
      std::vector<Binding> kept;
      for (size_t i = block->bindings.size(); i-- > 0;) {
        const Binding& b = block->bindings[i];
        bool needed = b.as<MatchCastNode>() != nullptr || !b->var || used.count(b->var.get()) ||
                      !IsPure(b->value);
        if (!needed) continue;
        Expr value = VisitExpr(b->value);
        Collect(value, &used);
        if (value == b->value) {
          kept.push_back(b);
        } else if (const auto* mc = b.as<MatchCastNode>()) {
          kept.push_back(MakeMatchCast(b->var, value, mc->struct_info));
        } else {
          kept.push_back(MakeBinding(b->var, value));
        }
      }
      if (kept.empty()) continue;
      std::reverse(kept.begin(), kept.end());
      blocks.push_back(Make<BindingBlockNode>(block->is_dataflow(), std::move(kept)));
    }
    std::reverse(blocks.begin(), blocks.end());
    return MakeSeq(std::move(blocks), body);
  }

 private:
  static void Collect(const Expr& e, std::unordered_set<const VarNode*>* used) {
    for (const auto& [var, count] : CountVarUses(e)) used->insert(var);
  }

  // Removing the binding cannot change what the program does.
  bool IsPure(const Expr& value) const {
    const auto* call = value.as<CallNode>();
    if (call == nullptr) return value.as<IfNode>() == nullptr;
    if (const auto* op = call->op.as<OpNode>()) {
      const OpInfo* info = LookupOp(op->name);
      return info != nullptr && info->pure;
    }
    if (const auto* g = call->op.as<GlobalVarNode>()) {
      const auto* f = mod_.Lookup(g->name_hint).as<FunctionNode>();
      return f != nullptr && f->is_pure;
    }
    return false;
  }

  const IRModuleNode& mod_;
};

class GlobalRefs : public ExprVisitor {
 public:
  std::set<std::string> names;
  void VisitExpr(const Expr& e) override {
    if (const auto* g = e.as<GlobalVarNode>()) names.insert(g->name_hint);
    DefaultVisitExpr(e);
  }
};

bool IsPublic(const ObjectRef& func) {
  if (const auto* f = func.as<FunctionNode>()) return GetAttr(f->attrs, "global_symbol") != nullptr;
  if (const auto* f = func.as<PrimFuncNode>()) return GetAttr(f->attrs, "global_symbol") != nullptr;
  return false;
}

}  // namespace

absl::StatusOr<IRModule> DeadCodeElimination(const IRModule& mod) {
  KILN_ASSIGN_OR_RETURN(IRModule normalized, NormalizeModule(mod));
  IRModuleBuilder out;
  for (const auto& [key, value] : normalized->attrs) out.SetAttr(key, value);
  std::map<std::string, ObjectRef> kept;
  for (const auto& [name, entry] : normalized->functions) {
    const auto* f = entry.second.as<FunctionNode>();
    if (f == nullptr) {
      kept[name] = entry.second;
      continue;
    }
    Expr body = BindingEliminator(*normalized).VisitExpr(f->body);
    kept[name] = MakeFunction(f->params, body, f->ret_struct_info, f->is_pure, f->attrs);
  }
  // What the public functions reach. A module with no public function (built through the API)
  // keeps every Relax function.
  std::deque<std::string> work;
  for (const auto& [name, func] : kept) {
    if (IsPublic(func)) work.push_back(name);
  }
  if (work.empty()) {
    for (const auto& [name, func] : kept) {
      if (func.as<FunctionNode>()) work.push_back(name);
    }
  }
  std::set<std::string> live;
  while (!work.empty()) {
    std::string name = work.front();
    work.pop_front();
    if (!live.insert(name).second) continue;
    if (kept[name].as<FunctionNode>()) {
      GlobalRefs refs;
      refs.VisitExpr(kept[name].as_ref<FunctionNode>());
      for (const std::string& n : refs.names) {
        if (kept.count(n)) work.push_back(n);
      }
    }
  }
  for (const auto& [name, func] : kept) {
    if (live.count(name)) KILN_RETURN_IF_ERROR(out.Add(normalized->GetGlobalVar(name), func));
  }
  return NormalizeModule(out.Build());
}

}  // namespace kiln::ir::relax
