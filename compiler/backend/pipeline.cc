#include "compiler/backend/pipeline.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/backend/fold_constant.h"
#include "compiler/backend/memory_plan.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/script/printer.h"
#include "compiler/tir/default_schedule.h"

namespace kiln::backend {

namespace relax = ir::relax;

namespace {

absl::StatusOr<ir::IRModule> DefaultSchedule(const ir::IRModule& mod) {
  ir::IRModuleBuilder out(mod);
  for (const auto& [name, entry] : mod->functions) {
    auto f = entry.second.as_ref<ir::PrimFuncNode>();
    if (!f || ir::GetAttr(f->attrs, "tir.is_scheduled")) continue;
    out.Update(entry.first,
               ir::WithFuncAttr(tir::ApplyDefaultSchedule(f), "tir.is_scheduled", ir::Bool(true)));
  }
  return out.Build();
}

}  // namespace

std::vector<Pass> Pipeline(const BuildOptions& options) {
  std::vector<Pass> passes = {
      {"CanonicalizeBindings", relax::CanonicalizeBindings},
      {"LegalizeOps", relax::LegalizeOps},
  };
  if (options.fold_constants) passes.push_back({"FoldConstant", FoldConstant});
  passes.push_back({"DeadCodeElimination", relax::DeadCodeElimination});
  if (options.fuse) {
    passes.push_back({"FuseOps", relax::FuseOps});
    passes.push_back({"DeadCodeElimination", relax::DeadCodeElimination});
  }
  passes.push_back({"DefaultSchedule", DefaultSchedule});
  passes.push_back({"ToNonDataflow", relax::ToNonDataflow});
  passes.push_back({"CallTIRRewrite", relax::CallTIRRewrite});
  passes.push_back({"StaticPlanBlockMemory", StaticPlanBlockMemory});
  return passes;
}

std::vector<std::string> DumpablePassNames() {
  BuildOptions all;
  std::vector<std::string> names;
  for (const Pass& p : Pipeline(all)) {
    if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
  }
  names.push_back("VMCodegen");
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
  if (!options.dump) return false;
  for (const std::string& d : options.dump_after) {
    if (d == "all" || d == pass) return true;
  }
  return false;
}

absl::StatusOr<ir::IRModule> RunPasses(const ir::IRModule& mod, const std::vector<Pass>& passes,
                                       const BuildOptions& options) {
  if (absl::Status s = CheckDumpAfter(options); !s.ok()) return s;
  absl::StatusOr<ir::IRModule> current = relax::NormalizeModule(mod);
  if (!current.ok()) return current.status();
  for (const Pass& pass : passes) {
    absl::StatusOr<ir::IRModule> next = pass.run(*current);
    if (!next.ok()) {
      return absl::Status(next.status().code(),
                          absl::StrCat(pass.name, ": ", next.status().message()));
    }
    current = std::move(next);
    if (WantsDump(options, pass.name)) {
      options.dump(pass.name, script::PrintScript(*current));
    }
  }
  return current;
}

}  // namespace kiln::backend
