// Static post-training quantization of an ONNX model: calibrate on sample inputs, write the int8
// QDQ model (qdq_graph.h), and say what it costs in accuracy — for every output and for every
// quantized layer, on inputs the calibration did not see — so that the layer that loses the
// accuracy is named and can be kept in float.
//
// The float model and the QDQ model are both compiled by Kiln for this machine and run in this
// process, with the tensors calibration and the report need added to their outputs.
#ifndef KILN_COMPILER_QUANTIZE_QUANTIZE_H_
#define KILN_COMPILER_QUANTIZE_QUANTIZE_H_

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/frontend/load_module.h"
#include "compiler/quantize/calibration.h"
#include "runtime/tensor.h"

namespace kiln::quantize {

// One input of the model: a tensor per graph input, in the graph's order. `source` names it in
// errors (the file or folder it came from).
struct Sample {
  std::string source;
  std::vector<runtime::Tensor> inputs;
};

// The samples in `dir`: for a model of one input, each .npy file is one; otherwise each
// subfolder is one, holding INPUT_NAME.npy for every input. Sorted by name. An empty folder, a
// missing input or a file that is not a .npy array is InvalidArgument naming it.
absl::StatusOr<std::vector<Sample>> ReadSamples(const std::string& dir,
                                                const std::vector<std::string>& input_names);

// The graph inputs of a serialized ONNX model, for ReadSamples.
absl::StatusOr<std::vector<std::string>> OnnxInputNames(absl::string_view model_bytes);

struct QuantizeOptions {
  CalibrationMethod method = CalibrationMethod::kMinMax;
  double percentile = 99.99;         // for kPercentile
  std::set<std::string> keep_float;  // node names of layers to leave in float
  int threads = 1;                   // threads of the calibration and evaluation runs
  frontend::LoadOptions load;        // how the float and int8 models are imported (kilnd's limits)
  // Called as each stage begins ("calibrating on 32 inputs"), for a job's events.
  std::function<void(const std::string& stage)> progress;
};

// How one quantized layer's output compares with the float model's, over the evaluation inputs.
// The error is cumulative: it includes what the layers before lost.
struct LayerAccuracy {
  std::string name;
  std::string op_type;
  std::string tensor;
  double sqnr_db = 0;
};

struct OutputAccuracy {
  std::string name;
  double max_abs_error = 0;
  double sqnr_db = 0;
  // For an output of shape [N, C] with C > 1 (class scores): rows whose arg max agrees.
  int top1_agree = 0;
  int top1_total = 0;
};

struct QuantizeReport {
  CalibrationMethod method = CalibrationMethod::kMinMax;
  int calibration_inputs = 0;
  int eval_inputs = 0;
  bool held_out = false;  // false: evaluated on the calibration inputs (no others were given)
  int folded_batch_norms = 0;
  int quantized_activations = 0;
  std::vector<std::string> float_layers;
  std::vector<OutputAccuracy> outputs;
  std::vector<LayerAccuracy> layers;
};

struct QuantizedModel {
  std::string qdq_model;  // a serialized ModelProto
  QuantizeReport report;
};

// Quantizes `model_bytes` (`name` in errors) calibrated on `calibration`, evaluated on `eval`
// (the calibration inputs when empty).
absl::StatusOr<QuantizedModel> QuantizeOnnxModel(absl::string_view model_bytes,
                                                 absl::string_view name,
                                                 const std::vector<Sample>& calibration,
                                                 const std::vector<Sample>& eval,
                                                 const QuantizeOptions& options);

}  // namespace kiln::quantize

#endif  // KILN_COMPILER_QUANTIZE_QUANTIZE_H_
