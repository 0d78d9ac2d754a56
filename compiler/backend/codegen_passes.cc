#include "compiler/backend/codegen_passes.h"

#include "absl/strings/str_cat.h"
#include "compiler/backend/toolchain.h"
#include "compiler/codegen/codegen_llvm.h"
#include "compiler/relax/block_builder.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/transform/transform.h"
#include "runtime/support/status_macros.h"

namespace kiln::backend {
namespace {

pass::PassPtr MakeStep(std::string name, pass::IRLevel level, std::vector<std::string> required,
                       std::function<std::string(const ir::IRModule&)> dump_text,
                       pass::ModuleFn fn) {
  return pass::MakeModulePass(
      pass::PassInfo{std::move(name), level, std::move(required), std::move(dump_text)},
      std::move(fn));
}

}  // namespace

std::vector<pass::PassPtr> CodegenPasses(const codegen::LlvmTargetInfo& target,
                                         const target::CpuPolicy& policy,
                                         std::shared_ptr<CodegenProducts> products) {
  std::vector<pass::PassPtr> passes;
  // Adds PrimFuncs (the shape functions) and leaves the Relax functions as they are.
  passes.push_back(MakeStep(
      "VMCodegen", pass::IRLevel::kPrimFunc, {},
      [products](const ir::IRModule&) { return products->vm.executable.AsText(); },
      [products, policy](const ir::IRModule& mod) -> absl::StatusOr<ir::IRModule> {
        products->graph = mod;
        KILN_ASSIGN_OR_RETURN(products->vm, CodegenVM(mod));
        ir::IRModuleBuilder with_shape_funcs(mod);
        for (const auto& [name, func] : products->vm.shape_funcs) {
          KILN_RETURN_IF_ERROR(with_shape_funcs.Add(
              ir::relax::MakeGlobalVar(name), tir::ApplyDefaultScheduleAndMark(func, policy)));
        }
        return with_shape_funcs.Build();
      }));
  for (pass::PassPtr& p : tir::LowerTirPasses()) passes.push_back(std::move(p));
  passes.push_back(MakeStep(
      "LLVM", pass::IRLevel::kNone, {"VMCodegen"},
      [target](const ir::IRModule& mod) {
        absl::StatusOr<std::string> ir = codegen::EmitLlvmIr(mod, target);
        return ir.ok() ? *ir : absl::StrCat("; ", ir.status().ToString(), "\n");
      },
      [products, target](const ir::IRModule& mod) -> absl::StatusOr<ir::IRModule> {
        KILN_ASSIGN_OR_RETURN(products->objects,
                              codegen::CompileToObjects(mod, target, CodegenThreads()));
        return mod;
      }));
  passes.push_back(MakeStep(
      "Link", pass::IRLevel::kNone, {"LLVM"},
      [products](const ir::IRModule&) {
        return absl::StrCat("kernel library: ", products->kernels.size(), " bytes from ",
                            products->objects.size(), " objects\n");
      },
      [products](const ir::IRModule& mod) -> absl::StatusOr<ir::IRModule> {
        KILN_ASSIGN_OR_RETURN(products->kernels, LinkSharedLibrary(products->objects));
        return mod;
      }));
  return passes;
}

bool DumpsNonScript(const std::string& pass) {
  return pass == "VMCodegen" || pass == "LLVM" || pass == "Link";
}

}  // namespace kiln::backend
