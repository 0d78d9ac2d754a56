#include "runtime/tensor.h"

#include <cstdlib>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace kiln::runtime {

struct Tensor::Storage {
  std::shared_ptr<void> memory;  // owns the bytes; views share it
  size_t capacity = 0;           // bytes of `memory` from `tensor.data` on
  std::vector<int64_t> shape;
  DLTensor tensor{};
  size_t nbytes = 0;
};

namespace {

struct DataTypeName {
  const char* prefix;
  uint8_t code;
};

// Longer prefixes first, so that "bfloat" is not read as "b" + "float".
constexpr DataTypeName kDataTypeNames[] = {
    {"bfloat", kDLBfloat}, {"float", kDLFloat}, {"uint", kDLUInt}, {"int", kDLInt}};

}  // namespace

absl::StatusOr<DLDataType> ParseDataType(absl::string_view name) {
  // The names a model's every call parses (alloc_tensor, check_tensor_info) first.
  if (name == "float32") return DLDataType{kDLFloat, 32, 1};
  if (name == "int64") return DLDataType{kDLInt, 64, 1};
  if (name == "bool") return DLDataType{kDLUInt, 1, 1};
  for (const DataTypeName& entry : kDataTypeNames) {
    absl::string_view rest = name;
    if (!absl::ConsumePrefix(&rest, entry.prefix)) continue;
    absl::string_view bits_text = rest.substr(0, rest.find('x'));
    absl::string_view lanes_text =
        bits_text.size() < rest.size() ? rest.substr(bits_text.size() + 1) : "1";
    uint32_t bits = 0;
    uint32_t lanes = 0;
    if (!absl::SimpleAtoi(bits_text, &bits) || !absl::SimpleAtoi(lanes_text, &lanes) || bits == 0 ||
        bits > 255 || lanes == 0 || lanes > 65535) {
      break;
    }
    return DLDataType{entry.code, static_cast<uint8_t>(bits), static_cast<uint16_t>(lanes)};
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown data type '", name, "'"));
}

std::string DataTypeToString(DLDataType dtype) {
  if (dtype.code == kDLUInt && dtype.bits == 1 && dtype.lanes == 1) return "bool";
  const char* prefix = "unknown";
  for (const DataTypeName& entry : kDataTypeNames) {
    if (entry.code == dtype.code) prefix = entry.prefix;
  }
  std::string name = absl::StrCat(prefix, dtype.bits);
  if (dtype.lanes != 1) absl::StrAppend(&name, "x", dtype.lanes);
  return name;
}

size_t DataTypeBytes(DLDataType dtype) {
  return static_cast<size_t>((dtype.bits + 7) / 8) * dtype.lanes;
}

namespace {

// Bytes of a compact tensor; fails for negative dimensions, dtypes that do not fill bytes and
// sizes that overflow.
absl::StatusOr<size_t> CompactBytes(absl::Span<const int64_t> shape, DLDataType dtype) {
  if (dtype.bits != 1 && dtype.bits % 8 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot allocate a tensor of ", DataTypeToString(dtype), ": elements must fill bytes"));
  }
  size_t nbytes = DataTypeBytes(dtype);
  for (int64_t dim : shape) {
    if (dim < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("negative dimension in shape (", absl::StrJoin(shape, ", "), ")"));
    }
    if (dim != 0 && nbytes > std::numeric_limits<size_t>::max() / static_cast<size_t>(dim)) {
      return absl::ResourceExhaustedError(
          absl::StrCat("tensor of shape (", absl::StrJoin(shape, ", "), ") and dtype ",
                       DataTypeToString(dtype), " overflows the address space"));
    }
    nbytes *= static_cast<size_t>(dim);
  }
  return nbytes;
}

}  // namespace

Tensor Tensor::Make(std::shared_ptr<void> memory, size_t capacity, void* data,
                    absl::Span<const int64_t> shape, DLDataType dtype, size_t nbytes) {
  auto storage = std::make_shared<Storage>();
  storage->memory = std::move(memory);
  storage->capacity = capacity;
  storage->shape.assign(shape.begin(), shape.end());
  storage->nbytes = nbytes;
  DLTensor& t = storage->tensor;
  t.data = data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = dtype;
  t.shape = storage->shape.data();
  t.strides = nullptr;  // compact, row-major
  t.byte_offset = 0;
  Tensor tensor;
  tensor.storage_ = std::move(storage);
  return tensor;
}

absl::StatusOr<Tensor> Tensor::Empty(absl::Span<const int64_t> shape, DLDataType dtype) {
  absl::StatusOr<size_t> nbytes = CompactBytes(shape, dtype);
  if (!nbytes.ok()) return nbytes.status();
  // aligned_alloc wants a size that is a multiple of the alignment, and never 0.
  size_t padded = (*nbytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (padded == 0) padded = kTensorAlignment;
  void* data = std::aligned_alloc(kTensorAlignment, padded);
  if (data == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory allocating ", *nbytes, " bytes for a tensor"));
  }
  return Make(std::shared_ptr<void>(data, std::free), padded, data, shape, dtype, *nbytes);
}

absl::StatusOr<Tensor> Tensor::View(size_t byte_offset, absl::Span<const int64_t> shape,
                                    DLDataType dtype) const {
  if (!defined()) return absl::InvalidArgumentError("a view of the null tensor");
  absl::StatusOr<size_t> nbytes = CompactBytes(shape, dtype);
  if (!nbytes.ok()) return nbytes.status();
  if (byte_offset % kTensorAlignment != 0) {
    return absl::InvalidArgumentError(absl::StrCat("a view at byte offset ", byte_offset,
                                                   " is not aligned to ", kTensorAlignment));
  }
  if (byte_offset > storage_->capacity || *nbytes > storage_->capacity - byte_offset) {
    return absl::OutOfRangeError(absl::StrCat("a view of ", *nbytes, " bytes at offset ",
                                              byte_offset, " does not fit in ", storage_->capacity,
                                              " bytes of storage"));
  }
  char* data = static_cast<char*>(storage_->tensor.data) + byte_offset;
  return Make(storage_->memory, storage_->capacity - byte_offset, data, shape, dtype, *nbytes);
}

const DLTensor& Tensor::dl() const { return storage_->tensor; }
void* Tensor::data() const { return storage_->tensor.data; }
DLDataType Tensor::dtype() const { return storage_->tensor.dtype; }
absl::Span<const int64_t> Tensor::shape() const { return storage_->shape; }
int Tensor::ndim() const { return storage_->tensor.ndim; }
size_t Tensor::NumBytes() const { return storage_->nbytes; }

int64_t Tensor::NumElements() const {
  int64_t n = 1;
  for (int64_t dim : storage_->shape) n *= dim;
  return n;
}

}  // namespace kiln::runtime
