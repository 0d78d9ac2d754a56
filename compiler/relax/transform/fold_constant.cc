#include "compiler/relax/transform/fold_constant.h"

#include <cstring>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "compiler/ir/relax_functor.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/struct_info.h"
#include "runtime/support/status_macros.h"
#include "runtime/tensor.h"

namespace kiln::ir::relax {
namespace {

constexpr int kMaxRounds = 16;

// Variables bound to constants (a folded value feeding the next fold).
using ConstantVars = std::unordered_map<const relax::VarNode*, const relax::ConstantNode*>;

const relax::ConstantNode* AsConstant(const relax::Expr& e, const ConstantVars& vars) {
  if (const auto* c = e.as<relax::ConstantNode>()) return c;
  const auto* v = e.as<relax::VarNode>();
  auto it = v != nullptr ? vars.find(v) : vars.end();
  return it == vars.end() ? nullptr : it->second;
}

// `call_tir(kernel, (constants...), out_sinfo=static tensor)` whose result is at most
// `max_bytes`: the kernel's name, or empty.
std::string FoldableKernel(const relax::Expr& value, const ir::IRModuleNode& mod,
                           const ConstantVars& vars, int64_t max_bytes,
                           const std::unordered_set<const relax::VarNode*>* pending = nullptr) {
  const auto* call = value.as<relax::CallNode>();
  const auto* op = call != nullptr ? call->op.as<relax::OpNode>() : nullptr;
  if (op == nullptr || op->name != "relax.call_tir" || call->args.size() != 2 ||
      call->sinfo_args.size() != 1) {
    return "";
  }
  const auto* gv = call->args[0].as<relax::GlobalVarNode>();
  const auto* args = call->args[1].as<relax::TupleNode>();
  const auto* out = call->sinfo_args[0].as<relax::TensorStructInfoNode>();
  if (gv == nullptr || args == nullptr || out == nullptr ||
      !mod.Lookup(gv->name_hint).as<ir::PrimFuncNode>()) {
    return "";
  }
  std::optional<int64_t> bytes = relax::StaticTensorBytes(call->sinfo_args[0]);
  if (!bytes || *bytes > max_bytes) return "";
  for (const relax::Expr& a : args->fields) {
    const auto* v = a.as<relax::VarNode>();
    if (!AsConstant(a, vars) && !(pending && v && pending->count(v))) return "";
  }
  return gv->name_hint;
}

class FoldableFinder : public relax::ExprVisitor {
 public:
  FoldableFinder(const ir::IRModuleNode& mod, int64_t max_bytes)
      : mod_(mod), max_bytes_(max_bytes) {}
  std::map<std::string, ir::PrimFunc> kernels;
  void VisitBinding(const relax::Binding& b) override {
    if (const auto* c = b->value.as<relax::ConstantNode>(); c && b->var)
      constants_[b->var.get()] = c;
    // A kernel reading what an earlier one folds is folded in the same round: a chain of
    // constant arithmetic (a batch norm's scale and shift) is made runnable at once, not link
    // by link.
    std::string k = FoldableKernel(b->value, mod_, constants_, max_bytes_, &pending_);
    if (!k.empty() && b.as<relax::VarBindingNode>()) {
      kernels[k] = mod_.Lookup(k).as_ref<ir::PrimFuncNode>();
      if (b->var) pending_.insert(b->var.get());
    }
    relax::ExprVisitor::VisitBinding(b);
  }

 private:
  const ir::IRModuleNode& mod_;
  int64_t max_bytes_;
  ConstantVars constants_;
  std::unordered_set<const relax::VarNode*> pending_;  // bound to kernels folded this round
};

absl::StatusOr<runtime::Tensor> ToTensor(const relax::ConstantNode& c) {
  KILN_ASSIGN_OR_RETURN(DLDataType dtype, runtime::ParseDataType(c.dtype.ToString()));
  KILN_ASSIGN_OR_RETURN(runtime::Tensor t, runtime::Tensor::Empty(c.shape, dtype));
  if (!c.bytes || c.bytes->size() != t.NumBytes())
    return absl::InvalidArgumentError("a constant whose data does not match its shape");
  std::memcpy(t.data(), c.bytes->data(), t.NumBytes());
  return t;
}

// Replaces foldable calls by their values, computed with the loaded kernels.
class Folder : public relax::ExprMutator {
 public:
  // `budget`: the bytes folding may still make, counted down across functions and rounds.
  Folder(const ir::IRModuleNode& mod, const HostKernels& kernels, int64_t max_bytes,
         int64_t* budget)
      : mod_(mod), kernels_(kernels), max_bytes_(max_bytes), budget_(budget) {}
  absl::Status status;
  bool budget_spent = false;

