// The Relax well-formedness checker: the syntactic criteria of seeds/relax_spec.md
// ("Well-Formedness Criteria", numbered WF1-WF22 here as in the spec) and, optionally, the
// normal-form criteria ("Normal Form", NF1-NF4).
//
// It reports every violation, each naming the rule, the function and the binding:
//   [WF3] in function 'main', binding 'lv1': variable 'lv2' is used before it is bound
//
// Deviations, on purpose: bfloat16 is accepted where the spec lists Float(16/32/64) (Kiln
// models use it as a storage type); the "params or derive_func must be defined" half of WF17
// applies to written annotations (parameters, return types, match_cast targets, sinfo_args),
// not to StructInfo the normalizer inferred for a variable.
#ifndef KILN_COMPILER_RELAX_WELL_FORMED_H_
#define KILN_COMPILER_RELAX_WELL_FORMED_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "compiler/ir/module.h"

namespace kiln::ir::relax {

struct WellFormedViolation {
  std::string rule;      // "WF1".."WF22" or "NF1".."NF4"
  std::string function;  // the global function, or "" for module-level rules
  std::string binding;   // the binding's variable, or "" outside bindings
  std::string message;
  std::string ToString() const;
};

struct WellFormedOptions {
  // Also require the normal form (what the BlockBuilder produces).
  bool check_normal_form = true;
};

std::vector<WellFormedViolation> FindWellFormedViolations(const IRModule& mod,
                                                          const WellFormedOptions& options = {});

// OK, or InvalidArgument listing every violation, one per line.
absl::Status CheckWellFormed(const IRModule& mod, const WellFormedOptions& options = {});

// InvalidArgument naming the first variable whose tensor has a constant shape of more than 2^63
// bytes (a [2^40, 2^40] parameter, a broadcast to 2^62 rows): it cannot exist anywhere, so it is
// refused when loaded and before compiling rather than at run time. Expects a normalized module.
absl::Status CheckTensorSizes(const IRModule& mod);

}  // namespace kiln::ir::relax

#endif  // KILN_COMPILER_RELAX_WELL_FORMED_H_
