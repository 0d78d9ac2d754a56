// LegalizeOps alone: operator calls become call_tir of kernels added to the module, identical
// kernels are shared, and an operator that cannot be lowered is named.
#include "compiler/relax/transform/testing/examples.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/script/printer.h"
#include "compiler/testing/expect_pass.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::ir::relax {
namespace {

using pass::testing::ParseModule;
using pass::testing::Refuses;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::KernelCalls;
using ::testing::Not;

TEST(LegalizeOpsTest, OperatorsBecomeKernelCallsAndIdenticalKernelsAreShared) {
  const char* input = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32"), y: R.Tensor((4, 8), dtype="float32")):
        with R.dataflow():
            a = R.exp(x)
            b = R.exp(y)
            gv = R.add(a, b)
            R.output(gv)
        return gv
)";
  absl::StatusOr<IRModule> out = LegalizeOps(ParseModule(input));
  ASSERT_TRUE(out.ok()) << out.status();
  // Two exps of one shape share a kernel; every call is a call_tir now.
  EXPECT_THAT(KernelCalls(*out), ElementsAre("exp", "exp", "add")) << script::PrintScript(*out);
  const auto* exp = (*out)->Lookup("exp").as<PrimFuncNode>();
  ASSERT_NE(exp, nullptr);
  EXPECT_TRUE(GetAttr(exp->attrs, "op_pattern").defined());
  std::string text = script::PrintScript(*out);
  EXPECT_THAT(text, Not(HasSubstr("R.exp(")));
  EXPECT_THAT(text, HasSubstr("R.call_tir(cls.add, (a, b), out_sinfo=R.Tensor((4, 8), "
                              "dtype=\"float32\"))"));
}

TEST(LegalizeOpsTest, AnOperatorWithoutAStaticLoweringIsNamed) {
  EXPECT_TRUE(Refuses(LegalizeOpsPass(), R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, "h", "w"), dtype="float32")):
        with R.dataflow():
            y = R.nn.adaptive_avg_pool2d(x, output_size=[2, 2])
            R.output(y)
        return y
)",
                      "binding 'y': relax.nn.adaptive_avg_pool2d: needs static spatial sizes"));
}

}  // namespace
}  // namespace kiln::ir::relax
