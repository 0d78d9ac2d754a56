// relax.qnn.conv2d_int8 compiled and run through the VM against the integer arithmetic written out
// in C++: every output exact (the requantization's float rounding included).
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/backend/testing/model_test_util.h"
#include "gtest/gtest.h"

namespace kiln::backend {
namespace {

using runtime::Tensor;

struct QConvCase {
  int n = 1, c = 6, h = 9, w = 9, o = 16, kh = 3, kw = 3;
  int stride = 1, pad = 1, dilation = 1, block = 8;
  int x_zp = 7, y_zp = 3, out_min = 3, out_max = 255;
  bool nhwc = false;      // data_layout="NHWC": the data channels last
  bool nhwc_out = false;  // out_layout="NHWC": the result channels last
};

Tensor Make(const std::vector<int64_t>& shape, DLDataTypeCode code, int bits) {
  return *Tensor::Empty(shape,
                        DLDataType{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1});
}

void CheckQConv(const QConvCase& q, uint32_t seed) {
  SCOPED_TRACE(absl::StrCat("c=", q.c, " o=", q.o, " k=", q.kh, " stride=", q.stride,
                            " pad=", q.pad, " block=", q.block, q.nhwc ? " NHWC" : "",
                            q.nhwc_out ? " into NHWC" : ""));
  std::mt19937 rng(seed);
  const int words = (q.c + 3) / 4;
  const int oh = (q.h + 2 * q.pad - (q.kh - 1) * q.dilation - 1) / q.stride + 1;
  const int ow = (q.w + 2 * q.pad - (q.kw - 1) * q.dilation - 1) / q.stride + 1;
  std::vector<uint8_t> x(q.n * q.c * q.h * q.w);
  std::vector<int8_t> w(q.o * q.c * q.kh * q.kw);
  std::vector<int32_t> bias(q.o);
  std::vector<float> mult(q.o);
  for (uint8_t& v : x) v = static_cast<uint8_t>(rng());
  for (int8_t& v : w) v = static_cast<int8_t>(rng());
  w[0] = -128;
  for (int32_t& v : bias) v = static_cast<int32_t>(rng() % 20001) - 10000;
  for (float& v : mult) v = 0.0001f + 0.0002f * static_cast<float>(rng() % 1000) / 1000.0f;

  // x is NCHW here; the operator reads it NHWC when asked.
  Tensor xt =
      q.nhwc ? Make({q.n, q.h, q.w, q.c}, kDLUInt, 8) : Make({q.n, q.c, q.h, q.w}, kDLUInt, 8);
  auto* xd = static_cast<uint8_t*>(xt.data());
  for (int n = 0; n < q.n; ++n)
    for (int c = 0; c < q.c; ++c)
      for (int i = 0; i < q.h * q.w; ++i)
        xd[q.nhwc ? (n * q.h * q.w + i) * q.c + c : (n * q.c + c) * q.h * q.w + i] =
            x[(n * q.c + c) * q.h * q.w + i];
  // The weight's words: [O / b, words, KH, KW, b], channel 4i + k in byte k of word i.
  Tensor wt = Make({q.o / q.block, words, q.kh, q.kw, q.block}, kDLInt, 32);
  auto* packed = static_cast<uint32_t*>(wt.data());
  std::fill(packed, packed + wt.NumElements(), 0u);
  for (int o = 0; o < q.o; ++o)
    for (int c = 0; c < q.c; ++c)
      for (int i = 0; i < q.kh; ++i)
        for (int j = 0; j < q.kw; ++j) {
          const int64_t at =
              ((((o / q.block) * words + c / 4) * q.kh + i) * q.kw + j) * q.block + o % q.block;
          const uint8_t byte = static_cast<uint8_t>(w[((o * q.c + c) * q.kh + i) * q.kw + j]);
          packed[at] |= uint32_t{byte} << (8 * (c % 4));
        }
  Tensor bt = Make({q.o}, kDLInt, 32);
  std::copy(bias.begin(), bias.end(), static_cast<int32_t*>(bt.data()));
  Tensor mt = Make({q.o}, kDLFloat, 32);
  std::copy(mult.begin(), mult.end(), static_cast<float*>(mt.data()));

  auto shape = [](std::vector<int> s) {
    return absl::StrCat("(", absl::StrJoin(s, ", "), s.size() == 1 ? ",)" : ")");
  };
  const std::string params = absl::StrCat(
      "x: R.Tensor(", q.nhwc ? shape({q.n, q.h, q.w, q.c}) : shape({q.n, q.c, q.h, q.w}),
      ", \"uint8\"), w: R.Tensor(", shape({q.o / q.block, words, q.kh, q.kw, q.block}),
      ", \"int32\"), b: R.Tensor(", shape({q.o}), ", \"int32\"), m: R.Tensor(", shape({q.o}),
      ", \"float32\")");
  const std::string body = absl::StrCat(
      "            y = R.qnn.conv2d_int8(x, w, b, m, strides=[", q.stride, ", ", q.stride,
      "], padding=[", q.pad, ", ", q.pad, ", ", q.pad, ", ", q.pad, "], dilation=[", q.dilation,
      ", ", q.dilation, "], input_zero_point=", q.x_zp, ", output_zero_point=", q.y_zp,
      ", out_min=", q.out_min, ", out_max=", q.out_max, q.nhwc ? ", data_layout=\"NHWC\"" : "",
      q.nhwc_out ? ", out_layout=\"NHWC\"" : "", ")\n");
  absl::StatusOr<runtime::Value> out =
      testing::CompileAndRun(testing::Module(params, body, "y"), {xt, wt, bt, mt});
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor* y = out->as_tensor();
  ASSERT_NE(y, nullptr);
  ASSERT_EQ(std::vector<int64_t>(y->shape().begin(), y->shape().end()),
            q.nhwc_out ? (std::vector<int64_t>{q.n, oh, ow, q.o})
                       : (std::vector<int64_t>{q.n, q.o, oh, ow}));
  const auto* got = static_cast<const uint8_t*>(y->data());
  int checked = 0;
  for (int n = 0; n < q.n; ++n)
    for (int o = 0; o < q.o; ++o)
      for (int r = 0; r < oh; ++r)
        for (int s = 0; s < ow; ++s) {
          int32_t acc = 0;
          for (int c = 0; c < q.c; ++c)
            for (int i = 0; i < q.kh; ++i)
              for (int j = 0; j < q.kw; ++j) {
                const int hy = r * q.stride + i * q.dilation - q.pad;
                const int wx = s * q.stride + j * q.dilation - q.pad;
                const bool inside = hy >= 0 && hy < q.h && wx >= 0 && wx < q.w;
                const int32_t xv = inside ? x[((n * q.c + c) * q.h + hy) * q.w + wx] : q.x_zp;
                acc += xv * w[((o * q.c + c) * q.kh + i) * q.kw + j];
              }
          const float real = static_cast<float>(acc + bias[o]) * mult[o];
          const float lo = static_cast<float>(q.out_min - q.y_zp);
          const float hi = static_cast<float>(q.out_max - q.y_zp);
          const int want =
              static_cast<int>(std::nearbyint(std::min(std::max(real, lo), hi))) + q.y_zp;
          const int at =
              q.nhwc_out ? ((n * oh + r) * ow + s) * q.o + o : ((n * q.o + o) * oh + r) * ow + s;
          ASSERT_EQ(got[at], want) << n << " " << o << " " << r << " " << s;
          ++checked;
        }
  EXPECT_EQ(checked, q.n * q.o * oh * ow);
}

TEST(QuantizedOpsTest, QConv2dIsTheIntegerArithmetic) {
  CheckQConv(QConvCase{}, 1);
  QConvCase wide;  // 16 lanes, a stride of 2, channels a multiple of 4
  wide.c = 32;
  wide.o = 32;
  wide.h = wide.w = 14;
  wide.stride = 2;
  wide.block = 16;
  CheckQConv(wide, 2);
  QConvCase pointwise;  // 1x1, no padding, ReLU6's clamp
  pointwise.c = 3;
  pointwise.o = 12;
  pointwise.block = 4;
  pointwise.kh = pointwise.kw = 1;
  pointwise.pad = 0;
  pointwise.out_max = 120;
  pointwise.y_zp = 0;
  pointwise.out_min = 0;
  CheckQConv(pointwise, 3);
  QConvCase dilated;
  dilated.dilation = 2;
  dilated.pad = 2;
  dilated.n = 2;
  CheckQConv(dilated, 4);
  // From NCHW data into an NHWC result, and NHWC throughout, as ConvertConvLayout writes them.
  for (QConvCase q : {QConvCase{}, wide, pointwise, dilated}) {
    q.nhwc_out = true;
    CheckQConv(q, 5);
    q.nhwc = true;
    CheckQConv(q, 6);
  }
}

// Depthwise: one channel per group, float32 weights holding int8 values, a float32 bias.
void CheckQDepthwise(int c, int h, int k, int stride, int pad, uint32_t seed, bool nhwc = false) {
  SCOPED_TRACE(absl::StrCat("c=", c, " h=", h, " k=", k, " stride=", stride, " pad=", pad,
                            nhwc ? " NHWC" : ""));
  std::mt19937 rng(seed);
  const int x_zp = 11, y_zp = 2;
  const int oh = (h + 2 * pad - k) / stride + 1;
  Tensor xt = Make({1, c, h, h}, kDLUInt, 8);
  Tensor wt = Make({c, k, k}, kDLFloat, 32);
  Tensor bt = Make({c}, kDLFloat, 32);
  Tensor mt = Make({c}, kDLFloat, 32);
  auto* x = static_cast<uint8_t*>(xt.data());
  auto* w = static_cast<float*>(wt.data());
  auto* b = static_cast<float*>(bt.data());
  auto* m = static_cast<float*>(mt.data());
  for (int64_t i = 0; i < xt.NumElements(); ++i) x[i] = static_cast<uint8_t>(rng());
  for (int64_t i = 0; i < wt.NumElements(); ++i)
    w[i] = static_cast<float>(static_cast<int8_t>(rng()));
  for (int i = 0; i < c; ++i) {
    b[i] = static_cast<float>(static_cast<int>(rng() % 4001) - 2000);
    m[i] = 0.001f + 0.002f * static_cast<float>(rng() % 1000) / 1000.0f;
  }
  // NHWC: the data [1, H, W, C] and the weight [K, K, C], the same values.
  Tensor xn = Make({1, h, h, c}, kDLUInt, 8);
  Tensor wn = Make({k, k, c}, kDLFloat, 32);
  for (int ch = 0; ch < c; ++ch) {
    for (int i = 0; i < h * h; ++i)
      static_cast<uint8_t*>(xn.data())[i * c + ch] = x[ch * h * h + i];
    for (int i = 0; i < k * k; ++i) static_cast<float*>(wn.data())[i * c + ch] = w[ch * k * k + i];
  }
  const std::string params =
      nhwc ? absl::StrCat("x: R.Tensor((1, ", h, ", ", h, ", ", c, "), \"uint8\"), w: R.Tensor((",
                          k, ", ", k, ", ", c, "), \"float32\"), b: R.Tensor((", c,
                          ",), \"float32\"), m: R.Tensor((", c, ",), \"float32\")")
           : absl::StrCat("x: R.Tensor((1, ", c, ", ", h, ", ", h, "), \"uint8\"), w: R.Tensor((",
                          c, ", ", k, ", ", k, "), \"float32\"), b: R.Tensor((", c,
                          ",), \"float32\"), m: R.Tensor((", c, ",), \"float32\")");
  const std::string body =
      absl::StrCat("            y = R.qnn.depthwise_conv2d_int8(x, w, b, m, strides=[", stride,
                   ", ", stride, "], padding=[", pad, ", ", pad, ", ", pad, ", ", pad,
                   "], input_zero_point=", x_zp, ", output_zero_point=", y_zp, ", out_min=", y_zp,
                   ", out_max=200", nhwc ? ", data_layout=\"NHWC\"" : "", ")\n");
  absl::StatusOr<runtime::Value> out = testing::CompileAndRun(
      testing::Module(params, body, "y"), {nhwc ? xn : xt, nhwc ? wn : wt, bt, mt});
  ASSERT_TRUE(out.ok()) << out.status();
  const auto* got = static_cast<const uint8_t*>(out->as_tensor()->data());
  for (int ch = 0; ch < c; ++ch)
    for (int r = 0; r < oh; ++r)
      for (int s = 0; s < oh; ++s) {
        float acc = 0;  // exact: every partial sum is an integer below 2^24
        for (int i = 0; i < k; ++i)
          for (int j = 0; j < k; ++j) {
            const int hy = r * stride + i - pad, wx = s * stride + j - pad;
            const bool inside = hy >= 0 && hy < h && wx >= 0 && wx < h;
            const float xv = inside ? x[(ch * h + hy) * h + wx] : x_zp;
            acc += xv * w[(ch * k + i) * k + j];
          }
        const float real = (acc + b[ch]) * m[ch];
        const float clamped = std::min(std::max(real, static_cast<float>(y_zp - y_zp)),
                                       static_cast<float>(200 - y_zp));
        const int at = nhwc ? (r * oh + s) * c + ch : (ch * oh + r) * oh + s;
        ASSERT_EQ(got[at], static_cast<int>(std::nearbyint(clamped)) + y_zp)
            << ch << " " << r << " " << s;
      }
}

TEST(QuantizedOpsTest, QDepthwiseConv2dIsTheIntegerArithmetic) {
  CheckQDepthwise(8, 10, 3, 1, 1, 5);
  CheckQDepthwise(24, 15, 3, 2, 1, 6);
  CheckQDepthwise(5, 9, 5, 1, 2, 7);
  CheckQDepthwise(16, 10, 3, 1, 1, 8, /*nhwc=*/true);
  CheckQDepthwise(24, 15, 3, 2, 1, 9, /*nhwc=*/true);
}

TEST(QuantizedOpsTest, QDenseIsTheIntegerProduct) {
  // K = 37: the last word of each row holds one value and three bytes the zero weights ignore.
  const int m = 3, k = 37, n = 24, block = 8, words = (k + 3) / 4;
  std::mt19937 rng(9);
  Tensor xt = Make({m, k}, kDLUInt, 8);
  Tensor wt = Make({n / block, words, block}, kDLInt, 32);
  Tensor ct = Make({n}, kDLInt, 32);
  auto* x = static_cast<uint8_t*>(xt.data());
  auto* packed = static_cast<uint32_t*>(wt.data());
  auto* corr = static_cast<int32_t*>(ct.data());
  std::vector<int8_t> w(k * n);
  for (int64_t i = 0; i < xt.NumElements(); ++i) x[i] = static_cast<uint8_t>(rng());
  for (int8_t& v : w) v = static_cast<int8_t>(rng());
  for (int c = 0; c < n; ++c) corr[c] = static_cast<int32_t>(rng() % 1001) - 500;
  std::fill(packed, packed + wt.NumElements(), 0u);
  for (int r = 0; r < k; ++r)
    for (int c = 0; c < n; ++c)
      packed[((c / block) * words + r / 4) * block + c % block] |=
          uint32_t{static_cast<uint8_t>(w[r * n + c])} << (8 * (r % 4));
  const std::string params =
      absl::StrCat("x: R.Tensor((", m, ", ", k, "), \"uint8\"), w: R.Tensor((", n / block, ", ",
                   words, ", ", block, "), \"int32\"), c: R.Tensor((", n, ",), \"int32\")");
  absl::StatusOr<runtime::Value> out = testing::CompileAndRun(
      testing::Module(params, "            y = R.qnn.dense_int8(x, w, c)\n", "y"), {xt, wt, ct});
  ASSERT_TRUE(out.ok()) << out.status();
  const auto* got = static_cast<const int32_t*>(out->as_tensor()->data());
  for (int i = 0; i < m; ++i)
    for (int c = 0; c < n; ++c) {
      int32_t want = corr[c];
      for (int r = 0; r < k; ++r) want += int32_t{x[i * k + r]} * w[r * n + c];
      ASSERT_EQ(got[i * n + c], want) << i << " " << c;
    }
}

TEST(QuantizedOpsTest, QConv2dRefusesWhatItDoesNotTake) {
  const std::string params =
      "x: R.Tensor((1, 6, 9, 9), \"float32\"), w: R.Tensor((2, 2, 3, 3, 8), \"int32\"), "
      "b: R.Tensor((16,), \"int32\"), m: R.Tensor((16,), \"float32\")";
  absl::StatusOr<runtime::Value> out = testing::CompileAndRun(
      testing::Module(params, "            y = R.qnn.conv2d_int8(x, w, b, m)\n", "y"), {});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("data must be uint8"), std::string::npos) << out.status();
  const std::string wrong_words =
      "x: R.Tensor((1, 12, 9, 9), \"uint8\"), w: R.Tensor((2, 2, 3, 3, 8), \"int32\"), "
      "b: R.Tensor((16,), \"int32\"), m: R.Tensor((16,), \"float32\")";
  out = testing::CompileAndRun(
      testing::Module(wrong_words, "            y = R.qnn.conv2d_int8(x, w, b, m)\n", "y"), {});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("words of input channels"), std::string::npos)
      << out.status();
}

}  // namespace
}  // namespace kiln::backend
