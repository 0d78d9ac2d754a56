// The TIR lowering passes as pass objects, and their pipeline.
#include "compiler/tir/transform/transform.h"

namespace kiln::tir {

namespace {

pass::PassPtr Infallible(std::string name, ir::PrimFunc (*fn)(const ir::PrimFunc&),
                         std::vector<std::string> required = {}) {
  return pass::MakePrimFuncPass(
      std::move(name),
      [fn](const ir::PrimFunc& f) -> absl::StatusOr<ir::PrimFunc> { return fn(f); },
      std::move(required));
}

}  // namespace

pass::PassPtr LowerInitBlockPass() { return Infallible("LowerInitBlock", LowerInitBlock); }

pass::PassPtr ConvertBlocksToLoopsPass() {
  return pass::MakePrimFuncPass("ConvertBlocksToLoops", ConvertBlocksToLoops, {"LowerInitBlock"});
}

pass::PassPtr CompactAllocationsPass() {
  return Infallible("CompactAllocations", CompactAllocations, {"ConvertBlocksToLoops"});
}

pass::PassPtr FlattenBuffersPass() {
  return Infallible("FlattenBuffers", FlattenBuffers, {"ConvertBlocksToLoops"});
}

pass::PassPtr VectorizeLoopsPass() {
  return Infallible("VectorizeLoops", VectorizeLoops, {"ConvertBlocksToLoops"});
}

pass::PassPtr SimplifyPass() { return Infallible("Simplify", Simplify); }

std::vector<pass::PassPtr> LowerTirPasses() {
  // Simplify runs first on the loops the blocks became, knowing each loop's range, so that a
  // packed operand's (j0 * 32 + j3) // 32 is j0 again before vectorization and compaction look
  // at it; and again on what vectorization and flattening made.
  return {
      LowerInitBlockPass(), ConvertBlocksToLoopsPass(), SimplifyPass(), CompactAllocationsPass(),
      FlattenBuffersPass(), VectorizeLoopsPass(),       SimplifyPass()};
}

absl::StatusOr<ir::IRModule> LowerTir(const ir::IRModule& mod) {
  return pass::PassContext().Run(mod, LowerTirPasses());
}

}  // namespace kiln::tir
