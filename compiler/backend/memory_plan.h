// StaticPlanBlockMemory: the tensors CallTIRRewrite allocates (R.builtin.alloc_tensor) that only
// ever feed kernels — intermediates of static shape — share one storage, carved at offsets chosen
// so that tensors alive at the same time never overlap:
//
//   storage = R.memory.alloc_storage(R.shape([10240]), R.prim_value(0), R.str("global"), ...)
//   lv = R.memory.alloc_tensor(storage, R.prim_value(4096), R.shape([1, 8, 8, 8]), ...)
//
// The VM allocates that storage once per call. Everything else — results, tuples, values passed
// to packed functions or other Relax functions, symbolic shapes — keeps its own allocation. The
// plan's sizes are recorded on the function (attributes kiln.planned_*) for the manifest.
#ifndef KILN_COMPILER_BACKEND_MEMORY_PLAN_H_
#define KILN_COMPILER_BACKEND_MEMORY_PLAN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"

namespace kiln::backend {

inline constexpr int64_t kPlanAlignment = 64;  // runtime::kTensorAlignment

// What planning did for one function.
struct PlannedMemory {
  int64_t storage_bytes = 0;  // the planned peak, allocated once per call
  int64_t tensor_bytes = 0;   // the planned tensors' sizes summed (memory without reuse)
  int64_t tensors = 0;        // how many tensors were planned
};

absl::StatusOr<ir::IRModule> StaticPlanBlockMemory(const ir::IRModule& mod);

// The plan recorded on a Relax function by StaticPlanBlockMemory (zeros when none).
PlannedMemory PlannedMemoryOf(const ir::relax::FunctionNode& f);

}  // namespace kiln::backend

#endif  // KILN_COMPILER_BACKEND_MEMORY_PLAN_H_
