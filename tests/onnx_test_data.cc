#include "tests/onnx_test_data.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/ir/relax_expr.h"

namespace kiln {

absl::StatusOr<runtime::Tensor> ReadTensorFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  absl::StatusOr<ir::relax::Expr> e = frontend::ReadOnnxTensor(bytes.str(), path);
  if (!e.ok()) return e.status();
  const auto* c = e->as<ir::relax::ConstantNode>();
  if (c == nullptr) return absl::InternalError(path + " is not a constant");
  absl::StatusOr<DLDataType> dtype = runtime::ParseDataType(c->dtype.ToString());
  if (!dtype.ok()) return dtype.status();
  absl::StatusOr<runtime::Tensor> t = runtime::Tensor::Empty(c->shape, *dtype);
  if (!t.ok()) return t.status();
  if (c->bytes->size() != t->NumBytes()) {
    return absl::InternalError(
        absl::StrCat(path, " holds ", c->bytes->size(), " bytes for ", t->NumBytes()));
  }
  if (!c->bytes->empty()) std::memcpy(t->data(), c->bytes->data(), c->bytes->size());
  return t;
}

double Element(const runtime::Tensor& t, int64_t i) {
  const DLDataType d = t.dtype();
  const char* p = static_cast<const char*>(t.data());
  switch (d.code) {
    case kDLFloat:
      if (d.bits == 32) return reinterpret_cast<const float*>(p)[i];
      if (d.bits == 64) return reinterpret_cast<const double*>(p)[i];
      if (d.bits == 16) {
        uint16_t h = reinterpret_cast<const uint16_t*>(p)[i];
        int sign = h >> 15, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
        double v = exp == 0    ? std::ldexp(frac, -24)
                   : exp == 31 ? (frac ? NAN : INFINITY)
                               : std::ldexp(frac + 1024, exp - 25);
        return sign ? -v : v;
      }
      break;
    case kDLInt:
      if (d.bits == 8) return reinterpret_cast<const int8_t*>(p)[i];
      if (d.bits == 16) return reinterpret_cast<const int16_t*>(p)[i];
      if (d.bits == 32) return reinterpret_cast<const int32_t*>(p)[i];
      if (d.bits == 64) return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
      break;
    case kDLUInt:  // bool too (uint1, a byte each)
      if (d.bits == 1 || d.bits == 8) return reinterpret_cast<const uint8_t*>(p)[i];
      if (d.bits == 16) return reinterpret_cast<const uint16_t*>(p)[i];
      if (d.bits == 32) return reinterpret_cast<const uint32_t*>(p)[i];
      if (d.bits == 64) return static_cast<double>(reinterpret_cast<const uint64_t*>(p)[i]);
      break;
  }
  return NAN;
}

std::string Compare(const runtime::Tensor& got, const runtime::Tensor& want) {
  std::vector<int64_t> gs(got.shape().begin(), got.shape().end());
  std::vector<int64_t> ws(want.shape().begin(), want.shape().end());
  if (gs != ws) {
    return absl::StrCat("shape (", absl::StrJoin(gs, ", "), ") where ONNX gives (",
                        absl::StrJoin(ws, ", "), ")");
  }
  bool exact = want.dtype().code != kDLFloat;
  if (got.dtype().code != want.dtype().code || got.dtype().bits != want.dtype().bits) {
    return absl::StrCat("dtype ", runtime::DataTypeToString(got.dtype()), " where ONNX gives ",
                        runtime::DataTypeToString(want.dtype()));
  }
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    double g = Element(got, i), w = Element(want, i);
    if (std::isnan(w) && std::isnan(g)) continue;
    bool ok =
        exact ? g == w : (std::isinf(w) ? g == w : std::abs(g - w) <= kAtol + kRtol * std::abs(w));
    if (!ok) return absl::StrCat("element ", i, ": ", g, " where ONNX gives ", w);
  }
  return "";
}

}  // namespace kiln
