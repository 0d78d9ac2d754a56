// How much arithmetic a kernel does: what per-kernel profiles divide by their time to report a
// FLOP rate.
#ifndef KILN_COMPILER_TIR_FLOPS_H_
#define KILN_COMPILER_TIR_FLOPS_H_

#include "compiler/ir/tir_stmt.h"

namespace kiln::tir {

// Floating-point operations one call of `f` performs: for every store, the float arithmetic of
// its value (a multiply-add is two; a math call one; an int8 dot4_u8i8 eight, its four
// multiply-adds, so that int8 kernels compare with float ones; each vector lane counts) times the
// iterations of the loops around it. 0 when a loop extent is not a constant (a symbolic batch).
double EstimateFlops(const ir::PrimFunc& f);

}  // namespace kiln::tir

#endif  // KILN_COMPILER_TIR_FLOPS_H_
