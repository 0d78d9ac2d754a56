// FoldConstant: kernels on constants run at compile time, and the folded module computes the same.
#include "compiler/relax/transform/fold_constant.h"

#include "compiler/backend/testing/model_test_util.h"
#include "compiler/backend/toolchain.h"
#include "compiler/relax/transform/testing/examples.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/script/printer.h"
#include "compiler/testing/expect_pass.h"
#include "gtest/gtest.h"

namespace kiln::ir::relax {
namespace {

using backend::testing::Array;
using backend::testing::CompileAndRun;
using backend::testing::FromTensor;
using backend::testing::ToTensor;
using pass::testing::ParseModule;
using testing::KernelCalls;

TEST(FoldConstantTest, KernelsOnConstantsRunAtCompileTime) {
  // (c1 + c2)^T is folded; x @ that stays.
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2), dtype="float32")):
        with R.dataflow():
            c = R.add(R.const([[1.0, 2.0], [3.0, 4.0]], "float32"), R.const([[0.5, 0.5], [0.5, 0.5]], "float32"))
            t = R.permute_dims(c, axes=[1, 0])
            gv = R.matmul(x, t)
            R.output(gv)
        return gv
)";
  absl::StatusOr<IRModule> legal = LegalizeOps(ParseModule(text));
  ASSERT_TRUE(legal.ok()) << legal.status();
  absl::StatusOr<IRModule> folded = FoldConstant(*legal, backend::LoadHostKernels);
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_EQ(KernelCalls(*folded).size(), 1u) << script::PrintScript(*folded);
  // t = [[1.5, 3.5], [2.5, 4.5]]: x = [1, 10] gives [26.5, 48.5].
  Array x{{1, 2}, {1, 10}};
  absl::StatusOr<runtime::Value> out = CompileAndRun(text, {ToTensor(x)});
  ASSERT_TRUE(out.ok()) << out.status();
  Array got = FromTensor(*out->as_tensor());
  EXPECT_NEAR(got.data[0], 26.5, 1e-5);
  EXPECT_NEAR(got.data[1], 48.5, 1e-5);
}

// A few bytes of IR can ask for a constant of any size: results past the per-constant limit, and
// everything after the per-compile total is spent, stay computed at run time.
TEST(FoldConstantTest, ConstantsPastTheLimitsStayComputedAtRunTime) {
  // Two broadcasts of 64 KiB each (4 x 4096 float32), then added to x.
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 4096), dtype="float32")):
        with R.dataflow():
            a = R.broadcast_to(R.const(1.5, "float32"), R.shape([4, 4096]))
            b = R.broadcast_to(R.const(2.0, "float32"), R.shape([4, 4096]))
            s = R.add(x, a)
            gv = R.multiply(s, b)
            R.output(gv)
        return gv
)";
  absl::StatusOr<IRModule> legal = LegalizeOps(ParseModule(text));
  ASSERT_TRUE(legal.ok()) << legal.status();
  auto calls_after = [&](FoldLimits limits) {
    absl::StatusOr<IRModule> folded = FoldConstant(*legal, backend::LoadHostKernels, limits);
    EXPECT_TRUE(folded.ok()) << folded.status();
    return folded.ok() ? KernelCalls(*folded).size() : 0u;
  };
  EXPECT_EQ(calls_after({}), 2u);  // both broadcasts folded; add and multiply stay
  FoldLimits small_constants;
  small_constants.max_constant_bytes = 32 << 10;
  EXPECT_EQ(calls_after(small_constants), 4u);  // neither fits
  FoldLimits small_total;
  small_total.max_total_bytes = 100 << 10;
  EXPECT_EQ(calls_after(small_total), 3u);  // the first fits, the second would pass the total
}

}  // namespace
}  // namespace kiln::ir::relax
