// Small IR examples shared by tests and benchmarks. Each call builds fresh nodes (fresh
// variables), so two calls give alpha-equivalent but not identical modules.
#ifndef KILN_COMPILER_IR_TESTING_EXAMPLES_H_
#define KILN_COMPILER_IR_TESTING_EXAMPLES_H_

#include "compiler/ir/module.h"

namespace kiln::ir::testing {

// C[i, j] += A[i, k] * B[k, j] over (m, n, k) with a reduction block and init.
PrimFunc MatmulPrimFunc(int64_t m, int64_t n, int64_t k);

// A statement touching every TIR statement and expression kind.
PrimFunc EveryTirKindPrimFunc();

// main(x: R.Tensor(("n", 4), "float32")) with a dataflow block that calls `matmul` through
// call_tir, a tuple, a TupleGetItem, a match_cast and an If.
IRModule SmallRelaxModule();

// A module whose main has `num_bindings` chained call_tir bindings in one dataflow block.
IRModule ChainModule(int num_bindings);

}  // namespace kiln::ir::testing

#endif  // KILN_COMPILER_IR_TESTING_EXAMPLES_H_
