// Structural equality and hashing of IR nodes: the keys of the artifact cache and the tuning
// database.
//
// Equality is alpha-equivalence. Variables (TIR Vars, Relax Vars and DataflowVars) and Buffers
// are not compared by name or identity but by position: the first time a variable is met on each
// side the two are paired (and their types/StructInfo compared); afterwards each must only meet
// its partner. GlobalVars and Ops are compared by name. Names of local variables are ignored.
//
// The hash is consistent with that equality (equal => same hash), contains no pointers and no
// iteration over unordered containers, and is therefore stable across processes, machines and
// runs. Its definition is versioned: kStructuralHashVersion is mixed into every hash and must be
// bumped whenever the hashing of any node changes, so that stale cache keys cannot collide with
// new ones.
#ifndef KILN_COMPILER_IR_STRUCTURAL_H_
#define KILN_COMPILER_IR_STRUCTURAL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "compiler/ir/node.h"

namespace kiln::ir {

inline constexpr uint64_t kStructuralHashVersion = 1;

bool StructuralEqual(const ObjectRef& a, const ObjectRef& b);

// OK when equal; otherwise FailedPrecondition naming the path to the first mismatch, e.g.
// "functions[main].body.blocks[0].bindings[1].value.args[0]: Var vs Constant".
absl::Status CheckStructuralEqual(const ObjectRef& a, const ObjectRef& b);

uint64_t StructuralHash(const ObjectRef& node);

// The same hash with every integer constant taken as equal to every other of its type: shapes,
// loop extents, strides and paddings drop out, so that the kernels of one operator at other
// shapes (every 3x3 convolution with its epilogue, say) share it. What the tuner transfers
// records by.
uint64_t StructuralHashIgnoringConstants(const ObjectRef& node);

// Equality where variables and buffers are compared by identity instead of by position: two
// expressions over the same free variables (the arithmetic analyzer's notion of "same term").
bool ExprDeepEqual(const ObjectRef& a, const ObjectRef& b);

}  // namespace kiln::ir

#endif  // KILN_COMPILER_IR_STRUCTURAL_H_
