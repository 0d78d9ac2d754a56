// The TIR verifier as a pass instrument: after every pass, each PrimFunc the pass created or
// changed is verified (verify_prim_func.h); the first pass that breaks one is named with every
// violation. On wherever the Relax well-formedness check is (BuildOptions::verify: tests, debug
// builds, `kiln compile --verify-passes`).
#ifndef KILN_COMPILER_TIR_VERIFY_TIR_VERIFIER_H_
#define KILN_COMPILER_TIR_VERIFY_TIR_VERIFIER_H_

#include <map>
#include <string>

#include "compiler/pass/pass.h"

namespace kiln::tir {

class TirVerifier : public pass::PassInstrument {
 public:
  absl::Status AfterPass(const pass::PassInfo& pass, const ir::IRModule& mod) override;
  // How many PrimFuncs were verified (a function unchanged by a pass is not verified again).
  int functions_verified() const { return verified_; }

 private:
  std::map<std::string, ir::ObjectRef> last_;  // each PrimFunc as last verified
  int verified_ = 0;
};

}  // namespace kiln::tir

#endif  // KILN_COMPILER_TIR_VERIFY_TIR_VERIFIER_H_
