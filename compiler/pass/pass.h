// The pass infrastructure: every compiler step is a Pass (IRModule -> IRModule) with a name, the
// IR level it works on and the passes it requires before it; a PassContext runs a pipeline of
// them with instruments around each pass (timing, dumps, verification; instruments.h). Modelled
// on what TVM's PassContext and MLIR's pass manager do well: the pipeline is data, and what is
// observed about a pass is observed the same way for all of them.
//
//   PassContext ctx;
//   ctx.AddInstrument(std::make_shared<PassTimer>());
//   absl::StatusOr<ir::IRModule> out = ctx.Run(mod, {relax::LegalizeOpsPass(), ...});
#ifndef KILN_COMPILER_PASS_PASS_H_
#define KILN_COMPILER_PASS_PASS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"
#include "compiler/ir/tir_stmt.h"

namespace kiln::pass {

// What a pass looks at and may change: the whole module, each Relax function, each PrimFunc, or
// none of it (a code-generation step whose product goes beside the module: LLVM, the link).
// Verifying instruments skip what a pass's level cannot have changed.
enum class IRLevel { kModule, kRelaxFunction, kPrimFunc, kNone };

struct PassInfo {
  std::string name;
  IRLevel level = IRLevel::kModule;
  // Passes that must have run earlier in the same pipeline.
  std::vector<std::string> required;
  // What --dump-after shows for a step whose product is not the module (the VM executable's
  // disassembly, the LLVM IR), given the module after it; unset: the module, printed.
  std::function<std::string(const ir::IRModule&)> dump_text;
};

class Pass {
 public:
  explicit Pass(PassInfo info) : info_(std::move(info)) {}
  virtual ~Pass() = default;
  const PassInfo& info() const { return info_; }
  const std::string& name() const { return info_.name; }
  virtual absl::StatusOr<ir::IRModule> Run(const ir::IRModule& mod) const = 0;

 private:
  PassInfo info_;
};
using PassPtr = std::shared_ptr<const Pass>;

using ModuleFn = std::function<absl::StatusOr<ir::IRModule>(const ir::IRModule&)>;
using PrimFuncFn = std::function<absl::StatusOr<ir::PrimFunc>(const ir::PrimFunc&)>;

// A pass over the whole module (`level` says what it changes, for the listing).
PassPtr MakeModulePass(std::string name, ModuleFn fn, std::vector<std::string> required = {},
                       IRLevel level = IRLevel::kModule);
// The same with every field of its PassInfo given (a code-generation step's dump_text).
PassPtr MakeModulePass(PassInfo info, ModuleFn fn);
// A pass over every PrimFunc of the module; Relax functions are kept as they are. An error
// names the PrimFunc.
PassPtr MakePrimFuncPass(std::string name, PrimFuncFn fn, std::vector<std::string> required = {});

// Observes every pass a PassContext runs.
class PassInstrument {
 public:
  virtual ~PassInstrument() = default;
  virtual void BeforePass(const PassInfo& /*pass*/, const ir::IRModule& /*mod*/) {}
  // An error stops the pipeline: a verifier's finding, naming the pass.
  virtual absl::Status AfterPass(const PassInfo& /*pass*/, const ir::IRModule& /*mod*/) {
    return absl::OkStatus();
  }
};

class PassContext {
 public:
  void AddInstrument(std::shared_ptr<PassInstrument> instrument);
  // A pass's own test runs it alone on input already in the form its requirements produce.
  void set_check_requirements(bool check) { check_requirements_ = check; }

  // Checks that every pass's requirements come before it (Internal, naming both, when not), then
  // runs the passes in order with the instruments around each. A failing pass's error is prefixed
  // with its name.
  absl::StatusOr<ir::IRModule> Run(const ir::IRModule& mod,
                                   const std::vector<PassPtr>& passes) const;

  // Checks requirements only.
  static absl::Status CheckOrder(const std::vector<PassPtr>& passes);

 private:
  std::vector<std::shared_ptr<PassInstrument>> instruments_;
  bool check_requirements_ = true;
};

}  // namespace kiln::pass

#endif  // KILN_COMPILER_PASS_PASS_H_
