// TIR lowering passes: scheduled TensorIR (blocks, iter vars, init) down to plain loops and buffer
// accesses that code generation consumes. Each is PrimFunc -> PrimFunc, in a file of its own
// with its test beside it; LowerTirPasses() is their pipeline as pass objects
// (compiler/pass/pass.h), LowerTir a shorthand that runs it.
#ifndef KILN_COMPILER_TIR_TRANSFORM_TRANSFORM_H_
#define KILN_COMPILER_TIR_TRANSFORM_TRANSFORM_H_

#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"
#include "compiler/ir/tir_stmt.h"
#include "compiler/pass/pass.h"

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

// A `vectorized` loop with a constant extent becomes straight-line vector code: the loop variable
// becomes Ramp(min, 1, lanes), scalars meeting vectors are broadcast, and loads and stores touch
// `lanes` elements at once (extents up to 64 whole; longer or symbolic ones as 16-lane vectors
// plus a scalar tail). Loops whose bodies hold anything but stores of expressions are left to
// LLVM's loop vectorizer.
ir::PrimFunc VectorizeLoops(const ir::PrimFunc& f);

// Each pass above as a pass object, with its requirements.
pass::PassPtr LowerInitBlockPass();
pass::PassPtr ConvertBlocksToLoopsPass();
pass::PassPtr CompactAllocationsPass();
pass::PassPtr FlattenBuffersPass();
pass::PassPtr VectorizeLoopsPass();
pass::PassPtr SimplifyPass();

// LowerInitBlock, ConvertBlocksToLoops, CompactAllocations, FlattenBuffers, VectorizeLoops and
// Simplify, in that order: what every PrimFunc goes through before code generation.
std::vector<pass::PassPtr> LowerTirPasses();

// Runs LowerTirPasses() over every PrimFunc of `mod`; Relax functions are kept.
absl::StatusOr<ir::IRModule> LowerTir(const ir::IRModule& mod);

}  // namespace kiln::tir

#endif  // KILN_COMPILER_TIR_TRANSFORM_TRANSFORM_H_
