// A scalar interpreter for lowered PrimFuncs (LowerTir's output: loops over flat buffers, no
// vectors): what FoldConstant runs small kernels with, where compiling them with LLVM, linking
// and loading the library costs more than a hundred milliseconds for work of microseconds (a
// batch norm's scale and shift over 512 channels).
//
// Compile() turns the function into a tree of closures once, then Run() calls it as often as
// asked. It handles what a folded kernel is made of: integer and floating-point arithmetic with
// the rounding of the declared type (float32 results are rounded to float32 after every
// operation, as the compiled code does), comparisons, selects, casts, lets, loops, stores,
// allocations and asserts, and the intrinsics whose results are exact (sqrt, fabs, floor, ceil,
// trunc, round, rsqrt, fma, isnan, if_then_else). Anything else — a vector, an approximated
// transcendental, float16, a loop whose extent is not a constant — is UNIMPLEMENTED, and the
// caller compiles the kernel instead. Out-of-bounds accesses and integer division by zero are
// errors, never undefined behaviour.
#ifndef KILN_COMPILER_TIR_INTERPRET_H_
#define KILN_COMPILER_TIR_INTERPRET_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "compiler/ir/tir_stmt.h"

namespace kiln::tir {

// One buffer argument: its storage and its size.
struct InterpretedBuffer {
  void* data = nullptr;
  int64_t bytes = 0;
};

class InterpretedKernel {
 public:
  // `lowered` must take only buffers; `max_iterations` bounds the loop iterations it may run
  // (estimated from the constant extents before any runs): past it, UNIMPLEMENTED.
  static absl::StatusOr<InterpretedKernel> Compile(const ir::PrimFunc& lowered,
                                                   int64_t max_iterations);
  // Runs it on one buffer per parameter, in order.
  absl::Status Run(absl::Span<const InterpretedBuffer> buffers) const;
  // Loop iterations one run takes (every store's enclosing extents multiplied, summed).
  int64_t iterations() const;

  struct Program;  // interpret.cc

 private:
  explicit InterpretedKernel(std::shared_ptr<const Program> program)
      : program_(std::move(program)) {}
  std::shared_ptr<const Program> program_;
};

}  // namespace kiln::tir

#endif  // KILN_COMPILER_TIR_INTERPRET_H_
