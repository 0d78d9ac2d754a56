#include "server/worker/worker_quantize.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "compiler/backend/build.h"
#include "compiler/frontend/load_module.h"
#include "compiler/quantize/quantize.h"
#include "compiler/quantize/quantize_proto.h"
#include "compiler/wire/ir_proto.h"
#include "runtime/artifact.h"
#include "runtime/format/artifact.pb.h"
#include "server/worker/cache_key.h"
#include "server/worker_frames.h"

namespace kiln::server {
namespace {

void Fail(const absl::Status& status, QuantizeOutcome* outcome) {
  outcome->set_ok(false);
  outcome->set_code(static_cast<int>(status.code()));
  outcome->set_error(ValidUtf8(status.message()));
}

}  // namespace

QuantizeOutcome QuantizeInWorker(const QuantizeWork& work,
                                 const std::function<void(const std::string&)>& on_stage) {
  const auto start = std::chrono::steady_clock::now();
  QuantizeOutcome outcome;
  const v1::SubmitQuantizeRequest& request = work.request();
  if (request.model().form_case() != v1::ModuleSource::kOnnx) {
    Fail(absl::InvalidArgumentError("model: quantize takes an ONNX model (give model.onnx)"),
         &outcome);
    return outcome;
  }
  const std::string& model = request.model().onnx();
  const std::string& name = work.module_name();
  absl::StatusOr<std::vector<std::string>> inputs = quantize::OnnxInputNames(model);
  if (!inputs.ok()) {
    Fail(absl::InvalidArgumentError(absl::StrCat(name, ": ", inputs.status().message())), &outcome);
    return outcome;
  }
  absl::StatusOr<std::vector<quantize::Sample>> calibration =
      quantize::SamplesFromProto(request.calibration(), *inputs, "calibration");
  absl::StatusOr<std::vector<quantize::Sample>> eval =
      calibration.ok() ? quantize::SamplesFromProto(request.eval(), *inputs, "eval")
                       : calibration.status();
  absl::StatusOr<quantize::QuantizeOptions> options = quantize::OptionsFromProto(request);
  for (const absl::Status& s : {calibration.status(), eval.status(), options.status()}) {
    if (!s.ok()) {
      Fail(s, &outcome);
      return outcome;
    }
  }
  options->progress = on_stage;
  if (work.max_constant_bytes() > 0) options->load.max_constant_bytes = work.max_constant_bytes();
  absl::StatusOr<quantize::QuantizedModel> quantized =
      quantize::QuantizeOnnxModel(model, name, *calibration, *eval, *options);
  if (!quantized.ok()) {
    Fail(absl::Status(quantized.status().code(),
                      absl::StrCat(name, ": ", quantized.status().message())),
         &outcome);
    return outcome;
  }

  // The QDQ model, built for the target as a compile of it would be (default schedules).
  on_stage(absl::StrCat("building the int8 model for ", work.target()));
  const std::string qdq_name = absl::StrCat(name, " (int8)");
  absl::StatusOr<ir::IRModule> mod = frontend::LoadModule(
      frontend::SourceForm::kOnnx, quantized->qdq_model, qdq_name, options->load);
  absl::StatusOr<std::string> artifact =
      mod.ok() ? backend::BuildArtifact(*mod, work.target()) : mod.status();
  if (!artifact.ok()) {
    Fail(absl::Status(artifact.status().code(),
                      absl::StrCat(qdq_name, ": ", artifact.status().message())),
         &outcome);
    return outcome;
  }
  v1::ArtifactProto parsed;
  parsed.ParseFromString(*artifact);
  CompileOutcome& compiled = *outcome.mutable_compiled();
  compiled.set_ok(true);
  compiled.set_digest(parsed.manifest().digest());
  compiled.set_cache_key(CacheKey(*mod, work.target(), v1::CompileOptions(), ""));
  compiled.set_module(wire::SerializeModule(*mod));
  compiled.set_artifact(*std::move(artifact));
  compiled.set_seconds(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());

  v1::QuantizeResult& result = *outcome.mutable_result();
  result = quantize::ResultToProto(quantized->report);
  result.set_model_size(static_cast<int64_t>(quantized->qdq_model.size()));
  result.set_model_sha256(runtime::Sha256Hex(quantized->qdq_model));
  result.set_float_model_size(static_cast<int64_t>(model.size()));
  result.set_model(std::move(quantized->qdq_model));
  outcome.set_ok(true);
  return outcome;
}

}  // namespace kiln::server
