// CallTIRRewrite alone.
#include "compiler/relax/transform/testing/examples.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/script/printer.h"
#include "compiler/testing/expect_pass.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::ir::relax {
namespace {

using pass::testing::ParseModule;
using ::testing::HasSubstr;
using testing::MlpScript;
using ::testing::Not;

TEST(CallTIRRewriteTest, OutputsBecomeExplicitAllocations) {
  absl::StatusOr<IRModule> out = CallTIRRewrite(ParseModule(testing::kKernelChain));
  ASSERT_TRUE(out.ok()) << out.status();
  std::string text = script::PrintScript(*out);
  EXPECT_THAT(text, HasSubstr("a: R.Tensor((64,), dtype=\"float32\") = R.builtin.alloc_tensor("
                              "R.shape([64]), R.dtype(\"float32\"), R.prim_value(0))"));
  EXPECT_THAT(text, HasSubstr("= cls.neg(a, b)"));
  EXPECT_THAT(text, HasSubstr("\"relax.force_pure\": T.bool(True)"));
  EXPECT_THAT(text, Not(HasSubstr("call_tir")));
  // Before ToNonDataflow it refuses: a direct kernel call is not dataflow.
  absl::StatusOr<IRModule> legal = LegalizeOps(ParseModule(MlpScript("n")));
  ASSERT_TRUE(legal.ok()) << legal.status();
  absl::StatusOr<IRModule> dataflow = CallTIRRewrite(*legal);
  ASSERT_FALSE(dataflow.ok());
  EXPECT_THAT(dataflow.status().message(), HasSubstr("runs after ToNonDataflow"));
}

TEST(CallTIRRewriteTest, AnImpureFunctionIsNotForcedPure) {
  // WF21: relax.force_pure only on a pure function (found by the verifier on the RFC example).
  const char* input = R"(
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def neg(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("neg"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] * T.float32(-1)

    @R.function(pure=False)
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        y = R.call_tir(cls.neg, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
        unused = R.call_packed("kiln.test.side_effect", y, sinfo_args=R.Object)
        return y
)";
  absl::StatusOr<IRModule> out = CallTIRRewrite(ParseModule(input));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(script::PrintScript(*out), Not(HasSubstr("relax.force_pure")));
}

}  // namespace
}  // namespace kiln::ir::relax