  relax::Binding VisitBinding(const relax::Binding& b) override {
    if (const auto* c = b->value.as<relax::ConstantNode>(); c && b->var)
      constants_[b->var.get()] = c;
    std::string kernel = FoldableKernel(b->value, mod_, constants_, max_bytes_);
    if (kernel.empty() || !b.as<relax::VarBindingNode>() || !status.ok())
      return relax::ExprMutator::VisitBinding(b);
    int64_t bytes = *relax::StaticTensorBytes(b->value.as<relax::CallNode>()->sinfo_args[0]);
    if (bytes > *budget_) {
      budget_spent = true;
      return relax::ExprMutator::VisitBinding(b);
    }
    *budget_ -= bytes;
    absl::StatusOr<relax::Expr> folded = Evaluate(kernel, *b->value.as<relax::CallNode>());
    if (!folded.ok()) {
      status = absl::Status(folded.status().code(),
                            absl::StrCat("folding binding '", b->var->name_hint, "' (kernel '",
                                         kernel, "'): ", folded.status().message()));
      return b;
    }
    relax::Binding out = relax::MakeBinding(b->var, *folded);
    if (const auto* c = out->value.as<relax::ConstantNode>()) constants_[b->var.get()] = c;
    return out;
  }

 private:
  absl::StatusOr<relax::Expr> Evaluate(const std::string& kernel, const relax::CallNode& call) {
    auto fn = kernels_.find(kernel);
    if (fn == kernels_.end()) return absl::InternalError("the kernel was not made runnable");
    std::vector<runtime::Value> args;
    for (const relax::Expr& a : call.args[1].as<relax::TupleNode>()->fields) {
      KILN_ASSIGN_OR_RETURN(runtime::Tensor t, ToTensor(*AsConstant(a, constants_)));
      args.emplace_back(std::move(t));
    }
    const auto* out = call.sinfo_args[0].as<relax::TensorStructInfoNode>();
    std::vector<int64_t> shape;
    for (const ir::PrimExpr& d : *out->dims()) shape.push_back(*ir::AsConstInt(d));
    KILN_ASSIGN_OR_RETURN(DLDataType dtype, runtime::ParseDataType(out->dtype.ToString()));
    KILN_ASSIGN_OR_RETURN(runtime::Tensor result, runtime::Tensor::Empty(shape, dtype));
    args.emplace_back(result);
    KILN_RETURN_IF_ERROR(fn->second(args).status());
    return relax::MakeConstant(
        out->dtype, shape, std::string(static_cast<const char*>(result.data()), result.NumBytes()));
  }

  const ir::IRModuleNode& mod_;
  const HostKernels& kernels_;
  int64_t max_bytes_;
  int64_t* budget_;
  ConstantVars constants_;
};

}  // namespace

absl::StatusOr<ir::IRModule> FoldConstant(const ir::IRModule& mod,
                                          const HostKernelCompiler& compile,
                                          const FoldLimits& limits) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule current, relax::NormalizeModule(mod));
  int64_t budget = limits.max_total_bytes;
  bool budget_spent = false;
  for (int round = 0; round < kMaxRounds && !budget_spent; ++round) {
    FoldableFinder finder(*current, limits.max_constant_bytes);
    for (const auto& [name, entry] : current->functions) {
      if (auto f = entry.second.as_ref<relax::FunctionNode>()) finder.VisitExpr(f);
    }
    if (finder.kernels.empty()) break;
    ir::IRModuleBuilder kernels;
    for (const auto& [name, func] : finder.kernels)
      KILN_RETURN_IF_ERROR(kernels.Add(relax::MakeGlobalVar(name), func));
    // Folding runs here, on the host, whatever the module's target.
    KILN_ASSIGN_OR_RETURN(HostKernels runnable, compile(kernels.Build()));
    ir::IRModuleBuilder out(current);
    for (const auto& [name, entry] : current->functions) {
      auto f = entry.second.as_ref<relax::FunctionNode>();
      if (!f) continue;
      Folder folder(*current, runnable, limits.max_constant_bytes, &budget);
      relax::Expr folded = folder.VisitExpr(f);
      KILN_RETURN_IF_ERROR(folder.status);
      budget_spent = budget_spent || folder.budget_spent;
      out.Update(entry.first, folded);
    }
    KILN_ASSIGN_OR_RETURN(current, relax::NormalizeModule(out.Build()));
  }
  return current;
}

pass::PassPtr FoldConstantPass(HostKernelCompiler compile, const FoldLimits& limits) {
  return pass::MakeModulePass("FoldConstant",
                              [compile = std::move(compile), limits](const ir::IRModule& mod) {
                                return FoldConstant(mod, compile, limits);
                              },
                              {"LegalizeOps"});
}

}  // namespace kiln::ir::relax
