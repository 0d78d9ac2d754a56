// Tensors on the wire (kiln.v1.TensorValue) to and from runtime tensors. Every field a peer sends
// is checked: a dtype the runtime knows, non-negative dimensions, and exactly the bytes they need.
#ifndef KILN_RUNTIME_AGENT_TENSOR_VALUE_H_
#define KILN_RUNTIME_AGENT_TENSOR_VALUE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/kiln/v1/jobs.pb.h"
#include "runtime/tensor.h"
#include "runtime/value.h"

namespace kiln::runtime {

void TensorToProto(const Tensor& tensor, const std::string& name, v1::TensorValue* out);

absl::StatusOr<Tensor> TensorFromProto(const v1::TensorValue& value);

// A function's result as a list of tensors: one tensor as "output", a tuple's as "output_0", ...
absl::StatusOr<std::vector<v1::TensorValue>> ResultToProtos(const Value& result);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_AGENT_TENSOR_VALUE_H_
