// The TIR verifier: what every PrimFunc must satisfy between passes, the TIR counterpart of the
// Relax well-formedness checker (compiler/relax/well_formed.h). It reports every violation, each
// naming its rule and the function:
//   [TIR-SCOPE] in 'fused_add': variable 'i' is used outside the loop that binds it
//
//   TIR-SCOPE   every variable is bound (a parameter, a parameter buffer's shape, a loop, a let,
//               a block iterator, an allocation) where it is used, and bound once on any path
//   TIR-BUFFER  an accessed buffer's storage is declared in scope; as many indices as dimensions;
//               constant dimensions not negative, a buffer's bytes within 2^63
//   TIR-BOUNDS  no access is provably outside its buffer (loop and block-iterator ranges known,
//               accesses under a condition not judged)
//   TIR-DTYPE   a store's value and a load have the buffer's element type; a binary operation's
//               operands agree; conditions are boolean; loop variables are integers
//   TIR-BLOCK   a block is under a block realize, with one value per iterator
#ifndef KILN_COMPILER_TIR_VERIFY_VERIFY_PRIM_FUNC_H_
#define KILN_COMPILER_TIR_VERIFY_VERIFY_PRIM_FUNC_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "compiler/ir/module.h"
#include "compiler/ir/tir_stmt.h"

namespace kiln::tir {

struct TirViolation {
  std::string rule;      // "TIR-SCOPE", ...
  std::string function;  // the PrimFunc's name in its module
  std::string message;
  std::string ToString() const;
};

std::vector<TirViolation> FindTirViolations(const std::string& name, const ir::PrimFunc& func);

// OK, or InvalidArgument listing every violation, one per line.
absl::Status VerifyPrimFunc(const std::string& name, const ir::PrimFunc& func);
// Every PrimFunc of `mod`.
absl::Status VerifyPrimFuncs(const ir::IRModule& mod);

// What is wrong with a buffer's shape, each a message: a negative constant dimension, more than
// 2^63 bytes. (TIR-BUFFER; also checked of every module a build starts from, verifiers on or
// off: such a buffer is an input error, not a pass's.)
std::vector<std::string> BufferShapeProblems(const ir::BufferNode& b);
// InvalidArgument naming the first parameter buffer of a PrimFunc of `mod` with such a problem.
absl::Status VerifyBufferShapes(const ir::IRModule& mod);
// InvalidArgument listing every TIR-DTYPE violation of `mod`'s PrimFuncs: checked of every
// module a build starts from, like the shapes (code generation assumes operands that agree).
absl::Status VerifyTypes(const ir::IRModule& mod);

}  // namespace kiln::tir

#endif  // KILN_COMPILER_TIR_VERIFY_VERIFY_PRIM_FUNC_H_
