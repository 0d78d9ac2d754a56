// CanonicalizeBindings alone.
#include "compiler/relax/transform/testing/examples.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/script/printer.h"
#include "compiler/testing/expect_pass.h"
#include "gtest/gtest.h"

namespace kiln::ir::relax {
namespace {

using pass::testing::ParseModule;
using pass::testing::Transforms;
using testing::Bindings;

TEST(CanonicalizeBindingsTest, AliasesTuplesAndNoOpCastsDisappear) {
  const char* input = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        with R.dataflow():
            y = x
            t = (y, x)
            a = t[0]
            z = R.add(a, y)
            c = R.match_cast(z, R.Tensor((4, 8), dtype="float32"))
            gv = c
            R.output(gv)
        return gv
)";
  const char* want = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        with R.dataflow():
            t = (x, x)
            gv = R.add(x, x)
            R.output(gv)
        return gv
)";
  EXPECT_TRUE(Transforms(CanonicalizeBindingsPass(), input, want));
}

TEST(CanonicalizeBindingsTest, KeepsCastsThatCheckAndAliasesThatNarrow) {
  // The match_cast binds n (a run-time check); `gv = lv` must stay because lv has two uses.
  const char* input = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(dtype="float32", ndim=2)):
        n = T.int64()
        with R.dataflow():
            c = R.match_cast(x, R.Tensor((n, 4), dtype="float32"))
            lv = R.exp(c)
            gv = lv
            w = R.add(lv, lv)
            R.output(gv, w)
        return (gv, w)
)";
  absl::StatusOr<IRModule> out = CanonicalizeBindings(ParseModule(input));
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<Binding> b = Bindings(*out, "main");
  ASSERT_EQ(b.size(), 4u) << script::PrintScript(*out);
  EXPECT_TRUE(b[0].as<MatchCastNode>());
}

}  // namespace
}  // namespace kiln::ir::relax
