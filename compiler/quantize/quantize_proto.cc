#include "compiler/quantize/quantize_proto.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/agent/tensor_value.h"

namespace kiln::quantize {

absl::StatusOr<std::vector<Sample>> SamplesFromProto(
    const google::protobuf::RepeatedPtrField<v1::QuantizeSample>& samples,
    const std::vector<std::string>& input_names, absl::string_view what) {
  std::vector<Sample> out;
  out.reserve(samples.size());
  for (int i = 0; i < samples.size(); ++i) {
    const v1::QuantizeSample& given = samples[i];
    Sample& s = out.emplace_back();
    s.source = given.name().empty() ? absl::StrCat("sample ", i)
                                    : absl::StrCat("sample ", i, " '", given.name(), "'");
    const std::string where = absl::StrCat(what, " ", s.source);
    const bool named = given.inputs_size() > 0 && !given.inputs(0).name().empty();
    std::map<std::string, const v1::TensorValue*> by_name;
    if (named) {
      for (const v1::TensorValue& t : given.inputs()) {
        if (std::find(input_names.begin(), input_names.end(), t.name()) == input_names.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ": the model has no input '", t.name(),
                           "' (its inputs: ", absl::StrJoin(input_names, ", "), ")"));
        }
        by_name[t.name()] = &t;
      }
    } else if (given.inputs_size() != static_cast<int>(input_names.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": ", given.inputs_size(), " tensors for the model's ",
                       input_names.size(), " inputs (", absl::StrJoin(input_names, ", "), ")"));
    }
    for (size_t k = 0; k < input_names.size(); ++k) {
      const v1::TensorValue* t = named ? nullptr : &given.inputs(static_cast<int>(k));
      if (named) {
        auto found = by_name.find(input_names[k]);
        if (found == by_name.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ": no tensor for the model's input '", input_names[k], "'"));
        }
        t = found->second;
      }
      absl::StatusOr<runtime::Tensor> tensor = runtime::TensorFromProto(*t);
      if (!tensor.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": input '", input_names[k], "': ", tensor.status().message()));
      }
      s.inputs.push_back(*std::move(tensor));
    }
  }
  return out;
}

void SampleToProto(const Sample& sample, const std::vector<std::string>& input_names,
                   v1::QuantizeSample* out) {
  out->set_name(sample.source);
  for (size_t i = 0; i < sample.inputs.size() && i < input_names.size(); ++i) {
    runtime::TensorToProto(sample.inputs[i], input_names[i], out->add_inputs());
  }
}

absl::StatusOr<QuantizeOptions> OptionsFromProto(const v1::SubmitQuantizeRequest& request) {
  QuantizeOptions options;
  if (!request.method().empty()) {
    absl::StatusOr<CalibrationMethod> method = ParseCalibrationMethod(request.method());
    if (!method.ok()) return method.status();
    options.method = *method;
  }
  if (request.percentile() != 0) {  // 0: the default
    if (absl::Status s = CheckPercentile(request.percentile()); !s.ok()) return s;
    options.percentile = request.percentile();
  }
  options.keep_float.insert(request.keep_float().begin(), request.keep_float().end());
  return options;
}

v1::QuantizeResult ResultToProto(const QuantizeReport& report) {
  v1::QuantizeResult r;
  r.set_method(CalibrationMethodName(report.method));
  r.set_calibration_inputs(report.calibration_inputs);
  r.set_eval_inputs(report.eval_inputs);
  r.set_held_out(report.held_out);
  r.set_folded_batch_norms(report.folded_batch_norms);
  r.set_quantized_activations(report.quantized_activations);
  for (const std::string& f : report.float_layers) r.add_float_layers(f);
  for (const OutputAccuracy& o : report.outputs) {
    v1::QuantizedOutputAccuracy* out = r.add_outputs();
    out->set_name(o.name);
    out->set_max_abs_error(o.max_abs_error);
    out->set_sqnr_db(o.sqnr_db);
    out->set_top1_agree(o.top1_agree);
    out->set_top1_total(o.top1_total);
  }
  for (const LayerAccuracy& l : report.layers) {
    v1::QuantizedLayerAccuracy* layer = r.add_layers();
    layer->set_name(l.name);
    layer->set_op_type(l.op_type);
    layer->set_tensor(l.tensor);
    layer->set_sqnr_db(l.sqnr_db);
  }
  return r;
}

}  // namespace kiln::quantize
