// LowerInitBlock alone.
#include "compiler/script/script_parser.h"
#include "compiler/testing/expect_pass.h"
#include "compiler/tir/transform/transform.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

using pass::testing::Transforms;

TEST(LowerInitBlockTest, TheInitRunsAtTheFirstReductionStep) {
  EXPECT_TRUE(Transforms(LowerInitBlockPass(), R"(
@I.ir_module
class Module:
    @T.prim_func
    def sum(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
        for i, k in T.grid(4, 8):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.reads(A[vi, vk])
                T.writes(B[vi])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
)",
                         R"(
@I.ir_module
class Module:
    @T.prim_func
    def sum(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
        for i, k in T.grid(4, 8):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.reads(A[vi, vk])
                T.writes(B[vi])
                if vk == 0:
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
)",
                         false));
}

TEST(LowerInitBlockTest, ABlockWithoutInitIsKept) {
  const char* text = R"(
@I.ir_module
class Module:
    @T.prim_func
    def copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi]
)";
  EXPECT_TRUE(Transforms(LowerInitBlockPass(), text, text, false));
}

}  // namespace
}  // namespace kiln::tir
