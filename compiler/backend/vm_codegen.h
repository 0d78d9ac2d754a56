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
// Dimensions computed from shape variables (n * 4, h // 2 + 1) are evaluated at run time by
// small generated TIR shape functions that read and write the heap (VMShapeLower).
#ifndef KILN_COMPILER_BACKEND_VM_CODEGEN_H_
#define KILN_COMPILER_BACKEND_VM_CODEGEN_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"
#include "runtime/vm/executable.h"

namespace kiln::backend {

// What static memory planning did for one function (memory_plan.h).
struct PlannedMemory {
  int64_t storage_bytes = 0;  // the planned peak, allocated once per call
  int64_t tensor_bytes = 0;   // the planned tensors' sizes summed (memory without reuse)
  int64_t tensors = 0;        // how many tensors were planned
};

struct VMCode {
  runtime::vm::Executable executable;
  // The shape functions the executable calls, by name: they join the kernel library.
  std::vector<std::pair<std::string, ir::PrimFunc>> shape_funcs;
  std::map<std::string, PlannedMemory> memory;  // by Relax function
};

absl::StatusOr<VMCode> CodegenVM(const ir::IRModule& mod);

}  // namespace kiln::backend

#endif  // KILN_COMPILER_BACKEND_VM_CODEGEN_H_
