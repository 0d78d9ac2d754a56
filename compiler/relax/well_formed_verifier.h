// The Relax well-formedness checker (WF1-WF22 and the normal form) as a pass instrument: after
// every pass that may change Relax, the first pass that breaks the IR is named with every
// violation. On wherever BuildOptions::verify is (tests, debug builds, --verify-passes).
#ifndef KILN_COMPILER_RELAX_WELL_FORMED_VERIFIER_H_
#define KILN_COMPILER_RELAX_WELL_FORMED_VERIFIER_H_

#include "compiler/pass/pass.h"

namespace kiln::ir::relax {

class WellFormedVerifier : public pass::PassInstrument {
 public:
  absl::Status AfterPass(const pass::PassInfo& pass, const IRModule& mod) override;
  int passes_verified() const { return verified_; }

 private:
  int verified_ = 0;
};

}  // namespace kiln::ir::relax

#endif  // KILN_COMPILER_RELAX_WELL_FORMED_VERIFIER_H_
