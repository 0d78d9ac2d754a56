// The Relax passes as pass objects: name, IR level and requirements, in one place.
#include "compiler/relax/transform/transform.h"

namespace kiln::ir::relax {

using pass::IRLevel;
using pass::MakeModulePass;

pass::PassPtr CanonicalizeBindingsPass() {
  return MakeModulePass("CanonicalizeBindings", CanonicalizeBindings, {}, IRLevel::kRelaxFunction);
}

pass::PassPtr ConvertConvLayoutPass(const target::CpuPolicy& policy) {
  return MakeModulePass(
      "ConvertConvLayout", [policy](const IRModule& mod) { return ConvertConvLayout(mod, policy); },
      {}, IRLevel::kRelaxFunction);
}

pass::PassPtr FallbackInt8OpsPass(const target::CpuPolicy& policy) {
  return MakeModulePass(
      "FallbackInt8Ops", [policy](const IRModule& mod) { return FallbackInt8Ops(mod, policy); }, {},
      IRLevel::kRelaxFunction);
}

pass::PassPtr PackConstantWeightsPass(const target::CpuPolicy& policy) {
  return MakeModulePass(
      "PackConstantWeights",
      [policy](const IRModule& mod) { return PackConstantWeights(mod, policy); }, {},
      IRLevel::kRelaxFunction);
}

pass::PassPtr LegalizeOpsPass() { return MakeModulePass("LegalizeOps", LegalizeOps); }

pass::PassPtr DeadCodeEliminationPass() {
  return MakeModulePass("DeadCodeElimination", DeadCodeElimination);
}

pass::PassPtr FuseOpsPass() { return MakeModulePass("FuseOps", FuseOps, {"LegalizeOps"}); }

pass::PassPtr ToNonDataflowPass() {
  return MakeModulePass("ToNonDataflow", ToNonDataflow, {}, IRLevel::kRelaxFunction);
}

pass::PassPtr CallTIRRewritePass() {
  return MakeModulePass("CallTIRRewrite", CallTIRRewrite, {"ToNonDataflow"},
                        IRLevel::kRelaxFunction);
}

pass::PassPtr StaticPlanBlockMemoryPass() {
  return MakeModulePass("StaticPlanBlockMemory", StaticPlanBlockMemory, {"CallTIRRewrite"},
                        IRLevel::kRelaxFunction);
}

}  // namespace kiln::ir::relax
