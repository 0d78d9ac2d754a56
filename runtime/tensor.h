// Tensors of the runtime: a DLPack DLTensor view over reference-counted, aligned storage.
// The runtime links nothing of the compiler and no LLVM; this header is what kernels, the VM and
// the device agent share.
#ifndef KILN_RUNTIME_TENSOR_H_
#define KILN_RUNTIME_TENSOR_H_

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace kiln::runtime {

// Every tensor the runtime allocates starts on this boundary, so generated kernels may assume
// aligned vector loads (one AVX-512 register, one cache line).
inline constexpr size_t kTensorAlignment = 64;

// Parses a TVM-style dtype name: "float32", "int8", "uint1"/"bool", "bfloat16", "float16x4".
absl::StatusOr<DLDataType> ParseDataType(absl::string_view name);

// The inverse of ParseDataType: "float32", "bool", "float32x4".
std::string DataTypeToString(DLDataType dtype);

// Bytes one element of `dtype` takes in memory (bool takes a byte).
size_t DataTypeBytes(DLDataType dtype);

class Tensor {
 public:
  Tensor() = default;  // The null tensor.

  // A new, uninitialized, kTensorAlignment-aligned tensor on the CPU. Fails for negative
  // dimensions, dtypes that do not fill whole bytes, or sizes that overflow.
  static absl::StatusOr<Tensor> Empty(absl::Span<const int64_t> shape, DLDataType dtype);

  // A tensor over this one's memory from `byte_offset` on (a multiple of kTensorAlignment), for
  // storage planned ahead: the memory lives while any view does. OutOfRange when it does not fit.
  absl::StatusOr<Tensor> View(size_t byte_offset, absl::Span<const int64_t> shape,
                              DLDataType dtype) const;

  bool defined() const { return storage_ != nullptr; }
  const DLTensor& dl() const;
  void* data() const;
  DLDataType dtype() const;
  absl::Span<const int64_t> shape() const;
  int ndim() const;
  int64_t NumElements() const;
  size_t NumBytes() const;

 private:
  struct Storage;
  static Tensor Make(std::shared_ptr<void> memory, size_t capacity, void* data,
                     absl::Span<const int64_t> shape, DLDataType dtype, size_t nbytes);
  std::shared_ptr<Storage> storage_;
};

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_TENSOR_H_
