// DeadCodeElimination alone.
#include "compiler/relax/transform/testing/examples.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/testing/expect_pass.h"
#include "gtest/gtest.h"

namespace kiln::ir::relax {
namespace {

using pass::testing::ParseModule;
using pass::testing::Transforms;
using testing::Bindings;

TEST(DeadCodeEliminationTest, UnusedBindingsAndPrivateFunctionsGo) {
  const char* input = R"(
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("copy"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi]

    @T.prim_func(private=True)
    def unused(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("neg"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] * T.float32(-1)

    @T.prim_func
    def exported(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("neg"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] * T.float32(-1)

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        with R.dataflow():
            a = R.call_tir(cls.copy, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
            b = R.exp(a)
            c = R.add(b, b)
            gv = R.multiply(a, a)
            R.output(gv)
        return gv
)";
  const char* want = R"(
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("copy"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi]

    @T.prim_func
    def exported(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("neg"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] * T.float32(-1)

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        with R.dataflow():
            a = R.call_tir(cls.copy, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
            gv = R.multiply(a, a)
            R.output(gv)
        return gv
)";
  EXPECT_TRUE(Transforms(DeadCodeEliminationPass(), input, want));
}

TEST(DeadCodeEliminationTest, KeepsImpureCalls) {
  const char* input = R"(
@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        unused = R.call_packed("kiln.test.side_effect", x, sinfo_args=R.Object)
        return x
)";
  absl::StatusOr<IRModule> out = DeadCodeElimination(ParseModule(input));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Bindings(*out, "main").size(), 1u);
}

}  // namespace
}  // namespace kiln::ir::relax
