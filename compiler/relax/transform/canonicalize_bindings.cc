// CanonicalizeBindings (transform.h).
#include <unordered_map>
#include <unordered_set>

#include "compiler/arith/analyzer.h"
#include "compiler/ir/relax_functor.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/struct_info.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/relax/transform/utils.h"
#include "runtime/support/status_macros.h"

namespace kiln::ir::relax {
namespace {

bool SameDim(const PrimExpr& a, const PrimExpr& b) {
  const int64_t* x = AsConstInt(a);
  const int64_t* y = AsConstInt(b);
  if (x != nullptr || y != nullptr) return x != nullptr && y != nullptr && *x == *y;
  return a.get() == b.get();
}

// A match_cast to `target` of a value of StructInfo `have` checks nothing and binds nothing.
bool CastIsNoOp(const StructInfo& have, const StructInfo& target) {
  const auto* h = have ? have.as<TensorStructInfoNode>() : nullptr;
  const auto* t = target ? target.as<TensorStructInfoNode>() : nullptr;
  if (h == nullptr || t == nullptr || h->dtype != t->dtype || h->ndim != t->ndim) return false;
  const std::vector<PrimExpr>* hd = h->dims();
  const std::vector<PrimExpr>* td = t->dims();
  if (td == nullptr) return true;
  if (hd == nullptr || hd->size() != td->size()) return false;
  for (size_t k = 0; k < hd->size(); ++k) {
    if (!SameDim((*hd)[k], (*td)[k])) return false;
  }
  return true;
}

class Canonicalizer : public ExprMutator {
 public:
  explicit Canonicalizer(const FunctionNode& f) { uses_ = CountVarUses(f.body); }

  bool changed = false;  // whether anything was simplified

  Expr VisitExpr(const Expr& e) override {
    if (const auto* v = e.as<VarNode>()) {
      auto it = replace_.find(v);
      return it == replace_.end() ? e : it->second;
    }
    if (const auto* g = e.as<TupleGetItemNode>()) {
      Expr tuple = VisitExpr(g->tuple);
      const auto* v = tuple.as<VarNode>();
      auto it = v != nullptr ? tuples_.find(v) : tuples_.end();
      if (it != tuples_.end() && g->index >= 0 &&
          static_cast<size_t>(g->index) < it->second->fields.size()) {
        changed = true;
        return it->second->fields[g->index];
      }
      return tuple == g->tuple ? e : Expr(Make<TupleGetItemNode>(tuple, g->index));
    }
    if (const auto* seq = e.as<SeqExprNode>()) {
      std::vector<BindingBlock> blocks;
      for (const BindingBlock& b : seq->blocks) {
        BindingBlock out = VisitBindingBlock(b);
        if (out && !out->bindings.empty()) blocks.push_back(out);
      }
      return MakeSeq(std::move(blocks), VisitExpr(seq->body));
    }
    return DefaultVisitExpr(e);
  }

  BindingBlock VisitBindingBlock(const BindingBlock& block) override {
    if (!block) return block;
    // Dataflow values only exported: `lv = value; gv = lv` with lv used once binds gv directly.
    std::unordered_map<const VarNode*, Var> export_as;
    std::unordered_set<const BindingNode*> exports;
    if (block->is_dataflow()) {
      std::unordered_map<const VarNode*, const BindingNode*> defined;
      for (const Binding& b : block->bindings) {
        if (b->var && b.as<VarBindingNode>()) defined[b->var.get()] = b.get();
        const auto* lv = b->value.as<VarNode>();
        if (!b.as<VarBindingNode>() || !b->var || b->var->is_dataflow() || lv == nullptr ||
            !lv->is_dataflow() || uses_[lv] != 1 || !defined.count(lv) ||
            !Subsumes(b->var->struct_info(), lv->struct_info())) {
          continue;
        }
        export_as[lv] = b->var;
        exports.insert(b.get());
        changed = true;
      }
    }
    std::vector<Binding> bindings;
    for (const Binding& b : block->bindings) {
      if (exports.count(b.get())) continue;
      Var var = b->var;
      if (auto it = var ? export_as.find(var.get()) : export_as.end(); it != export_as.end())
        var = it->second;
      Expr value = VisitExpr(b->value);
      const auto* mc = b.as<MatchCastNode>();
      bool plain = mc == nullptr || (var && CastIsNoOp(value->struct_info(), mc->struct_info));
      if (plain && var) {
        const auto* alias = value.as<VarNode>();
        if (alias != nullptr && (alias->is_dataflow() <= var->is_dataflow()) &&
            Subsumes(var->struct_info(), alias->struct_info())) {
          replace_[var.get()] = value;
          changed = true;
          continue;
        }
        if (const auto* tuple = value.as<TupleNode>()) tuples_[var.get()] = tuple;
      }
      changed |= mc != nullptr && plain;
      if (plain) {
        bindings.push_back(var == b->var && value == b->value ? b : MakeBinding(var, value));
      } else {
        bindings.push_back(value == b->value ? b : MakeMatchCast(var, value, mc->struct_info));
      }
    }
    return Make<BindingBlockNode>(block->is_dataflow(), std::move(bindings));
  }

 private:
  bool Subsumes(const StructInfo& base, const StructInfo& derived) {
    return base && derived && CheckBaseOf(base, derived, &analyzer_) == BaseCheck::kPass;
  }

  std::unordered_map<const VarNode*, int> uses_;
  std::unordered_map<const VarNode*, Expr> replace_;
  std::unordered_map<const VarNode*, const TupleNode*> tuples_;
  arith::Analyzer analyzer_;
};

}  // namespace

absl::StatusOr<IRModule> CanonicalizeBindings(const IRModule& mod) {
  KILN_ASSIGN_OR_RETURN(IRModule current, NormalizeModule(mod));
  // One round's rewrites enable the next (an alias removed makes a value exported once), so
  // repeat until nothing changes.
  for (int round = 0; round < 8; ++round) {
    IRModuleBuilder out(current);
    bool changed = false;
    for (const auto& [name, entry] : current->functions) {
      const auto* f = entry.second.as<FunctionNode>();
      if (f == nullptr) continue;
      Canonicalizer canonicalizer(*f);
      Expr body = canonicalizer.VisitExpr(f->body);
      if (!canonicalizer.changed) continue;
      changed = true;
      out.Update(entry.first,
                 MakeFunction(f->params, body, f->ret_struct_info, f->is_pure, f->attrs));
    }
    if (!changed) break;
    KILN_ASSIGN_OR_RETURN(current, NormalizeModule(out.Build()));
  }
  return current;
}

}  // namespace kiln::ir::relax
