#include "client/output_check.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/npy.h"

namespace kiln::client {
namespace {

// Element i of `t` as a double; nullopt-like false for dtypes a reference comparison does not
// cover.
bool Element(const runtime::Tensor& t, int64_t i, double* out) {
  const DLDataType d = t.dtype();
  const char* base = static_cast<const char*>(t.data());
  if (d.lanes != 1) return false;
  if (d.code == kDLFloat && d.bits == 32) {
    *out = reinterpret_cast<const float*>(base)[i];
  } else if (d.code == kDLFloat && d.bits == 64) {
    *out = reinterpret_cast<const double*>(base)[i];
  } else if (d.code == kDLInt && d.bits == 32) {
    *out = reinterpret_cast<const int32_t*>(base)[i];
  } else if (d.code == kDLInt && d.bits == 64) {
    *out = static_cast<double>(reinterpret_cast<const int64_t*>(base)[i]);
  } else if (d.code == kDLUInt && d.bits == 8) {
    *out = reinterpret_cast<const uint8_t*>(base)[i];
  } else {
    return false;
  }
  return true;
}

absl::StatusOr<runtime::Tensor> ReadTensor(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return absl::NotFoundError(absl::StrCat(path, ": cannot open the file"));
  std::string bytes;
  char buffer[65536];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0) bytes.append(buffer, n);
  std::fclose(f);
  return runtime::ReadNpy(bytes, path);
}

// The largest error of `got` against `want`, or an error when they cannot be compared.
absl::StatusOr<double> WorstError(const runtime::Tensor& got, const runtime::Tensor& want,
                                  double tolerance, bool* within) {
  if (runtime::DataTypeToString(got.dtype()) != runtime::DataTypeToString(want.dtype())) {
    return absl::InvalidArgumentError(absl::StrCat("dtype ", runtime::DataTypeToString(got.dtype()),
                                                   ", the reference's is ",
                                                   runtime::DataTypeToString(want.dtype())));
  }
  if (!std::equal(got.shape().begin(), got.shape().end(), want.shape().begin(),
                  want.shape().end())) {
    return absl::InvalidArgumentError(absl::StrCat("shape [", absl::StrJoin(got.shape(), ", "),
                                                   "], the reference's is [",
                                                   absl::StrJoin(want.shape(), ", "), "]"));
  }
  double worst = 0;
  *within = true;
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    double a = 0, b = 0;
    if (!Element(got, i, &a) || !Element(want, i, &b)) {
      return absl::UnimplementedError(
          absl::StrCat("cannot compare dtype ", runtime::DataTypeToString(want.dtype())));
    }
    double error = std::isnan(a) != std::isnan(b) ? INFINITY : std::isnan(a) ? 0 : std::abs(a - b);
    worst = std::max(worst, error);
    if (error > tolerance * (1 + std::abs(b))) *within = false;
  }
  return worst;
}

}  // namespace

int CheckOutputs(const std::string& output_dir, const std::vector<std::string>& expects,
                 double tolerance) {
  int failures = 0;
  for (const std::string& spec : expects) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::fprintf(stderr, "kiln: --expect %s: expected NAME=REFERENCE.npy\n", spec.c_str());
      return 1;
    }
    std::string name = spec.substr(0, eq), reference = spec.substr(eq + 1);
    std::string output = absl::StrCat(output_dir, "/", name, ".npy");
    absl::StatusOr<runtime::Tensor> got = ReadTensor(output);
    absl::StatusOr<runtime::Tensor> want = ReadTensor(reference);
    bool within = false;
    absl::StatusOr<double> worst = !got.ok()    ? got.status()
                                   : !want.ok() ? want.status()
                                                : WorstError(*got, *want, tolerance, &within);
    if (!worst.ok()) {
      std::fprintf(stderr, "kiln: %s against %s: %s\n", output.c_str(), reference.c_str(),
                   std::string(worst.status().message()).c_str());
      ++failures;
      continue;
    }
    std::printf("%s: max abs error %.3g against %s (tolerance %.3g x (1 + |reference|)): %s\n",
                output.c_str(), *worst, reference.c_str(), tolerance,
                within ? "matches" : "DIFFERS");
    if (!within) ++failures;
  }
  if (failures > 0) {
    std::fprintf(stderr, "kiln: %d output%s from the reference\n", failures,
                 failures == 1 ? " differs" : "s differ");
    return 1;
  }
  return 0;
}

}  // namespace kiln::client
