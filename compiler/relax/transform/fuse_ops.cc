// FuseOps (transform.h): grouping on the Relax side, merging with tir::FusePrimFuncs.
#include <algorithm>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "compiler/ir/relax_functor.h"
#include "compiler/ir/structural.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/op_registry.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/relax/transform/utils.h"
#include "compiler/tir/fuse.h"
#include "runtime/support/status_macros.h"

namespace kiln::ir::relax {
namespace {

constexpr size_t kMaxGroupSize = 16;  // bounds kernel size and compile time

bool IsAnchor(OpPattern p) {
  return p == OpPattern::kCommReduce || p == OpPattern::kOutEWiseFusable;
}

// A call_tir binding fusion can take: one tensor output, arguments a tuple literal of variables
// and constants, a kernel that states its pattern.
struct FusableCall {
  const CallNode* call = nullptr;
  std::string kernel;
  PrimFunc func;
  OpPattern pattern = OpPattern::kOpaque;
  const std::vector<Expr>* args = nullptr;
};

struct Group {
  OpPattern pattern;
  int anchors;
  size_t size;
};

class Fuser : public ExprMutator {
 public:
  Fuser(const IRModuleNode& mod, std::set<std::string>* names,
        std::vector<std::pair<GlobalVar, PrimFunc>>* fused)
      : mod_(mod), names_(*names), fused_(*fused) {}

  void CountUses(const Expr& body) { uses_ = CountVarUses(body); }

  BindingBlock VisitBindingBlock(const BindingBlock& block) override {
    if (!block || !block->is_dataflow()) return ExprMutator::VisitBindingBlock(block);
    const std::vector<Binding>& bindings = block->bindings;
    const size_t n = bindings.size();
    std::vector<FusableCall> calls(n);
    std::unordered_map<const VarNode*, size_t> defined_at;
    parent_.assign(n, 0);
    groups_.assign(n, Group{OpPattern::kOpaque, 0, 1});
    for (size_t i = 0; i < n; ++i) {
      parent_[i] = i;
      if (bindings[i]->var) defined_at[bindings[i]->var.get()] = i;
      if (!AsFusable(bindings[i], &calls[i])) continue;
      const OpPattern p = calls[i].pattern;
      groups_[i] = Group{p, IsAnchor(p) ? 1 : 0, 1};
      for (const Expr& arg : *calls[i].args) {
        const auto* v = arg.as<VarNode>();
        auto it = v != nullptr ? defined_at.find(v) : defined_at.end();
        if (it == defined_at.end() || !calls[it->second].call || uses_[v] != 1) continue;
        size_t producer = Find(it->second), consumer = Find(i);
        if (producer == consumer || !CanMerge(groups_[producer], groups_[consumer], p)) continue;
        parent_[producer] = consumer;
        Group& g = groups_[consumer];
        g.pattern = std::max(g.pattern, groups_[producer].pattern);
        g.anchors += groups_[producer].anchors;
        g.size += groups_[producer].size;
      }
    }
    // Members by group root, in binding order; the root is always the group's last binding.
    std::unordered_map<size_t, std::vector<size_t>> members;
    for (size_t i = 0; i < n; ++i) {
      if (calls[i].call) members[Find(i)].push_back(i);
    }
    std::vector<Binding> out;
    for (size_t i = 0; i < n; ++i) {
      auto group = calls[i].call ? members.find(Find(i)) : members.end();
      if (group == members.end() || group->second.size() < 2) {
        out.push_back(ExprMutator::VisitBinding(bindings[i]));
        continue;
      }
      if (i != group->first) continue;  // emitted with the group's last binding
      if (Binding fused = Fuse(bindings, calls, group->second)) {
        out.push_back(fused);
      } else {  // shapes did not unify: the members stay apart
        for (size_t m : group->second) out.push_back(bindings[m]);
      }
    }
    // Members emitted unfused at their group's end keep dependency order: every member precedes
    // the group's last binding and its inputs precede it.
    return Make<BindingBlockNode>(true, std::move(out));
  }

 private:
  bool AsFusable(const Binding& b, FusableCall* out) const {
    const auto* vb = b.as<VarBindingNode>();
    const auto* call = vb != nullptr ? vb->value.as<CallNode>() : nullptr;
    const auto* op = call != nullptr ? call->op.as<OpNode>() : nullptr;
    if (op == nullptr || op->name != "relax.call_tir" || call->args.size() != 2 ||
        call->sinfo_args.size() != 1 || !call->sinfo_args[0].as<TensorStructInfoNode>()) {
      return false;
    }
    const auto* gv = call->args[0].as<GlobalVarNode>();
    const auto* tuple = call->args[1].as<TupleNode>();
    if (gv == nullptr || tuple == nullptr) return false;
    for (const Expr& a : tuple->fields) {
      if (!a.as<VarNode>() && !a.as<ConstantNode>()) return false;
    }
    PrimFunc func = mod_.Lookup(gv->name_hint).as_ref<PrimFuncNode>();
    if (!func) return false;
    const auto* pattern = GetAttr(func->attrs, "op_pattern").as<IntImmNode>();
    if (pattern == nullptr || pattern->value > static_cast<int64_t>(OpPattern::kOutEWiseFusable))
      return false;
    out->call = call;
    out->kernel = gv->name_hint;
    out->func = func;
    out->pattern = static_cast<OpPattern>(pattern->value);
    out->args = &tuple->fields;
    return true;
  }

