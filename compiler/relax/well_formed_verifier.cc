#include "compiler/relax/well_formed_verifier.h"

#include "absl/strings/str_cat.h"
#include "compiler/relax/well_formed.h"

namespace kiln::ir::relax {

absl::Status WellFormedVerifier::AfterPass(const pass::PassInfo& pass, const IRModule& mod) {
  // No Relax changed.
  if (pass.level == pass::IRLevel::kPrimFunc || pass.level == pass::IRLevel::kNone) {
    return absl::OkStatus();
  }
  ++verified_;
  absl::Status s = CheckWellFormed(mod);
  if (s.ok()) return s;
  return absl::InternalError(
      absl::StrCat("the IR is not well-formed after pass ", pass.name, ":\n", s.message()));
}

}  // namespace kiln::ir::relax
