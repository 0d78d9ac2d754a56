// Code generation as passes, so that the pass context that runs the graph pipeline times, dumps
// and verifies the whole way to the kernel library:
//
//   VMCodegen   Relax functions -> the VM executable; the shape functions it writes join the
//               module (default-scheduled). --dump-after shows the executable's disassembly.
//   (tir/transform/transform.h: LowerInitBlock ... Simplify) every PrimFunc lowered
//   LLVM        the lowered PrimFuncs -> object code. --dump-after shows the LLVM IR.
//   Link        the objects -> one shared library. --dump-after lists its size.
//
// What the steps make that is not IR goes into a CodegenProducts the caller keeps.
#ifndef KILN_COMPILER_BACKEND_CODEGEN_PASSES_H_
#define KILN_COMPILER_BACKEND_CODEGEN_PASSES_H_

#include <memory>
#include <string>
#include <vector>

#include "compiler/backend/vm_codegen.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/pass/pass.h"
#include "compiler/target/cpu_policy.h"

namespace kiln::backend {

// Filled in as the code-generation passes run.
struct CodegenProducts {
  ir::IRModule graph;                // the module VMCodegen started from
  VMCode vm;                         // VMCodegen
  std::vector<std::string> objects;  // LLVM: ELF relocatables
  std::string kernels;               // Link: the kernel library's bytes
};

// VMCodegen, the TIR lowering passes, LLVM and Link for `target`, writing into `*products`.
std::vector<pass::PassPtr> CodegenPasses(const codegen::LlvmTargetInfo& target,
                                         const target::CpuPolicy& policy,
                                         std::shared_ptr<CodegenProducts> products);

// Whether --dump-after shows `pass` as text other than TVMScript (VMCodegen, LLVM, Link).
bool DumpsNonScript(const std::string& pass);

}  // namespace kiln::backend

#endif  // KILN_COMPILER_BACKEND_CODEGEN_PASSES_H_
