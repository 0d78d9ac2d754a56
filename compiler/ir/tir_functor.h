// Visitors and mutators over TIR expressions and statements.
//
// Override VisitExpr / VisitStmt, handle the kinds you care about, and call the Default* method
// for the rest. The mutator is copy-on-write: when no child changes, the very same node is
// returned, so unchanged subtrees keep their identity and sharing.
#ifndef KILN_COMPILER_IR_TIR_FUNCTOR_H_
#define KILN_COMPILER_IR_TIR_FUNCTOR_H_

#include <functional>

#include "compiler/ir/tir_stmt.h"

namespace kiln::ir {

class StmtExprVisitor {
 public:
  virtual ~StmtExprVisitor() = default;
  virtual void VisitExpr(const PrimExpr& e) { DefaultVisitExpr(e); }
  virtual void VisitStmt(const Stmt& s) { DefaultVisitStmt(s); }
  // Buffers are visited where they are used or declared; the default visits shape and strides.
  virtual void VisitBuffer(const Buffer& b);

 protected:
  void DefaultVisitExpr(const PrimExpr& e);
  void DefaultVisitStmt(const Stmt& s);
  void VisitRegion(const BufferRegion& r);
};

class StmtExprMutator {
 public:
  virtual ~StmtExprMutator() = default;
  virtual PrimExpr VisitExpr(const PrimExpr& e) { return DefaultVisitExpr(e); }
  virtual Stmt VisitStmt(const Stmt& s) { return DefaultVisitStmt(s); }
  // The default leaves buffers unchanged; substitutions that touch shapes override it.
  virtual Buffer VisitBuffer(const Buffer& b) { return b; }

 protected:
  PrimExpr DefaultVisitExpr(const PrimExpr& e);
  Stmt DefaultVisitStmt(const Stmt& s);
  // Visits each element; returns true if any changed.
  bool VisitExprs(const std::vector<PrimExpr>& in, std::vector<PrimExpr>* out);
  BufferRegion VisitRegion(const BufferRegion& r);
  Range VisitRange(const Range& r);
};

// Replaces variables by expressions (a TIR Var -> PrimExpr map given as a function).
PrimExpr Substitute(const PrimExpr& e, const std::function<PrimExpr(const Var&)>& lookup);
Stmt Substitute(const Stmt& s, const std::function<PrimExpr(const Var&)>& lookup);

// Calls `f` on every sub-expression of `e`, children before parents.
void PostOrderVisit(const PrimExpr& e, const std::function<void(const PrimExpr&)>& f);
// The same, once per distinct node: for questions of which nodes occur (variables used), linear
// in a DAG's nodes where PostOrderVisit is linear in its paths (a symbolic shape squared again
// and again: n nodes, 2^n paths).
void PostOrderVisitOnce(const PrimExpr& e, const std::function<void(const PrimExpr&)>& f);
// The same for every expression in a statement (loop bounds, indices, values, conditions).
void PostOrderVisit(const Stmt& s, const std::function<void(const PrimExpr&)>& f);

// The variables `f` uses but does not bind inside its body (loops, block iterators, lets,
// allocations), in order of first use, the parameters' buffer shapes first. Parameters and the
// size variables that buffer shapes bind are among them: callers filter what they bind.
std::vector<Var> UnboundVars(const PrimFuncNode& f);

}  // namespace kiln::ir

#endif  // KILN_COMPILER_IR_TIR_FUNCTOR_H_
