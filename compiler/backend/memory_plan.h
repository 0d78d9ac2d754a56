// Static memory planning of a Relax function: the call_tir outputs that only ever feed other
// kernels (intermediates of static shape) share one storage, carved at offsets chosen so that
// tensors alive at the same time never overlap. The VM allocates that storage once per call and
// each planned tensor as a view (vm.builtin.alloc_storage / alloc_tensor); everything else —
// results, tuples, values passed to packed functions, symbolic shapes — is allocated on its own.
#ifndef KILN_COMPILER_BACKEND_MEMORY_PLAN_H_
#define KILN_COMPILER_BACKEND_MEMORY_PLAN_H_

#include <cstdint>
#include <unordered_map>

#include "compiler/ir/relax_expr.h"

namespace kiln::backend {

struct MemoryPlan {
  // Planned tensor (the var its call_tir binds) -> byte offset in the storage.
  std::unordered_map<const ir::relax::VarNode*, int64_t> offsets;
  int64_t storage_bytes = 0;  // the planned peak: the storage size
  int64_t tensor_bytes = 0;   // the planned tensors' sizes summed: memory without reuse
};

inline constexpr int64_t kPlanAlignment = 64;  // runtime::kTensorAlignment

MemoryPlan PlanMemory(const ir::relax::FunctionNode& f);

}  // namespace kiln::backend

#endif  // KILN_COMPILER_BACKEND_MEMORY_PLAN_H_
