// Every legalized operator, compiled and run through the VM, against a plain C++ reference
// written independently of the kernels (NumPy semantics): elementwise math, broadcasting,
// reductions, layout ops, symbolic shapes. The nn layers are in nn_ops_test.cc.
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
using testing::CheckOp;
using testing::CompileAndRun;
using testing::Conv2dRef;
using testing::ExpectClose;
using testing::F32;
using testing::FromTensor;
using testing::Map;
using testing::MatmulRef;
using testing::Module;
using testing::Random;
using testing::Shape;
using testing::ToTensor;
using testing::Zeros;

using runtime::Tensor;
using runtime::Value;
using ::testing::HasSubstr;

TEST(OpsTest, UnaryMath) {
  Array x = Random({3, 37}, 1);
  Array pos = Random({3, 37}, 2, 0.1, 4);
  Array unit = Random({3, 37}, 3, -0.9, 0.9);  // inside the domains of asin, acos, atanh
  Array above_one = Random({3, 37}, 4, 1.1, 4);
  struct Case {
    const char* op;
    const Array* in;
    std::function<double(double)> f;
  };
  const double kSqrt1_2 = std::sqrt(0.5);
  std::vector<Case> cases = {
      {"R.exp", &x, [](double v) { return std::exp(v); }},
      {"R.log", &pos, [](double v) { return std::log(v); }},
      {"R.sqrt", &pos, [](double v) { return std::sqrt(v); }},
      {"R.rsqrt", &pos, [](double v) { return 1 / std::sqrt(v); }},
      {"R.tanh", &x, [](double v) { return std::tanh(v); }},
      {"R.sigmoid", &x, [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"R.erf", &x, [](double v) { return std::erf(v); }},
      {"R.negative", &x, [](double v) { return -v; }},
      {"R.abs", &x, [](double v) { return std::abs(v); }},
      {"R.floor", &x, [](double v) { return std::floor(v); }},
      {"R.ceil", &x, [](double v) { return std::ceil(v); }},
      {"R.round", &x, [](double v) { return std::nearbyint(v); }},
      {"R.nn.relu", &x, [](double v) { return std::max(v, 0.0); }},
      {"R.nn.gelu", &x, [&](double v) { return 0.5 * v * (1 + std::erf(v * kSqrt1_2)); }},
      {"R.nn.gelu_tanh", &x,
       [](double v) {
         return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
       }},
      {"R.nn.silu", &x, [](double v) { return v / (1 + std::exp(-v)); }},
      {"R.sin", &x, [](double v) { return std::sin(v); }},
      {"R.cos", &x, [](double v) { return std::cos(v); }},
      {"R.tan", &unit, [](double v) { return std::tan(v); }},
      {"R.asin", &unit, [](double v) { return std::asin(v); }},
      {"R.acos", &unit, [](double v) { return std::acos(v); }},
      {"R.atan", &x, [](double v) { return std::atan(v); }},
      {"R.sinh", &x, [](double v) { return std::sinh(v); }},
      {"R.cosh", &x, [](double v) { return std::cosh(v); }},
      {"R.asinh", &x, [](double v) { return std::asinh(v); }},
      {"R.acosh", &above_one, [](double v) { return std::acosh(v); }},
      {"R.atanh", &unit, [](double v) { return std::atanh(v); }},
      {"R.square", &x, [](double v) { return v * v; }},
      {"R.sign", &x, [](double v) { return v > 0   ? 1.0
                                           : v < 0 ? -1.0
                                                   : 0.0; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    CheckOp(absl::StrCat("x: ", F32({3, 37})), absl::StrCat("            y = ", c.op, "(x)\n"),
            {ToTensor(*c.in)}, Map(*c.in, c.f));
  }
  SCOPED_TRACE("clip");
  CheckOp(absl::StrCat("x: ", F32({3, 37})), "            y = R.clip(x, min=-0.5, max=1.25)\n",
          {ToTensor(x)}, Map(x, [](double v) { return std::min(std::max(v, -0.5), 1.25); }));
  SCOPED_TRACE("clip, as TVM 0.20 prints it");
  CheckOp(
      absl::StrCat("x: ", F32({3, 37})),
      "            y = R.clip(x, R.prim_value(T.float32(-0.5)), R.prim_value(T.float32(1.25)))\n",
      {ToTensor(x)}, Map(x, [](double v) { return std::min(std::max(v, -0.5), 1.25); }));
}

TEST(OpsTest, BinaryBroadcasting) {
  Array a = Random({2, 3, 17}, 3), b = Random({3, 1}, 4, 0.5, 2);
  struct Case {
    const char* op;
    std::function<double(double, double)> f;
  };
  std::vector<Case> cases = {
      {"R.add", [](double p, double q) { return p + q; }},
      {"R.subtract", [](double p, double q) { return p - q; }},
      {"R.multiply", [](double p, double q) { return p * q; }},
      {"R.divide", [](double p, double q) { return p / q; }},
      {"R.maximum", [](double p, double q) { return std::max(p, q); }},
      {"R.minimum", [](double p, double q) { return std::min(p, q); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    CheckOp(absl::StrCat("a: ", F32({2, 3, 17}), ", b: ", F32({3, 1})),
            absl::StrCat("            y = ", c.op, "(a, b)\n"), {ToTensor(a), ToTensor(b)},
            Broadcast(a, b, c.f));
  }
  // power needs a positive base; broadcasting on the left operand.
  Array base = Random({4, 1}, 5, 0.5, 2), expo = Random({4, 9}, 6);
  CheckOp(absl::StrCat("a: ", F32({4, 1}), ", b: ", F32({4, 9})), "            y = R.power(a, b)\n",
          {ToTensor(base), ToTensor(expo)},
          Broadcast(base, expo, [](double p, double q) { return std::pow(p, q); }));
}

TEST(OpsTest, ComparisonsAndWhere) {
  Array a = Random({5, 16}, 7), b = Random({16}, 8);
  // Make some elements equal so that equal/less_equal are exercised.
  for (int i = 0; i < 16; i += 3) a.data[i] = b.data[i];
  struct Case {
    const char* op;
    std::function<bool(double, double)> f;
  };
  std::vector<Case> cases = {
      {"R.equal", [](double p, double q) { return p == q; }},
      {"R.not_equal", [](double p, double q) { return p != q; }},
      {"R.less", [](double p, double q) { return p < q; }},
      {"R.less_equal", [](double p, double q) { return p <= q; }},
      {"R.greater", [](double p, double q) { return p > q; }},
      {"R.greater_equal", [](double p, double q) { return p >= q; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    // The bool result feeds where(), which picks a or b.
    CheckOp(absl::StrCat("a: ", F32({5, 16}), ", b: ", F32({16})),
            absl::StrCat("            c = ", c.op, "(a, b)\n            y = R.where(c, a, b)\n"),
            {ToTensor(a), ToTensor(b)},
            Broadcast(a, b, [&](double p, double q) { return c.f(p, q) ? p : q; }));
  }
}

// Scatters against a loop over the index positions in row-major order, as ONNX's reference
// runs it: indices smaller than the data on every axis, negative and repeated ones, each
// reduction.
TEST(OpsTest, ScatterElementsAndScatterNDMatchAScatterLoop) {
  Array data = Random({4, 5}, 11), updates = Random({2, 3}, 12);
  Array indices = {{2, 3}, {1, -1, 0, 1, 3, 0}};  // axis 0: rows 1, 3, 0 then 1, 3, 0
  struct Reduction {
    const char* name;
    std::function<double(double, double)> f;
  };
  std::vector<Reduction> reductions = {
      {"update", [](double, double u) { return u; }},
      {"add", [](double x, double u) { return x + u; }},
      {"mul", [](double x, double u) { return x * u; }},
      {"max", [](double x, double u) { return std::max(x, u); }},
      {"min", [](double x, double u) { return std::min(x, u); }},
  };
  for (const Reduction& r : reductions) {
    SCOPED_TRACE(r.name);
    Array want = data;
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        int64_t row = static_cast<int64_t>(indices.at({i, j}));
        if (row < 0) row += 4;
        want.at({row, j}) = r.f(want.at({row, j}), updates.at({i, j}));
      }
    }
    CheckOp(absl::StrCat("x: ", F32({4, 5}),
                         ", i: R.Tensor((2, 3), dtype=\"int64\"), u: ", F32({2, 3})),
            absl::StrCat("            y = R.scatter_elements(x, i, u, axis=0, reduction=\"", r.name,
                         "\")\n"),
            {ToTensor(data), ToTensor(indices, "int64"), ToTensor(updates)}, want);
  }
  // scatter_nd: one coordinate per index row picks a whole row of the data; row 1 twice.
  Array nd_indices = {{3, 1}, {1, 3, 1}}, rows = Random({3, 5}, 13);
  for (const Reduction& r : {reductions[0], reductions[1]}) {
    SCOPED_TRACE(r.name);
    Array want = data;
    for (int64_t q = 0; q < 3; ++q) {
      int64_t row = static_cast<int64_t>(nd_indices.data[q]);
      for (int64_t j = 0; j < 5; ++j) want.at({row, j}) = r.f(want.at({row, j}), rows.at({q, j}));
    }
    CheckOp(absl::StrCat("x: ", F32({4, 5}),
                         ", i: R.Tensor((3, 1), dtype=\"int64\"), u: ", F32({3, 5})),
            absl::StrCat("            y = R.scatter_nd(x, i, u, reduction=\"", r.name, "\")\n"),
            {ToTensor(data), ToTensor(nd_indices, "int64"), ToTensor(rows)}, want);
  }
}

// Shifts of signed and unsigned integers, by amounts up to past the width (all bits out: 0, or
// the sign for an arithmetic right shift of a negative number).
TEST(OpsTest, ShiftsOfIntegers) {
  Array x = {{6}, {1, -8, 255, -1, 12345, 7}};
  Array by = {{6}, {0, 1, 4, 31, 32, 40}};
  auto expect = [&](const char* op, const char* dtype,
                    const std::function<double(int64_t, int64_t)>& f) {
    SCOPED_TRACE(absl::StrCat(op, " ", dtype));
    Array want = x;
    for (int64_t i = 0; i < 6; ++i) {
      want.data[i] = f(static_cast<int64_t>(x.data[i]), static_cast<int64_t>(by.data[i]));
    }
    std::string t = absl::StrCat("R.Tensor((6,), dtype=\"", dtype, "\")");
    CheckOp(absl::StrCat("a: ", t, ", b: ", t), absl::StrCat("            y = ", op, "(a, b)\n"),
            {ToTensor(x, dtype), ToTensor(by, dtype)}, want);
  };
  expect("R.left_shift", "int32", [](int64_t a, int64_t b) {
    return b >= 32 ? 0.0 : static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(a) << b));
  });
  expect("R.right_shift", "int32", [](int64_t a, int64_t b) {
    return static_cast<double>(static_cast<int32_t>(a) >> std::min<int64_t>(b, 31));
  });
  x.data = {1, 8, 255, 4294967295.0, 12345, 7};
  expect("R.right_shift", "uint32", [](int64_t a, int64_t b) {
    return b >= 32 ? 0.0 : static_cast<double>(static_cast<uint32_t>(a) >> b);
  });
}

TEST(OpsTest, AstypeRoundTrips) {
  Array x = Random({6, 5}, 9, -50, 50);
  CheckOp(absl::StrCat("x: ", F32({6, 5})),
          "            i = R.astype(x, dtype=\"int32\")\n"
          "            y = R.astype(i, dtype=\"float32\")\n",
          {ToTensor(x)}, Map(x, [](double v) { return std::trunc(v); }));
}

// Reference reduction of `x` over `axes` with `init` and `f`.
Array ReduceRef(const Array& x, const std::vector<int>& axes, bool keepdims, double init,
                const std::function<double(double, double)>& f) {
  std::vector<int64_t> shape;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    bool r = std::find(axes.begin(), axes.end(), static_cast<int>(i)) != axes.end();
    if (!r) shape.push_back(x.shape[i]);
    if (r && keepdims) shape.push_back(1);
  }
  Array y = Zeros(shape);
  std::fill(y.data.begin(), y.data.end(), init);
  for (int64_t i = 0; i < x.size(); ++i) {
    std::vector<int64_t> idx = x.Unravel(i), o;
    for (size_t d = 0; d < idx.size(); ++d) {
      bool r = std::find(axes.begin(), axes.end(), static_cast<int>(d)) != axes.end();
      if (!r) o.push_back(idx[d]);
      if (r && keepdims) o.push_back(0);
    }
    y.at(o) = f(y.at(o), x.data[i]);
  }
  return y;
}

TEST(OpsTest, Reductions) {
  Array x = Random({3, 4, 19}, 10, 0.5, 1.5);
  auto sum = [](double a, double b) { return a + b; };
  CheckOp(absl::StrCat("x: ", F32({3, 4, 19})), "            y = R.sum(x, axis=[1, 2])\n",
          {ToTensor(x)}, ReduceRef(x, {1, 2}, false, 0, sum));
  CheckOp(absl::StrCat("x: ", F32({3, 4, 19})),
          "            y = R.max(x, axis=[-1], keepdims=True)\n", {ToTensor(x)},
          ReduceRef(x, {2}, true, -1e30, [](double a, double b) { return std::max(a, b); }));
  CheckOp(absl::StrCat("x: ", F32({3, 4, 19})), "            y = R.min(x, axis=0)\n", {ToTensor(x)},
          ReduceRef(x, {0}, false, 1e30, [](double a, double b) { return std::min(a, b); }));
  CheckOp(absl::StrCat("x: ", F32({3, 4, 19})), "            y = R.prod(x, axis=[1])\n",
          {ToTensor(x)}, ReduceRef(x, {1}, false, 1, [](double a, double b) { return a * b; }));
  CheckOp(absl::StrCat("x: ", F32({3, 4, 19})), "            y = R.sum(x)\n", {ToTensor(x)},
          ReduceRef(x, {0, 1, 2}, false, 0, sum));
  Array mean = ReduceRef(x, {2}, false, 0, sum);
  for (double& v : mean.data) v /= 19;
  CheckOp(absl::StrCat("x: ", F32({3, 4, 19})), "            y = R.mean(x, axis=[2])\n",
          {ToTensor(x)}, mean);
  Array var = Zeros({3, 4});
  for (int64_t i = 0; i < x.size(); ++i) {
    std::vector<int64_t> idx = x.Unravel(i);
    double d = x.data[i] - mean.at({idx[0], idx[1]});
    var.at({idx[0], idx[1]}) += d * d / 19;
  }
  CheckOp(absl::StrCat("x: ", F32({3, 4, 19})), "            y = R.variance(x, axis=[2])\n",
          {ToTensor(x)}, var);
}

TEST(OpsTest, ArgmaxArgmin) {
  Array x = Random({4, 11}, 11);
  x.data[3] = x.data[7] = 9;  // a tie in row 0: the first index wins
  Array want_max = Zeros({4}), want_min = Zeros({4});
  for (int64_t r = 0; r < 4; ++r) {
    int64_t bmax = 0, bmin = 0;
    for (int64_t c = 1; c < 11; ++c) {
      if (x.at({r, c}) > x.at({r, bmax})) bmax = c;
      if (x.at({r, c}) < x.at({r, bmin})) bmin = c;
    }
    want_max.data[r] = static_cast<double>(bmax);
    want_min.data[r] = static_cast<double>(bmin);
  }
  CheckOp(absl::StrCat("x: ", F32({4, 11})), "            y = R.argmax(x, axis=1)\n", {ToTensor(x)},
          want_max);
  CheckOp(absl::StrCat("x: ", F32({4, 11})), "            y = R.argmin(x, axis=-1)\n",
          {ToTensor(x)}, want_min);
  // Without an axis: the flat index.
  int64_t flat = std::max_element(x.data.begin(), x.data.end()) - x.data.begin();
  CheckOp(absl::StrCat("x: ", F32({4, 11})), "            y = R.argmax(x)\n", {ToTensor(x)},
          Array{{}, {static_cast<double>(flat)}});
}

TEST(OpsTest, SoftmaxAndLogSoftmax) {
  Array x = Random({3, 5, 7}, 12, -20, 20);
  for (int axis : {2, 1}) {
    Array sm = x, lsm = x;
    for (int64_t i = 0; i < x.size(); ++i) {
      std::vector<int64_t> idx = x.Unravel(i);
      double mx = -1e30, sum = 0;
      for (int64_t k = 0; k < x.shape[axis]; ++k) {
        std::vector<int64_t> j = idx;
        j[axis] = k;
        mx = std::max(mx, x.at(j));
      }
      for (int64_t k = 0; k < x.shape[axis]; ++k) {
        std::vector<int64_t> j = idx;
        j[axis] = k;
        sum += std::exp(x.at(j) - mx);
      }
      sm.data[i] = std::exp(x.data[i] - mx) / sum;
      lsm.data[i] = x.data[i] - mx - std::log(sum);
    }
    std::string axis_arg = axis == 2 ? "" : ", axis=1";
    CheckOp(absl::StrCat("x: ", F32({3, 5, 7})),
            absl::StrCat("            y = R.nn.softmax(x", axis_arg, ")\n"), {ToTensor(x)}, sm);
    CheckOp(absl::StrCat("x: ", F32({3, 5, 7})),
            absl::StrCat("            y = R.nn.log_softmax(x", axis_arg, ")\n"), {ToTensor(x)},
            lsm);
  }
}

TEST(OpsTest, LayoutOps) {
  Array x = Random({2, 3, 4}, 33);
  // permute_dims
  Array perm = Zeros({4, 2, 3});
  for (int64_t i = 0; i < x.size(); ++i) {
    std::vector<int64_t> idx = x.Unravel(i);
    perm.at({idx[2], idx[0], idx[1]}) = x.data[i];
  }
  CheckOp(absl::StrCat("x: ", F32(x.shape)), "            y = R.permute_dims(x, axes=[2, 0, 1])\n",
          {ToTensor(x)}, perm);
  // reshape, flatten, expand_dims, squeeze keep the row-major order.
  Array flat = Array{{24}, x.data};
  CheckOp(absl::StrCat("x: ", F32(x.shape)), "            y = R.reshape(x, R.shape([6, 4]))\n",
          {ToTensor(x)}, Array{{6, 4}, x.data});
  CheckOp(absl::StrCat("x: ", F32(x.shape)), "            y = R.flatten(x)\n", {ToTensor(x)}, flat);
  CheckOp(absl::StrCat("x: ", F32(x.shape)),
          "            e = R.expand_dims(x, axis=[0, 3])\n            y = R.squeeze(e)\n",
          {ToTensor(x)}, x);
  CheckOp(absl::StrCat("x: ", F32(x.shape)), "            y = R.expand_dims(x, axis=[-1])\n",
          {ToTensor(x)}, Array{{2, 3, 4, 1}, x.data});
  // concat along axis 1 and split back.
  Array z = Random({2, 5, 4}, 34);
  Array cat = Zeros({2, 8, 4});
  for (int64_t i = 0; i < cat.size(); ++i) {
    std::vector<int64_t> idx = cat.Unravel(i);
    cat.data[i] = idx[1] < 3 ? x.at(idx) : z.at({idx[0], idx[1] - 3, idx[2]});
  }
  CheckOp(absl::StrCat("x: ", F32(x.shape), ", z: ", F32(z.shape)),
          "            y = R.concat((x, z), axis=1)\n", {ToTensor(x), ToTensor(z)}, cat);
  CheckOp(absl::StrCat("x: ", F32(cat.shape)),
          "            s = R.split(x, indices_or_sections=[3], axis=1)\n            y = s[1]\n",
          {ToTensor(cat)}, z);
  CheckOp(
      absl::StrCat("x: ", F32({2, 6, 4})),
      "            s = R.split(x, indices_or_sections=2, axis=1)\n            y = s[0]\n",
      {ToTensor(Array{{2, 6, 4}, std::vector<double>(cat.data.begin(), cat.data.begin() + 48)})},
      [&] {
        Array a = Zeros({2, 3, 4});
        for (int64_t i = 0; i < a.size(); ++i) {
          std::vector<int64_t> idx = a.Unravel(i);
          a.data[i] = cat.data[(idx[0] * 6 + idx[1]) * 4 + idx[2]];
        }
        return a;
      }());
  // strided_slice with a negative stride, and broadcast_to.
  Array ss = Zeros({2, 2, 4});
  for (int64_t i = 0; i < ss.size(); ++i) {
    std::vector<int64_t> idx = ss.Unravel(i);
    ss.data[i] = x.at({idx[0], 2 - 2 * idx[1], idx[2]});
  }
  CheckOp(absl::StrCat("x: ", F32(x.shape)),
          "            y = R.strided_slice(x, axes=[1], begin=[-1], end=[-4], strides=[-2])\n",
          {ToTensor(x)}, ss);
  // TVM 0.20 prints the same call with its attributes as tuples of R.prim_value.
  CheckOp(absl::StrCat("x: ", F32(x.shape)),
          "            y = R.strided_slice(x, (R.prim_value(1),), (R.prim_value(-1),), "
          "(R.prim_value(-4),), (R.prim_value(-2),))\n",
          {ToTensor(x)}, ss);
  Array row = Random({1, 4}, 35);
  Array bc = Zeros({3, 2, 4});
  for (int64_t i = 0; i < bc.size(); ++i) bc.data[i] = row.data[i % 4];
  CheckOp(absl::StrCat("x: ", F32({1, 4})),
          "            y = R.broadcast_to(x, R.shape([3, 2, 4]))\n", {ToTensor(row)}, bc);
}

TEST(OpsTest, TakePadAndFill) {
  Array table = Random({7, 5}, 36);
  Array idx{{2, 3}, {6, 0, 3, -1, 2, 2}};
  Array want = Zeros({2, 3, 5});
  for (int64_t i = 0; i < want.size(); ++i) {
    std::vector<int64_t> o = want.Unravel(i);
    int64_t row = static_cast<int64_t>(idx.at({o[0], o[1]}));
    if (row < 0) row += 7;
    want.data[i] = table.at({row, o[2]});
  }
  CheckOp(absl::StrCat("x: ", F32({7, 5}), ", i: R.Tensor((2, 3), dtype=\"int64\")"),
          "            y = R.take(x, i, axis=0)\n", {ToTensor(table), ToTensor(idx, "int64")},
          want);

  Array x = Random({2, 3}, 37);
  Array padded = Zeros({5, 4});
  std::fill(padded.data.begin(), padded.data.end(), 1.5);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 3; ++c) padded.at({r + 1, c}) = x.at({r, c});
  CheckOp(absl::StrCat("x: ", F32({2, 3})),
          "            y = R.nn.pad(x, pad_width=[1, 2, 0, 1], pad_value=1.5)\n", {ToTensor(x)},
          padded);

  Array ones = Zeros({2, 3});
  std::fill(ones.data.begin(), ones.data.end(), 1.0);
  CheckOp(absl::StrCat("x: ", F32({2, 3})),
          "            o = R.ones(R.shape([2, 3]), dtype=\"float32\")\n"
          "            z = R.zeros(R.shape([2, 3]), dtype=\"float32\")\n"
          "            f = R.full(R.shape([2, 3]), R.const(2.5, \"float32\"))\n"
          "            a = R.add(x, o)\n            b = R.add(a, z)\n            y = R.multiply(b, "
          "f)\n",
          {ToTensor(x)}, Map(x, [](double v) { return (v + 1) * 2.5; }));
  // The same from x's shape, as TVM's zeros_like / ones_like / full_like (dtype "void": x's).
  CheckOp(absl::StrCat("x: ", F32({2, 3})),
          "            o = R.ones_like(x)\n"
          "            z = R.zeros_like(x, dtype=\"float32\")\n"
          "            f = R.full_like(x, R.const(2.5, \"float32\"), dtype=\"void\")\n"
          "            a = R.add(x, o)\n            b = R.add(a, z)\n            y = R.multiply(b, "
          "f)\n",
          {ToTensor(x)}, Map(x, [](double v) { return (v + 1) * 2.5; }));
}

TEST(OpsTest, SymbolicShapesCompileOnceRunForEverySize) {
  // A reduction over a symbolic extent stays inside the tiles that own the accumulator (a
  // reduction loop the tiling rule cannot split used to go outermost, restarting the sum at each
  // of its iterations: conv2d_transpose's first legalization, `C // groups`, hit it).
  std::string matmul = Module(
      "x: R.Tensor((4, \"k\"), dtype=\"float32\"), w: R.Tensor((\"k\", 6), dtype=\"float32\")",
      "            y = R.matmul(x, w)\n", "y");
  for (int64_t k : {1, 5, 9}) {
    SCOPED_TRACE(k);
    Array x = Random({4, k}, 50), w = Random({k, 6}, 51);
    absl::StatusOr<Value> out = CompileAndRun(matmul, {ToTensor(x), ToTensor(w)});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectClose(FromTensor(*out->as_tensor()), MatmulRef(x, w));
  }

  // One module, a symbolic batch: softmax(x @ w + b) over rows.
  std::string text = Module(
      "x: R.Tensor((\"n\", 12), dtype=\"float32\"), w: R.Tensor((12, 5), dtype=\"float32\"), "
      "b: R.Tensor((5,), dtype=\"float32\")",
      "            m = R.matmul(x, w)\n            a = R.add(m, b)\n"
      "            y = R.nn.softmax(a, axis=-1)\n",
      "y");
  Array w = Random({12, 5}, 38), b = Random({5}, 39);
  for (int64_t n : {1, 4, 7}) {
    SCOPED_TRACE(n);
    Array x = Random({n, 12}, 40 + static_cast<uint32_t>(n));
    Array logits = Broadcast(MatmulRef(x, w), b, [](double p, double q) { return p + q; });
    Array want = logits;
    for (int64_t r = 0; r < n; ++r) {
      double mx = -1e30, s = 0;
      for (int k = 0; k < 5; ++k) mx = std::max(mx, logits.data[r * 5 + k]);
      for (int k = 0; k < 5; ++k) s += std::exp(logits.data[r * 5 + k] - mx);
      for (int k = 0; k < 5; ++k) want.data[r * 5 + k] = std::exp(logits.data[r * 5 + k] - mx) / s;
    }
    absl::StatusOr<Value> out = CompileAndRun(text, {ToTensor(x), ToTensor(w), ToTensor(b)});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectClose(FromTensor(*out->as_tensor()), want);
  }
  // A wrong width names the parameter and the dimension.
  absl::StatusOr<Value> bad =
      CompileAndRun(text, {ToTensor(Random({3, 11}, 1)), ToTensor(w), ToTensor(b)});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("argument 'x' of 'main': dimension 1 is 11"));
}

