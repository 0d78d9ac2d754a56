// Every legalized operator, compiled and run through the VM, against a plain C++ reference
// written independently of the kernels (NumPy semantics): broadcasting, reductions, nn layers,
// layout ops, symbolic shapes.
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
using testing::CompileAndRun;
using testing::FromTensor;
using testing::Random;
using testing::ToTensor;
using testing::Zeros;

using runtime::Tensor;
using runtime::Value;
using ::testing::HasSubstr;

// A module whose `main` takes `params` (TVMScript annotations) and returns `body`'s last var.
std::string Module(const std::string& params, const std::string& body, const std::string& ret) {
  return absl::StrCat("@I.ir_module\nclass Module:\n    @R.function\n    def main(", params,
                      "):\n        with R.dataflow():\n", body, "            R.output(", ret,
                      ")\n        return ", ret, "\n");
}

void ExpectClose(const Array& got, const Array& want, double tol = 1e-4) {
  ASSERT_EQ(got.shape, want.shape);
  for (int64_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got.data[i], want.data[i], tol * (1 + std::abs(want.data[i])))
        << "element " << i << " (index " << absl::StrJoin(want.Unravel(i), ",") << ")";
  }
}

// Runs a one-output op test: `body` computes `y`.
void CheckOp(const std::string& params, const std::string& body, const std::vector<Value>& inputs,
             const Array& want, double tol = 1e-4) {
  std::string text = Module(params, body, "y");
  absl::StatusOr<Value> out = CompileAndRun(text, inputs);
  ASSERT_TRUE(out.ok()) << out.status() << "\n" << text;
  ASSERT_NE(out->as_tensor(), nullptr);
  ExpectClose(FromTensor(*out->as_tensor()), want, tol);
}

std::string Shape(const std::vector<int64_t>& s) {
  return s.size() == 1 ? absl::StrCat("(", s[0], ",)")
                       : absl::StrCat("(", absl::StrJoin(s, ", "), ")");
}
std::string F32(const std::vector<int64_t>& s) {
  return absl::StrCat("R.Tensor(", Shape(s), ", dtype=\"float32\")");
}

Array Map(const Array& x, const std::function<double(double)>& f) {
  Array y = x;
  for (double& v : y.data) v = f(v);
  return y;
}

// NumPy broadcasting of two arrays through `f`.
Array Broadcast(const Array& a, const Array& b, const std::function<double(double, double)>& f) {
  size_t nd = std::max(a.shape.size(), b.shape.size());
  std::vector<int64_t> shape(nd);
  for (size_t i = 0; i < nd; ++i) {
    int64_t da = i + a.shape.size() >= nd ? a.shape[i + a.shape.size() - nd] : 1;
    int64_t db = i + b.shape.size() >= nd ? b.shape[i + b.shape.size() - nd] : 1;
    shape[i] = std::max(da, db);
  }
  Array y = Zeros(shape);
  auto pick = [&](const Array& x, const std::vector<int64_t>& idx) {
    std::vector<int64_t> j;
    for (size_t i = 0; i < x.shape.size(); ++i) {
      int64_t o = idx[nd - x.shape.size() + i];
      j.push_back(x.shape[i] == 1 ? 0 : o);
    }
    return x.at(j);
  };
  for (int64_t i = 0; i < y.size(); ++i) {
    std::vector<int64_t> idx = y.Unravel(i);
    y.data[i] = f(pick(a, idx), pick(b, idx));
  }
  return y;
}

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

Array MatmulRef(const Array& a, const Array& b) {
  // Batched (2-D or 3-D with broadcast batch of 1) reference.
  int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
  int64_t ba = a.shape.size() == 3 ? a.shape[0] : 1, bb = b.shape.size() == 3 ? b.shape[0] : 1;
  int64_t B = std::max(ba, bb);
  Array y = Zeros(a.shape.size() == 3 || b.shape.size() == 3 ? std::vector<int64_t>{B, M, N}
                                                             : std::vector<int64_t>{M, N});
  for (int64_t p = 0; p < B; ++p)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += a.data[((ba == 1 ? 0 : p) * M + i) * K + k] *
               b.data[((bb == 1 ? 0 : p) * K + k) * N + j];
        y.data[(p * M + i) * N + j] = s;
      }
  return y;
}

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

