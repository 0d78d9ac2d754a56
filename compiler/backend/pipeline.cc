#include "compiler/backend/pipeline.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/backend/codegen_passes.h"
#include "compiler/backend/toolchain.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/transform/fold_constant.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/relax/well_formed.h"
#include "compiler/relax/well_formed_verifier.h"
#include "compiler/script/printer.h"
#include "compiler/target/cpu_policy.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/transform/transform.h"
#include "compiler/tir/verify/tir_verifier.h"
#include "compiler/tir/verify/verify_prim_func.h"

namespace kiln::backend {

namespace relax = ir::relax;

const target::CpuTarget& HostCpuTarget() {
  static const target::CpuTarget* host = [] {
    absl::StatusOr<codegen::LlvmTargetInfo> info = codegen::ParseTarget("llvm");
    return new target::CpuTarget(info.ok() ? codegen::DescribeTarget(*info)
                                           : target::WithHostCaches(target::CpuTarget()));
  }();
  return *host;
}

std::vector<pass::PassPtr> Pipeline(const BuildOptions& options) {
  const target::CpuPolicy policy = target::PolicyFor(options.cpu);
  std::vector<pass::PassPtr> passes = {relax::CanonicalizeBindingsPass()};
  // Every target runs it (a no-op where the int8 kernels are), so the pass list, and what
  // --dump-after names, is the same for all.
  passes.push_back(relax::FallbackInt8OpsPass(policy));
  if (options.nhwc_convs) passes.push_back(relax::ConvertConvLayoutPass(policy));
  if (options.pack_weights) passes.push_back(relax::PackConstantWeightsPass(policy));
  passes.push_back(relax::LegalizeOpsPass());
  if (options.fold_constants)
    passes.push_back(relax::FoldConstantPass(LoadHostKernels, options.fold_limits));
  passes.push_back(relax::DeadCodeEliminationPass());
  if (options.fuse) {
    passes.push_back(relax::FuseOpsPass());
    passes.push_back(relax::DeadCodeEliminationPass());
  }
  passes.insert(passes.end(), options.schedule_passes.begin(), options.schedule_passes.end());
  passes.push_back(tir::DefaultSchedulePass(policy));
  passes.push_back(relax::ToNonDataflowPass());
  passes.push_back(relax::CallTIRRewritePass());
  passes.push_back(relax::StaticPlanBlockMemoryPass());
  return passes;
}

std::vector<std::string> DumpablePassNames() {
  BuildOptions all;
  std::vector<std::string> names;
  for (const pass::PassPtr& p : Pipeline(all)) {
    if (std::find(names.begin(), names.end(), p->name()) == names.end()) names.push_back(p->name());
  }
  absl::StatusOr<codegen::LlvmTargetInfo> host = codegen::ParseTarget("llvm");
  if (host.ok()) {
    for (const pass::PassPtr& p : CodegenPasses(*host, target::PolicyFor(all.cpu), nullptr)) {
      names.push_back(p->name());
    }
  }
  return names;
}

absl::Status CheckDumpAfter(const BuildOptions& options) {
  std::vector<std::string> names = DumpablePassNames();
  for (const std::string& d : options.dump_after) {
    if (d == "all" || std::find(names.begin(), names.end(), d) != names.end()) continue;
    return absl::InvalidArgumentError(absl::StrCat("--dump-after: no pass is called '", d,
                                                   "'; the passes are ", absl::StrJoin(names, ", "),
                                                   " (or all)"));
  }
  return absl::OkStatus();
}

bool WantsDump(const BuildOptions& options, const std::string& pass) {
  return options.dump && pass::DumpWanted(options.dump_after, pass);
}

bool VerifyPassesByDefault() {
#ifndef NDEBUG
  return true;
#else
  static const bool from_environment = [] {
    const char* v = std::getenv("KILN_VERIFY_PASSES");
    return v != nullptr && std::string(v) == "1";
  }();
  return from_environment;
#endif
}

pass::PassContext MakePassContext(const BuildOptions& options) {
  pass::PassContext ctx;
  // Timing first, so that it measures the pass and not the instruments after it.
  if (options.timer != nullptr) {
    // The caller owns the timer: an aliasing pointer that owns nothing.
    ctx.AddInstrument(
        std::shared_ptr<pass::PassInstrument>(std::shared_ptr<void>(), options.timer));
  }
  if (options.dump && !options.dump_after.empty()) {
    ctx.AddInstrument(std::make_shared<pass::PassDumper>(
        options.dump_after, [](const ir::IRModule& m) { return script::PrintScript(m); },
        options.dump));
  }
  if (options.verify) {
    ctx.AddInstrument(std::make_shared<ir::relax::WellFormedVerifier>());
    ctx.AddInstrument(std::make_shared<tir::TirVerifier>());
  }
  return ctx;
}

absl::StatusOr<ir::IRModule> RunPasses(const ir::IRModule& mod,
                                       const std::vector<pass::PassPtr>& passes,
                                       const BuildOptions& options) {
  if (absl::Status s = CheckDumpAfter(options); !s.ok()) return s;
  absl::StatusOr<ir::IRModule> current = relax::NormalizeModule(mod);
  if (!current.ok()) return current.status();
  if (absl::Status s = relax::CheckTensorSizes(*current); !s.ok()) return s;
  if (absl::Status s = tir::VerifyBufferShapes(*current); !s.ok()) return s;
  if (absl::Status s = tir::VerifyTypes(*current); !s.ok()) return s;
  return MakePassContext(options).Run(*current, passes);
}

}  // namespace kiln::backend
