#include "runtime/agent/tensor_value.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::runtime {

void TensorToProto(const Tensor& tensor, const std::string& name, v1::TensorValue* out) {
  out->set_name(name);
  out->set_dtype(DataTypeToString(tensor.dtype()));
  for (int64_t d : tensor.shape()) out->add_shape(d);
  out->set_data(static_cast<const char*>(tensor.data()), tensor.NumBytes());
}

absl::StatusOr<Tensor> TensorFromProto(const v1::TensorValue& value) {
  std::string what =
      value.name().empty() ? "a tensor" : absl::StrCat("tensor '", value.name(), "'");
  absl::StatusOr<DLDataType> dtype = ParseDataType(value.dtype());
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", dtype.status().message()));
  }
  std::vector<int64_t> shape(value.shape().begin(), value.shape().end());
  absl::StatusOr<Tensor> tensor = Tensor::Empty(shape, *dtype);
  if (!tensor.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " of shape [", absl::StrJoin(shape, ", "),
                                                   "]: ", tensor.status().message()));
  }
  if (value.data().size() != tensor->NumBytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", value.dtype(), "[", absl::StrJoin(shape, ", "), "] needs ",
                     tensor->NumBytes(), " bytes of data, got ", value.data().size()));
  }
  if (!value.data().empty()) std::memcpy(tensor->data(), value.data().data(), value.data().size());
  return tensor;
}

absl::StatusOr<std::vector<v1::TensorValue>> ResultToProtos(const Value& result) {
  std::vector<v1::TensorValue> out;
  if (const Tensor* t = result.as_tensor()) {
    TensorToProto(*t, "output", &out.emplace_back());
    return out;
  }
  if (const Tuple* tuple = result.as_tuple()) {
    for (size_t i = 0; i < tuple->size(); ++i) {
      const Tensor* t = (*tuple)[i].as_tensor();
      if (t == nullptr) {
        return absl::UnimplementedError(
            absl::StrCat("output ", i, " is a ", (*tuple)[i].kind_name(), ", not a tensor"));
      }
      TensorToProto(*t, absl::StrCat("output_", i), &out.emplace_back());
    }
    return out;
  }
  return absl::UnimplementedError(
      absl::StrCat("the result is a ", result.kind_name(), ", not a tensor or a tuple of them"));
}

}  // namespace kiln::runtime
