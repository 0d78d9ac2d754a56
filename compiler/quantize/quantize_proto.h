// The quantizer's inputs and report as kiln.v1 messages (jobs.proto): the samples a quantize job
// carries and the report it ends with. kiln-worker reads a job through these, and `kiln
// quantize` prints either form of its report through ResultToProto.
#ifndef KILN_COMPILER_QUANTIZE_QUANTIZE_PROTO_H_
#define KILN_COMPILER_QUANTIZE_QUANTIZE_PROTO_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/quantize/quantize.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "proto/kiln/v1/jobs.pb.h"

namespace kiln::quantize {

// A request's samples in the order of `input_names`: a sample names each of its tensors after
// the input it feeds, or, unnamed, gives them in that order. `what` ("calibration", "eval")
// starts every error, which names the sample and the input: a missing or unknown input, or a
// tensor whose bytes do not match its dtype and shape, is InvalidArgument.
absl::StatusOr<std::vector<Sample>> SamplesFromProto(
    const google::protobuf::RepeatedPtrField<v1::QuantizeSample>& samples,
    const std::vector<std::string>& input_names, absl::string_view what);

// A sample as a request carries it: its tensors named after `input_names`, in order.
void SampleToProto(const Sample& sample, const std::vector<std::string>& input_names,
                   v1::QuantizeSample* out);

// The method, percentile and layers kept in float of a request (InvalidArgument for an unknown
// method or a percentile outside (0, 100]).
absl::StatusOr<QuantizeOptions> OptionsFromProto(const v1::SubmitQuantizeRequest& request);

// The report, without the model (QuantizeResult.model, model_size and model_sha256 are the
// caller's to set).
v1::QuantizeResult ResultToProto(const QuantizeReport& report);

}  // namespace kiln::quantize

#endif  // KILN_COMPILER_QUANTIZE_QUANTIZE_PROTO_H_
