// TIR side of operator fusion: several kernels that form a chain become one PrimFunc, and the
// intermediate tensors of injective stages disappear into their readers.
//
//   FusePrimFuncs: kernel bodies placed one after another under a root block that allocates the
//     intermediates; each kernel's size variables unified with those of the fused parameters.
//   InlineInjective: compute_inline of every intermediate written by a plain injective stage
//     (out[v...] = f(v...)): each load out[i...] in later stages becomes f(i...). A guarded copy
//     (a select, such as a convolution's zero padding) read by a reduction is kept, so that the
//     reduction reads contiguous memory.
#ifndef KILN_COMPILER_TIR_FUSE_H_
#define KILN_COMPILER_TIR_FUSE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/tir_stmt.h"

namespace kiln::tir {

// One kernel of a fused chain, in destination-passing style: its parameters are its inputs then
// one output. Values are numbered: 0 .. num_inputs-1 are the fused function's inputs, and member
// k's output is value num_inputs + k.
struct FusionMember {
  ir::PrimFunc kernel;
  std::vector<int> inputs;  // a value number per input parameter
};

// The fused PrimFunc: parameters are the fused inputs, then the last member's output. Fails
// (and the caller keeps the kernels apart) when a kernel's buffer shapes cannot be unified with
// the values it is given, or an intermediate's size is not known from the parameters.
absl::StatusOr<ir::PrimFunc> FusePrimFuncs(const std::vector<FusionMember>& members,
                                           int num_inputs);

// Inlines injective stages into their readers (see above). Stages are the statements under the
// root block; a stage qualifies when its loops drive one block directly, the block is spatial
// with no init and stores to an intermediate it alone writes, at exactly its iter vars, over the
// whole buffer.
ir::PrimFunc InlineInjective(const ir::PrimFunc& f);

}  // namespace kiln::tir

#endif  // KILN_COMPILER_TIR_FUSE_H_
