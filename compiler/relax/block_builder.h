// The BlockBuilder: the one way Relax code is built and normalized.
//
// It emits bindings into binding blocks and, as it goes, puts expressions into the spec's normal
// form (seeds/relax_spec.md, "Normal Form") and infers their StructInfo:
//   - nested non-leaf sub-expressions are bound to fresh variables, left to right;
//   - function bodies and If branches become SeqExprs; binding blocks are consolidated;
//   - a SeqExpr on the right of a binding is flattened into the enclosing block;
//   - StructInfo comes from the operator registry, function signatures (binding the callee's
//     shape variables from the arguments), tuples, If (the join of both branches) and
//     MatchCast (which binds new shape variables); leaving a SeqExpr erases what it scoped.
//
// Nothing aborts: each error is a Status naming the function and the binding, e.g.
//   in function 'main', binding 'lv1': relax.add: operand dtypes differ (float32 vs int32)
//
// Normalizing code that is already normal returns the very same nodes.
#ifndef KILN_COMPILER_RELAX_BLOCK_BUILDER_H_
#define KILN_COMPILER_RELAX_BLOCK_BUILDER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/arith/analyzer.h"
#include "compiler/ir/module.h"

namespace kiln::ir::relax {

class BlockBuilder {
 public:
  // `context` is the module whose GlobalVars calls refer to (null: calls to GlobalVars other
  // than call_tir's callee cannot be typed).
  explicit BlockBuilder(IRModule context = nullptr);
  ~BlockBuilder();
  BlockBuilder(const BlockBuilder&) = delete;
  BlockBuilder& operator=(const BlockBuilder&) = delete;

  // ---- Building functions ------------------------------------------------------------------
  // Opens a function: `params` (which must carry StructInfo) and the shape variables their
  // annotations bind are in scope until EndFunction.
  void BeginFunction(const std::string& name, std::vector<Var> params);
  // Closes the function opened last: the blocks emitted since BeginFunction, ending in
  // `result`, become its body.
  absl::StatusOr<Function> EndFunction(const Expr& result, StructInfo ret = nullptr,
                                       bool is_pure = true, Attrs attrs = {});

  void BeginBindingBlock();
  void BeginDataflowBlock();
  // Closes the innermost block (it also becomes part of the enclosing function or SeqExpr).
  absl::StatusOr<BindingBlock> EndBlock();

  // Normalizes `expr` and binds it to a fresh variable: a DataflowVar inside a dataflow block.
  absl::StatusOr<Var> Emit(const Expr& expr, const std::string& name_hint = "");
  // Like Emit, but always an ordinary Var: the way values leave a dataflow block.
  absl::StatusOr<Var> EmitOutput(const Expr& expr, const std::string& name_hint = "");
  // Emits `var = R.match_cast(value, sinfo)`; new shape variables in `sinfo` become bound.
  absl::StatusOr<Var> EmitMatchCast(const Expr& value, const StructInfo& sinfo,
                                    const std::string& name_hint = "");
  // Emits an existing binding, normalizing its value and checking the variable's annotation.
  absl::Status EmitBinding(const Binding& binding);

  // ---- Normalizing -------------------------------------------------------------------------
  // Returns `expr` in normal form with StructInfo. Nested non-leaf sub-expressions are bound in
  // the open block (there must be one if any are).
  absl::StatusOr<Expr> Normalize(const Expr& expr);
  // Normalizes a function (a scope of its own); `name` is used in error messages.
  absl::StatusOr<Function> NormalizeFunction(const Function& func, const std::string& name);
  // The StructInfo of a normalized expression (GlobalVars: their function's signature).
  absl::StatusOr<StructInfo> StructInfoOf(const Expr& expr);

  arith::Analyzer* analyzer();

  // How a GlobalVar's function type is found. The default reads the context module:
  // annotations, or StructInfo left by an earlier normalization. NormalizeModule installs one
  // that normalizes callees on demand.
  using GlobalResolver = std::function<absl::StatusOr<StructInfo>(const GlobalVarNode&)>;
  void SetGlobalResolver(GlobalResolver resolver);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Normalizes every Relax function of `mod` and infers its StructInfo; PrimFuncs are kept as
// they are. Returns `mod` itself when it is already normal.
absl::StatusOr<IRModule> NormalizeModule(const IRModule& mod);

}  // namespace kiln::ir::relax

#endif  // KILN_COMPILER_RELAX_BLOCK_BUILDER_H_
