#include "compiler/quantize/quantize.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/backend/build.h"
#include "compiler/frontend/load_module.h"
#include "compiler/quantize/qdq_graph.h"
#include "runtime/library.h"
#include "runtime/npy.h"
#include "runtime/support/status_macros.h"
#include "runtime/thread_pool.h"
#include "runtime/vm/vm.h"

namespace kiln::quantize {
namespace {

namespace fs = std::filesystem;
using runtime::Tensor;

absl::StatusOr<std::string> ReadFileBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read ", path.string()));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

absl::StatusOr<Tensor> ReadNpyFile(const fs::path& path) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  absl::StatusOr<Tensor> t = runtime::ReadNpy(bytes, path.string());
  if (!t.ok()) return absl::InvalidArgumentError(t.status().message());
  return t;
}

absl::StatusOr<onnx::ModelProto> ParseModel(absl::string_view bytes, absl::string_view name) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return absl::InvalidArgumentError(absl::StrCat(name, ": not an ONNX model"));
  return model;
}

// The dtype name an ONNX element type has in the runtime ("" for those quantize does not feed).
std::string DtypeOfOnnx(int elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT:
      return "float32";
    case onnx::TensorProto::DOUBLE:
      return "float64";
    case onnx::TensorProto::INT64:
      return "int64";
    case onnx::TensorProto::INT32:
      return "int32";
    case onnx::TensorProto::UINT8:
      return "uint8";
    case onnx::TensorProto::INT8:
      return "int8";
    case onnx::TensorProto::BOOL:
      return "bool";
    default:
      return "";
  }
}

std::string ShapeText(absl::Span<const int64_t> s) {
  return absl::StrCat("[", absl::StrJoin(s, ", "), "]");
}

// Each sample against the graph inputs' declared dtypes and static dimensions.
absl::Status CheckSamples(const onnx::ModelProto& model, const std::vector<Sample>& samples,
                          const char* what) {
  std::map<std::string, const onnx::ValueInfoProto*> declared;
  for (const onnx::ValueInfoProto& in : model.graph().input()) declared[in.name()] = &in;
  const std::vector<std::string> names = GraphInputs(model);
  for (const Sample& s : samples) {
    if (s.inputs.size() != names.size()) {
      return absl::InvalidArgumentError(absl::StrCat(what, " ", s.source, ": ", s.inputs.size(),
                                                     " tensors for ", names.size(),
                                                     " model inputs"));
    }
    for (size_t i = 0; i < names.size(); ++i) {
      const onnx::TypeProto::Tensor& type = declared[names[i]]->type().tensor_type();
      const Tensor& t = s.inputs[i];
      const std::string want = DtypeOfOnnx(type.elem_type());
      const std::string got = runtime::DataTypeToString(t.dtype());
      if (!want.empty() && want != got) {
        return absl::InvalidArgumentError(absl::StrCat(what, " ", s.source, ": input '", names[i],
                                                       "' is ", got, ", the model takes ", want));
      }
      bool same = type.shape().dim_size() == t.ndim();
      for (int d = 0; same && d < t.ndim(); ++d) {
        const onnx::TensorShapeProto::Dimension& dim = type.shape().dim(d);
        same = !dim.has_dim_value() || dim.dim_value() == t.shape()[d];
      }
      if (type.has_shape() && !same) {
        std::vector<std::string> dims;
        for (const auto& dim : type.shape().dim())
          dims.push_back(dim.has_dim_value() ? absl::StrCat(dim.dim_value()) : dim.dim_param());
        return absl::InvalidArgumentError(absl::StrCat(
            what, " ", s.source, ": input '", names[i], "' has shape ", ShapeText(t.shape()),
            ", the model takes [", absl::StrJoin(dims, ", "), "]"));
      }
    }
  }
  return absl::OkStatus();
}

// An ONNX model compiled by Kiln for this machine, run in this process.
class CompiledModel {
 public:
  static absl::StatusOr<CompiledModel> Compile(const onnx::ModelProto& model,
                                               const std::string& name,
                                               const QuantizeOptions& options) {
    std::string bytes;
    if (!model.SerializeToString(&bytes))
      return absl::InternalError(absl::StrCat(name, ": the model does not serialize"));
    KILN_ASSIGN_OR_RETURN(ir::IRModule mod, frontend::LoadModule(frontend::SourceForm::kOnnx, bytes,
                                                                 name, options.load));
    KILN_ASSIGN_OR_RETURN(backend::BuiltModule built, backend::Build(mod, "llvm"));
    CompiledModel m;
    KILN_ASSIGN_OR_RETURN(auto lib, runtime::KernelLibrary::LoadFromMemory(built.kernels, name));
    KILN_ASSIGN_OR_RETURN(runtime::vm::Executable exec,
                          runtime::vm::Executable::Deserialize(built.executable));
    KILN_ASSIGN_OR_RETURN(m.vm_,
                          runtime::vm::VirtualMachine::Create(
                              std::make_shared<const runtime::vm::Executable>(std::move(exec)), lib,
                              std::make_shared<runtime::ThreadPool>(options.threads), nullptr));
    return m;
  }

