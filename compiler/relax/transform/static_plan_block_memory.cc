// StaticPlanBlockMemory (transform.h): intermediates of static shape share one storage by lifetime.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/ir/relax_functor.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/struct_info.h"
#include "compiler/relax/transform/transform.h"
#include "runtime/support/status_macros.h"

namespace kiln::ir::relax {
namespace {

bool IsOp(const relax::Expr& e, const char* name) {
  const auto* call = e.as<relax::CallNode>();
  const auto* op = call != nullptr ? call->op.as<relax::OpNode>() : nullptr;
  return op != nullptr && op->name == name;
}

// A direct call of a PrimFunc of `mod` (what CallTIRRewrite emits): its tensor arguments are
// read or written during the call and never kept.
bool IsKernelCall(const relax::Expr& e, const ir::IRModuleNode& mod) {
  const auto* call = e.as<relax::CallNode>();
  const auto* gv = call != nullptr ? call->op.as<relax::GlobalVarNode>() : nullptr;
  return gv != nullptr && mod.Lookup(gv->name_hint).as<ir::PrimFuncNode>() != nullptr;
}

// The bytes of a tensor of static shape, or -1 (then allocated at run time, where an impossible
// size is refused).
int64_t StaticBytes(const relax::StructInfo& sinfo) {
  return relax::StaticTensorBytes(sinfo).value_or(-1);
}

// Every variable referenced by `e` (not definitions).
class VarUses : public relax::ExprVisitor {
 public:
  std::vector<const relax::VarNode*> vars;
  void VisitExpr(const relax::Expr& e) override {
    if (const auto* v = e.as<relax::VarNode>()) vars.push_back(v);
    DefaultVisitExpr(e);
  }
};

std::vector<const relax::VarNode*> UsesOf(const relax::Expr& e) {
  VarUses uses;
  uses.VisitExpr(e);
  return uses.vars;
}

struct Interval {
  const relax::VarNode* var;
  int64_t bytes, def, last_use;
};

struct MemoryPlan {
  std::unordered_map<const relax::VarNode*, int64_t> offsets;  // planned tensor -> byte offset
  PlannedMemory totals;
};

MemoryPlan PlanFunction(const relax::FunctionNode& f, const ir::IRModuleNode& mod) {
  MemoryPlan plan;
  const auto* seq = f.body.as<relax::SeqExprNode>();
  if (seq == nullptr) return plan;
  std::vector<relax::Binding> bindings;
  for (const relax::BindingBlock& block : seq->blocks)
    for (const relax::Binding& b : block->bindings) bindings.push_back(b);

  // Candidates: tensors of static shape allocated on their own.
  std::unordered_map<const relax::VarNode*, Interval> candidates;
  for (size_t t = 0; t < bindings.size(); ++t) {
    const auto* vb = bindings[t].as<relax::VarBindingNode>();
    if (vb == nullptr || !IsOp(vb->value, "relax.builtin.alloc_tensor")) continue;
    int64_t bytes = StaticBytes(vb->var->struct_info());
    if (bytes <= 0) continue;
    int64_t at = static_cast<int64_t>(t);
    candidates[vb->var.get()] = {vb->var.get(), bytes, at, at};
  }
  // A use as a kernel operand extends the lifetime; any other use lets the value escape (it may
  // be kept by a tuple, a packed function, the caller), so it is not planned.
  std::unordered_set<const relax::VarNode*> escaped;
  for (size_t t = 0; t < bindings.size(); ++t) {
    const relax::Expr& value = bindings[t]->value;
    const bool kernel = IsKernelCall(value, mod);
    for (const relax::VarNode* v : UsesOf(value)) {
      auto it = candidates.find(v);
      if (it == candidates.end()) continue;
      if (kernel) {
        it->second.last_use = std::max<int64_t>(it->second.last_use, static_cast<int64_t>(t));
      } else {
        escaped.insert(v);
      }
    }
  }
  for (const relax::VarNode* v : UsesOf(seq->body)) escaped.insert(v);

  std::vector<Interval> intervals;
  for (const auto& [var, interval] : candidates) {
    if (!escaped.count(var)) intervals.push_back(interval);
  }
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return a.def != b.def ? a.def < b.def : a.var->name_hint < b.var->name_hint;
  });
  // First fit: a tensor may take the place of those whose last use came before its definition
  // (a kernel reads its inputs while writing its output, so they must not share).
  struct Placed {
    int64_t offset, size, last_use;
  };
  std::vector<Placed> live;
  for (const Interval& iv : intervals) {
    live.erase(std::remove_if(live.begin(), live.end(),
                              [&](const Placed& p) { return p.last_use < iv.def; }),
               live.end());
    std::sort(live.begin(), live.end(),
              [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
    int64_t size = (iv.bytes + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment;
    int64_t offset = 0;
    for (const Placed& p : live) {
      if (offset + size <= p.offset) break;
      offset = std::max(offset, p.offset + p.size);
    }
    live.push_back({offset, size, iv.last_use});
    plan.offsets[iv.var] = offset;
    plan.totals.storage_bytes = std::max(plan.totals.storage_bytes, offset + size);
    plan.totals.tensor_bytes += size;
    ++plan.totals.tensors;
  }
  return plan;
}

// Rewrites the planned allocations into views of one storage allocated first.
relax::Expr ApplyPlan(const relax::SeqExprNode& seq, const MemoryPlan& plan) {
  ir::DataType i64 = ir::DataType::Int(64);
  relax::Var storage = relax::MakeVar("storage", relax::ObjectSInfo());
  std::vector<relax::BindingBlock> blocks;
  for (size_t k = 0; k < seq.blocks.size(); ++k) {
    std::vector<relax::Binding> bindings;
    if (k == 0) {
      bindings.push_back(relax::MakeBinding(
          storage, relax::MakeCall(relax::GetOp("relax.memory.alloc_storage"),
                                   {relax::MakeShape({ir::IntImm(i64, plan.totals.storage_bytes)}),
                                    ir::Make<relax::PrimValueNode>(ir::IntImm(i64, 0)),
                                    ir::Make<relax::StringImmNode>("global"),
                                    ir::Make<relax::DataTypeImmNode>(ir::DataType::UInt(8))})));
    }
    for (const relax::Binding& b : seq.blocks[k]->bindings) {
      auto it = b->var ? plan.offsets.find(b->var.get()) : plan.offsets.end();
      if (it == plan.offsets.end()) {
        bindings.push_back(b);
        continue;
      }
      const auto& alloc = *b->value.as<relax::CallNode>();
      bindings.push_back(relax::MakeBinding(
          b->var,
          relax::MakeCall(relax::GetOp("relax.memory.alloc_tensor"),
                          {storage, ir::Make<relax::PrimValueNode>(ir::IntImm(i64, it->second)),
                           alloc.args[0], alloc.args[1]})));
    }
    blocks.push_back(
        ir::Make<relax::BindingBlockNode>(seq.blocks[k]->is_dataflow(), std::move(bindings)));
  }
  return relax::MakeSeq(std::move(blocks), seq.body);
}

int64_t IntAttr(const ir::Attrs& attrs, const char* key) {
  const auto* v = ir::GetAttr(attrs, key).as<ir::IntImmNode>();
  return v != nullptr ? v->value : 0;
}

}  // namespace

absl::StatusOr<ir::IRModule> StaticPlanBlockMemory(const ir::IRModule& mod) {
  ir::IRModuleBuilder out(mod);
  for (const auto& [name, entry] : mod->functions) {
    const auto* f = entry.second.as<relax::FunctionNode>();
    if (f == nullptr) continue;
    MemoryPlan plan = PlanFunction(*f, *mod);
    if (plan.offsets.empty()) continue;
    ir::DataType i64 = ir::DataType::Int(64);
    ir::Attrs attrs = f->attrs;
    attrs = ir::WithAttr(attrs, "kiln.planned_storage_bytes",
                         ir::IntImm(i64, plan.totals.storage_bytes));
    attrs =
        ir::WithAttr(attrs, "kiln.planned_tensor_bytes", ir::IntImm(i64, plan.totals.tensor_bytes));
    attrs = ir::WithAttr(attrs, "kiln.planned_tensors", ir::IntImm(i64, plan.totals.tensors));
    out.Update(entry.first,
               relax::MakeFunction(f->params, ApplyPlan(*f->body.as<relax::SeqExprNode>(), plan),
                                   f->ret_struct_info, f->is_pure, attrs));
  }
  return relax::NormalizeModule(out.Build());
}

PlannedMemory PlannedMemoryOf(const relax::FunctionNode& f) {
  return {IntAttr(f.attrs, "kiln.planned_storage_bytes"),
          IntAttr(f.attrs, "kiln.planned_tensor_bytes"), IntAttr(f.attrs, "kiln.planned_tensors")};
}

}  // namespace kiln::ir::relax
