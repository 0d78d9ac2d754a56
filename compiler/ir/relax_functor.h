// Visitors and mutators over Relax expressions, bindings and blocks.
//
// As for TIR: override what you need and call the Default* method for the rest. The mutator is
// copy-on-write. Rebuilt expressions carry no StructInfo; run the normalizer (BlockBuilder) to
// infer it again.
#ifndef KILN_COMPILER_IR_RELAX_FUNCTOR_H_
#define KILN_COMPILER_IR_RELAX_FUNCTOR_H_

#include "compiler/ir/relax_expr.h"

namespace kiln::ir::relax {

class ExprVisitor {
 public:
  virtual ~ExprVisitor() = default;
  virtual void VisitExpr(const Expr& e) { DefaultVisitExpr(e); }
  virtual void VisitBinding(const Binding& b);
  virtual void VisitBindingBlock(const BindingBlock& block);
  // Called where a variable is defined: function parameters and binding LHS.
  virtual void VisitVarDef(const Var& /*var*/) {}
  // Shape dimensions and prim values; the default does nothing.
  virtual void VisitPrimExpr(const PrimExpr& /*e*/) {}
  // StructInfo annotations; the default visits the PrimExprs and shape exprs inside.
  virtual void VisitStructInfo(const StructInfo& sinfo);

 protected:
  void DefaultVisitExpr(const Expr& e);
};

class ExprMutator {
 public:
  virtual ~ExprMutator() = default;
  virtual Expr VisitExpr(const Expr& e) { return DefaultVisitExpr(e); }
  virtual Binding VisitBinding(const Binding& b);
  virtual BindingBlock VisitBindingBlock(const BindingBlock& block);
  virtual PrimExpr VisitPrimExpr(const PrimExpr& e) { return e; }

 protected:
  Expr DefaultVisitExpr(const Expr& e);
  bool VisitExprs(const std::vector<Expr>& in, std::vector<Expr>* out);
};

}  // namespace kiln::ir::relax

#endif  // KILN_COMPILER_IR_RELAX_FUNCTOR_H_
