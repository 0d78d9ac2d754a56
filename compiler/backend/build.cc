#include "compiler/backend/build.h"

#include "compiler/backend/vm_codegen.h"
#include "compiler/codegen/codegen_llvm.h"
#include "compiler/relax/block_builder.h"
#include "runtime/support/status_macros.h"

namespace kiln::backend {

absl::StatusOr<BuiltModule> Build(const ir::IRModule& mod, absl::string_view target) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule normalized, ir::relax::NormalizeModule(mod));
  BuiltModule out;
  KILN_ASSIGN_OR_RETURN(out.kernels, codegen::BuildKernelLibrary(normalized, target));
  KILN_ASSIGN_OR_RETURN(runtime::vm::Executable exec, CodegenVM(normalized));
  KILN_ASSIGN_OR_RETURN(out.executable, exec.Serialize());
  return out;
}

}  // namespace kiln::backend
