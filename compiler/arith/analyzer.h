// Arithmetic analysis of integer index expressions, shared by Relax shape reasoning and TIR loop
// transformations:
//   - constant integer bounds      Bound(i*4 + 3) = [3, 63] when i in [0, 16)
//   - modular (divisibility) facts Modular(i*4 + 3) = 4k + 3
//   - canonical simplification     (i*32 + j) // 32 -> i   when j in [0, 32)
//                                  n*4 - 4*n -> 0
//   - a prover for (in)equalities   CanProve(i < 16), CanProveEqual(n*4, 4*n)
//
// Simplify turns an integer expression into a sum of monomials with integer coefficients,
// splits floordiv/floormod by positive constants into the divisible part and a remainder whose
// bounds decide the result, and folds constants, comparisons and logic. Anything it cannot
// reason about (loads, calls, non-constant divisors) becomes an opaque atom.
#ifndef KILN_COMPILER_ARITH_ANALYZER_H_
#define KILN_COMPILER_ARITH_ANALYZER_H_

#include <cstdint>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/ir/tir_stmt.h"

namespace kiln::arith {

using ir::PrimExpr;
using ir::Var;

struct ConstIntBound {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  int64_t min = kNegInf;
  int64_t max = kPosInf;
  bool is_const() const { return min == max; }
};

// The set { coeff * k + base | k integer }; coeff 0 means the constant `base`.
struct ModularSet {
  int64_t coeff = 1;
  int64_t base = 0;
};

class Analyzer {
 public:
  // Declares v in [min, max] (inclusive).
  void Bind(const Var& v, int64_t min, int64_t max);
  // Declares v in [range.min, range.min + range.extent) when both are constants.
  void Bind(const Var& v, const ir::Range& range);

  ConstIntBound Bound(const PrimExpr& e);
  ModularSet Modular(const PrimExpr& e);
  PrimExpr Simplify(const PrimExpr& e);
  // True only when `cond` holds for every value of its variables within their bounds.
  bool CanProve(const PrimExpr& cond);
  bool CanProveEqual(const PrimExpr& a, const PrimExpr& b);

 private:
  friend class Canonicalizer;
  const ConstIntBound* FindBound(const ir::Object* var) const;
  ConstIntBound BoundOnce(const PrimExpr& e);
  ModularSet ModularOnce(const PrimExpr& e);
  // By variable: a block of 10^5 axes binds 10^5 of them (a list searched per bind was n^2).
  std::unordered_map<const ir::Object*, ConstIntBound> bounds_;
  // Within one outermost Bound or Modular call: results by node (analyzer.cc).
  std::unordered_map<const void*, ConstIntBound>* bound_memo_ = nullptr;
  std::unordered_map<const void*, ModularSet>* modular_memo_ = nullptr;
  // Simplify's results by node (each entry holds its node, so no address is reused), kept while
  // the bounds stay as they are: a pass that simplifies each node of an expression after its
  // children walks it once, not once per node. Bind clears it.
  std::unordered_map<const void*, std::pair<PrimExpr, PrimExpr>> simplified_;
};

}  // namespace kiln::arith

#endif  // KILN_COMPILER_ARITH_ANALYZER_H_
