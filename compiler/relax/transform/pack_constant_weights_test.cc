// PackConstantWeights: constant conv2d and conv3d weights in blocks of output channels (the target
// policy's channel block), and the same results.
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/backend/testing/model_test_util.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/script/printer.h"
#include "compiler/testing/expect_pass.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::ir::relax {
namespace {

using backend::testing::Array;
using backend::testing::Literal;
using backend::testing::Random;
using backend::testing::ToTensor;
using pass::testing::ParseModule;
using ::testing::HasSubstr;
using ::testing::Not;

// The weight blocks these tests expect are the AVX-512 policy's (16 channels).
const target::CpuPolicy kAvx512 = target::PolicyFor(target::Avx512Znver4());

// `text` built with and without PackConstantWeights computes the same numbers on `x`.
void ExpectSameNumbersUnpacked(const std::string& text, const Array& x) {
  backend::BuildOptions plain;
  plain.pack_weights = false;
  absl::Status same = backend::testing::SameResultsAs(text, {ToTensor(x)}, plain);
  EXPECT_TRUE(same.ok()) << same;
}

// conv2d of an (n, c, 7, 7) input with a constant weight of `o` output channels, 3x3, stride 2,
// padding on the bottom and right only; `groups` as given.
std::string ConvModule(const Array& w, int64_t groups, const std::string& batch = "2") {
  const int64_t c = w.shape[1] * groups;
  return absl::StrCat(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(()",
                      batch, ", ", c, R"(, 7, 7), dtype="float32")):
        with R.dataflow():
            y = R.nn.conv2d(x, R.const()",
                      Literal(w), R"(, "float32"), strides=[2, 2], padding=[0, 0, 1, 1], groups=)",
                      groups, R"()
            gv = R.nn.relu(y)
            R.output(gv)
        return gv
)");
}

TEST(PackConstantWeightsTest, ConstantWeightsAreBlockedAndComputeTheSame) {
  const Array w = Random({32, 3, 3, 3}, 7);
  const std::string text = ConvModule(w, 1);
  absl::StatusOr<IRModule> packed = PackConstantWeights(ParseModule(text), kAvx512);
  ASSERT_TRUE(packed.ok()) << packed.status();
  const std::string printed = script::PrintScript(*packed);
  EXPECT_THAT(printed, HasSubstr("kernel_layout=\"OIHW16o\""));
  EXPECT_THAT(printed, HasSubstr("R.Tensor((2, 32, 3, 3), dtype=\"float32\")"));
  // Built with and without the pass: the same numbers.
  const Array x = Random({2, 3, 7, 7}, 8);
  ExpectSameNumbersUnpacked(text, x);
}

// conv3d's OIDHW weight is blocked the same way (a 3-D convolution of R3D-18's shape, smaller).
TEST(PackConstantWeightsTest, Conv3dWeightsAreBlockedAndComputeTheSame) {
  const Array w = Random({32, 4, 3, 3, 3}, 13);
  const std::string text = absl::StrCat(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 4, 6, 6), dtype="float32")):
        with R.dataflow():
            y = R.nn.conv3d(x, R.const()",
                                        Literal(w), R"(, "float32"), padding=[1, 1, 1, 1, 1, 1])
            gv = R.nn.relu(y)
            R.output(gv)
        return gv
)");
  absl::StatusOr<IRModule> packed = PackConstantWeights(ParseModule(text), kAvx512);
  ASSERT_TRUE(packed.ok()) << packed.status();
  const std::string printed = script::PrintScript(*packed);
  EXPECT_THAT(printed, HasSubstr("kernel_layout=\"OIDHW16o\""));
  EXPECT_THAT(printed, HasSubstr("R.Tensor((1, 32, 4, 6, 6), dtype=\"float32\") = R.nn.conv3d("));
  ExpectSameNumbersUnpacked(text, Random({1, 4, 4, 6, 6}, 14));
}

TEST(PackConstantWeightsTest, SymbolicBatchIsPackedToo) {
  const Array w = Random({16, 2, 3, 3}, 9);
  const std::string text = ConvModule(w, 1, "\"n\"");
  for (int64_t n : {1, 3}) {
    const Array x = Random({n, 2, 7, 7}, 10);
    ExpectSameNumbersUnpacked(text, x);
  }
}

TEST(PackConstantWeightsTest, GroupedAndUnevenChannelCountsAreLeftAlone) {
  for (auto [w, groups] :
       {std::pair<Array, int64_t>{Random({16, 1, 3, 3}, 11), 16}, {Random({20, 3, 3, 3}, 12), 1}}) {
    absl::StatusOr<IRModule> packed =
        PackConstantWeights(ParseModule(ConvModule(w, groups)), kAvx512);
    ASSERT_TRUE(packed.ok()) << packed.status();
    EXPECT_THAT(script::PrintScript(*packed), Not(HasSubstr("kernel_layout")));
  }
}

// A 1x1 convolution (stride 1, unpadded) over an 8 x 8 image runs as a matmul along the
// flattened image, with its weight as it is; over a 7 x 7 image (49, odd) it is blocked.
TEST(PackConstantWeightsTest, PointwiseConvolutionsOverFlattenableImagesAreLeftAlone) {
  const Array w = Random({16, 64, 1, 1}, 13);
  for (int64_t size : {8, 7}) {
    const std::string text = absl::StrCat(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 64, )",
                                          size, ", ", size, R"(), dtype="float32")):
        with R.dataflow():
            gv = R.nn.conv2d(x, R.const()",
                                          Literal(w), R"(, "float32"))
            R.output(gv)
        return gv
)");
    absl::StatusOr<IRModule> packed = PackConstantWeights(ParseModule(text), kAvx512);
    ASSERT_TRUE(packed.ok()) << packed.status();
    const std::string printed = script::PrintScript(*packed);
    if (size == 8) {
      EXPECT_THAT(printed, Not(HasSubstr("kernel_layout")));
    } else {
      EXPECT_THAT(printed, HasSubstr("kernel_layout=\"OIHW16o\""));
    }
    ExpectSameNumbersUnpacked(text, Random({1, 64, size, size}, 14));
  }
}

// A Linear layer as ONNX's Gemm arrives: x @ permute_dims(W [N, K]) + b; and x @ W [K, N].
std::string LinearModule(const Array& w, bool transposed, const std::string& rows = "3") {
  const int64_t k = transposed ? w.shape[1] : w.shape[0];
  const std::string weight = absl::StrCat("R.const(", Literal(w), ", \"float32\")");
  return absl::StrCat(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(()",
                      rows, ", ", k, R"(), dtype="float32")):
        with R.dataflow():
)",
                      transposed ? absl::StrCat("            t = R.permute_dims(", weight,
                                                ")\n            y = R.matmul(x, t)\n")
                                 : absl::StrCat("            y = R.matmul(x, ", weight, ")\n"),
                      R"(            gv = R.nn.relu(y)
            R.output(gv)
        return gv
)");
}

TEST(PackConstantWeightsTest, MatmulWeightsAreBlockedAndComputeTheSame) {
  // 32 columns; 40 columns, padded with zeros to 48 and the product sliced back.
  struct Case {
    std::vector<int64_t> w_shape;
    bool transposed;
    bool sliced;
  };
  for (const Case& c : std::vector<Case>{{{32, 20}, true, false}, {{20, 40}, false, true}}) {
    const Array w = Random(c.w_shape, 13);
    const std::string text = LinearModule(w, c.transposed);
    absl::StatusOr<IRModule> packed = PackConstantWeights(ParseModule(text), kAvx512);
    ASSERT_TRUE(packed.ok()) << packed.status();
    const std::string printed = script::PrintScript(*packed);
    EXPECT_THAT(printed, HasSubstr("b_layout=\"NK16n\""));
    if (c.sliced) {
      EXPECT_THAT(printed, HasSubstr("R.Tensor((3, 48), dtype=\"float32\") = R.matmul("));
      EXPECT_THAT(printed, HasSubstr("R.strided_slice(y_wide, axes="));
    }
    const Array x = Random({3, 20}, 14);
    ExpectSameNumbersUnpacked(text, x);
  }
}

TEST(PackConstantWeightsTest, MatmulsThatCannotBlockAreLeftAlone) {
  // 10 columns: no block of 8 or 16 divides them.
  absl::StatusOr<IRModule> packed =
      PackConstantWeights(ParseModule(LinearModule(Random({10, 20}, 15), true)), kAvx512);
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_THAT(script::PrintScript(*packed), Not(HasSubstr("b_layout")));
}

}  // namespace
}  // namespace kiln::ir::relax
