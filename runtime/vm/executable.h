// A Relax VM executable: a function table, a constant pool and one instruction stream, as the
// compiler's VM code generation emits it and runtime/vm/vm.h runs it.
//
// Four instructions, as in TVM's Relax VM:
//   Call  dst = func(args...)   args are registers, int64 immediates, constants or functions
//   Ret   return a register
//   Goto  pc += offset
//   If    if cond != 0: pc += 1 else pc += offset
// Everything else (allocation, shapes, tuples, kernels) is a call to a named packed function.
#ifndef KILN_RUNTIME_VM_EXECUTABLE_H_
#define KILN_RUNTIME_VM_EXECUTABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/value.h"

namespace kiln::runtime::vm {

// Bumped whenever the meaning of an executable changes; a reader refuses other versions.
inline constexpr uint32_t kVMFormatVersion = 1;

// The register a Call writes when its result is not used.
inline constexpr int64_t kDiscard = -1;

struct Arg {
  enum class Kind : uint8_t { kRegister, kImmediate, kConstant, kFunction };
  Kind kind = Kind::kRegister;
  int64_t value = 0;
  static Arg Register(int64_t r) { return {Kind::kRegister, r}; }
  static Arg Immediate(int64_t v) { return {Kind::kImmediate, v}; }
  static Arg Constant(int64_t index) { return {Kind::kConstant, index}; }
  static Arg Function(int64_t index) { return {Kind::kFunction, index}; }
};

struct Instruction {
  enum class Op : uint8_t { kCall, kRet, kGoto, kIf };
  Op op = Op::kRet;
  int64_t dst = kDiscard;  // kCall
  int64_t func = 0;        // kCall
  std::vector<Arg> args;   // kCall
  int64_t result = 0;      // kRet
  int64_t cond = 0;        // kIf
  int64_t offset = 0;      // kGoto, kIf
};

struct FunctionInfo {
  enum class Kind : uint8_t { kBytecode, kPacked };
  std::string name;
  Kind kind = Kind::kPacked;
  int64_t start = 0, end = 0;  // kBytecode: instructions [start, end)
  int64_t num_args = 0;
  int64_t num_registers = 0;  // kBytecode: at least num_args
  std::vector<std::string> param_names;
};

class Executable {
 public:
  std::vector<FunctionInfo> functions;
  std::vector<Value> constants;  // tensors, ints, floats, strings, shapes
  std::vector<Instruction> code;

  // The index of the function called `name`, or NotFound.
  absl::StatusOr<int64_t> FindFunction(absl::string_view name) const;

  // Checks every index: registers inside their function's file, functions and constants in
  // their tables, jumps inside their function, bytecode ranges inside the code and ending in
  // Ret or Goto. Errors name the function and the instruction.
  absl::Status Validate() const;

  // Versioned bytes (runtime/format/vm.proto); Deserialize validates.
  absl::StatusOr<std::string> Serialize() const;
  static absl::StatusOr<Executable> Deserialize(absl::string_view bytes);

  // A disassembly, one instruction a line:
  //   @main(x, y): 3 registers
  //     0: %2 = call add(%0, %1)
  //     1: ret %2
  std::string AsText() const;
};

}  // namespace kiln::runtime::vm

#endif  // KILN_RUNTIME_VM_EXECUTABLE_H_
