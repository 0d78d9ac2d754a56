// FuseOps: the groups it forms, and fused code computing what unfused code does.
#include "compiler/backend/pipeline.h"
#include "compiler/backend/testing/model_test_util.h"
#include "compiler/relax/transform/testing/examples.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/script/printer.h"
#include "compiler/testing/expect_pass.h"
#include "compiler/tir/default_schedule.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::ir::relax {
namespace {

using backend::testing::Array;
using backend::testing::CompileAndRun;
using backend::testing::FromTensor;
using backend::testing::Random;
using backend::testing::ToTensor;
using pass::testing::ParseModule;
using ::testing::HasSubstr;
using testing::KernelCalls;
using testing::MlpScript;
using ::testing::Not;

absl::StatusOr<IRModule> LegalizeAndFuse(const std::string& text) {
  absl::StatusOr<IRModule> mod = LegalizeOps(ParseModule(text));
  if (!mod.ok()) return mod;
  mod = FuseOps(*mod);
  if (!mod.ok()) return mod;
  return DeadCodeElimination(*mod);
}

TEST(FuseOpsTest, GroupsEpilogueChainsAndLeavesOpaqueOpsAlone) {
  absl::StatusOr<IRModule> fused = LegalizeAndFuse(MlpScript("n"));
  ASSERT_TRUE(fused.ok()) << fused.status();
  // matmul + add + relu + multiply + exp is one group; softmax is opaque; s is used twice.
  EXPECT_THAT(KernelCalls(*fused),
              ::testing::ElementsAre("fused_matmul_add_relu_multiply_exp", "softmax", "multiply1"))
      << script::PrintScript(*fused);
  // The unfused kernels are gone; the fused one keeps the group's pattern.
  EXPECT_FALSE(
      GetAttr((*fused)->Lookup("fused_matmul_add_relu_multiply_exp").as<PrimFuncNode>()->attrs,
              "op_pattern")
          .as<IntImmNode>() == nullptr);
  EXPECT_FALSE((*fused)->Lookup("relu").as<PrimFuncNode>());
}

TEST(FuseOpsTest, StaticEpilogueIsAbsorbedIntoTheTiledMatmul) {
  absl::StatusOr<IRModule> fused = LegalizeAndFuse(MlpScript("8"));
  ASSERT_TRUE(fused.ok()) << fused.status();
  auto kernel = (*fused)->Lookup("fused_matmul_add_relu_multiply_exp").as_ref<PrimFuncNode>();
  ASSERT_TRUE(kernel);
  std::string before = script::PrintScript(*fused);
  // Injective stages are inlined: one intermediate (the matmul result) is left...
  const auto* root = kernel->body.as<BlockRealizeNode>();
  ASSERT_NE(root, nullptr) << before;
  EXPECT_EQ(root->block->alloc_buffers.size(), 1u) << before;
  // ...and the default schedule applies the epilogue as each accumulator tile is stored, so the
  // intermediate disappears.
  PrimFunc scheduled = tir::ApplyDefaultSchedule(kernel, target::PolicyFor(target::Avx512Znver4()));
  IRModuleBuilder one;
  ASSERT_TRUE(one.Add(MakeGlobalVar("k"), scheduled).ok());
  std::string text = script::PrintScript(one.Build());
  EXPECT_THAT(text, HasSubstr("T.exp(T.max(T_out_local["));
  EXPECT_THAT(text, Not(HasSubstr("alloc_buffer((T.int64(8), T.int64(32)), \"float32\")"))) << text;
}

TEST(FuseOpsTest, FusedAndUnfusedComputeTheSame) {
  backend::BuildOptions unfused;
  unfused.fuse = false;
  for (const char* n : {"n", "8"}) {
    for (int64_t rows : {1, 5, 8}) {
      if (std::string(n) == "8" && rows != 8) continue;
      SCOPED_TRACE(absl::StrCat("batch ", n, " rows ", rows));
      std::vector<runtime::Value> in = {ToTensor(Random({rows, 16}, 1)),
                                        ToTensor(Random({16, 32}, 2, -0.5, 0.5)),
                                        ToTensor(Random({32}, 3))};
      absl::StatusOr<runtime::Value> a = CompileAndRun(MlpScript(n), in);
      absl::StatusOr<runtime::Value> b = CompileAndRun(MlpScript(n), in, unfused);
      ASSERT_TRUE(a.ok()) << a.status();
      ASSERT_TRUE(b.ok()) << b.status();
      Array x = FromTensor(*a->as_tensor()), y = FromTensor(*b->as_tensor());
      ASSERT_EQ(x.shape, y.shape);
      for (int64_t i = 0; i < x.size(); ++i)
        ASSERT_NEAR(x.data[i], y.data[i], 1e-6 * (1 + std::abs(y.data[i]))) << "element " << i;
    }
  }
}

TEST(FuseOpsTest, AKernelUsedTwiceInOneGroupKeepsItsOperandsApart) {
  // add is one shared kernel; fused twice into one function it must not merge its buffers.
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), dtype="float32"), y: R.Tensor(("n", 3), dtype="float32"),
             z: R.Tensor(("n", 3), dtype="float32")):
        with R.dataflow():
            a = R.add(x, y)
            b = R.add(a, z)
            gv = R.multiply(b, z)
            R.output(gv)
        return gv
)";
  Array x = Random({2, 3}, 4), y = Random({2, 3}, 5), z = Random({2, 3}, 6);
  absl::StatusOr<runtime::Value> out = CompileAndRun(text, {ToTensor(x), ToTensor(y), ToTensor(z)});
  ASSERT_TRUE(out.ok()) << out.status();
  Array got = FromTensor(*out->as_tensor());
  for (int64_t i = 0; i < x.size(); ++i) {
    double want = (x.data[i] + y.data[i] + z.data[i]) * z.data[i];
    EXPECT_NEAR(got.data[i], want, 1e-5 * (1 + std::abs(want)));
  }
  absl::StatusOr<IRModule> fused = LegalizeAndFuse(text);
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ(KernelCalls(*fused).size(), 1u) << script::PrintScript(*fused);
}

}  // namespace
}  // namespace kiln::ir::relax
