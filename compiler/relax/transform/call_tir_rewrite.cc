// CallTIRRewrite (transform.h).
#include "absl/strings/str_cat.h"
#include "compiler/ir/relax_functor.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/struct_info.h"
#include "compiler/relax/transform/transform.h"
#include "runtime/support/status_macros.h"

namespace kiln::ir::relax {
namespace {

bool IsDpsCall(const Expr& value) {
  const auto* call = value.as<CallNode>();
  const auto* op = call != nullptr ? call->op.as<OpNode>() : nullptr;
  return op != nullptr && (op->name == "relax.call_tir" || op->name == "relax.call_dps_packed");
}

class Rewriter : public ExprMutator {
 public:
  absl::Status status;

  BindingBlock VisitBindingBlock(const BindingBlock& block) override {
    if (!block) return block;
    std::vector<Binding> out;
    bool changed = false;
    for (const Binding& b : block->bindings) {
      if (!b.as<VarBindingNode>() || !IsDpsCall(b->value)) {
        out.push_back(ExprMutator::VisitBinding(b));
        changed |= out.back() != b;
        continue;
      }
      if (block->is_dataflow()) {
        status = absl::FailedPreconditionError(absl::StrCat(
            "binding '", b->var->name_hint, "': CallTIRRewrite runs after ToNonDataflow"));
        return block;
      }
      if (absl::Status s = Expand(b, &out); !s.ok()) {
        status = s;
        return block;
      }
      changed = true;
    }
    return changed ? Make<BindingBlockNode>(block->is_dataflow(), std::move(out)) : block;
  }

 private:
  // v = call_tir(f, (args...), out_sinfo, [tir_vars])  ->
  //   v = R.builtin.alloc_tensor(shape, dtype, 0)    (one per output; a tuple is rebuilt after)
  //   _ = f(args..., v, tir_vars)       (tir_vars: a shape, the kernel's trailing int parameters;
  //                                     a symbolic PrimValue would not be well formed, WF18)
  static absl::Status Expand(const Binding& b, std::vector<Binding>* out) {
    const auto& call = *b->value.as<CallNode>();
    if (call.args.size() < 2 || call.sinfo_args.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("binding '", b->var->name_hint,
                       "': a destination-passing call needs a callee, "
                       "arguments and one output StructInfo"));
    }
    std::vector<StructInfo> outs = {call.sinfo_args[0]};
    const auto* tuple_out = call.sinfo_args[0].as<TupleStructInfoNode>();
    if (tuple_out != nullptr) outs = tuple_out->fields;
    std::vector<Expr> args;
    if (const auto* t = call.args[1].as<TupleNode>()) {
      args = t->fields;
    } else {
      args.push_back(call.args[1]);
    }
    std::vector<Expr> outputs;
    for (size_t k = 0; k < outs.size(); ++k) {
      const auto* t = outs[k].as<TensorStructInfoNode>();
      if (t == nullptr || t->dims() == nullptr || t->dtype.is_void()) {
        return absl::InvalidArgumentError(
            absl::StrCat("binding '", b->var->name_hint,
                         "': outputs need a known shape and dtype, got ", ToString(outs[k])));
      }
      Var v = tuple_out ? MakeVar(absl::StrCat(b->var->name_hint, "_", k), outs[k]) : b->var;
      Expr alloc = MakeCall(GetOp("relax.builtin.alloc_tensor"),
                            {MakeShape(*t->dims()), Make<DataTypeImmNode>(t->dtype),
                             Make<PrimValueNode>(IntImm(DataType::Int(64), 0))});
      out->push_back(MakeBinding(v, alloc));
      outputs.push_back(v);
      args.push_back(v);
    }
    if (call.args.size() > 2) {
      const auto* tir_vars = call.args[2].as<ShapeExprNode>();
      if (tir_vars == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "binding '", b->var->name_hint, "': call_tir's tir_vars must be a shape literal"));
      }
      args.push_back(call.args[2]);
    }
    out->push_back(MakeBinding(MakeVar("_", ObjectSInfo()), MakeCall(call.args[0], args)));
    if (tuple_out != nullptr) out->push_back(MakeBinding(b->var, MakeTuple(outputs)));
    return absl::OkStatus();
  }
};

}  // namespace

absl::StatusOr<IRModule> CallTIRRewrite(const IRModule& mod) {
  KILN_ASSIGN_OR_RETURN(IRModule normalized, NormalizeModule(mod));
  IRModuleBuilder out(normalized);
  for (const auto& [name, entry] : normalized->functions) {
    const auto* f = entry.second.as<FunctionNode>();
    if (f == nullptr) continue;
    Rewriter rewriter;
    Expr body = rewriter.VisitExpr(f->body);
    if (!rewriter.status.ok()) {
      return absl::Status(rewriter.status.code(),
                          absl::StrCat("in function '", name, "', ", rewriter.status.message()));
    }
    if (body == f->body) continue;
    // The direct kernel calls are not pure in Relax's sense; a pure function as a whole still
    // is, which it says with relax.force_pure (WF21: an impure function may not say it, and
    // needs not: impure calls are allowed in it).
    Attrs attrs = f->is_pure ? WithAttr(f->attrs, "relax.force_pure", Bool(true)) : f->attrs;
    out.Update(entry.first, MakeFunction(f->params, body, f->ret_struct_info, f->is_pure, attrs));
  }
  return NormalizeModule(out.Build());
}

}  // namespace kiln::ir::relax
