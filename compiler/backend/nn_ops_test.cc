// The nn layers, compiled and run through the VM against plain C++ references: matmul (batched,
// broadcast, blocked weights), linear, conv2d (layouts, strides, padding, dilation, groups,
// blocked kernels, NHWC results, the flattened pointwise form), conv3d, pooling, batch and layer
// norm, conv2d_transpose.
#include <cmath>
#include <functional>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/backend/build.h"
#include "compiler/backend/testing/model_test_util.h"
#include "compiler/script/script_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/library.h"
#include "runtime/vm/vm.h"

namespace kiln::backend {
namespace {

using testing::Array;
using testing::Broadcast;
using testing::CompileAndRun;
using testing::Conv2dRef;
using testing::ExpectClose;
using testing::FromTensor;
using testing::Map;
using testing::Module;
using testing::Random;
using testing::ToTensor;
using testing::Zeros;

using runtime::Tensor;
using runtime::Value;
using testing::CheckOp;
using testing::Conv2dRef;
using testing::ExpectClose;
using testing::F32;
using ::testing::HasSubstr;
using testing::MatmulRef;
using testing::Shape;

TEST(OpsTest, MatmulBatchedBroadcastAndVectors) {
  Array a = Random({3, 20, 24}, 13), b = Random({24, 40}, 14);
  CheckOp(absl::StrCat("a: ", F32({3, 20, 24}), ", b: ", F32({24, 40})),
          "            y = R.matmul(a, b)\n", {ToTensor(a), ToTensor(b)}, MatmulRef(a, b));
  Array c = Random({1, 5, 6}, 15), d = Random({4, 6, 7}, 16);
  CheckOp(absl::StrCat("a: ", F32({1, 5, 6}), ", b: ", F32({4, 6, 7})),
          "            y = R.matmul(a, b)\n", {ToTensor(c), ToTensor(d)}, MatmulRef(c, d));
  // Matrix times vector.
  Array m = Random({5, 6}, 17), v = Random({6}, 18);
  Array mv = MatmulRef(m, Array{{6, 1}, v.data});
  mv.shape = {5};
  CheckOp(absl::StrCat("a: ", F32({5, 6}), ", b: ", F32({6})), "            y = R.matmul(a, b)\n",
          {ToTensor(m), ToTensor(v)}, mv);
}

// The "NK<b>n" layout PackConstantWeights gives constant matmul weights: blocks of 16 and 8,
// batched x, rows that are not a multiple of the tile, a symbolic row count.
TEST(OpsTest, MatmulBlockedWeightLayout) {
  struct Case {
    std::vector<int64_t> x_shape;
    int64_t n, block;
  };
  for (const Case& c : std::vector<Case>{
           {{1, 64}, 48, 16}, {{7, 33}, 40, 8}, {{2, 5, 24}, 32, 16}, {{13, 100}, 1000, 8}}) {
    SCOPED_TRACE(absl::StrCat("x ", absl::StrJoin(c.x_shape, "x"), " N=", c.n, " b=", c.block));
    const int64_t k = c.x_shape.back();
    Array x = Random(c.x_shape, 28), w = Random({k, c.n}, 29);
    Array blocked = Zeros({c.n / c.block, k, c.block});
    for (int64_t r = 0; r < k; ++r)
      for (int64_t j = 0; j < c.n; ++j)
        blocked.at({j / c.block, r, j % c.block}) = w.data[r * c.n + j];
    CheckOp(absl::StrCat("x: ", F32(x.shape), ", w: ", F32(blocked.shape)),
            absl::StrCat("            y = R.matmul(x, w, b_layout=\"NK", c.block, "n\")\n"),
            {ToTensor(x), ToTensor(blocked)}, MatmulRef(x, w));
  }
  // A symbolic row count: one kernel for every batch.
  Array w = Random({24, 32}, 30);
  Array blocked = Zeros({2, 24, 16});
  for (int64_t r = 0; r < 24; ++r)
    for (int64_t j = 0; j < 32; ++j) blocked.at({j / 16, r, j % 16}) = w.data[r * 32 + j];
  for (int64_t n : {1, 5}) {
    Array x = Random({n, 24}, 31);
    CheckOp(absl::StrCat("x: R.Tensor((\"n\", 24), dtype=\"float32\"), w: ", F32(blocked.shape)),
            "            y = R.matmul(x, w, b_layout=\"NK16n\")\n",
            {ToTensor(x), ToTensor(blocked)}, MatmulRef(x, w));
  }
}

TEST(OpsTest, LinearWithBias) {
  Array x = Random({2, 3, 16}, 19), w = Random({10, 16}, 20), b = Random({10}, 21);
  Array want = Zeros({2, 3, 10});
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t o = 0; o < 10; ++o) {
      double s = b.data[o];
      for (int64_t k = 0; k < 16; ++k) s += x.data[r * 16 + k] * w.data[o * 16 + k];
      want.data[r * 10 + o] = s;
    }
  CheckOp(absl::StrCat("x: ", F32({2, 3, 16}), ", w: ", F32({10, 16}), ", b: ", F32({10})),
          "            y = R.nn.linear(x, w, b)\n", {ToTensor(x), ToTensor(w), ToTensor(b)}, want);
}

Array ToNHWC(const Array& a) {
  Array y = Zeros({a.shape[0], a.shape[2], a.shape[3], a.shape[1]});
  for (int64_t i = 0; i < a.size(); ++i) {
    std::vector<int64_t> idx = a.Unravel(i);
    y.at({idx[0], idx[2], idx[3], idx[1]}) = a.data[i];
  }
  return y;
}

TEST(OpsTest, Conv2dLayoutsStridesPaddingDilationGroups) {
  struct Case {
    int64_t c, o, k;
    int stride, pad, dil, groups;
  };
  for (const Case& c : std::vector<Case>{{3, 8, 3, 1, 1, 1, 1},
                                         {4, 6, 3, 2, 0, 1, 1},
                                         {4, 4, 3, 1, 2, 2, 1},
                                         {6, 6, 3, 1, 1, 1, 6},
                                         {4, 8, 1, 1, 0, 1, 2},
                                         // Depthwise striding 2 (NCHW: deinterleaved columns),
                                         // padded or not, dilated.
                                         {6, 6, 3, 2, 1, 1, 6},
                                         {6, 6, 3, 2, 0, 1, 6},
                                         {4, 4, 3, 2, 2, 2, 4}}) {
    SCOPED_TRACE(absl::StrCat("C=", c.c, " O=", c.o, " k=", c.k, " stride=", c.stride,
                              " pad=", c.pad, " dil=", c.dil, " groups=", c.groups));
    Array x = Random({2, c.c, 9, 10}, 22), w = Random({c.o, c.c / c.groups, c.k, c.k}, 23);
    Array want = Conv2dRef(x, w, c.stride, c.pad, c.dil, c.groups);
    std::string attrs =
        absl::StrCat("strides=[", c.stride, ", ", c.stride, "], padding=[", c.pad, ", ", c.pad,
                     "], dilation=[", c.dil, ", ", c.dil, "], groups=", c.groups);
    CheckOp(absl::StrCat("x: ", F32(x.shape), ", w: ", F32(w.shape)),
            absl::StrCat("            y = R.nn.conv2d(x, w, ", attrs, ")\n"),
            {ToTensor(x), ToTensor(w)}, want);
    if (c.groups == c.c && c.stride == 2) {  // its input deinterleaved, as AVX-512 has it
      CheckOp(absl::StrCat("x: ", F32(x.shape), ", w: ", F32(w.shape)),
              absl::StrCat("            y = R.nn.conv2d(x, w, ", attrs,
                           ", split_columns=T.bool(True))\n"),
              {ToTensor(x), ToTensor(w)}, want);
    }
    // NHWC data with an HWIO kernel.
    Array w_hwio = Zeros({c.k, c.k, c.c / c.groups, c.o});
    for (int64_t i = 0; i < w.size(); ++i) {
      std::vector<int64_t> idx = w.Unravel(i);
      w_hwio.at({idx[2], idx[3], idx[1], idx[0]}) = w.data[i];
    }
    CheckOp(absl::StrCat("x: ", F32(ToNHWC(x).shape), ", w: ", F32(w_hwio.shape)),
            absl::StrCat("            y = R.nn.conv2d(x, w, ", attrs,
                         ", data_layout=\"NHWC\", kernel_layout=\"HWIO\")\n"),
            {ToTensor(ToNHWC(x)), ToTensor(w_hwio)}, ToNHWC(want));
    // NHWC data with TVM's OHWI kernel.
    Array w_ohwi = Zeros({c.o, c.k, c.k, c.c / c.groups});
    for (int64_t i = 0; i < w.size(); ++i) {
      std::vector<int64_t> idx = w.Unravel(i);
      w_ohwi.at({idx[0], idx[2], idx[3], idx[1]}) = w.data[i];
    }
    CheckOp(absl::StrCat("x: ", F32(ToNHWC(x).shape), ", w: ", F32(w_ohwi.shape)),
            absl::StrCat("            y = R.nn.conv2d(x, w, ", attrs,
                         ", data_layout=\"NHWC\", kernel_layout=\"OHWI\")\n"),
            {ToTensor(ToNHWC(x)), ToTensor(w_ohwi)}, ToNHWC(want));
  }
}

// The "OIHW16o" kernel layout PackConstantWeights gives constant weights: odd channel counts and
// image sizes, strides, one-sided padding, batch 2.
TEST(OpsTest, Conv2dBlockedKernelLayout) {
  struct Case {
    int64_t c, o, k, h, w;
    int stride;
    std::vector<int64_t> pad;  // top, left, bottom, right
  };
  for (const Case& c : std::vector<Case>{{3, 16, 3, 7, 7, 1, {1, 1, 1, 1}},
                                         {5, 32, 3, 9, 10, 2, {0, 0, 1, 1}},
                                         {7, 16, 1, 7, 7, 2, {0, 0, 0, 0}},
                                         {2, 48, 7, 13, 11, 2, {3, 3, 3, 3}}}) {
    SCOPED_TRACE(
        absl::StrCat("C=", c.c, " O=", c.o, " k=", c.k, " ", c.h, "x", c.w, " stride=", c.stride));
    Array x = Random({2, c.c, c.h, c.w}, 26), w = Random({c.o, c.c, c.k, c.k}, 27);
    // The reference: zero-pad x as asked, then an unpadded convolution.
    Array padded = Zeros({2, c.c, c.h + c.pad[0] + c.pad[2], c.w + c.pad[1] + c.pad[3]});
    for (int64_t i = 0; i < x.size(); ++i) {
      std::vector<int64_t> idx = x.Unravel(i);
      padded.at({idx[0], idx[1], idx[2] + c.pad[0], idx[3] + c.pad[1]}) = x.data[i];
    }
    Array want = Conv2dRef(padded, w, c.stride, 0, 1, 1);
    Array blocked = Zeros({c.o / 16, c.c, c.k, c.k, 16});
    for (int64_t i = 0; i < w.size(); ++i) {
      std::vector<int64_t> idx = w.Unravel(i);
      blocked.at({idx[0] / 16, idx[1], idx[2], idx[3], idx[0] % 16}) = w.data[i];
    }
    CheckOp(
        absl::StrCat("x: ", F32(x.shape), ", w: ", F32(blocked.shape)),
        absl::StrCat("            y = R.nn.conv2d(x, w, strides=[", c.stride, ", ", c.stride,
                     "], padding=[", absl::StrJoin(c.pad, ", "), "], kernel_layout=\"OIHW16o\")\n"),
        {ToTensor(x), ToTensor(blocked)}, want);
  }
  // A symbolic batch, padded and strided: one kernel for every batch size.
  Array w = Random({16, 3, 3, 3}, 32);
  Array blocked = Zeros({1, 3, 3, 3, 16});
  for (int64_t i = 0; i < w.size(); ++i) {
    std::vector<int64_t> idx = w.Unravel(i);
    blocked.at({0, idx[1], idx[2], idx[3], idx[0]}) = w.data[i];
  }
  for (int64_t n : {1, 3}) {
    Array x = Random({n, 3, 9, 9}, 33);
    Array padded = Zeros({n, 3, 11, 11});
    for (int64_t i = 0; i < x.size(); ++i) {
      std::vector<int64_t> idx = x.Unravel(i);
      padded.at({idx[0], idx[1], idx[2] + 1, idx[3] + 1}) = x.data[i];
    }
    CheckOp(
        absl::StrCat("x: R.Tensor((\"n\", 3, 9, 9), dtype=\"float32\"), w: ", F32(blocked.shape)),
        "            y = R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 1], "
        "kernel_layout=\"OIHW16o\")\n",
        {ToTensor(x), ToTensor(blocked)}, Conv2dRef(padded, w, 2, 0, 1, 1));
  }
}

// NCHW data, an NHWC result (out_layout) and the weight blocked as OHWI32o ([O / 32, H, W, I,
// 32]): ConvertConvLayout's first NHWC convolution. Strided and padded, a batch of 2.
TEST(OpsTest, Conv2dFromNchwDataToAnNhwcResultWithBlockedWeights) {
  Array x = Random({2, 5, 9, 9}, 40), w = Random({64, 5, 3, 3}, 41);
  Array blocked = Zeros({2, 3, 3, 5, 32});
  for (int64_t i = 0; i < w.size(); ++i) {
    std::vector<int64_t> idx = w.Unravel(i);
    blocked.at({idx[0] / 32, idx[2], idx[3], idx[1], idx[0] % 32}) = w.data[i];
  }
  Array padded = Zeros({2, 5, 11, 11});
  for (int64_t i = 0; i < x.size(); ++i) {
    std::vector<int64_t> idx = x.Unravel(i);
    padded.at({idx[0], idx[1], idx[2] + 1, idx[3] + 1}) = x.data[i];
  }
  Array nchw = Conv2dRef(padded, w, 2, 0, 1, 1);
  Array want = Zeros({nchw.shape[0], nchw.shape[2], nchw.shape[3], nchw.shape[1]});
  for (int64_t i = 0; i < nchw.size(); ++i) {
    std::vector<int64_t> idx = nchw.Unravel(i);
    want.at({idx[0], idx[2], idx[3], idx[1]}) = nchw.data[i];
  }
  CheckOp(absl::StrCat("x: ", F32(x.shape), ", w: ", F32(blocked.shape)),
          "            y = R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 1], "
          "kernel_layout=\"OHWI32o\", out_layout=\"NHWC\")\n",
          {ToTensor(x), ToTensor(blocked)}, want);
}

// A 1x1 convolution (stride 1, unpadded) over an image of H * W a multiple of 4 runs as a matmul
// along the flattened image, its vectors crossing image rows: 6 x 6 (vectors longer than a row),
// 12 x 10, 28 x 28; odd channel counts, batch 2, the kernel as OIHW and as HWIO.
TEST(OpsTest, Conv2dPointwiseOverTheFlattenedImage) {
  struct Case {
    int64_t c, o, h, w;
  };
  for (const Case& c : std::vector<Case>{{5, 7, 6, 6}, {24, 20, 12, 10}, {16, 48, 28, 28}}) {
    SCOPED_TRACE(absl::StrCat("C=", c.c, " O=", c.o, " ", c.h, "x", c.w));
    Array x = Random({2, c.c, c.h, c.w}, 28), w = Random({c.o, c.c, 1, 1}, 29);
    Array want = Conv2dRef(x, w, 1, 0, 1, 1);
    CheckOp(absl::StrCat("x: ", F32(x.shape), ", w: ", F32(w.shape)),
            "            y = R.nn.conv2d(x, w)\n", {ToTensor(x), ToTensor(w)}, want);
    Array w_hwio = Zeros({1, 1, c.c, c.o});
    for (int64_t i = 0; i < w.size(); ++i) {
      std::vector<int64_t> idx = w.Unravel(i);
      w_hwio.at({0, 0, idx[1], idx[0]}) = w.data[i];
    }
    CheckOp(absl::StrCat("x: ", F32(x.shape), ", w: ", F32(w_hwio.shape)),
            "            y = R.nn.conv2d(x, w, kernel_layout=\"HWIO\")\n",
            {ToTensor(x), ToTensor(w_hwio)}, want);
  }
  // A symbolic batch: one kernel for every batch size.
  Array w = Random({12, 8, 1, 1}, 30);
  for (int64_t n : {1, 3}) {
    Array x = Random({n, 8, 6, 10}, 31);
    CheckOp(absl::StrCat("x: R.Tensor((\"n\", 8, 6, 10), dtype=\"float32\"), w: ", F32(w.shape)),
            "            y = R.nn.conv2d(x, w)\n", {ToTensor(x), ToTensor(w)},
            Conv2dRef(x, w, 1, 0, 1, 1));
  }
}

// conv3d against a plain loop: NCDHW data, an OIDHW weight, strides, dilation and padding per
// axis (front, top, left, back, bottom, right), groups; and the same weight blocked as
// OIDHW16o, as PackConstantWeights gives it.
Array Conv3dRef(const Array& x, const Array& w, const std::vector<int64_t>& stride,
                const std::vector<int64_t>& dil, const std::vector<int64_t>& pad, int64_t groups) {
  const int64_t o = w.shape[0], ic = w.shape[1];
  std::vector<int64_t> out = {x.shape[0], o};
  for (int d = 0; d < 3; ++d) {
    out.push_back(
        (x.shape[2 + d] + pad[d] + pad[d + 3] - (w.shape[2 + d] - 1) * dil[d] - 1) / stride[d] + 1);
  }
  Array y = Zeros(out);
  for (int64_t i = 0; i < y.size(); ++i) {
    const std::vector<int64_t> at = y.Unravel(i);
    const int64_t group = at[1] / (o / groups);
    double sum = 0;
    for (int64_t r = 0; r < ic; ++r) {
      for (int64_t kd = 0; kd < w.shape[2]; ++kd) {
        for (int64_t kh = 0; kh < w.shape[3]; ++kh) {
          for (int64_t kw = 0; kw < w.shape[4]; ++kw) {
            const int64_t k[3] = {kd, kh, kw};
            std::vector<int64_t> xi = {at[0], group * ic + r};
            bool inside = true;
            for (int d = 0; d < 3; ++d) {
              xi.push_back(at[2 + d] * stride[d] + k[d] * dil[d] - pad[d]);
              inside &= xi.back() >= 0 && xi.back() < x.shape[2 + d];
            }
            if (inside) sum += x.at(xi) * w.at({at[1], r, kd, kh, kw});
          }
        }
      }
    }
    y.data[i] = sum;
  }
  return y;
}

TEST(OpsTest, Conv3dStridesPaddingDilationGroupsAndBlockedKernel) {
  struct Case {
    std::vector<int64_t> x, w, stride, dil, pad;
    int64_t groups;
  };
  for (const Case& c : std::vector<Case>{
           {{1, 3, 4, 5, 6}, {16, 3, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, 1},
           {{2, 4, 7, 6, 9}, {32, 4, 3, 2, 3}, {2, 1, 2}, {1, 2, 1}, {0, 1, 2, 1, 0, 1}, 1},
           {{1, 4, 5, 5, 5}, {6, 2, 3, 3, 3}, {1, 2, 1}, {1, 1, 1}, {1, 0, 1, 1, 0, 1}, 2},
           {{1, 4, 5, 6, 6}, {4, 1, 3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, 4}}) {
    SCOPED_TRACE(absl::StrCat("x ", absl::StrJoin(c.x, "x"), " w ", absl::StrJoin(c.w, "x"),
                              " groups ", c.groups));
    Array x = Random(c.x, 61), w = Random(c.w, 62);
    Array want = Conv3dRef(x, w, c.stride, c.dil, c.pad, c.groups);
    const std::string attrs = absl::StrCat(
        "strides=[", absl::StrJoin(c.stride, ", "), "], dilation=[", absl::StrJoin(c.dil, ", "),
        "], padding=[", absl::StrJoin(c.pad, ", "), "], groups=", c.groups);
    CheckOp(absl::StrCat("x: ", F32(x.shape), ", w: ", F32(w.shape)),
            absl::StrCat("            y = R.nn.conv3d(x, w, ", attrs, ")\n"),
            {ToTensor(x), ToTensor(w)}, want);
    if (c.groups != 1) continue;
    Array blocked = Zeros({c.w[0] / 16, c.w[1], c.w[2], c.w[3], c.w[4], 16});
    for (int64_t i = 0; i < w.size(); ++i) {
      std::vector<int64_t> idx = w.Unravel(i);
      blocked.at({idx[0] / 16, idx[1], idx[2], idx[3], idx[4], idx[0] % 16}) = w.data[i];
    }
    CheckOp(absl::StrCat("x: ", F32(x.shape), ", w: ", F32(blocked.shape)),
            absl::StrCat("            y = R.nn.conv3d(x, w, ", attrs,
                         ", kernel_layout=\"OIDHW16o\")\n"),
            {ToTensor(x), ToTensor(blocked)}, want);
  }
}

TEST(OpsTest, Pooling) {
  Array x = Random({2, 3, 9, 8}, 24);
  // max_pool2d 3x3 stride 2 pad 1; avg_pool2d 2x2 stride 2 (count_include_pad False, pad 1).
  for (bool is_max : {true, false}) {
    int k = is_max ? 3 : 2, s = 2, p = 1;
    int64_t OH = (9 + 2 * p - k) / s + 1, OW = (8 + 2 * p - k) / s + 1;
    Array want = Zeros({2, 3, OH, OW});
    for (int64_t i = 0; i < want.size(); ++i) {
      std::vector<int64_t> o = want.Unravel(i);
      double acc = is_max ? -1e30 : 0;
      int count = 0;
      for (int a = 0; a < k; ++a)
        for (int b = 0; b < k; ++b) {
          int64_t h = o[2] * s + a - p, w = o[3] * s + b - p;
          if (h < 0 || h >= 9 || w < 0 || w >= 8) continue;
          double v = x.at({o[0], o[1], h, w});
          acc = is_max ? std::max(acc, v) : acc + v;
          ++count;
        }
      want.data[i] = is_max ? acc : acc / count;
    }
    std::string call =
        absl::StrCat(is_max ? "R.nn.max_pool2d" : "R.nn.avg_pool2d", "(x, pool_size=[", k, ", ", k,
                     "], strides=[2, 2], padding=[1, 1])");
    CheckOp(absl::StrCat("x: ", F32(x.shape)), absl::StrCat("            y = ", call, "\n"),
            {ToTensor(x)}, want);
  }
  // Adaptive average pooling to 4 x 3 cells (uneven windows) and to 1 x 1.
  for (auto [oh, ow] : {std::pair<int64_t, int64_t>{4, 3}, {1, 1}}) {
    Array want = Zeros({2, 3, oh, ow});
    for (int64_t i = 0; i < want.size(); ++i) {
      std::vector<int64_t> o = want.Unravel(i);
      int64_t h0 = o[2] * 9 / oh, h1 = ((o[2] + 1) * 9 + oh - 1) / oh;
      int64_t w0 = o[3] * 8 / ow, w1 = ((o[3] + 1) * 8 + ow - 1) / ow;
      double s = 0;
      for (int64_t h = h0; h < h1; ++h)
        for (int64_t w = w0; w < w1; ++w) s += x.at({o[0], o[1], h, w});
      want.data[i] = s / static_cast<double>((h1 - h0) * (w1 - w0));
    }
    CheckOp(absl::StrCat("x: ", F32(x.shape)),
            absl::StrCat("            y = R.nn.adaptive_avg_pool2d(x, output_size=[", oh, ", ", ow,
                         "])\n"),
            {ToTensor(x)}, want);
  }
}

TEST(OpsTest, BatchNormAndLayerNorm) {
  Array x = Random({2, 4, 3, 5}, 25);
  Array gamma = Random({4}, 26), beta = Random({4}, 27), mean = Random({4}, 28);
  Array var = Random({4}, 29, 0.5, 2);
  Array want = x;
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t c = x.Unravel(i)[1];
    want.data[i] =
        (x.data[i] - mean.data[c]) / std::sqrt(var.data[c] + 1e-5) * gamma.data[c] + beta.data[c];
  }
  CheckOp(absl::StrCat("x: ", F32(x.shape), ", g: ", F32({4}), ", b: ", F32({4}), ", m: ", F32({4}),
                       ", v: ", F32({4})),
          "            t = R.nn.batch_norm(x, g, b, m, v, axis=1, epsilon=1e-5)\n"
          "            y = t[0]\n",
          {ToTensor(x), ToTensor(gamma), ToTensor(beta), ToTensor(mean), ToTensor(var)}, want);

  Array h = Random({3, 6, 20}, 30), g2 = Random({20}, 31), b2 = Random({20}, 32);
  Array ln = h;
  for (int64_t r = 0; r < 18; ++r) {
    double m = 0, v = 0;
    for (int k = 0; k < 20; ++k) m += h.data[r * 20 + k] / 20;
    for (int k = 0; k < 20; ++k) v += (h.data[r * 20 + k] - m) * (h.data[r * 20 + k] - m) / 20;
    for (int k = 0; k < 20; ++k)
      ln.data[r * 20 + k] =
          (h.data[r * 20 + k] - m) / std::sqrt(v + 1e-5) * g2.data[k] + b2.data[k];
  }
  CheckOp(absl::StrCat("x: ", F32(h.shape), ", g: ", F32({20}), ", b: ", F32({20})),
          "            y = R.nn.layer_norm(x, g, b, axes=[-1], epsilon=1e-5)\n",
          {ToTensor(h), ToTensor(g2), ToTensor(b2)}, ln);
}

// ONNX's and PyTorch's transposed convolution (NCHW data, IOHW weight) by scattering each
// input element's contribution, then cropping the padding.
Array Conv2dTransposeRef(const Array& x, const Array& w, const int64_t stride[2],
                         const int64_t pad[4], const int64_t out_pad[2], int64_t dil,
                         int64_t groups) {
  int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], wd = x.shape[3];
  int64_t o_per_g = w.shape[1], kh = w.shape[2], kw = w.shape[3], c_per_g = c / groups;
  int64_t full_h = (h - 1) * stride[0] + (kh - 1) * dil + 1 + out_pad[0];
  int64_t full_w = (wd - 1) * stride[1] + (kw - 1) * dil + 1 + out_pad[1];
  Array full = Zeros({n, o_per_g * groups, full_h, full_w});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < wd; ++j)
          for (int64_t oc = 0; oc < o_per_g; ++oc)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx)
                full.at({b, ci / c_per_g * o_per_g + oc, i * stride[0] + ky * dil,
                         j * stride[1] + kx * dil}) += x.at({b, ci, i, j}) * w.at({ci, oc, ky, kx});
  Array out = Zeros({n, o_per_g * groups, full_h - pad[0] - pad[2], full_w - pad[1] - pad[3]});
  for (int64_t i = 0; i < out.size(); ++i) {
    std::vector<int64_t> idx = out.Unravel(i);
    out.data[i] = full.at({idx[0], idx[1], idx[2] + pad[0], idx[3] + pad[1]});
  }
  return out;
}

