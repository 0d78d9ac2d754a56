// VectorizeLoop: a `vectorized` loop with a constant extent becomes straight-line vector code —
// the loop variable becomes Ramp(min, 1, lanes), scalars meeting vectors are broadcast, and
// loads and stores touch `lanes` elements at once. Loops whose bodies hold anything but stores
// of expressions (ifs, nested loops, lets, allocations) are left to LLVM's loop vectorizer.
#ifndef KILN_COMPILER_TIR_VECTORIZE_H_
#define KILN_COMPILER_TIR_VECTORIZE_H_

#include "compiler/ir/tir_stmt.h"

namespace kiln::tir {

ir::PrimFunc VectorizeLoops(const ir::PrimFunc& f);

}  // namespace kiln::tir

#endif  // KILN_COMPILER_TIR_VECTORIZE_H_