// NCHW / OIHW reference convolution.
Array Conv2dRef(const Array& x, const Array& w, int stride, int pad, int dil, int groups) {
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  int64_t O = w.shape[0], Cg = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  int64_t OH = (H + 2 * pad - dil * (KH - 1) - 1) / stride + 1;
  int64_t OW = (W + 2 * pad - dil * (KW - 1) - 1) / stride + 1;
  (void)C;
  Array y = Zeros({N, O, OH, OW});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double s = 0;
          int64_t g = o / (O / groups);
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t p = 0; p < KH; ++p)
              for (int64_t q = 0; q < KW; ++q) {
                int64_t h = i * stride + p * dil - pad, ww = j * stride + q * dil - pad;
                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                s += x.at({n, g * Cg + c, h, ww}) * w.at({o, c, p, q});
              }
          y.at({n, o, i, j}) = s;
        }
  return y;
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
                                         {4, 8, 1, 1, 0, 1, 2}}) {
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
  EXPECT_THAT(parse_error("a: R.Tensor((2, 3), dtype=\"int32\")", "            y = R.exp(a)\n"),
              HasSubstr("relax.exp: needs a floating-point tensor, got int32"));
  EXPECT_THAT(parse_error(absl::StrCat("a: ", F32({2, 3})),
                          "            y = R.nn.layer_norm(a, a, a, axes=[1])\n"),
              HasSubstr("relax.nn.layer_norm: argument 1 must have rank 1"));
}

// ---- Whole models in TVMScript, weights as parameters, against composed references ----

// y[r, o] = sum_k x[r, k] * w[k, o] + b[o] over the rows of x (any leading shape).
Array DenseRef(const Array& x, const Array& w, const Array& b) {
  int64_t K = w.shape[0], O = w.shape[1], rows = x.size() / K;
  std::vector<int64_t> shape = x.shape;
  shape.back() = O;
  Array y = Zeros(shape);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < O; ++o) {
      double s = b.data[o];
      for (int64_t k = 0; k < K; ++k) s += x.data[r * K + k] * w.data[k * O + o];
      y.data[r * O + o] = s;
    }
  return y;
}

Array LayerNormRef(const Array& x, const Array& g, const Array& b) {
  int64_t D = x.shape.back();
  Array y = x;
  for (int64_t r = 0; r < x.size() / D; ++r) {
    double m = 0, v = 0;
    for (int64_t k = 0; k < D; ++k) m += x.data[r * D + k] / D;
    for (int64_t k = 0; k < D; ++k) v += (x.data[r * D + k] - m) * (x.data[r * D + k] - m) / D;
    for (int64_t k = 0; k < D; ++k)
      y.data[r * D + k] = (x.data[r * D + k] - m) / std::sqrt(v + 1e-5) * g.data[k] + b.data[k];
  }
  return y;
}

Array Add(const Array& a, const Array& b) {
  return Broadcast(a, b, [](double p, double q) { return p + q; });
}