TEST(OpsTest, Conv2dTransposeStridesPaddingOutputPaddingDilationGroups) {
  struct Case {
    int64_t c, o_per_g, k;
    int64_t stride[2], pad[4], out_pad[2];
    int64_t dil, groups;
  };
  for (const Case& c : std::vector<Case>{{3, 4, 3, {3, 2}, {1, 1, 1, 1}, {1, 1}, 1, 1},
                                         {2, 3, 3, {1, 1}, {0, 0, 0, 0}, {0, 0}, 1, 1},
                                         {4, 2, 3, {2, 2}, {1, 2, 0, 1}, {0, 1}, 2, 2},
                                         {1, 2, 2, {2, 3}, {0, 0, 0, 0}, {1, 0}, 1, 1}}) {
    SCOPED_TRACE(absl::StrCat("C=", c.c, " k=", c.k, " stride=", c.stride[0], "x", c.stride[1],
                              " dil=", c.dil, " groups=", c.groups));
    Array x = Random({2, c.c, 5, 4}, 24), w = Random({c.c, c.o_per_g, c.k, c.k}, 25);
    Array want = Conv2dTransposeRef(x, w, c.stride, c.pad, c.out_pad, c.dil, c.groups);
    std::string attrs =
        absl::StrCat("strides=[", c.stride[0], ", ", c.stride[1], "], padding=[",
                     absl::StrJoin(c.pad, ", "), "], output_padding=[", c.out_pad[0], ", ",
                     c.out_pad[1], "], dilation=[", c.dil, ", ", c.dil, "], groups=", c.groups);
    CheckOp(absl::StrCat("x: ", F32(x.shape), ", w: ", F32(w.shape)),
            absl::StrCat("            y = R.nn.conv2d_transpose(x, w, ", attrs, ")\n"),
            {ToTensor(x), ToTensor(w)}, want);
  }
}

}  // namespace
}  // namespace kiln::backend
