// What the Relax passes' own tests share: looking at bindings and kernel calls, and the modules
// several of them run on.
#ifndef KILN_COMPILER_RELAX_TRANSFORM_TESTING_EXAMPLES_H_
#define KILN_COMPILER_RELAX_TRANSFORM_TESTING_EXAMPLES_H_

#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/ir/relax_expr.h"

namespace kiln::ir::relax::testing {

// The Relax function `name`'s bindings, flattened over its blocks.
std::vector<Binding> Bindings(const IRModule& mod, const std::string& name);

// The callee names of main's call_tir bindings, in order.
std::vector<std::string> KernelCalls(const IRModule& mod);

// A dense layer with an activation chain, softmax and a squared output, batch `n` (a number or
// a symbolic name).
std::string MlpScript(const std::string& n);

// A chain of four kernels on static shapes after ToNonDataflow: the input of the two passes that
// make memory explicit.
extern const char kKernelChain[];

}  // namespace kiln::ir::relax::testing

#endif  // KILN_COMPILER_RELAX_TRANSFORM_TESTING_EXAMPLES_H_
