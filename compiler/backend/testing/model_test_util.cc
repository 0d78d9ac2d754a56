#include "compiler/backend/testing/model_test_util.h"

#include <cmath>
#include <functional>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/backend/build.h"
#include "compiler/script/script_parser.h"
#include "gtest/gtest.h"
#include "runtime/library.h"
#include "runtime/vm/vm.h"

namespace kiln::backend::testing {

using runtime::Tensor;
using runtime::Value;

std::vector<int64_t> Array::strides() const {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

std::vector<int64_t> Array::Unravel(int64_t flat) const {
  std::vector<int64_t> idx(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    idx[i] = flat % shape[i];
    flat /= shape[i];
  }
  return idx;
}

double& Array::at(const std::vector<int64_t>& idx) {
  int64_t flat = 0;
  for (size_t i = 0; i < shape.size(); ++i) flat = flat * shape[i] + idx[i];
  return data[flat];
}

double Array::at(const std::vector<int64_t>& idx) const {
  return const_cast<Array*>(this)->at(idx);
}

Array Zeros(std::vector<int64_t> shape) {
  int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  return Array{std::move(shape), std::vector<double>(n, 0.0)};
}

Array Random(std::vector<int64_t> shape, uint32_t seed, double lo, double hi) {
  Array a = Zeros(std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(static_cast<float>(lo), static_cast<float>(hi));
  for (double& v : a.data) v = dist(rng);
  return a;
}

Tensor ToTensor(const Array& a, const char* dtype) {
  DLDataType t = *runtime::ParseDataType(dtype);
  Tensor out = *Tensor::Empty(a.shape, t);
  for (int64_t i = 0; i < a.size(); ++i) {
    if (t.code == kDLFloat) {
      static_cast<float*>(out.data())[i] = static_cast<float>(a.data[i]);
    } else if (t.bits == 64) {
      static_cast<int64_t*>(out.data())[i] = static_cast<int64_t>(a.data[i]);
    } else if (t.bits == 32) {
      static_cast<int32_t*>(out.data())[i] = static_cast<int32_t>(a.data[i]);
    } else {
      static_cast<uint8_t*>(out.data())[i] = static_cast<uint8_t>(a.data[i]);
    }
  }
  return out;
}

Array FromTensor(const Tensor& t) {
  Array a = Zeros(std::vector<int64_t>(t.shape().begin(), t.shape().end()));
  DLDataType d = t.dtype();
  for (int64_t i = 0; i < a.size(); ++i) {
    if (d.code == kDLFloat) {
      a.data[i] = static_cast<const float*>(t.data())[i];
    } else if (d.bits == 64) {
      a.data[i] = static_cast<double>(static_cast<const int64_t*>(t.data())[i]);
    } else if (d.bits == 32) {
      a.data[i] = static_cast<const int32_t*>(t.data())[i];
    } else {
      a.data[i] = static_cast<const uint8_t*>(t.data())[i];
    }
  }
  return a;
}

// Compiles `text` and runs main on `inputs`.
absl::StatusOr<Value> CompileAndRun(const std::string& text, const std::vector<Value>& inputs,
                                    const BuildOptions& options) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text, "op.py");
  if (!mod.ok()) return mod.status();
  return CompileModuleAndRun(*mod, inputs, options);
}

absl::StatusOr<Value> CompileModuleAndRun(const ir::IRModule& mod, const std::vector<Value>& inputs,
                                          const BuildOptions& options, const std::string& target) {
  absl::StatusOr<BuiltModule> built = Build(mod, target, options);
  if (!built.ok()) return built.status();
  auto lib = runtime::KernelLibrary::LoadFromMemory(built->kernels, "op");
  if (!lib.ok()) return lib.status();
  absl::StatusOr<runtime::vm::Executable> exec =
      runtime::vm::Executable::Deserialize(built->executable);
  if (!exec.ok()) return exec.status();
  absl::StatusOr<std::unique_ptr<runtime::vm::VirtualMachine>> vm =
      runtime::vm::VirtualMachine::Create(
          std::make_shared<const runtime::vm::Executable>(std::move(*exec)), *lib,
          std::make_shared<runtime::ThreadPool>(2), nullptr);
  if (!vm.ok()) return vm.status();
  return (*vm)->Invoke("main", inputs);
}

namespace {

std::string LiteralFrom(const Array& a, size_t dim, int64_t offset) {
  if (dim == a.shape.size()) return absl::StrCat(a.data[offset]);
  int64_t stride = 1;
  for (size_t d = dim + 1; d < a.shape.size(); ++d) stride *= a.shape[d];
  std::vector<std::string> items;
  for (int64_t i = 0; i < a.shape[dim]; ++i)
    items.push_back(LiteralFrom(a, dim + 1, offset + i * stride));
  return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
}

}  // namespace

std::string Literal(const Array& a) { return LiteralFrom(a, 0, 0); }

absl::Status SameResultsAs(const std::string& text, const std::vector<runtime::Value>& inputs,
                           const BuildOptions& reference, double tolerance) {
  absl::StatusOr<runtime::Value> want = CompileAndRun(text, inputs, reference);
  if (!want.ok()) return want.status();
  absl::StatusOr<runtime::Value> got = CompileAndRun(text, inputs);
  if (!got.ok()) return got.status();
  if (!want->as_tensor() || !got->as_tensor())
    return absl::InvalidArgumentError("main does not return a tensor");
  Array a = FromTensor(*want->as_tensor()), b = FromTensor(*got->as_tensor());
  if (a.shape != b.shape) {
    return absl::InternalError(absl::StrCat("shapes differ: [", absl::StrJoin(a.shape, ", "),
                                            "] and [", absl::StrJoin(b.shape, ", "), "]"));
  }
  for (int64_t i = 0; i < a.size(); ++i) {
    if (!(std::abs(a.data[i] - b.data[i]) <= tolerance)) {
      return absl::InternalError(
          absl::StrCat("element ", i, ": ", b.data[i], " against ", a.data[i], " in reference"));
    }
  }
  return absl::OkStatus();
}

// A module whose `main` takes `params` (TVMScript annotations) and returns `body`'s last var.
std::string Module(const std::string& params, const std::string& body, const std::string& ret) {
  return absl::StrCat("@I.ir_module\nclass Module:\n    @R.function\n    def main(", params,
                      "):\n        with R.dataflow():\n", body, "            R.output(", ret,
                      ")\n        return ", ret, "\n");
}

void ExpectClose(const Array& got, const Array& want, double tol) {
  ASSERT_EQ(got.shape, want.shape);
  for (int64_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got.data[i], want.data[i], tol * (1 + std::abs(want.data[i])))
        << "element " << i << " (index " << absl::StrJoin(want.Unravel(i), ",") << ")";
  }
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

// Runs a one-output op test: `body` computes `y`.
void CheckOp(const std::string& params, const std::string& body, const std::vector<Value>& inputs,
             const Array& want, double tol) {
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

}  // namespace kiln::backend::testing
