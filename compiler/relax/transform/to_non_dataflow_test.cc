// ToNonDataflow alone.
#include "compiler/relax/transform/transform.h"
#include "compiler/testing/expect_pass.h"
#include "gtest/gtest.h"

namespace kiln::ir::relax {
namespace {

using pass::testing::Transforms;

TEST(ToNonDataflowTest, NoDataflowBlockOrVariableRemains) {
  const char* input = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            lv = R.exp(x)
            gv = R.add(lv, x)
            R.output(gv)
        return gv
)";
  const char* want = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        lv = R.exp(x)
        gv = R.add(lv, x)
        return gv
)";
  EXPECT_TRUE(Transforms(ToNonDataflowPass(), input, want));
}

}  // namespace
}  // namespace kiln::ir::relax
