// Relax functions -> a VM executable (runtime/vm/executable.h).
//
// The input is a module whose operators are all legalized, normally after CallTIRRewrite and
// StaticPlanBlockMemory: direct calls of kernels with explicit outputs (R.builtin.alloc_tensor,
// R.memory.alloc_storage / alloc_tensor), packed calls to registered functions, calls of other
// Relax functions, and the structural forms (tuples, shapes, constants, If, match_cast). A
// call_tir / call_dps_packed left in place gets its outputs allocated as it is emitted.
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
#include "compiler/relax/transform/transform.h"
#include "runtime/vm/executable.h"

namespace kiln::backend {

struct VMCode {
  runtime::vm::Executable executable;
  // The shape functions the executable calls, by name: they join the kernel library.
  std::vector<std::pair<std::string, ir::PrimFunc>> shape_funcs;
  std::map<std::string, ir::relax::PlannedMemory> memory;  // by Relax function
};

absl::StatusOr<VMCode> CodegenVM(const ir::IRModule& mod);

}  // namespace kiln::backend

#endif  // KILN_COMPILER_BACKEND_VM_CODEGEN_H_
