// FoldConstant: a kernel call whose inputs are all constants runs at compile time, and its
// result becomes a constant (weights transposed, reshaped or scaled ahead of time; batch_norm
// parameters combined). The back end makes the kernels concerned runnable on the host (it gives a
// HostKernelCompiler: backend::LoadHostKernels, which interprets small ones and compiles the
// rest) and the pass runs them, so it is a target of its own, apart from the Relax passes that
// only rewrite IR; it knows no back end.
// Works on legalized code (call_tir); chains fold over successive rounds.
#ifndef KILN_COMPILER_RELAX_TRANSFORM_FOLD_CONSTANT_H_
#define KILN_COMPILER_RELAX_TRANSFORM_FOLD_CONSTANT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"
#include "compiler/pass/pass.h"
#include "runtime/value.h"

namespace kiln::ir::relax {

// How much constant data folding may make: a result larger than `max_constant_bytes` stays
// computed at run time, and so does everything after `max_total_bytes` have been folded. A model
// of a hundred bytes can ask for a constant of gigabytes (a broadcast, a range); the artifact and
// the compiler's memory stay bounded by these (kilnd's --max-constant-mb and --max-folded-mb).
struct FoldLimits {
  int64_t max_constant_bytes = int64_t{64} << 20;
  int64_t max_total_bytes = int64_t{256} << 20;
};

// The PrimFuncs of a module made runnable on this machine, by name (the back end provides it:
// it interprets the small ones and compiles the rest).
using HostKernels = std::map<std::string, runtime::Function>;
using HostKernelCompiler = std::function<absl::StatusOr<HostKernels>(const IRModule&)>;

absl::StatusOr<IRModule> FoldConstant(const IRModule& mod, const HostKernelCompiler& compile,
                                      const FoldLimits& limits = {});

// As a pass object: requires LegalizeOps.
pass::PassPtr FoldConstantPass(HostKernelCompiler compile, const FoldLimits& limits = {});

}  // namespace kiln::ir::relax

#endif  // KILN_COMPILER_RELAX_TRANSFORM_FOLD_CONSTANT_H_
