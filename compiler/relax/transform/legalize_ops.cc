#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/ir/relax_functor.h"
#include "compiler/ir/structural.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/op_registry.h"
#include "compiler/relax/struct_info.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/tir/compute.h"
#include "runtime/support/status_macros.h"

namespace kiln::ir::relax {
namespace {

// A tensor StructInfo with known dtype and dimensions, or null.
const TensorStructInfoNode* KnownTensor(const StructInfo& sinfo) {
  const auto* t = sinfo.as<TensorStructInfoNode>();
  return t != nullptr && !t->dtype.is_void() && t->dims() != nullptr ? t : nullptr;
}

class Legalizer : public ExprMutator {
 public:
  explicit Legalizer(const IRModule& mod) : mod_(mod) {
    for (const auto& [name, entry] : mod->functions) names_.insert(name);
  }

  absl::StatusOr<IRModule> Run() {
    IRModuleBuilder out(mod_);
    for (const auto& [name, entry] : mod_->functions) {
      const auto* f = entry.second.as<FunctionNode>();
      if (f == nullptr) continue;
      function_ = name;
      Expr rewritten = VisitExpr(entry.second.as_ref<FunctionNode>());
      KILN_RETURN_IF_ERROR(status_);
      out.Update(entry.first, rewritten);
    }
    for (const auto& [gv, kernel] : kernels_) KILN_RETURN_IF_ERROR(out.Add(gv, kernel));
    return NormalizeModule(out.Build());
  }

  Binding VisitBinding(const Binding& b) override {
    const auto* vb = b.as<VarBindingNode>();
    const auto* call = vb != nullptr ? vb->value.as<CallNode>() : nullptr;
    const auto* op = call != nullptr ? call->op.as<OpNode>() : nullptr;
    const OpInfo* info = op != nullptr ? LookupOp(op->name) : nullptr;
    if (info == nullptr || info->legalize == nullptr || !status_.ok()) {
      return ExprMutator::VisitBinding(b);
    }
    absl::StatusOr<Expr> lowered = Lower(*call, *info, vb->var);
    if (!lowered.ok()) {
      status_ = absl::Status(lowered.status().code(),
                             absl::StrCat("in function '", function_, "', binding '",
                                          vb->var->name_hint, "': ", lowered.status().message()));
      return b;
    }
    return MakeBinding(vb->var, *lowered);
  }

 private:
  absl::StatusOr<Expr> Lower(const CallNode& call, const OpInfo& info, const Var& result) {
    const std::string& op = info.name;
    // The tensor arguments, tuples flattened; the rest (shapes) is read from StructInfo.
    std::vector<Expr> tensors;
    for (size_t i = 0; i < call.args.size(); ++i) {
      const Expr& arg = call.args[i];
      if (const auto* tuple = arg.as<TupleNode>()) {
        for (const Expr& field : tuple->fields) tensors.push_back(field);
      } else if (arg->struct_info().as<TensorStructInfoNode>()) {
        tensors.push_back(arg);
      } else if (arg->struct_info().as<TupleStructInfoNode>()) {
        return absl::InvalidArgumentError(absl::StrCat(
            op, " argument ", i, ": pass a tuple literal (a tuple variable cannot be lowered)"));
      }
    }
    tir::ComputeBuilder builder;
    std::vector<Buffer> inputs, outputs;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const TensorStructInfoNode* t = KnownTensor(tensors[i]->struct_info());
      if (t == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            op, " tensor argument ", i, " needs a known shape and dtype to be lowered, got ",
            ToString(tensors[i]->struct_info())));
      }
      const auto* v = tensors[i].as<VarNode>();
      inputs.push_back(
          builder.Input(v != nullptr ? v->name_hint : absl::StrCat("A", i), t->dtype, *t->dims()));
    }
    StructInfo out_sinfo = result->struct_info();
    std::vector<StructInfo> outs = {out_sinfo};
    if (const auto* tuple = out_sinfo.as<TupleStructInfoNode>()) outs = tuple->fields;
    for (size_t i = 0; i < outs.size(); ++i) {
      const TensorStructInfoNode* t = KnownTensor(outs[i]);
      if (t == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(op, ": the result needs a known shape and dtype to be lowered, got ",
                         ToString(outs[i])));
      }
      outputs.push_back(builder.Output(outs.size() == 1 ? "T_out" : absl::StrCat("T_out", i),
                                       t->dtype, *t->dims()));
    }
    KILN_RETURN_IF_ERROR(info.legalize(call, inputs, outputs, builder));
    PrimFunc kernel = builder.Build();
    // Fusion reads the pattern from the kernel; multi-output kernels are never fused.
    OpPattern pattern = outputs.size() == 1 ? info.pattern : OpPattern::kOpaque;
    kernel = WithFuncAttr(kernel, "op_pattern",
                          IntImm(DataType::Int(32), static_cast<int64_t>(pattern)));
    GlobalVar gv = AddKernel(op.substr(op.rfind('.') + 1), kernel);
    std::vector<Expr> args = {gv, MakeTuple(tensors)};
    if (!builder.size_args().empty()) args.push_back(MakeShape(builder.size_args()));
    return MakeCall(GetOp("relax.call_tir"), std::move(args), {out_sinfo});
  }

  // The GlobalVar of `kernel`: an identical one already added, or a new unique name.
  GlobalVar AddKernel(const std::string& base, const PrimFunc& kernel) {
    for (const auto& [gv, existing] : kernels_) {
      if (StructuralEqual(existing, kernel)) return gv;
    }
    std::string name = base;
    for (int k = 1; names_.count(name); ++k) name = absl::StrCat(base, k);
    names_.insert(name);
    GlobalVar gv = MakeGlobalVar(name);
    kernels_.emplace_back(gv, kernel);
    return gv;
  }

  const IRModule& mod_;
  std::set<std::string> names_;
  std::vector<std::pair<GlobalVar, PrimFunc>> kernels_;
  std::string function_;
  absl::Status status_;
};

}  // namespace

absl::StatusOr<IRModule> LegalizeOps(const IRModule& mod) {
  KILN_ASSIGN_OR_RETURN(IRModule normalized, NormalizeModule(mod));
  return Legalizer(normalized).Run();
}

}  // namespace kiln::ir::relax