  // The outputs of `main` on `sample`, a tuple flattened.
  absl::StatusOr<std::vector<Tensor>> Run(const Sample& sample) const {
    std::vector<runtime::Value> args(sample.inputs.begin(), sample.inputs.end());
    absl::StatusOr<runtime::Value> out = vm_->Invoke("main", args);
    if (!out.ok()) {
      return absl::Status(out.status().code(),
                          absl::StrCat("running ", sample.source, ": ", out.status().message()));
    }
    std::vector<Tensor> tensors;
    if (const runtime::Tuple* t = out->as_tuple()) {
      for (const runtime::Value& v : *t)
        if (const Tensor* x = v.as_tensor()) tensors.push_back(*x);
    } else if (const Tensor* x = out->as_tensor()) {
      tensors.push_back(*x);
    }
    return tensors;
  }

 private:
  std::unique_ptr<runtime::vm::VirtualMachine> vm_;
};

// The float32 values of an output (the report compares float tensors only).
const float* Floats(const Tensor& t) {
  const DLDataType d = t.dtype();
  return d.code == kDLFloat && d.bits == 32 ? static_cast<const float*>(t.data()) : nullptr;
}

void Progress(const QuantizeOptions& options, const std::string& stage) {
  if (options.progress) options.progress(stage);
}

std::map<std::string, int> IndexOf(const std::vector<std::string>& names) {
  std::map<std::string, int> index;
  for (size_t i = 0; i < names.size(); ++i) index.emplace(names[i], static_cast<int>(i));
  return index;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> OnnxInputNames(absl::string_view model_bytes) {
  KILN_ASSIGN_OR_RETURN(onnx::ModelProto model, ParseModel(model_bytes, "the model"));
  return GraphInputs(model);
}

absl::StatusOr<std::vector<Sample>> ReadSamples(const std::string& dir,
                                                const std::vector<std::string>& input_names) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return absl::InvalidArgumentError(absl::StrCat(dir, " is not a folder"));
  std::vector<fs::path> entries;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  std::vector<Sample> samples;
  for (const fs::path& p : entries) {
    if (input_names.size() == 1) {
      if (p.extension() != ".npy") continue;
      KILN_ASSIGN_OR_RETURN(Tensor t, ReadNpyFile(p));
      samples.push_back({p.string(), {std::move(t)}});
      continue;
    }
    if (!fs::is_directory(p, ec)) continue;
    Sample s{p.string(), {}};
    for (const std::string& name : input_names) {
      const fs::path file = p / (name + ".npy");
      if (!fs::exists(file, ec)) {
        return absl::InvalidArgumentError(absl::StrCat(p.string(), " holds no ", name,
                                                       ".npy for the model's input '", name, "'"));
      }
      KILN_ASSIGN_OR_RETURN(Tensor t, ReadNpyFile(file));
      s.inputs.push_back(std::move(t));
    }
    samples.push_back(std::move(s));
  }
  if (samples.empty()) {
    return absl::InvalidArgumentError(
        input_names.size() == 1
            ? absl::StrCat(dir, " holds no .npy input")
            : absl::StrCat(dir, " holds no sample folder (one per sample, with ",
                           absl::StrJoin(input_names, ".npy, "), ".npy)"));
  }
  return samples;
}