TEST(ModelsTest, TwoLayerMlpWithSymbolicBatch) {
  std::string text = Module(
      "x: R.Tensor((\"n\", 32), dtype=\"float32\"), w1: R.Tensor((32, 64), dtype=\"float32\"), "
      "b1: R.Tensor((64,), dtype=\"float32\"), w2: R.Tensor((64, 10), dtype=\"float32\"), "
      "b2: R.Tensor((10,), dtype=\"float32\")",
      "            h = R.matmul(x, w1)\n            h1 = R.add(h, b1)\n"
      "            a = R.nn.relu(h1)\n            o = R.matmul(a, w2)\n"
      "            y = R.add(o, b2)\n",
      "y");
  Array w1 = Random({32, 64}, 50, -0.3, 0.3), b1 = Random({64}, 51);
  Array w2 = Random({64, 10}, 52, -0.3, 0.3), b2 = Random({10}, 53);
  for (int64_t n : {1, 4, 7}) {
    SCOPED_TRACE(n);
    Array x = Random({n, 32}, 54);
    Array want =
        DenseRef(Map(DenseRef(x, w1, b1), [](double v) { return std::max(v, 0.0); }), w2, b2);
    absl::StatusOr<Value> out =
        CompileAndRun(text, {ToTensor(x), ToTensor(w1), ToTensor(b1), ToTensor(w2), ToTensor(b2)});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectClose(FromTensor(*out->as_tensor()), want);
  }
}