  // Whether the producer group joins the group of a consumer whose operator has pattern `p`.
  static bool CanMerge(const Group& producer, const Group& consumer, OpPattern p) {
    if (producer.anchors + consumer.anchors > 1 || producer.size + consumer.size > kMaxGroupSize)
      return false;
    const bool injective_producer = producer.pattern <= OpPattern::kInjective;
    if (p <= OpPattern::kInjective) {
      return injective_producer || (producer.anchors == 1 && p <= OpPattern::kBroadcast);
    }
    if (p == OpPattern::kCommReduce) return injective_producer;
    return false;  // matmul/conv start a group; what feeds them stays apart
  }

  size_t Find(size_t i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
    return i;
  }

  // One call_tir of the fused kernel, bound to the group's last variable; null if the kernels
  // cannot be merged.
  Binding Fuse(const std::vector<Binding>& bindings, const std::vector<FusableCall>& calls,
               const std::vector<size_t>& group) {
    std::unordered_map<const VarNode*, int> member_of;
    for (size_t m = 0; m < group.size(); ++m) member_of[bindings[group[m]]->var.get()] = m;
    std::vector<Expr> inputs;
    std::unordered_map<const ExprNode*, int> input_index;
    for (size_t m : group) {
      for (const Expr& a : *calls[m].args) {
        const auto* v = a.as<VarNode>();
        if ((v != nullptr && member_of.count(v)) || input_index.count(a.get())) continue;
        input_index[a.get()] = static_cast<int>(inputs.size());
        inputs.push_back(a);
      }
    }
    const int num_inputs = static_cast<int>(inputs.size());
    std::vector<tir::FusionMember> members;
    std::string name = "fused";
    OpPattern pattern = OpPattern::kElemWise;
    for (size_t m : group) {
      tir::FusionMember member{calls[m].func, {}};
      for (const Expr& a : *calls[m].args) {
        const auto* v = a.as<VarNode>();
        auto it = v != nullptr ? member_of.find(v) : member_of.end();
        member.inputs.push_back(it != member_of.end() ? num_inputs + it->second
                                                      : input_index.at(a.get()));
      }
      members.push_back(std::move(member));
      if (name.size() < 48) absl::StrAppend(&name, "_", calls[m].kernel);
      pattern = std::max(pattern, calls[m].pattern);
    }
    absl::StatusOr<PrimFunc> fused = tir::FusePrimFuncs(members, num_inputs);
    if (!fused.ok()) return nullptr;
    PrimFunc kernel = tir::InlineInjective(*fused);
    kernel = WithFuncAttr(kernel, "op_pattern",
                          IntImm(DataType::Int(32), static_cast<int64_t>(pattern)));
    const FusableCall& last = calls[group.back()];
    Expr call = MakeCall(GetOp("relax.call_tir"), {AddKernel(name, kernel), MakeTuple(inputs)},
                         last.call->sinfo_args);
    return MakeBinding(bindings[group.back()]->var, call);
  }

  GlobalVar AddKernel(const std::string& base, const PrimFunc& kernel) {
    for (const auto& [gv, existing] : fused_) {
      if (StructuralEqual(existing, kernel)) return gv;
    }
    std::string name = base;
    for (int k = 1; names_.count(name); ++k) name = absl::StrCat(base, "_", k);
    names_.insert(name);
    GlobalVar gv = MakeGlobalVar(name);
    fused_.emplace_back(gv, kernel);
    return gv;
  }

  const IRModuleNode& mod_;
  std::set<std::string>& names_;
  std::vector<std::pair<GlobalVar, PrimFunc>>& fused_;
  std::unordered_map<const VarNode*, int> uses_;
  std::vector<size_t> parent_;  // union-find over the bindings of the current block
  std::vector<Group> groups_;   // valid at roots
};

}  // namespace

absl::StatusOr<IRModule> FuseOps(const IRModule& mod) {
  KILN_ASSIGN_OR_RETURN(IRModule normalized, NormalizeModule(mod));
  std::set<std::string> names;
  for (const auto& [name, entry] : normalized->functions) names.insert(name);
  std::vector<std::pair<GlobalVar, PrimFunc>> fused;
  IRModuleBuilder out(normalized);
  for (const auto& [name, entry] : normalized->functions) {
    const auto* f = entry.second.as<FunctionNode>();
    if (f == nullptr) continue;
    Fuser fuser(*normalized, &names, &fused);
    fuser.CountUses(f->body);
    Expr body = fuser.VisitExpr(f->body);
    if (body == f->body) continue;
    out.Update(entry.first,
               MakeFunction(f->params, body, f->ret_struct_info, f->is_pure, f->attrs));
  }
  for (const auto& [gv, kernel] : fused) KILN_RETURN_IF_ERROR(out.Add(gv, kernel));
  return NormalizeModule(out.Build());
}

}  // namespace kiln::ir::relax