TEST(OpsTest, InferenceErrorsNameTheOperator) {
  auto parse_error = [](const std::string& params, const std::string& body) {
    absl::StatusOr<ir::IRModule> mod = script::ParseScript(Module(params, body, "y"), "bad.py");
    if (mod.ok()) {
      absl::StatusOr<BuiltModule> built = Build(*mod, "llvm");
      return built.ok() ? std::string("no error") : std::string(built.status().message());
    }
    return std::string(mod.status().message());
  };
  EXPECT_THAT(parse_error(absl::StrCat("a: ", F32({2, 3}), ", b: ", F32({4, 3})),
                          "            y = R.add(a, b)\n"),
              HasSubstr("relax.add: cannot broadcast dimension 0 (2 vs 4)"));
  EXPECT_THAT(parse_error(absl::StrCat("a: ", F32({2, 3}), ", b: ", F32({4, 3})),
                          "            y = R.matmul(a, b)\n"),
              HasSubstr("relax.matmul: reduction dimensions differ (3 vs 4)"));
  EXPECT_THAT(parse_error(absl::StrCat("a: ", F32({2, 3})), "            y = R.sum(a, axis=[2])\n"),
              HasSubstr("relax.sum: axis 2 is out of range for a tensor of rank 2"));
  EXPECT_THAT(parse_error(absl::StrCat("x: ", F32({1, 3, 8, 8}), ", w: ", F32({4, 2, 3, 3})),
                          "            y = R.nn.conv2d(x, w)\n"),
              HasSubstr("relax.nn.conv2d: the weight expects 2 x 1 input channels"));
  EXPECT_THAT(parse_error(absl::StrCat("x: ", F32({1, 3, 4, 8, 8}), ", w: ", F32({4, 3, 3, 3})),
                          "            y = R.nn.conv3d(x, w)\n"),
              HasSubstr("relax.nn.conv3d: weight must have rank 5"));
  EXPECT_THAT(parse_error(absl::StrCat("x: ", F32({1, 3, 4, 8, 8}), ", w: ", F32({4, 3, 3, 3, 3})),
                          "            y = R.nn.conv3d(x, w, data_layout=\"NDHWC\")\n"),
              HasSubstr("relax.nn.conv3d: data_layout \"NDHWC\" is not supported (NCDHW)"));
  EXPECT_THAT(parse_error(absl::StrCat("x: ", F32({1, 3, 2, 8, 8}), ", w: ", F32({4, 3, 3, 3, 3})),
                          "            y = R.nn.conv3d(x, w)\n"),
              HasSubstr("relax.nn.conv3d: the kernel is larger than the padded input"));
  EXPECT_THAT(parse_error(absl::StrCat("x: ", F32({1, 3, 4, 8, 8}), ", w: ", F32({4, 3, 3, 3, 3})),
                          "            y = R.nn.conv3d(x, w, padding=[1, 1])\n"),
              HasSubstr("relax.nn.conv3d: 'padding' takes 1, 3 or 6 values"));
  EXPECT_THAT(parse_error("a: R.Tensor((2, 3), dtype=\"int32\")", "            y = R.exp(a)\n"),
              HasSubstr("relax.exp: needs a floating-point tensor, got int32"));
  EXPECT_THAT(parse_error(absl::StrCat("a: ", F32({2, 3})),
                          "            y = R.nn.layer_norm(a, a, a, axes=[1])\n"),
              HasSubstr("relax.nn.layer_norm: argument 1 must have rank 1"));
}

}  // namespace
}  // namespace kiln::backend