// conv -> bn -> relu -> max_pool -> residual block (conv -> bn -> relu, + skip) -> global
// average pool -> flatten -> linear.
TEST(ModelsTest, SmallCnnWithResidual) {
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, 16, 16), dtype="float32"),
             w1: R.Tensor((8, 3, 3, 3), dtype="float32"), g1: R.Tensor((8,), dtype="float32"),
             be1: R.Tensor((8,), dtype="float32"), m1: R.Tensor((8,), dtype="float32"),
             v1: R.Tensor((8,), dtype="float32"),
             w2: R.Tensor((8, 8, 3, 3), dtype="float32"), g2: R.Tensor((8,), dtype="float32"),
             be2: R.Tensor((8,), dtype="float32"), m2: R.Tensor((8,), dtype="float32"),
             v2: R.Tensor((8,), dtype="float32"),
             fw: R.Tensor((10, 8), dtype="float32"), fb: R.Tensor((10,), dtype="float32")):
        with R.dataflow():
            c1 = R.nn.conv2d(x, w1, padding=[1, 1])
            t1 = R.nn.batch_norm(c1, g1, be1, m1, v1, axis=1, epsilon=1e-5)
            n1 = t1[0]
            r1 = R.nn.relu(n1)
            p1 = R.nn.max_pool2d(r1, pool_size=[2, 2], strides=[2, 2])
            c2 = R.nn.conv2d(p1, w2, padding=[1, 1])
            t2 = R.nn.batch_norm(c2, g2, be2, m2, v2, axis=1, epsilon=1e-5)
            n2 = t2[0]
            r2 = R.nn.relu(n2)
            s = R.add(r2, p1)
            gp = R.nn.adaptive_avg_pool2d(s, output_size=[1, 1])
            f = R.flatten(gp)
            e = R.expand_dims(f, axis=[0])
            y = R.nn.linear(e, fw, fb)
            R.output(y)
        return y
)";
  Array x = Random({1, 3, 16, 16}, 60);
  Array w1 = Random({8, 3, 3, 3}, 61, -0.5, 0.5), w2 = Random({8, 8, 3, 3}, 62, -0.3, 0.3);
  Array g1 = Random({8}, 63, 0.5, 1.5), be1 = Random({8}, 64), m1 = Random({8}, 65);
  Array v1 = Random({8}, 66, 0.5, 2), g2 = Random({8}, 67, 0.5, 1.5), be2 = Random({8}, 68);
  Array m2 = Random({8}, 69), v2 = Random({8}, 70, 0.5, 2);
  Array fw = Random({10, 8}, 71), fb = Random({10}, 72);
  auto bn_relu = [](Array a, const Array& g, const Array& b, const Array& m, const Array& v) {
    for (int64_t i = 0; i < a.size(); ++i) {
      int64_t c = a.Unravel(i)[1];
      double y = (a.data[i] - m.data[c]) / std::sqrt(v.data[c] + 1e-5) * g.data[c] + b.data[c];
      a.data[i] = std::max(y, 0.0);
    }
    return a;
  };
  Array r1 = bn_relu(Conv2dRef(x, w1, 1, 1, 1, 1), g1, be1, m1, v1);
  Array p1 = Zeros({1, 8, 8, 8});
  for (int64_t i = 0; i < p1.size(); ++i) {
    std::vector<int64_t> o = p1.Unravel(i);
    double mx = -1e30;
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b) mx = std::max(mx, r1.at({0, o[1], 2 * o[2] + a, 2 * o[3] + b}));
    p1.data[i] = mx;
  }
  Array s = Add(bn_relu(Conv2dRef(p1, w2, 1, 1, 1, 1), g2, be2, m2, v2), p1);
  Array gp = Zeros({1, 8});
  for (int64_t i = 0; i < s.size(); ++i) gp.data[s.Unravel(i)[1]] += s.data[i] / 64;
  Array fwt = Zeros({8, 10});
  for (int64_t o = 0; o < 10; ++o)
    for (int64_t k = 0; k < 8; ++k) fwt.at({k, o}) = fw.at({o, k});
  Array want = DenseRef(gp, fwt, fb);
  // Static memory planning reuses storage across the intermediates: the planned peak is below
  // their sum (the largest are the 8 x 16 x 16 activations, 8 KB each).
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text, "cnn.py");
  ASSERT_TRUE(mod.ok()) << mod.status();
  // Without fusion every operator's result is a tensor to plan; fusion leaves fewer (see below).
  BuildOptions unfused;
  unfused.fuse = false;
  absl::StatusOr<BuiltModule> built = Build(*mod, "llvm", unfused);
  ASSERT_TRUE(built.ok()) << built.status();
  const ir::relax::PlannedMemory& planned = built->memory.at("main");
  EXPECT_GE(planned.tensors, 8);
  EXPECT_GE(planned.storage_bytes, 8 * 16 * 16 * 4);  // at least the largest one
  EXPECT_LT(planned.storage_bytes, planned.tensor_bytes);
  RecordProperty("planned_storage_bytes", std::to_string(planned.storage_bytes));
  RecordProperty("planned_tensor_bytes", std::to_string(planned.tensor_bytes));
  std::printf("CNN memory plan: %lld tensors, %lld bytes planned, %lld bytes without reuse\n",
              static_cast<long long>(planned.tensors),
              static_cast<long long>(planned.storage_bytes),
              static_cast<long long>(planned.tensor_bytes));
  absl::StatusOr<Value> out =
      CompileAndRun(text, {ToTensor(x), ToTensor(w1), ToTensor(g1), ToTensor(be1), ToTensor(m1),
                           ToTensor(v1), ToTensor(w2), ToTensor(g2), ToTensor(be2), ToTensor(m2),
                           ToTensor(v2), ToTensor(fw), ToTensor(fb)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectClose(FromTensor(*out->as_tensor()), want);
}

// A post-norm transformer encoder block: 2-head self-attention with softmax, residual,
// layer_norm, a GELU feed-forward, residual, layer_norm.
TEST(ModelsTest, TransformerEncoderBlock) {
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8, 16), dtype="float32"),
             wq: R.Tensor((16, 16), dtype="float32"), wk: R.Tensor((16, 16), dtype="float32"),
             wv: R.Tensor((16, 16), dtype="float32"), wo: R.Tensor((16, 16), dtype="float32"),
             g1: R.Tensor((16,), dtype="float32"), b1: R.Tensor((16,), dtype="float32"),
             w1: R.Tensor((16, 32), dtype="float32"), c1: R.Tensor((32,), dtype="float32"),
             w2: R.Tensor((32, 16), dtype="float32"), c2: R.Tensor((16,), dtype="float32"),
             g2: R.Tensor((16,), dtype="float32"), b2: R.Tensor((16,), dtype="float32")):
        with R.dataflow():
            q = R.matmul(x, wq)
            k = R.matmul(x, wk)
            v = R.matmul(x, wv)
            qh = R.permute_dims(R.reshape(q, R.shape([8, 2, 8])), axes=[1, 0, 2])
            kh = R.permute_dims(R.reshape(k, R.shape([8, 2, 8])), axes=[1, 2, 0])
            vh = R.permute_dims(R.reshape(v, R.shape([8, 2, 8])), axes=[1, 0, 2])
            s = R.matmul(qh, kh)
            scaled = R.multiply(s, R.const(0.35355339059327373, "float32"))
            p = R.nn.softmax(scaled, axis=-1)
            ctx = R.matmul(p, vh)
            merged = R.reshape(R.permute_dims(ctx, axes=[1, 0, 2]), R.shape([8, 16]))
            attn = R.matmul(merged, wo)
            r1 = R.add(x, attn)
            n1 = R.nn.layer_norm(r1, g1, b1, axes=[-1], epsilon=1e-5)
            f1 = R.add(R.matmul(n1, w1), c1)
            a1 = R.nn.gelu(f1)
            f2 = R.add(R.matmul(a1, w2), c2)
            r2 = R.add(n1, f2)
            y = R.nn.layer_norm(r2, g2, b2, axes=[-1], epsilon=1e-5)
            R.output(y)
        return y
)";
  Array x = Random({8, 16}, 80);
  Array wq = Random({16, 16}, 81, -0.5, 0.5), wk = Random({16, 16}, 82, -0.5, 0.5);
  Array wv = Random({16, 16}, 83, -0.5, 0.5), wo = Random({16, 16}, 84, -0.5, 0.5);
  Array g1 = Random({16}, 85, 0.5, 1.5), b1 = Random({16}, 86), g2 = Random({16}, 87, 0.5, 1.5);
  Array b2 = Random({16}, 88), w1 = Random({16, 32}, 89, -0.5, 0.5), c1 = Random({32}, 90);
  Array w2 = Random({32, 16}, 91, -0.5, 0.5), c2 = Random({16}, 92);
  Array zero16 = Zeros({16});
  Array q = DenseRef(x, wq, zero16), k = DenseRef(x, wk, zero16), v = DenseRef(x, wv, zero16);
  Array merged = Zeros({8, 16});
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 8; ++i) {
      std::vector<double> score(8);
      double mx = -1e30, sum = 0;
      for (int j = 0; j < 8; ++j) {
        double d = 0;
        for (int e = 0; e < 8; ++e) d += q.at({i, h * 8 + e}) * k.at({j, h * 8 + e});
        score[j] = d / std::sqrt(8.0);
        mx = std::max(mx, score[j]);
      }
      for (double& sc : score) sum += (sc = std::exp(sc - mx));
      for (int e = 0; e < 8; ++e) {
        double acc = 0;
        for (int j = 0; j < 8; ++j) acc += score[j] / sum * v.at({j, h * 8 + e});
        merged.at({i, h * 8 + e}) = acc;
      }
    }
  Array n1 = LayerNormRef(Add(x, DenseRef(merged, wo, zero16)), g1, b1);
  Array a1 = Map(DenseRef(n1, w1, c1),
                 [](double t) { return 0.5 * t * (1 + std::erf(t / std::sqrt(2.0))); });
  Array want = LayerNormRef(Add(n1, DenseRef(a1, w2, c2)), g2, b2);
  absl::StatusOr<Value> out =
      CompileAndRun(text, {ToTensor(x), ToTensor(wq), ToTensor(wk), ToTensor(wv), ToTensor(wo),
                           ToTensor(g1), ToTensor(b1), ToTensor(w1), ToTensor(c1), ToTensor(w2),
                           ToTensor(c2), ToTensor(g2), ToTensor(b2)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectClose(FromTensor(*out->as_tensor()), want);
}

}  // namespace
}  // namespace kiln::backend
