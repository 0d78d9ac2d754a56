// NumPy .npy files (format versions 1.0-3.0) to and from runtime tensors: what `kiln run` reads
// inputs from and writes outputs to. C-order, little-endian, numeric dtypes and bool.
#ifndef KILN_RUNTIME_NPY_H_
#define KILN_RUNTIME_NPY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/tensor.h"

namespace kiln::runtime {

// Parses the bytes of a .npy file; errors name `what` (usually the file name).
absl::StatusOr<Tensor> ReadNpy(absl::string_view bytes, absl::string_view what);

// The bytes of a version 1.0 .npy file holding `t`.
absl::StatusOr<std::string> WriteNpy(const Tensor& t);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_NPY_H_
