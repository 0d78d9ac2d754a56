#include "compiler/tir/flops.h"

#include "compiler/testing/schedule_workloads.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

ir::PrimFunc Kernel(const std::string& script, const std::string& name) {
  absl::StatusOr<ir::IRModule> mod = testing::Parse(script);
  EXPECT_TRUE(mod.ok()) << mod.status();
  return (*mod)->Lookup(name).as_ref<ir::PrimFuncNode>();
}

TEST(EstimateFlops, CountsTheArithmeticOfEveryStoreTimesItsLoops) {
  // C[i, j] += A[i, k] * B[k, j]: a multiply and an add per iteration; the init is free.
  EXPECT_EQ(EstimateFlops(Kernel(testing::MatmulScript(64, 32, 16), "matmul")), 2.0 * 64 * 32 * 16);
  EXPECT_EQ(EstimateFlops(Kernel(R"(
@T.prim_func
def scale(A: T.Buffer((10, 7), "float32"), B: T.Buffer((10, 7), "float32")):
    for i, j in T.grid(10, 7):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = T.exp(A[vi, vj]) * T.float32(2) + T.float32(1)
)",
                                 "scale")),
            3.0 * 70);
  // Integer index arithmetic is not floating-point work.
  EXPECT_EQ(EstimateFlops(Kernel(R"(
@T.prim_func
def shift(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + 1
)",
                                 "shift")),
            0.0);
  // An int8 dot product of four pairs is four multiplies and four adds.
  EXPECT_EQ(EstimateFlops(Kernel(R"(
@T.prim_func
def dot(A: T.Buffer((8,), "int32"), W: T.Buffer((8,), "int32"), C: T.Buffer((8,), "int32")):
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = C[vi] + T.dot4_u8i8(A[vi], W[vi])
)",
                                 "dot")),
            8.0 * 8);
}

TEST(EstimateFlops, UnknownForSymbolicLoops) {
  EXPECT_EQ(EstimateFlops(Kernel(R"(
@T.prim_func
def relu(a: T.handle, b: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in range(n):
        with T.block("B"):
            vi = T.axis.spatial(n, i)
            B[vi] = T.max(A[vi], T.float32(0))
)",
                                 "relu")),
            0.0);
}

}  // namespace
}  // namespace kiln::tir
