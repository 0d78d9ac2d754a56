#include "client/quantize_command.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler/backend/build.h"
#include "compiler/frontend/load_module.h"
#include "compiler/quantize/quantize.h"
#include "compiler/quantize/quantize_proto.h"
#include "nlohmann/json.hpp"

namespace kiln::client {
namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "kiln: %s\n", message.c_str());
  return 1;
}

bool WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  return static_cast<bool>(out);
}

// dB for the table and JSON: "inf" where the quantized value equals the float one.
std::string Db(double db) { return std::isinf(db) ? "inf" : absl::StrFormat("%.1f", db); }

nlohmann::json ReportJson(const v1::QuantizeResult& r) {
  nlohmann::json j;
  j["calibration_method"] = r.method();
  j["calibration_inputs"] = r.calibration_inputs();
  j["eval_inputs"] = r.eval_inputs();
  j["held_out"] = r.held_out();
  j["folded_batch_norms"] = r.folded_batch_norms();
  j["quantized_activations"] = r.quantized_activations();
  j["float_layers"] = std::vector<std::string>(r.float_layers().begin(), r.float_layers().end());
  nlohmann::json outputs = nlohmann::json::array();
  for (const v1::QuantizedOutputAccuracy& o : r.outputs()) {
    nlohmann::json e = {
        {"name", o.name()}, {"max_abs_error", o.max_abs_error()}, {"sqnr_db", Db(o.sqnr_db())}};
    if (o.top1_total() > 0) {
      e["top1_agree"] = o.top1_agree();
      e["top1_total"] = o.top1_total();
    }
    outputs.push_back(e);
  }
  j["outputs"] = outputs;
  nlohmann::json layers = nlohmann::json::array();
  for (const v1::QuantizedLayerAccuracy& l : r.layers()) {
    layers.push_back({{"name", l.name()},
                      {"op_type", l.op_type()},
                      {"tensor", l.tensor()},
                      {"sqnr_db", Db(l.sqnr_db())}});
  }
  j["layers"] = layers;
  return j;
}

void PrintReport(const v1::QuantizeResult& r) {
  std::printf("calibration: %s on %d inputs; accuracy on %d %s\n", r.method().c_str(),
              r.calibration_inputs(), r.eval_inputs(),
              r.held_out() ? "held-out inputs" : "calibration inputs (no --eval given)");
  if (r.folded_batch_norms() > 0)
    std::printf("folded %d BatchNormalization into their Conv\n", r.folded_batch_norms());
  for (const v1::QuantizedOutputAccuracy& o : r.outputs()) {
    std::printf("output %s: SQNR %s dB, max error %.4g", o.name().c_str(), Db(o.sqnr_db()).c_str(),
                o.max_abs_error());
    if (o.top1_total() > 0) std::printf(", top-1 agrees %d/%d", o.top1_agree(), o.top1_total());
    std::printf("\n");
  }
  // Each layer's SQNR includes what the layers before it lost: the lowest is where the
  // model's output stands furthest from float; --keep-float on layers before it shows which.
  int worst = 0;
  for (int i = 1; i < r.layers_size(); ++i)
    if (r.layers(i).sqnr_db() < r.layers(worst).sqnr_db()) worst = i;
  std::printf("%-48s %-7s %10s\n", "int8 layer", "op", "SQNR dB");
  for (int i = 0; i < r.layers_size(); ++i) {
    const v1::QuantizedLayerAccuracy& l = r.layers(i);
    std::printf("%-48s %-7s %10s%s\n", l.name().c_str(), l.op_type().c_str(),
                Db(l.sqnr_db()).c_str(), i == worst && r.layers_size() > 1 ? "  <- lowest" : "");
  }
  for (const std::string& f : r.float_layers()) std::printf("%-48s float\n", f.c_str());
}

// Through kilnd: the samples read and checked here as in process, calibrated in a kiln-worker.
absl::StatusOr<v1::QuantizeResult> QuantizeRemotely(
    const QuantizeFlags& flags, const RemoteFlags& remote, const std::string& model,
    const std::vector<std::string>& inputs, const std::vector<quantize::Sample>& calibration,
    const std::vector<quantize::Sample>& eval, std::string* qdq_model, std::string* artifact) {
  v1::SubmitQuantizeRequest request;
  request.mutable_model()->set_onnx(model);
  request.mutable_model()->set_name(std::filesystem::path(flags.model).filename().string());
  for (const quantize::Sample& s : calibration)
    quantize::SampleToProto(s, inputs, request.add_calibration());
  for (const quantize::Sample& s : eval) quantize::SampleToProto(s, inputs, request.add_eval());
  request.set_method(flags.method);
  request.set_percentile(flags.percentile);
  for (const std::string& layer : flags.keep_float) request.add_keep_float(layer);
  request.set_target(flags.target_given ? flags.target : "");
  absl::StatusOr<v1::Job> job = RemoteQuantize(remote, request, flags.device, qdq_model,
                                               flags.artifact.empty() ? nullptr : artifact);
  if (!job.ok()) return job.status();
  std::printf("job %s: target %s, artifact %s\n", job->id().c_str(), job->target().c_str(),
              job->artifact_digest().c_str());
  return job->quantize();
}

}  // namespace

