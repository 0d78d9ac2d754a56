// The Relax virtual machine: runs a VM executable's bytecode, one register file per frame,
// calling kernels of a kernel library, VM builtins (runtime/vm/builtins.h) and user functions
// of a FunctionRegistry through the one runtime::Function convention.
//
// A VirtualMachine is immutable once created: Invoke may run on many threads at once.
#ifndef KILN_RUNTIME_VM_VM_H_
#define KILN_RUNTIME_VM_VM_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/library.h"
#include "runtime/registry.h"
#include "runtime/vm/executable.h"

namespace kiln::runtime::vm {

// The times of the kernel calls of one instrumented Invoke: by kernel name, each call's seconds
// in call order.
struct KernelCallTimes {
  std::map<std::string, std::vector<double>, std::less<>> seconds;
};

class VirtualMachine {
 public:
  // Resolves every packed function of `exec` by name: a kernel of `kernels` (may be null), else
  // a function of `user` (may be null), else a VM builtin. NotFound names what is missing.
  // Kernels run their parallel loops on `pool` (null: serially).
  static absl::StatusOr<std::unique_ptr<VirtualMachine>> Create(
      std::shared_ptr<const Executable> exec, std::shared_ptr<KernelLibrary> kernels,
      std::shared_ptr<ThreadPool> pool, const FunctionRegistry* user);

  // Runs the function `name` (bytecode or packed) on `args`.
  absl::StatusOr<Value> Invoke(absl::string_view name, absl::Span<const Value> args) const;
  // The same, timing every call to a kernel of the library into `times` (added to what is there).
  // Only an Invoke given `times` is instrumented; the others pay one thread-local check per call.
  absl::StatusOr<Value> Invoke(absl::string_view name, absl::Span<const Value> args,
                               KernelCallTimes* times) const;

  const Executable& executable() const { return *exec_; }

 private:
  VirtualMachine() = default;
  absl::StatusOr<Value> Call(int64_t func, absl::Span<const Value> args, int depth) const;
  absl::StatusOr<Value> Run(int64_t func, absl::Span<const Value> args, int depth) const;
  absl::StatusOr<Value> CallClosure(const Closure& c, absl::Span<const Value> args,
                                    int depth) const;
  // Calls kernel `func` of the library (timed when the Invoke is instrumented).
  absl::Status RunKernel(int64_t func, absl::Span<const Value* const> args) const;
  // The two calls every model makes many times a run, done without copying their arguments
  // out of the frame: a kernel of the library, and alloc_tensor of a planned view.
  absl::Status CallKernelInFrame(const Instruction& in, const std::vector<Value>& regs) const;
  // A view for `in` (an alloc_tensor of constant shape and dtype), or nullopt where the
  // builtin itself must run (it reports what is wrong).
  std::optional<Value> ViewInFrame(const Instruction& in, DLDataType dtype,
                                   const std::vector<Value>& regs) const;
  // `status` of the call `in` at `pc` of `f`, prefixed with where it happened.
  absl::Status InstructionError(const FunctionInfo& f, int64_t pc, const Instruction& in,
                                const absl::Status& status) const;
  // The function table index of `name`: a map, since every Invoke and closure call looks up.
  absl::StatusOr<int64_t> Index(absl::string_view name) const;

  std::shared_ptr<const Executable> exec_;
  std::shared_ptr<KernelLibrary> kernels_;  // keeps kernel_fn_ loaded
  std::vector<Function> packed_;  // by function index; empty for bytecode functions and kernels
  std::map<std::string, int64_t, std::less<>> index_;  // function name -> table index
  std::vector<uint8_t> is_closure_builtin_;  // make_closure and invoke_closure need the VM
  std::vector<uint8_t> is_kernel_;           // packed functions from the kernel library
  std::vector<KilnKernelFn> kernel_fn_;      // by function index, for is_kernel_
  std::vector<std::string> kernel_what_;     // "library:symbol", prefixing a kernel's errors
  std::shared_ptr<ThreadPool> pool_;
  // By instruction: the dtype of an alloc_tensor whose shape and dtype are constants (bits 0
  // for every other instruction).
  std::vector<DLDataType> view_dtype_;
};

}  // namespace kiln::runtime::vm

#endif  // KILN_RUNTIME_VM_VM_H_
