// The build pipeline's back end: a legalized Relax + TIR module to the two parts a runtime
// loads — the VM executable (serialized) and the kernel library (a shared object's bytes).
#ifndef KILN_COMPILER_BACKEND_BUILD_H_
#define KILN_COMPILER_BACKEND_BUILD_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/backend/pipeline.h"
#include "compiler/backend/vm_codegen.h"
#include "compiler/ir/module.h"

namespace kiln::backend {

struct BuiltModule {
  std::string executable;  // runtime::vm::Executable::Serialize()
  std::string kernels;     // a kernel library for the target
  std::map<std::string, ir::relax::PlannedMemory>
      memory;  // static memory planning, by Relax function
  // The module code generation started from: Relax functions and scheduled kernels.
  ir::IRModule graph;
};

// Runs the pipeline (pipeline.h) over `mod`, compiles every PrimFunc for `target` and generates
// the VM code.
absl::StatusOr<BuiltModule> Build(const ir::IRModule& mod, absl::string_view target,
                                  const BuildOptions& options = {});

// Build, packaged as a .kiln artifact (runtime/artifact.h): the manifest lists every Relax
// function with its parameter and result signatures.
absl::StatusOr<std::string> BuildArtifact(const ir::IRModule& mod, absl::string_view target,
                                          const BuildOptions& options = {});

}  // namespace kiln::backend

#endif  // KILN_COMPILER_BACKEND_BUILD_H_