absl::StatusOr<QuantizedModel> QuantizeOnnxModel(absl::string_view model_bytes,
                                                 absl::string_view name,
                                                 const std::vector<Sample>& calibration,
                                                 const std::vector<Sample>& eval_given,
                                                 const QuantizeOptions& options) {
  const std::string model_name(name);
  KILN_ASSIGN_OR_RETURN(onnx::ModelProto model, ParseModel(model_bytes, name));
  if (calibration.empty()) return absl::InvalidArgumentError("no calibration inputs");
  KILN_RETURN_IF_ERROR(CheckSamples(model, calibration, "calibration"));
  KILN_RETURN_IF_ERROR(CheckSamples(model, eval_given, "evaluation"));
  const std::vector<Sample>& eval = eval_given.empty() ? calibration : eval_given;

  QuantizedModel result;
  QuantizeReport& report = result.report;
  report.method = options.method;
  report.calibration_inputs = static_cast<int>(calibration.size());
  report.eval_inputs = static_cast<int>(eval.size());
  report.held_out = !eval_given.empty();
  KILN_ASSIGN_OR_RETURN(report.folded_batch_norms, FoldBatchNorms(model));
  KILN_ASSIGN_OR_RETURN(QuantizationPlan plan, PlanQuantization(model, options.keep_float));
  report.float_layers = plan.float_layers;
  report.quantized_activations = static_cast<int>(plan.activations.size());

  // The float model, showing every activation to calibrate and every layer's output.
  onnx::ModelProto float_model = model;
  std::vector<std::string> watched = plan.activations;
  for (const QuantizedLayer& l : plan.layers) watched.push_back(l.output);
  const std::vector<std::string> float_names = ExposeTensors(float_model, watched);
  Progress(options, "compiling the float model");
  const int float_outputs = model.graph().output_size();
  KILN_ASSIGN_OR_RETURN(CompiledModel float_run,
                        CompiledModel::Compile(float_model, model_name, options));
  const std::map<std::string, int> float_index = IndexOf(float_names);

  // Calibration: ranges, then (percentile, entropy) histograms, one run per input per pass.
  std::vector<RangeObserver> observers(plan.activations.size());
  const int passes = observers.empty() || !observers[0].NeedsHistogram(options.method) ? 1 : 2;
  for (int pass = 0; pass < passes; ++pass) {
    Progress(options, absl::StrCat("calibrating on ", calibration.size(), " inputs",
                                   passes > 1 ? absl::StrCat(" (pass ", pass + 1, " of 2)") : ""));
    for (const Sample& s : calibration) {
      KILN_ASSIGN_OR_RETURN(std::vector<Tensor> outs, float_run.Run(s));
      for (size_t a = 0; a < plan.activations.size(); ++a) {
        const Tensor& t = outs[float_index.at(plan.activations[a])];
        const float* v = Floats(t);
        if (v == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(
              "tensor '", plan.activations[a], "' is ", runtime::DataTypeToString(t.dtype()),
              ", not float32: only float models are quantized"));
        }
        if (pass == 0)
          observers[a].ObserveRange(v, t.NumElements());
        else
          observers[a].ObserveHistogram(v, t.NumElements());
      }
    }
  }
  std::map<std::string, ActivationParams> params;
  for (size_t a = 0; a < plan.activations.size(); ++a) {
    const auto [lo, hi] = observers[a].Choose(options.method, options.percentile);
    params[plan.activations[a]] = ParamsForRange(lo, hi);
  }
  onnx::ModelProto qdq = model;
  KILN_RETURN_IF_ERROR(WriteQdqModel(qdq, plan, params));
  if (!qdq.SerializeToString(&result.qdq_model))
    return absl::InternalError("the quantized model does not serialize");

  // Evaluation: the QDQ model showing each layer's output as the next layer reads it.
  const std::set<std::string> quantized(plan.activations.begin(), plan.activations.end());
  std::vector<std::string> layer_tensors;
  for (const QuantizedLayer& l : plan.layers)
    layer_tensors.push_back(quantized.count(l.output) ? DequantizedName(l.output) : l.output);
  const std::vector<std::string> qdq_names = ExposeTensors(qdq, layer_tensors);
  Progress(options, "compiling the int8 model");
  KILN_ASSIGN_OR_RETURN(CompiledModel qdq_run,
                        CompiledModel::Compile(qdq, model_name + " (quantized)", options));
  const std::map<std::string, int> qdq_index = IndexOf(qdq_names);

  std::vector<SqnrAccumulator> layer_sqnr(plan.layers.size()), output_sqnr(float_outputs);
  report.outputs.resize(float_outputs);
  Progress(options, absl::StrCat("evaluating on ", eval.size(),
                                 report.held_out ? " held-out inputs" : " calibration inputs"));
  for (int o = 0; o < float_outputs; ++o) report.outputs[o].name = float_names[o];
  for (const Sample& s : eval) {
    KILN_ASSIGN_OR_RETURN(std::vector<Tensor> want, float_run.Run(s));
    KILN_ASSIGN_OR_RETURN(std::vector<Tensor> got, qdq_run.Run(s));
    for (int o = 0; o < float_outputs; ++o) {
      const float* w = Floats(want[o]);
      const float* g = Floats(got[o]);
      if (w == nullptr || g == nullptr || want[o].NumElements() != got[o].NumElements()) continue;
      const int64_t n = want[o].NumElements();
      output_sqnr[o].Add(w, g, n);
      OutputAccuracy& acc = report.outputs[o];
      for (int64_t i = 0; i < n; ++i)
        acc.max_abs_error = std::max(acc.max_abs_error, double{std::fabs(w[i] - g[i])});
      if (want[o].ndim() == 2 && want[o].shape()[1] > 1) {
        const int64_t classes = want[o].shape()[1];
        for (int64_t r = 0; r < want[o].shape()[0]; ++r) {
          const float* wr = w + r * classes;
          const float* gr = g + r * classes;
          acc.top1_agree +=
              std::max_element(wr, wr + classes) - wr == std::max_element(gr, gr + classes) - gr;
          ++acc.top1_total;
        }
      }
    }
    for (size_t l = 0; l < plan.layers.size(); ++l) {
      const Tensor& w = want[float_index.at(plan.layers[l].output)];
      const Tensor& g = got[qdq_index.at(layer_tensors[l])];
      if (Floats(w) && Floats(g) && w.NumElements() == g.NumElements())
        layer_sqnr[l].Add(Floats(w), Floats(g), w.NumElements());
    }
  }
  for (int o = 0; o < float_outputs; ++o) report.outputs[o].sqnr_db = output_sqnr[o].Db();
  for (size_t l = 0; l < plan.layers.size(); ++l) {
    const QuantizedLayer& q = plan.layers[l];
    report.layers.push_back({q.name, q.op_type, q.output, layer_sqnr[l].Db()});
  }
  return result;
}

}  // namespace kiln::quantize
