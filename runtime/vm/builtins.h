// The VM's builtins, "vm.builtin.*": storage and tensor allocation, shapes and their run-time
// checks, tuples and null. The compiler's VM code generation emits calls to these by name.
//
// Symbolic shapes live in a shape heap (an int64 tensor, one slot per shape variable):
//   match_shape(value, heap, where, code0, v0, code1, v1, ...)   one (code, v) pair a dimension
//     code 0: the dimension must equal v         code 1: store it into heap[v]
//     code 2: it must equal heap[v]              code 3: anything
//   make_shape(heap, code0, v0, ...)   code 0: the dimension is v   code 1: it is heap[v]
// `where` names the checked thing in errors: "argument 'x' of 'main'".
#ifndef KILN_RUNTIME_VM_BUILTINS_H_
#define KILN_RUNTIME_VM_BUILTINS_H_

#include "runtime/registry.h"

namespace kiln::runtime::vm {

// The registry of VM builtins (built once).
const FunctionRegistry& Builtins();

// The two builtins that need the VM itself (make_closure, invoke_closure) are handled there.
inline constexpr const char* kMakeClosure = "vm.builtin.make_closure";
inline constexpr const char* kInvokeClosure = "vm.builtin.invoke_closure";

}  // namespace kiln::runtime::vm

#endif  // KILN_RUNTIME_VM_BUILTINS_H_
