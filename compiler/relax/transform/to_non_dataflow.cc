// ToNonDataflow (transform.h).
#include <unordered_map>

#include "compiler/ir/relax_functor.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/transform/transform.h"
#include "runtime/support/status_macros.h"

namespace kiln::ir::relax {
namespace {

class DataflowRemover : public ExprMutator {
 public:
  Expr VisitExpr(const Expr& e) override {
    if (const auto* v = e.as<VarNode>()) {
      auto it = vars_.find(v);
      return it == vars_.end() ? e : it->second;
    }
    const auto* seq = e.as<SeqExprNode>();
    if (seq == nullptr) return DefaultVisitExpr(e);
    // Consecutive blocks merge: once none is a dataflow block they need not be apart.
    std::vector<Binding> bindings;
    for (const BindingBlock& block : seq->blocks) {
      for (const Binding& b : block->bindings) {
        Var var = b->var;
        if (var && var->is_dataflow()) {
          var = MakeVar(var->name_hint, var->struct_info());
          vars_[b->var.get()] = var;
        }
        Expr value = VisitExpr(b->value);
        if (const auto* mc = b.as<MatchCastNode>()) {
          bindings.push_back(MakeMatchCast(var, value, mc->struct_info));
        } else {
          bindings.push_back(MakeBinding(var, value));
        }
      }
    }
    std::vector<BindingBlock> blocks;
    if (!bindings.empty()) blocks.push_back(MakeBlock(std::move(bindings)));
    return MakeSeq(std::move(blocks), VisitExpr(seq->body));
  }

 private:
  std::unordered_map<const VarNode*, Expr> vars_;
};

}  // namespace

absl::StatusOr<IRModule> ToNonDataflow(const IRModule& mod) {
  KILN_ASSIGN_OR_RETURN(IRModule normalized, NormalizeModule(mod));
  IRModuleBuilder out(normalized);
  for (const auto& [name, entry] : normalized->functions) {
    const auto* f = entry.second.as<FunctionNode>();
    if (f == nullptr) continue;
    Expr body = DataflowRemover().VisitExpr(f->body);
    out.Update(entry.first,
               MakeFunction(f->params, body, f->ret_struct_info, f->is_pure, f->attrs));
  }
  return NormalizeModule(out.Build());
}

}  // namespace kiln::ir::relax
