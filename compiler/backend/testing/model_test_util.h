// Shared by the model and pipeline tests: float64 reference arrays, conversion to and from
// runtime tensors, and compiling a TVMScript module and running its `main` through the VM.
#ifndef KILN_COMPILER_BACKEND_TESTING_MODEL_TEST_UTIL_H_
#define KILN_COMPILER_BACKEND_TESTING_MODEL_TEST_UTIL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/backend/pipeline.h"
#include "compiler/ir/module.h"
#include "runtime/tensor.h"
#include "runtime/value.h"

namespace kiln::backend::testing {

// A dense float64 array for references; converted to and from runtime tensors.
struct Array {
  std::vector<int64_t> shape;
  std::vector<double> data;
  int64_t size() const { return static_cast<int64_t>(data.size()); }
  std::vector<int64_t> strides() const;  // row-major
  std::vector<int64_t> Unravel(int64_t flat) const;
  double& at(const std::vector<int64_t>& idx);
  double at(const std::vector<int64_t>& idx) const;
};

Array Zeros(std::vector<int64_t> shape);
// Uniform in [lo, hi), rounded to float32, reproducible from `seed`.
Array Random(std::vector<int64_t> shape, uint32_t seed, double lo = -2, double hi = 2);
runtime::Tensor ToTensor(const Array& a, const char* dtype = "float32");
Array FromTensor(const runtime::Tensor& t);

// `a` as the nested lists of an R.const literal.
std::string Literal(const Array& a);

// Parses `text`, builds it for the host with `options` and runs main on `inputs` (2 threads).
absl::StatusOr<runtime::Value> CompileAndRun(const std::string& text,
                                             const std::vector<runtime::Value>& inputs,
                                             const BuildOptions& options = {});
// The same for a module already built in memory.
absl::StatusOr<runtime::Value> CompileModuleAndRun(const ir::IRModule& mod,
                                                   const std::vector<runtime::Value>& inputs,
                                                   const BuildOptions& options = {},
                                                   const std::string& target = "llvm");

// Builds `text` with `reference` options and with the defaults, runs main on `inputs` and
// compares the two tensor results element by element within `tolerance`: OK, or an error
// naming the first element that differs (a pass's test: the same numbers with and without it).
absl::Status SameResultsAs(const std::string& text, const std::vector<runtime::Value>& inputs,
                           const BuildOptions& reference, double tolerance = 1e-4);

// A module whose `main` takes `params` (TVMScript annotations) and returns `body`'s `ret`.
std::string Module(const std::string& params, const std::string& body, const std::string& ret);
// Expects `got` equal to `want` within `tol` relative, naming the first element that is not.
void ExpectClose(const Array& got, const Array& want, double tol = 1e-4);
// `f` of every element.
Array Map(const Array& x, const std::function<double(double)>& f);
// NumPy broadcasting of two arrays through `f`.
Array Broadcast(const Array& a, const Array& b, const std::function<double(double, double)>& f);
// Runs a one-output op test: `body` computes `y` from `params`; expects `want`.
void CheckOp(const std::string& params, const std::string& body,
             const std::vector<runtime::Value>& inputs, const Array& want, double tol = 1e-4);
// A TVMScript shape "(2, 3)" and a float32 tensor annotation of it.
std::string Shape(const std::vector<int64_t>& s);
std::string F32(const std::vector<int64_t>& s);
// Matmul of 2-D or 3-D arrays (a batch of 1 broadcast).
Array MatmulRef(const Array& a, const Array& b);
// NCHW / OIHW reference convolution.
Array Conv2dRef(const Array& x, const Array& w, int stride, int pad, int dil, int groups);

}  // namespace kiln::backend::testing

#endif  // KILN_COMPILER_BACKEND_TESTING_MODEL_TEST_UTIL_H_
