// Relax functions -> a VM executable (runtime/vm/executable.h).
//
// The input is a module whose operators are all legalized: calls are call_tir / call_dps_packed
// to functions of the kernel library, packed calls to registered functions, calls of other
// Relax functions, and the structural forms (tuples, shapes, constants, If, match_cast).
// Outputs of call_tir are allocated explicitly (CallTIRRewrite) as each call is emitted.
//
// Every parameter is checked at run time against its StructInfo: rank, dtype, each constant
// dimension, and each symbolic dimension against its first occurrence. Shape variables live in
// a per-call shape heap (see runtime/vm/builtins.h); errors name the parameter and dimension.
#ifndef KILN_COMPILER_BACKEND_VM_CODEGEN_H_
#define KILN_COMPILER_BACKEND_VM_CODEGEN_H_

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"
#include "runtime/vm/executable.h"

namespace kiln::backend {

absl::StatusOr<runtime::vm::Executable> CodegenVM(const ir::IRModule& mod);

}  // namespace kiln::backend

#endif  // KILN_COMPILER_BACKEND_VM_CODEGEN_H_
