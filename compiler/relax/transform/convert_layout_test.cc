// ConvertConvLayout: narrow-row convolutions and the code between them run in NHWC, with the
// same results as in NCHW.
#include <cmath>
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

// `text` built with and without ConvertConvLayout computes the same numbers on `x`.
void ExpectSameNumbersInNchw(const std::string& text, const Array& x) {
  backend::BuildOptions nchw;
  nchw.nhwc_convs = false;
  absl::Status same = backend::testing::SameResultsAs(text, {ToTensor(x)}, nchw);
  EXPECT_TRUE(same.ok()) << same;
}

// `text` after ConvertConvLayout, printed (empty, with a failure, when the pass fails).
std::string Converted(const std::string& text,
                      const target::CpuTarget& cpu = target::Avx512Znver4()) {
  absl::StatusOr<IRModule> converted = ConvertConvLayout(ParseModule(text), target::PolicyFor(cpu));
  EXPECT_TRUE(converted.ok()) << converted.status();
  return converted.ok() ? script::PrintScript(*converted) : "";
}

// A MobileNetV2 block on an (1, 8, W, W) image, as the ONNX importer writes it (biases
// reshaped to [C, 1, 1]): a 1x1 expansion to 32 channels, a 3x3 depthwise convolution, a 1x1
// projection back to 8 added to the input, then `tail` on the result `r`.
std::string Block(int64_t width, const std::string& tail) {
  const Array expand = Random({32, 8, 1, 1}, 1), b1 = Random({32}, 2);
  const Array depthwise = Random({32, 1, 3, 3}, 3), b2 = Random({32}, 4);
  const Array project = Random({8, 32, 1, 1}, 5);
  return absl::StrCat(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 8, )",
                      width, ", ", width, R"(), dtype="float32")):
        with R.dataflow():
            e = R.nn.conv2d(x, R.const()",
                      Literal(expand), R"(, "float32"))
            b1 = R.reshape(R.const()",
                      Literal(b1), R"(, "float32"), R.shape([32, 1, 1]))
            e1 = R.add(e, b1)
            e2 = R.clip(e1, min=0.0, max=6.0)
            d = R.nn.conv2d(e2, R.const()",
                      Literal(depthwise), R"(, "float32"), padding=[1, 1, 1, 1], groups=32)
            b2 = R.reshape(R.const()",
                      Literal(b2), R"(, "float32"), R.shape([32, 1, 1]))
            d1 = R.add(d, b2)
            d2 = R.clip(d1, min=0.0, max=6.0)
            p = R.nn.conv2d(d2, R.const()",
                      Literal(project), R"(, "float32"))
            r = R.add(p, x)
)",
                      tail, R"(
            R.output(gv)
        return gv
)");
}

TEST(ConvertConvLayoutTest, NarrowImagesRunInNhwcFromTheFirstConvolutionToTheMean) {
  const std::string text = Block(14, R"(            m = R.mean(r, axis=[2, 3], keepdims=True)
            gv = R.reshape(m, R.shape([1, 8])))");
  const std::string printed = Converted(text);
  // The first convolution reads the NCHW input as it is and writes NHWC; the rest is NHWC.
  // Weights of whole vectors of output channels are blocked (OHWI32o), others HWIO (the
  // depthwise one, the projection to 8 channels).
  EXPECT_THAT(printed, HasSubstr("data_layout=\"NCHW\", kernel_layout=\"OHWI32o\", "
                                 "out_layout=\"NHWC\""));
  EXPECT_THAT(printed, HasSubstr("data_layout=\"NHWC\", groups=32, kernel_layout=\"HWIO\""));
  EXPECT_THAT(printed, HasSubstr("R.Tensor((1, 14, 14, 8), dtype=\"float32\") = R.nn.conv2d("
                                 "d2_nhwc, metadata[\"relax.expr.Constant\"][6], "
                                 "data_layout=\"NHWC\", kernel_layout=\"HWIO\""));
  EXPECT_THAT(printed, HasSubstr("R.Tensor((1, 14, 14, 32), dtype=\"float32\") = R.nn.conv2d("));
  // The biases broadcast along NHWC's channels; the mean is over H and W, then a reshape.
  EXPECT_THAT(printed, HasSubstr("e1_nhwc: R.Tensor((1, 14, 14, 32), dtype=\"float32\") = R.add("));
  EXPECT_THAT(printed, HasSubstr("d1_nhwc: R.Tensor((1, 14, 14, 32), dtype=\"float32\") = R.add("));
  EXPECT_THAT(printed, HasSubstr("R.mean(r_nhwc, axis=[T.int64(1), T.int64(2)]"));
  // The residual add reads the NCHW input: it is transposed once, where it is read.
  EXPECT_THAT(printed, HasSubstr("R.permute_dims(x, axes=[T.int64(0), T.int64(2), T.int64(3), "
                                 "T.int64(1)])"));
  EXPECT_THAT(printed, Not(HasSubstr("T.int64(0), T.int64(3), T.int64(1), T.int64(2)")));
  ExpectSameNumbersInNchw(text, Random({1, 8, 14, 14}, 6));
}

TEST(ConvertConvLayoutTest, WhatElseReadsAValueGetsItBackInNchw) {
  // A softmax over the channels is no elementwise operator: it reads the block's result
  // transposed back.
  const std::string text = Block(7, "            gv = R.nn.softmax(r, axis=1)");
  const std::string printed = Converted(text);
  EXPECT_THAT(printed, HasSubstr("out_layout=\"NHWC\""));
  EXPECT_THAT(printed, HasSubstr("axes=[T.int64(0), T.int64(3), T.int64(1), T.int64(2)]"));
  ExpectSameNumbersInNchw(text, Random({1, 8, 7, 7}, 7));
}

TEST(ConvertConvLayoutTest, WideImagesStayNchw) {
  // 56-wide rows fill NCHW vectors; nothing changes.
  const std::string text = Block(56, "            gv = R.nn.relu(r)");
  const std::string printed = Converted(text);
  EXPECT_THAT(printed, Not(HasSubstr("NHWC")));
  EXPECT_THAT(printed, Not(HasSubstr("permute_dims")));
}

TEST(ConvertConvLayoutTest, ADepthwiseConvolutionOfNchwDataStaysNchw) {
  // Its vectors of channels would be gathers from NCHW data; the 1x1 after it converts.
  const Array depthwise = Random({16, 1, 3, 3}, 8), project = Random({32, 16, 1, 1}, 9);
  const std::string text = absl::StrCat(
      R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 16, 14, 14), dtype="float32")):
        with R.dataflow():
            d = R.nn.conv2d(x, R.const()",
      Literal(depthwise), R"(, "float32"), strides=[2, 2], padding=[1, 1, 1, 1], groups=16)
            p = R.nn.conv2d(d, R.const()",
      Literal(project), R"(, "float32"))
            gv = R.nn.relu(p)
            R.output(gv)
        return gv
)");
  const std::string printed = Converted(text);
  EXPECT_THAT(printed, HasSubstr("R.Tensor((1, 16, 7, 7), dtype=\"float32\") = R.nn.conv2d(x"));
  EXPECT_THAT(printed, HasSubstr("out_layout=\"NHWC\""));
  ExpectSameNumbersInNchw(text, Random({1, 16, 14, 14}, 10));
  // Striding 2 along its rows, it reads its input deinterleaved where the target has masked
  // loads of any length (AVX-512), not on AVX2 (bench/README.md: 0.36 -> 0.51 of oneDNN on
  // AVX-512; on AVX2 the copy's edge masks made it 3x slower).
  EXPECT_THAT(printed, HasSubstr("split_columns=T.bool(True)"));
  // (Its numbers: nn_ops_test's Conv2dLayoutsStridesPaddingDilationGroups.)
  EXPECT_THAT(Converted(text, target::Avx2Haswell()), Not(HasSubstr("split_columns")));
}

// Integers of [lo, hi] at random: int8 weights held in float32, packed words, biases.
Array Integers(const std::vector<int64_t>& shape, uint32_t seed, int64_t lo, int64_t hi) {
  Array a = Random(shape, seed, static_cast<double>(lo), static_cast<double>(hi) + 0.999);
  for (double& v : a.data) v = std::floor(v);
  return a;
}

TEST(ConvertConvLayoutTest, Int8ConvolutionsRunInNhwcWhateverTheWidth) {
  // An int8 MobileNetV2 block on 40-wide rows (a float one stays NCHW there): the first 1x1 reads
  // the NCHW input as it is into an NHWC result, the depthwise and the projection run in NHWC,
  // and only the result is transposed back.
  const Array expand = Integers({2, 2, 1, 1, 16}, 11, -99999, 99999);
  const Array depthwise = Integers({32, 3, 3}, 12, -127, 127);
  const Array project = Integers({1, 8, 1, 1, 16}, 13, -99999, 99999);
  const Array bias = Integers({32}, 14, -500, 500), small_bias = Integers({16}, 15, -500, 500);
  const Array scale = Random({32}, 16, 0.00001, 0.00002),
              small_scale = Random({16}, 17, 0.00001, 0.00002);
  const std::string text = absl::StrCat(
      R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 8, 40, 40), dtype="uint8")):
        with R.dataflow():
            e = R.qnn.conv2d_int8(x, R.const()",
      Literal(expand), R"(, "int32"), R.const()", Literal(bias), R"(, "int32"), R.const()",
      Literal(scale), R"(, "float32"), input_zero_point=3, output_zero_point=5)
            d = R.qnn.depthwise_conv2d_int8(e, R.const()",
      Literal(depthwise), R"(, "float32"), R.const()", Literal(bias), R"(, "float32"), R.const()",
      Literal(Random({32}, 18, 0.001, 0.002)),
      R"(, "float32"), padding=[1, 1, 1, 1], input_zero_point=5, output_zero_point=7)
            gv = R.qnn.conv2d_int8(d, R.const()",
      Literal(project), R"(, "int32"), R.const()", Literal(small_bias), R"(, "int32"), R.const()",
      Literal(small_scale), R"(, "float32"), input_zero_point=7, output_zero_point=9)
            R.output(gv)
        return gv
)");
  const std::string printed = Converted(text);
  EXPECT_THAT(printed, HasSubstr("R.qnn.conv2d_int8(x, "));
  EXPECT_THAT(printed, HasSubstr("data_layout=\"NCHW\", input_zero_point=3, out_layout=\"NHWC\""));
  EXPECT_THAT(printed, HasSubstr("R.qnn.depthwise_conv2d_int8(e_nhwc"));
  EXPECT_THAT(printed, HasSubstr("R.qnn.conv2d_int8(d_nhwc"));
  // The depthwise weight is [KH, KW, C] now: the same numbers as NCHW, exactly.
  backend::BuildOptions nchw;
  nchw.nhwc_convs = false;
  absl::Status same = backend::testing::SameResultsAs(
      text, {ToTensor(Integers({1, 8, 40, 40}, 19, 0, 255), "uint8")}, nchw, 0);
  EXPECT_TRUE(same.ok()) << same;
}

}  // namespace
}  // namespace kiln::ir::relax