int QuantizeModel(const QuantizeFlags& flags, const RemoteFlags& remote) {
  const bool remote_mode = !remote.channel.address.empty();
  if (!flags.device.empty() && !remote_mode)
    return Fail("quantize --device needs --server (the devices are kilnd's)");
  std::ifstream in(flags.model, std::ios::binary);
  if (!in) return Fail(absl::StrCat(flags.model, ": cannot open the file"));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  const std::string model = bytes.str();

  absl::StatusOr<quantize::CalibrationMethod> method =
      quantize::ParseCalibrationMethod(flags.method);
  if (!method.ok()) return Fail(std::string(method.status().message()));
  absl::StatusOr<std::vector<std::string>> inputs = quantize::OnnxInputNames(model);
  if (!inputs.ok()) return Fail(absl::StrCat(flags.model, ": ", inputs.status().message()));
  absl::StatusOr<std::vector<quantize::Sample>> calibration =
      quantize::ReadSamples(flags.calibration, *inputs);
  if (!calibration.ok())
    return Fail(absl::StrCat("--calibration: ", calibration.status().message()));
  std::vector<quantize::Sample> eval;
  if (!flags.eval.empty()) {
    absl::StatusOr<std::vector<quantize::Sample>> e = quantize::ReadSamples(flags.eval, *inputs);
    if (!e.ok()) return Fail(absl::StrCat("--eval: ", e.status().message()));
    eval = std::move(*e);
  }

  std::string qdq_model, artifact;
  v1::QuantizeResult report;
  if (remote_mode) {
    absl::StatusOr<v1::QuantizeResult> r =
        QuantizeRemotely(flags, remote, model, *inputs, *calibration, eval, &qdq_model, &artifact);
    if (!r.ok()) return Fail(std::string(r.status().message()));
    report = *std::move(r);
  } else {
    quantize::QuantizeOptions options;
    options.method = *method;
    options.percentile = flags.percentile;
    options.keep_float.insert(flags.keep_float.begin(), flags.keep_float.end());
    options.threads = flags.threads;
    absl::StatusOr<quantize::QuantizedModel> q = quantize::QuantizeOnnxModel(
        model, std::filesystem::path(flags.model).filename().string(), *calibration, eval, options);
    if (!q.ok()) return Fail(absl::StrCat(flags.model, ": ", q.status().message()));
    qdq_model = std::move(q->qdq_model);
    report = quantize::ResultToProto(q->report);
  }
  if (!WriteFile(flags.output, qdq_model))
    return Fail(absl::StrCat(flags.output, ": cannot write the file"));
  std::printf("%s: the int8 QDQ model, %zu bytes (%zu float)\n", flags.output.c_str(),
              qdq_model.size(), model.size());
  PrintReport(report);
  if (!flags.report.empty() && !WriteFile(flags.report, ReportJson(report).dump(2) + "\n"))
    return Fail(absl::StrCat(flags.report, ": cannot write the file"));
  if (flags.artifact.empty()) return 0;

  if (!remote_mode) {
    absl::StatusOr<ir::IRModule> mod =
        frontend::LoadModule(frontend::SourceForm::kOnnx, qdq_model, flags.output);
    if (!mod.ok()) return Fail(std::string(mod.status().message()));
    absl::StatusOr<std::string> built = backend::BuildArtifact(*mod, flags.target);
    if (!built.ok()) return Fail(absl::StrCat(flags.output, ": ", built.status().message()));
    artifact = *std::move(built);
  }
  if (!WriteFile(flags.artifact, artifact))
    return Fail(absl::StrCat(flags.artifact, ": cannot write the file"));
  std::printf("%s: %zu bytes%s\n", flags.artifact.c_str(), artifact.size(),
              remote_mode ? "" : absl::StrCat(", target ", flags.target).c_str());
  return 0;
}

}  // namespace kiln::client
