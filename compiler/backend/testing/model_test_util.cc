#include "compiler/backend/testing/model_test_util.h"

#include <cmath>
#include <functional>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/backend/build.h"
#include "compiler/script/script_parser.h"
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
                                          const BuildOptions& options) {
  absl::StatusOr<BuiltModule> built = Build(mod, "llvm", options);
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

}  // namespace kiln::backend::testing
