#include "compiler/backend/memory_plan.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "compiler/ir/relax_functor.h"

namespace kiln::backend {
namespace {

namespace relax = ir::relax;

bool IsKernelCall(const relax::CallNode* call) {
  const auto* op = call != nullptr ? call->op.as<relax::OpNode>() : nullptr;
  return op != nullptr && (op->name == "relax.call_tir" || op->name == "relax.call_dps_packed");
}

// The bytes of a tensor of static shape, or -1.
int64_t StaticBytes(const relax::StructInfo& sinfo) {
  const auto* t = sinfo.as<relax::TensorStructInfoNode>();
  const std::vector<ir::PrimExpr>* dims = t != nullptr ? t->dims() : nullptr;
  if (dims == nullptr || t->dtype.is_void()) return -1;
  int64_t n = (t->dtype.bits() * t->dtype.lanes() + 7) / 8;
  for (const ir::PrimExpr& d : *dims) {
    const int64_t* c = ir::AsConstInt(d);
    if (c == nullptr || *c < 0) return -1;
    n *= *c;
  }
  return n;
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

}  // namespace

MemoryPlan PlanMemory(const relax::FunctionNode& f) {
  MemoryPlan plan;
  const auto* seq = f.body.as<relax::SeqExprNode>();
  if (seq == nullptr) return plan;
  std::vector<relax::Binding> bindings;
  for (const relax::BindingBlock& block : seq->blocks)
    for (const relax::Binding& b : block->bindings) bindings.push_back(b);

  // Candidates: single static tensors written by kernels.
  std::unordered_map<const relax::VarNode*, Interval> candidates;
  for (size_t t = 0; t < bindings.size(); ++t) {
    const auto* vb = bindings[t].as<relax::VarBindingNode>();
    if (vb == nullptr || !IsKernelCall(vb->value.as<relax::CallNode>())) continue;
    int64_t bytes = StaticBytes(vb->var->struct_info());
    if (bytes <= 0) continue;
    int64_t at = static_cast<int64_t>(t);
    candidates[vb->var.get()] = {vb->var.get(), bytes, at, at};
  }
  // A use as a kernel input extends the lifetime; any other use lets the value escape (it may
  // be kept by a tuple, a packed function, the caller), so it is not planned.
  std::unordered_set<const relax::VarNode*> escaped;
  for (size_t t = 0; t < bindings.size(); ++t) {
    const relax::Expr& value = bindings[t]->value;
    const auto* call = value.as<relax::CallNode>();
    std::vector<const relax::VarNode*> inputs;
    if (IsKernelCall(call) && call->args.size() >= 2) {
      if (const auto* tuple = call->args[1].as<relax::TupleNode>()) {
        for (const relax::Expr& field : tuple->fields) {
          if (const auto* v = field.as<relax::VarNode>()) inputs.push_back(v);
        }
      } else if (const auto* v = call->args[1].as<relax::VarNode>()) {
        inputs.push_back(v);
      }
    }
    std::vector<const relax::VarNode*> all = UsesOf(value);
    for (const relax::VarNode* v : all) {
      auto it = candidates.find(v);
      if (it == candidates.end()) continue;
      if (std::find(inputs.begin(), inputs.end(), v) != inputs.end()) {
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
    plan.storage_bytes = std::max(plan.storage_bytes, offset + size);
    plan.tensor_bytes += size;
  }
  return plan;
}

}  // namespace kiln::backend
