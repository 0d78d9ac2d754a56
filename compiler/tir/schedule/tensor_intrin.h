// Tensor intrinsics for `Schedule::Tensorize`: a pair of PrimFuncs with the same buffer
// parameters. The description says what the intrinsic computes, as a loop nest around one block
// (the shape a block must have to be replaced); the implementation says how, usually with vector
// loads, broadcasts and fused multiply-adds. Parameter k of one is parameter k of the other.
//
// Built in (RegisterBuiltinTensorIntrins, done by the first look-up):
//   "x86_avx2_fma_f32_4x16"  C[4, 16] += A[4, 1] * B[1, 16]: a rank-1 update of a 4 x 16 register
//                            tile, two 8-lane FMAs per row (AVX2 + FMA)
//   "arm_neon_f32_4x16"      the same tile in four 4-lane FMAs per row (aarch64 NEON)
// The implementations are plain TIR vectors, so either runs (slower) on the other machine.
#ifndef KILN_COMPILER_TIR_SCHEDULE_TENSOR_INTRIN_H_
#define KILN_COMPILER_TIR_SCHEDULE_TENSOR_INTRIN_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/ir/tir_stmt.h"

namespace kiln::tir {

struct TensorIntrin {
  ir::PrimFunc desc;
  ir::PrimFunc impl;
};

// Checks the pair (same parameter count, buffer shapes and dtypes; a description that is loops
// around one block) and registers it. AlreadyExists for a taken name.
absl::Status RegisterTensorIntrin(const std::string& name, ir::PrimFunc desc, ir::PrimFunc impl);
absl::StatusOr<TensorIntrin> LookupTensorIntrin(const std::string& name);

// The register-blocked matmul micro-kernel C[mr, nr] += A[mr, kc] * B[kc, nr] (float32) with
// `lanes`-wide vectors: nr must be a multiple of lanes.
TensorIntrin MatmulMicroKernel(int mr, int nr, int kc, int lanes);

}  // namespace kiln::tir

#endif  // KILN_COMPILER_TIR_SCHEDULE_TENSOR_INTRIN_H_
