// The Relax passes of the build pipeline (compiler/backend/pipeline.h runs them in order). Each
// maps a module to a new one; the result is normalized (StructInfo everywhere).
#ifndef KILN_COMPILER_RELAX_TRANSFORM_TRANSFORM_H_
#define KILN_COMPILER_RELAX_TRANSFORM_TRANSFORM_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"
#include "compiler/ir/relax_expr.h"
#include "compiler/pass/pass.h"
#include "compiler/target/cpu_policy.h"

namespace kiln::ir::relax {

// Removes indirection the front ends leave behind:
//   - a binding of one variable to another (`y = x`): uses of y become x; a dataflow value only
//     exported (`lv = f(...); gv = lv`) is bound to the output variable directly;
//   - a match_cast to the StructInfo its value already has;
//   - TupleGetItem of a variable bound to a tuple literal: the field itself.
absl::StatusOr<IRModule> CanonicalizeBindings(const IRModule& mod);

// FallbackInt8Ops: where the target policy has no int8 kernels (no native int8 dot product), the
// int8 operators become float32 arithmetic before anything else sees them: qnn.conv2d_int8 a
// conv2d of the zero-point-centered data by the float weights, then the bias and the
// requantization (clip, nearbyint, zero point, astype); qnn.dense_int8 a matmul, the correction
// and nearbyint back to int32. Float32 sums of more than 2^24 / (255 × 128) products round, so a
// result may differ from the int8 kernel's by one quantization step.
absl::StatusOr<IRModule> FallbackInt8Ops(const IRModule& mod, const target::CpuPolicy& policy);

// PackConstantWeights: float32 constant weights are repacked at compile time into blocks of b
// output channels (columns) innermost, b the target policy's channel block (a vector and at least a
// cache line: 16 float32 on AVX-512, AVX2 and NEON), the layout the kernels stream:
//   - an NCHW conv2d (groups 1) with a multiple of b output channels gets its weight as
//     [O / b, I, H, W, b], kernel_layout "OIHW<b>o": its kernel computes b output channels per
//     vector, each multiply-add one broadcast input value and one contiguous weight load,
//     whatever the image's width (NCHW rows of 7, 14 or 56 fill vectors badly); an NCDHW
//     conv3d alike, [O / b, I, D, H, W, b], kernel_layout "OIDHW<b>o";
//   - a matmul of a constant [K, N] (or a transposed [N, K], a Linear's weight) with N a
//     multiple of b gets it as [N / b, K, b], b_layout "NK<b>n": each block of columns is one
//     contiguous stream, read at memory bandwidth when x has few rows.
absl::StatusOr<IRModule> PackConstantWeights(const IRModule& mod, const target::CpuPolicy& policy);

// ConvertConvLayout: an NCHW conv2d with a constant OIHW weight whose output rows are narrower
// than the target policy's wide row (1024 / vector registers columns) is computed in NHWC with the
// weight as HWIO (the layout whose kernels vectorize over output channels contiguous in both
// the data and the weight, with no repacking of either), and the elementwise and broadcast
// code it feeds follows it into NHWC (a constant bias [C, 1, 1] becomes [1, 1, 1, C]):
//   lv = R.nn.conv2d(x, W); lv1 = R.add(lv, b); lv2 = R.clip(lv1, 0, 6); lv3 = R.nn.conv2d(lv2, W2)
// becomes
//   xt = R.permute_dims(x, [0, 2, 3, 1]); t = R.nn.conv2d(xt, W', "NHWC", "HWIO")
//   t1 = R.add(t, b'); t2 = R.clip(t1, 0, 6); t3 = R.nn.conv2d(t2, W2', "NHWC", "HWIO") ...
// A value something else reads (a reshape, a block's output) is transposed back to NCHW where
// it is read; a spatial mean reads the NHWC value directly.
absl::StatusOr<IRModule> ConvertConvLayout(const IRModule& mod, const target::CpuPolicy& policy);

// LegalizeOps lowers every high-level operator call to a TIR kernel. A binding
//   lv = R.add(x, y)
// becomes
//   lv = R.call_tir(cls.add, (x, y), out_sinfo=R.Tensor((n, 64), "float32"))
// with `add` a private PrimFunc written by the operator's legalization (op_registry.h) and added
// to the module, its fusion pattern in the attribute "op_pattern". Identical kernels (same op,
// attributes and shapes) are added once and shared. Fails, naming the function, binding and
// operator, when an operator has no legalization or an argument's shape or dtype is unknown.
absl::StatusOr<IRModule> LegalizeOps(const IRModule& mod);

// Removes bindings whose value is pure and unused (backwards, so chains go at once), empty
// blocks, and private functions (no "global_symbol") that no public function reaches.
absl::StatusOr<IRModule> DeadCodeElimination(const IRModule& mod);

// Operator fusion over legalized code (the call_tir bindings of each dataflow block, by their
// kernels' "op_pattern"). A value used only by the next operator joins that operator's group
// when
//   - both are elementwise, broadcast or injective (a chain: exp(x - max) / sum ...);
//   - the producer group holds one matmul/conv-like or reduction anchor and the consumer is
//     elementwise or broadcast (an epilogue: matmul + bias + relu);
//   - the consumer is a reduction and the producers are injective (they are inlined into it).
// Each group becomes one call_tir of a fused PrimFunc (tir/fuse.h) named after its members;
// injective stages are inlined, so their intermediates never exist. The unfused kernels stay in
// the module until DeadCodeElimination.
absl::StatusOr<IRModule> FuseOps(const IRModule& mod);

// Dataflow blocks become ordinary binding blocks and dataflow variables ordinary variables: the
// form the VM code generator and the lowering after it expect.
absl::StatusOr<IRModule> ToNonDataflow(const IRModule& mod);

// Makes the outputs of destination-passing calls explicit (after ToNonDataflow):
//   lv = R.call_tir(cls.k, (x, w), out_sinfo=R.Tensor((4, 32), "float32"))
// becomes
//   lv = R.builtin.alloc_tensor(R.shape([4, 32]), R.dtype("float32"), R.prim_value(0))
//   _ = cls.k(x, w, lv)
// with a tuple of outputs allocated one by one and rebuilt after the call. The function gets
// "relax.force_pure": the direct kernel calls write only what was just allocated.
absl::StatusOr<IRModule> CallTIRRewrite(const IRModule& mod);

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
inline constexpr int64_t kPlanAlignment = 64;  // runtime::kTensorAlignment

// What planning did for one function.
struct PlannedMemory {
  int64_t storage_bytes = 0;  // the planned peak, allocated once per call
  int64_t tensor_bytes = 0;   // the planned tensors' sizes summed (memory without reuse)
  int64_t tensors = 0;        // how many tensors were planned
};

absl::StatusOr<IRModule> StaticPlanBlockMemory(const IRModule& mod);

// The plan recorded on a Relax function by StaticPlanBlockMemory (zeros when none).
PlannedMemory PlannedMemoryOf(const FunctionNode& f);

// Each pass above as a pass object (compiler/pass/pass.h), with its IR level and requirements.
pass::PassPtr CanonicalizeBindingsPass();
pass::PassPtr FallbackInt8OpsPass(const target::CpuPolicy& policy);
pass::PassPtr ConvertConvLayoutPass(const target::CpuPolicy& policy);
pass::PassPtr PackConstantWeightsPass(const target::CpuPolicy& policy);
pass::PassPtr LegalizeOpsPass();
pass::PassPtr DeadCodeEliminationPass();
pass::PassPtr FuseOpsPass();
pass::PassPtr ToNonDataflowPass();
pass::PassPtr CallTIRRewritePass();
pass::PassPtr StaticPlanBlockMemoryPass();

}  // namespace kiln::ir::relax

#endif  // KILN_COMPILER_RELAX_TRANSFORM_TRANSFORM_H_
