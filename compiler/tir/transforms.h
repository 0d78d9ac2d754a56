// TIR lowering passes: scheduled TensorIR (blocks, iter vars, init) down to plain loops and buffer
// accesses that code generation consumes. Each is PrimFunc -> PrimFunc; LowerTir runs them in
// order over every PrimFunc of a module.
#ifndef KILN_COMPILER_TIR_TRANSFORMS_H_
#define KILN_COMPILER_TIR_TRANSFORMS_H_

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"

namespace kiln::tir {

// A reduction block's init runs when every reduce iter var is at the start of its domain:
//   init; body   ->   if (vk == 0 && ...) { init }  body
ir::PrimFunc LowerInitBlock(const ir::PrimFunc& f);

// Replaces each BlockRealize by its block's body with the iter vars substituted by their bound
// values, guarded by the predicate, with alloc_buffers as Allocate and match_buffer views as
// accesses of their source. Requires LowerInitBlock first.
absl::StatusOr<ir::PrimFunc> ConvertBlocksToLoops(const ir::PrimFunc& f);

// Shrinks intermediate allocations to what is used: each Allocate sinks into the loops around
// its accesses where iterations use disjoint parts of it, and each dimension is cut to the
// constant-width window the accesses touch (indices shifted to the window's start).
ir::PrimFunc CompactAllocations(const ir::PrimFunc& f);

// Rewrites allocated buffers of rank > 1 as 1-D, indexed row-major. Parameter buffers keep their
// rank: their strides are known only at run time, checked and applied by the kernel prologue.
ir::PrimFunc FlattenBuffers(const ir::PrimFunc& f);

// Simplifies integer expressions (indices, loop bounds, conditions) with the arithmetic analyzer,
// knowing each loop variable's range: `(i * 32 + j) // 32` inside `for j in range(32)` becomes `i`.
ir::PrimFunc Simplify(const ir::PrimFunc& f);

// LowerInitBlock, ConvertBlocksToLoops, CompactAllocations, FlattenBuffers, VectorizeLoops and
// Simplify on every PrimFunc of `mod`; Relax functions are kept.
absl::StatusOr<ir::IRModule> LowerTir(const ir::IRModule& mod);

}  // namespace kiln::tir

#endif  // KILN_COMPILER_TIR_TRANSFORMS_H_
