// Workloads the schedule tests and benchmarks share (as TVMScript), and a runner that compiles
// one PrimFunc of a module and runs it on seeded random inputs.
#ifndef KILN_COMPILER_TESTING_SCHEDULE_WORKLOADS_H_
#define KILN_COMPILER_TESTING_SCHEDULE_WORKLOADS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"

namespace kiln::tir::testing {

// C[i, j] = sum_k A[i, k] * B[k, j], float32, as PrimFunc "matmul".
std::string MatmulScript(int64_t m, int64_t n, int64_t k);
// NCHW conv2d 3x3, stride 1, no padding: "conv2d" (1 x 8 x 10 x 10 input, 8 x 8 x 3 x 3 weight).
std::string Conv2dScript();
// Row softmax of a 16 x 64 float32 matrix in four blocks: "softmax".
std::string SoftmaxScript();
// D = (A + B) relu * 2 through two intermediates: "chain".
std::string ChainScript();

absl::StatusOr<ir::IRModule> Parse(const std::string& script);

// Compiles PrimFunc `name` of `mod` as it is (marked scheduled, so no default schedule) and runs
// it on float32 buffers filled from `seed`; returns every parameter buffer's contents after.
absl::StatusOr<std::vector<std::vector<float>>> RunPrimFunc(const ir::IRModule& mod,
                                                            const std::string& name,
                                                            uint32_t seed = 7);

// The same, compiled for aarch64 (cortex-a72: NEON) and run under qemu-aarch64 by the aarch64
// build of runtime/testing/run_kernel_main.cc; the test carries //runtime:run_kernel_aarch64 as
// data. The same seed gives the same inputs as RunPrimFunc.
absl::StatusOr<std::vector<std::vector<float>>> RunPrimFuncOnAarch64(const ir::IRModule& mod,
                                                                     const std::string& name,
                                                                     uint32_t seed = 7);

}  // namespace kiln::tir::testing

#endif  // KILN_COMPILER_TESTING_SCHEDULE_WORKLOADS_H_
