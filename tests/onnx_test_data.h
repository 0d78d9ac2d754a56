// ONNX's backend test data (Debian's libonnx-testdata) for the tests that read it: a serialized
// TensorProto as a runtime tensor, and ONNX's comparison of an output with the stored one.
#ifndef KILN_TESTS_ONNX_TEST_DATA_H_
#define KILN_TESTS_ONNX_TEST_DATA_H_

#include <string>

#include "absl/status/statusor.h"
#include "runtime/tensor.h"

namespace kiln {

inline constexpr char kOnnxTestData[] = "/usr/share/libonnx-testdata/data";
inline constexpr double kRtol = 1e-3;
inline constexpr double kAtol = 1e-7;

// A TensorProto file (input_N.pb, output_N.pb) as a tensor.
absl::StatusOr<runtime::Tensor> ReadTensorFile(const std::string& path);

// Element `i` of `t` as a double (float16 widened; integers exact up to 2^53).
double Element(const runtime::Tensor& t, int64_t i);

// "" when `got` matches `want` as numpy.testing.assert_allclose(want, got, rtol, atol) would
// have it (NaN matches NaN, integers exactly); else what differs.
std::string Compare(const runtime::Tensor& got, const runtime::Tensor& want);

}  // namespace kiln

#endif  // KILN_TESTS_ONNX_TEST_DATA_H_
