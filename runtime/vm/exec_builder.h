// Builds a VM executable one instruction at a time: what the compiler's VM code generation uses,
// and what tests write executables with.
#ifndef KILN_RUNTIME_VM_EXEC_BUILDER_H_
#define KILN_RUNTIME_VM_EXEC_BUILDER_H_

#include <map>
#include <string>
#include <vector>

#include "runtime/vm/executable.h"

namespace kiln::runtime::vm {

class ExecBuilder {
 public:
  // The function table index of `name`: a bytecode function once BeginFunction defines it, else a
  // packed function resolved when the executable is loaded.
  int64_t Function(const std::string& name);
  int64_t AddConstant(Value v);

  // Starts the bytecode of `name`; its parameters are registers 0 .. params.size() - 1.
  void BeginFunction(const std::string& name, std::vector<std::string> params);
  int64_t NewRegister();
  void EmitCall(int64_t dst, const std::string& callee, std::vector<Arg> args);
  void EmitRet(int64_t reg);
  // Jumps whose target is set later with SetJumpTarget; each returns its instruction's index.
  int64_t EmitGoto();
  int64_t EmitIf(int64_t cond);
  // Points the jump at `instruction` to the next instruction emitted, or to `target` (an index
  // from Here(), for backward jumps).
  void SetJumpTarget(int64_t instruction);
  void SetJumpTarget(int64_t instruction, int64_t target);
  // The index the next instruction will have.
  int64_t Here() const { return static_cast<int64_t>(exec_.code.size()); }
  void EndFunction();

  // The executable, validated.
  absl::StatusOr<Executable> Build();

 private:
  Executable exec_;
  std::map<std::string, int64_t> index_;
  int64_t current_ = -1;
};

}  // namespace kiln::runtime::vm

#endif  // KILN_RUNTIME_VM_EXEC_BUILDER_H_
