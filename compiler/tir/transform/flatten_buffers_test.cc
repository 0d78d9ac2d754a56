// FlattenBuffers alone: parameters keep their rank, allocations become 1-D.
#include "compiler/script/script_parser.h"
#include "compiler/testing/expect_pass.h"
#include "compiler/tir/transform/transform.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

using pass::testing::Transforms;

TEST(FlattenBuffersTest, AnAllocatedBufferBecomesOneDimensionalRowMajor) {
  EXPECT_TRUE(Transforms(FlattenBuffersPass(), R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
        with T.decl_buffer((4, 8), "float32") as tmp:
            for i, j in T.grid(4, 8):
                tmp[i, j] = A[i, j] * T.float32(2)
            for i, j in T.grid(4, 8):
                B[i, j] = tmp[i, j]
)",
                         R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
        with T.decl_buffer((32,), "float32") as tmp:
            for i, j in T.grid(4, 8):
                tmp[i * 8 + j] = A[i, j] * T.float32(2)
            for i, j in T.grid(4, 8):
                B[i, j] = tmp[i * 8 + j]
)",
                         false));
}

}  // namespace
}  // namespace kiln::tir
