#include "server/client_service.h"

#include <grpcpp/grpcpp.h>

#include <cmath>
#include <deque>
#include <map>
#include <mutex>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/build_info.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/quantize/calibration.h"
#include "compiler/version.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "runtime/agent/tensor_value.h"
#include "runtime/artifact.h"
#include "runtime/device_info.h"
#include "server/devices.h"
#include "server/log.h"

namespace kiln::server {
namespace {

// This machine as a device: a device with the same CPU gets native code ("llvm").
const v1::DeviceAttributes& ServerHost() {
  static const auto* host = new v1::DeviceAttributes(runtime::LocalDeviceAttributes());
  return *host;
}

// The exact bytes of what a compile asks for, less what does not change the artifact (the
// idempotency key, the deadline). The module's bytes are hashed where they lie: a module of
// 30 MB is not copied to be fingerprinted.
std::string RequestFingerprint(const v1::SubmitCompileRequest& request, const std::string& target,
                               const std::string& records_owner) {
  const v1::ModuleSource& module = request.module();
  absl::string_view payload = module.form_case() == v1::ModuleSource::kIrProto ? module.ir_proto()
                              : module.form_case() == v1::ModuleSource::kTvmscript
                                  ? module.tvmscript()
                                  : module.onnx();
  v1::SubmitCompileRequest rest;  // everything else, small
  rest.mutable_module()->set_name(module.name());
  rest.set_target(target);
  *rest.mutable_options() = request.options();
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  rest.SerializeToCodedStream(&coded);
  coded.Trim();
  return runtime::Sha256Hex(absl::StrCat(CompilerIdentity(), "\n", records_owner, "\n",
                                         static_cast<int>(module.form_case()), "\n",
                                         runtime::Sha256Hex(payload), "\n", bytes));
}

// What an entry's result signature says its outputs are, in the order an agent answers them
// (runtime/agent/tensor_value.h: a tensor, or a tuple's tensors): dtype and shape, -1 for a
// symbolic or unknown dimension. Empty where the signature says less (a nested tuple, an object).
std::vector<v1::TensorValue> ExpectedOutputs(const v1::ValueSignature& result) {
  std::vector<v1::TensorValue> out;
  auto add = [&](const v1::ValueSignature& sig) {
    if (sig.kind() != "tensor" || sig.dtype().empty()) return false;
    v1::TensorValue& t = out.emplace_back();
    t.set_dtype(sig.dtype());
    for (const std::string& d : sig.dims()) {
      int64_t n = -1;
      t.add_shape(absl::SimpleAtoi(d, &n) ? n : -1);
    }
    return true;
  };
  if (result.kind() == "tensor") {
    if (!add(result)) out.clear();
  } else if (result.kind() == "tuple") {
    for (const v1::ValueSignature& f : result.fields()) {
      if (!add(f)) return {};
    }
  }
  return out;
}

// Whose tuning records a caller's compiles apply and its tunes write: its own (beside the
// published ones), or, for an admin, the published ones.
std::string RecordsOwner(const Principal& caller) { return caller.admin ? "" : caller.name; }

size_t SourceBytes(const v1::ModuleSource& source) {
  return source.ir_proto().size() + source.tvmscript().size() + source.onnx().size();
}

// The name a module without one goes by in messages, from the form it came in.
std::string DefaultModuleName(const v1::ModuleSource& source) {
  switch (source.form_case()) {
    case v1::ModuleSource::kIrProto:
      return "module.pb";
    case v1::ModuleSource::kOnnx:
      return "model.onnx";
    default:
      return "module.py";
  }
}

// Inference inputs against the function's signature: count, names, dtypes and static shapes.
absl::Status CheckInputs(const v1::EntryFunction& entry,
                         const google::protobuf::RepeatedPtrField<v1::TensorValue>& inputs) {
  if (inputs.size() != entry.params_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", entry.name(), "' takes ", entry.params_size(), " inputs, got ", inputs.size()));
  }
  bool named = !inputs.empty() && !inputs[0].name().empty();
  for (int i = 0; i < entry.params_size(); ++i) {
    const v1::ValueSignature& param = entry.params(i);
    const v1::TensorValue* given = &inputs[i];
    if (named) {
      given = nullptr;
      for (const v1::TensorValue& t : inputs) {
        if (t.name() == param.name()) given = &t;
      }
      if (given == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("no input for parameter '", param.name(), "' of '", entry.name(), "'"));
      }
    }
    absl::StatusOr<runtime::Tensor> tensor = runtime::TensorFromProto(*given);
    if (!tensor.ok()) return tensor.status();
    if (param.kind() != "tensor") continue;
    std::string what = absl::StrCat("input '", param.name(), "' of '", entry.name(), "'");
    if (!param.dtype().empty() && param.dtype() != given->dtype()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " must be ", param.dtype(), ", got ", given->dtype()));
    }
    bool rank_ok = param.dims_size() == given->shape_size();
    for (int d = 0; rank_ok && d < param.dims_size(); ++d) {
      int64_t want = 0;
      if (absl::SimpleAtoi(param.dims(d), &want) && want != given->shape(d)) rank_ok = false;
    }
    if (!rank_ok) {
      return absl::InvalidArgumentError(absl::StrCat(what, " must have shape [",
                                                     absl::StrJoin(param.dims(), ", "), "], got [",
                                                     absl::StrJoin(given->shape(), ", "), "]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

grpc::Status KilnService::GetServerInfo(grpc::ServerContext* context,
                                        const kiln::v1::GetServerInfoRequest* /*request*/,
                                        kiln::v1::ServerInfo* response) {
  Principal caller;
  if (grpc::Status s = Authorize(*ctx_->Auth(), *context, Role::kClient, &caller); !s.ok())
    return s;
  response->set_compiler_version(CompilerIdentity());
  response->set_host_target_triple(codegen::HostTriple());
  std::vector<std::pair<std::string, std::string>> versions = ComponentVersions();
  versions.insert(versions.begin() + 1, {"grpc", grpc::Version()});
  for (const auto& [name, version] : versions) {
    kiln::v1::ComponentVersion* component = response->add_components();
    component->set_name(name);
    component->set_version(version);
  }
  return grpc::Status::OK;
}

grpc::Status KilnService::CheckModule(const v1::ModuleSource& module) const {
  size_t size = SourceBytes(module);
  if (static_cast<int64_t>(size) > ctx_->max_module_bytes) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        absl::StrCat("module: ", size, " bytes is over this server's limit of ",
                                     ctx_->max_module_bytes, " bytes"));
  }
  if (module.form_case() == v1::ModuleSource::FORM_NOT_SET) {
    return Invalid("module: give it as ir_proto, tvmscript or onnx (none was set)");
  }
  return grpc::Status::OK;
}

grpc::Status KilnService::CheckTarget(const std::string& target) const {
  absl::StatusOr<codegen::LlvmTargetInfo> t = codegen::ParseTarget(target);
  if (!t.ok()) return Invalid(absl::StrCat("target '", target, "': ", t.status().message()));
  return grpc::Status::OK;
}

grpc::Status KilnService::AdmitSubmit(const google::protobuf::Message& request, int64_t deadline_ms,
                                      std::optional<InflightBytes::Reservation>* inflight) {
  absl::StatusOr<InflightBytes::Reservation> reserved =
      ReserveInflight(*ctx_, static_cast<int64_t>(request.ByteSizeLong()));
  if (!reserved.ok()) return ToGrpc(reserved.status());
  inflight->emplace(*std::move(reserved));
  if (grpc::Status s = StringsWithin(request, ctx_->max_string_bytes); !s.ok()) return s;
  return CheckDeadline(deadline_ms);
}

template <typename Request>
grpc::Status KilnService::ReceiveAndSubmit(
    grpc::ServerContext* context, grpc::ServerUnaryStreamer<Request, v1::SubmitResponse>* streamer,
    const char* method, SubmitHandler<Request> handle) {
  // Authorized before its body is read: a caller without credentials sends no 30 MB.
  Principal caller;
  if (grpc::Status s = Authorize(*ctx_->Auth(), *context, Role::kClient, &caller); !s.ok()) {
    return s;
  }
  Request request;
  {
    std::optional<ReceiveSlots::Slot> slot;
    if (ctx_->receiving != nullptr) {
      absl::StatusOr<ReceiveSlots::Slot> acquired = ctx_->receiving->Acquire(caller.name, context);
      if (!acquired.ok()) return ToGrpc(acquired.status());
      slot.emplace(*std::move(acquired));
    }
    if (!streamer->Read(&request)) {
      if (context->IsCancelled()) {
        return grpc::Status(grpc::StatusCode::CANCELLED,
                            "the request was cancelled before its body arrived");
      }
      return UnparsableRequest(method);
    }
  }
  // Held while the request is handled and answered.
  std::optional<InflightBytes::Reservation> inflight;
  if (grpc::Status s = AdmitSubmit(request, request.deadline_ms(), &inflight); !s.ok()) return s;
  v1::SubmitResponse response;
  grpc::Status status = (this->*handle)(caller, request, &response);
  if (status.ok()) streamer->Write(response);
  return status;
}

grpc::Status KilnService::StreamedSubmitCompile(
    grpc::ServerContext* context,
    grpc::ServerUnaryStreamer<v1::SubmitCompileRequest, v1::SubmitResponse>* streamer) {
  return ReceiveAndSubmit(context, streamer, "/kiln.v1.Kiln/SubmitCompile",
                          &KilnService::HandleCompile);
}

grpc::Status KilnService::StreamedSubmitProfile(
    grpc::ServerContext* context,
    grpc::ServerUnaryStreamer<v1::SubmitProfileRequest, v1::SubmitResponse>* streamer) {
  return ReceiveAndSubmit(context, streamer, "/kiln.v1.Kiln/SubmitProfile",
                          &KilnService::HandleProfile);
}

grpc::Status KilnService::StreamedSubmitInference(
    grpc::ServerContext* context,
    grpc::ServerUnaryStreamer<v1::SubmitInferenceRequest, v1::SubmitResponse>* streamer) {
  return ReceiveAndSubmit(context, streamer, "/kiln.v1.Kiln/SubmitInference",
                          &KilnService::HandleInference);
}

grpc::Status KilnService::StreamedSubmitTune(
    grpc::ServerContext* context,
    grpc::ServerUnaryStreamer<v1::SubmitTuneRequest, v1::SubmitResponse>* streamer) {
  return ReceiveAndSubmit(context, streamer, "/kiln.v1.Kiln/SubmitTune", &KilnService::HandleTune);
}

grpc::Status KilnService::StreamedSubmitQuantize(
    grpc::ServerContext* context,
    grpc::ServerUnaryStreamer<v1::SubmitQuantizeRequest, v1::SubmitResponse>* streamer) {
  return ReceiveAndSubmit(context, streamer, "/kiln.v1.Kiln/SubmitQuantize",
                          &KilnService::HandleQuantize);
}

grpc::Status KilnService::HandleCompile(const Principal& caller,
                                        const v1::SubmitCompileRequest& request,
                                        v1::SubmitResponse* response) {
  const std::string& client = caller.name;
  if (Deduplicated(client, request.idempotency_key(), response)) return grpc::Status::OK;
  if (grpc::Status s = CheckModule(request.module()); !s.ok()) return s;
  if (absl::Status s = ctx_->jobs->Admit(client); !s.ok()) return ToGrpc(s);
  std::string target;
  v1::Device device;
  if (grpc::Status s = BuildTarget(request.target(), request.device_key(),
                                   request.device_selector(), caller, &device, &target);
      !s.ok()) {
    return s;
  }
  v1::Job job;
  job.set_kind(v1::JOB_KIND_COMPILE);
  job.set_client(client);
  job.set_idempotency_key(request.idempotency_key());
  job.set_target(target);
  job.set_device_key(device.key());
  job.set_deadline_ms(ctx_->jobs->ClampDeadline(request.deadline_ms()));
  // A request seen before is answered by its fingerprint; anything else goes to a worker, which
  // loads the module (kilnd never parses one), matches it against the cache and builds on a miss.
  std::string fingerprint = RequestFingerprint(request, target, RecordsOwner(caller));
  if (ctx_->records_generation != nullptr) {
    // What a compile applies changes with the tuning records, whoever changed them (a tune here
    // or on another instance, a publish): a fingerprint holds for one generation of them.
    absl::StatusOr<int64_t> generation = ctx_->records_generation->Read();
    if (generation.ok()) {
      absl::StrAppend(&fingerprint, "@records:", *generation);
    } else {
      fingerprint.clear();  // unknown: the worker decides, and nothing is remembered
    }
  }
  job.set_module_name(request.module().name().empty() ? DefaultModuleName(request.module())
                                                      : request.module().name());
  std::optional<CachedArtifact> hit;
  if (!fingerprint.empty()) hit = ctx_->cache->LookupFingerprint(fingerprint);
  if (hit.has_value()) {
    job.set_artifact_digest(hit->digest);
    job.set_artifact_size(hit->size);
    Submitted submitted = ctx_->jobs->AddCacheHit(std::move(job));
    *response->mutable_job() = submitted.job;
    response->set_deduplicated(submitted.deduplicated);
    return grpc::Status::OK;
  }
  Submitted submitted =
      ctx_->jobs->EnqueueCompile(std::move(job), request.module(), request.options(),
                                 std::move(fingerprint), RecordsOwner(caller));
  *response->mutable_job() = submitted.job;
  response->set_deduplicated(submitted.deduplicated);
  return grpc::Status::OK;
}

absl::StatusOr<v1::Job> KilnService::OwnJob(const Principal& caller, const std::string& id) {
  absl::StatusOr<v1::Job> job = ctx_->jobs->Get(id);
  // Another principal's job is answered exactly as a job that does not exist.
  if (job.ok() && !caller.admin && job->client() != caller.name) {
    return absl::NotFoundError(absl::StrCat("no job '", id, "'"));
  }
  return job;
}

grpc::Status KilnService::ResolveDevice(const std::string& key, const std::string& selector,
                                        const Principal& caller, v1::Device* device) const {
  if (!key.empty() && !selector.empty()) {
    return Invalid("give device_key or device_selector, not both");
  }
  if (key.empty() && selector.empty()) return Invalid("device_key: required");
  std::vector<v1::Device> devices = UsableDevices(*ctx_->jobs, caller);
  if (!selector.empty()) {
    absl::StatusOr<DeviceSelector> parsed = ParseDeviceSelector(selector);
    if (!parsed.ok()) return ToGrpc(parsed.status());
    absl::StatusOr<v1::Device> picked = SelectDevice(*parsed, devices);
    if (!picked.ok()) return ToGrpc(picked.status());
    *device = *picked;
    return grpc::Status::OK;
  }
  for (const v1::Device& d : devices) {
    if (d.key() == key) {
      *device = d;
      return grpc::Status::OK;
    }
  }
  std::vector<std::string> known;
  for (const v1::Device& d : devices) known.push_back(d.key());
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      absl::StrCat("unknown device key '", key, "' (known: ",
                                   known.empty() ? "none" : absl::StrJoin(known, ", "), ")"));
}

grpc::Status KilnService::BuildTarget(const std::string& given, const std::string& key,
                                      const std::string& selector, const Principal& caller,
                                      v1::Device* device, std::string* target) const {
  *target = given;
  if (!key.empty() || !selector.empty()) {
    if (grpc::Status s = ResolveDevice(key, selector, caller, device); !s.ok()) return s;
    if (target->empty()) *target = TargetForDevice(device->attributes(), ServerHost());
  }
  if (target->empty()) *target = "llvm";
  return CheckTarget(*target);
}

grpc::Status KilnService::PrepareTask(const v1::ArtifactRef& ref, const Principal& caller,
                                      v1::ArtifactManifest* manifest, v1::Task* task) {
  if (absl::Status s = ctx_->jobs->Admit(caller.name); !s.ok()) return ToGrpc(s);
  std::string digest;
  if (ref.ref_case() == v1::ArtifactRef::kDigest) {
    if (!caller.admin && !ctx_->jobs->HasArtifact(caller.name, ref.digest())) {
      return NoArtifact(ref.digest());
    }
    absl::StatusOr<std::string> bytes = ctx_->store->ReadArtifact(ref.digest());
    if (!bytes.ok()) return ToGrpc(bytes.status());
    absl::StatusOr<v1::ArtifactProto> parsed = runtime::ParseArtifact(*bytes, false);
    if (!parsed.ok()) return ToGrpc(parsed.status());
    *manifest = parsed->manifest();
    digest = ref.digest();
    task->set_artifact_size(static_cast<int64_t>(bytes->size()));
  } else if (ref.ref_case() == v1::ArtifactRef::kArtifact) {
    if (static_cast<int64_t>(ref.artifact().size()) > ctx_->max_module_bytes) {
      return grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          absl::StrCat("artifact: ", ref.artifact().size(),
                       " bytes is over this server's limit of ", ctx_->max_module_bytes, " bytes"));
    }
    absl::StatusOr<v1::ArtifactProto> parsed = runtime::ParseArtifact(ref.artifact(), false);
    if (!parsed.ok()) return Invalid(absl::StrCat("artifact: ", parsed.status().message()));
    // Native code runs on the device: only what kilnd built, unless the caller may upload.
    absl::Status ours = ctx_->own_keys != nullptr
                            ? runtime::CheckArtifactSignature(*parsed, *ctx_->own_keys)
                            : absl::OkStatus();
    if (!ours.ok() && !caller.may_upload && !ctx_->allow_unsigned_uploads) {
      return grpc::Status(
          grpc::StatusCode::PERMISSION_DENIED,
          absl::StrCat("artifact ", parsed->manifest().digest().substr(0, 16),
                       " was not built by this service (", ours.message(),
                       "): compile it here (kiln compile --server), or ask for a token with "
                       "upload=allow"));
    }
    *manifest = parsed->manifest();
    digest = manifest->digest();
    absl::StatusOr<int64_t> stored =
        ctx_->cache->Insert("", digest, ref.artifact(), "", caller.name);
    if (!stored.ok()) return ToGrpc(stored.status());
    task->set_artifact_size(*stored);
  } else {
    return Invalid("artifact: give a digest or the artifact's bytes");
  }
  task->set_artifact_digest(digest);
  return grpc::Status::OK;
}

bool KilnService::Deduplicated(const std::string& client, const std::string& key,
                               v1::SubmitResponse* response) {
  std::optional<v1::Job> earlier = ctx_->jobs->FindIdempotent(client, key);
  if (!earlier.has_value()) return false;
  *response->mutable_job() = *earlier;
  OutputsForTheWire(response->mutable_job());
  response->set_deduplicated(true);
  return true;
}

grpc::Status KilnService::EnqueueTask(const std::string& client, const std::string& key,
                                      const std::string& device_key, int64_t deadline_ms,
                                      v1::Task task, v1::SubmitResponse* response,
                                      std::vector<v1::TensorValue> expected_outputs) {
  v1::Job job;
  job.set_kind(task.kind());
  job.set_client(client);
  job.set_idempotency_key(key);
  job.set_device_key(device_key);
  job.set_artifact_digest(task.artifact_digest());
  job.set_artifact_size(task.artifact_size());
  job.set_deadline_ms(ctx_->jobs->ClampDeadline(deadline_ms));
  Submitted submitted =
      ctx_->jobs->EnqueueTask(std::move(job), std::move(task), std::move(expected_outputs));
  *response->mutable_job() = submitted.job;
  response->set_deduplicated(submitted.deduplicated);
  return grpc::Status::OK;
}

grpc::Status KilnService::HandleProfile(const Principal& caller,
                                        const v1::SubmitProfileRequest& request,
                                        v1::SubmitResponse* response) {
  v1::ArtifactManifest manifest;
  v1::Task task;
  const std::string& client = caller.name;
  if (Deduplicated(client, request.idempotency_key(), response)) return grpc::Status::OK;
  const v1::ProfileOptions& o = request.options();
  if (o.warmup() < 0 || o.number() < 0 || o.repeat() < 0 || o.min_repeat_ms() < 0 ||
      o.cooldown_ms() < 0 || o.repeat() > 10000) {
    return Invalid(
        "options: warmup, number, min_repeat_ms and cooldown_ms must be >= 0, "
        "repeat in [0, 10000]");
  }
  // A shared device's time: one client's profile may not hold it for long.
  const JobManagerOptions& limits = ctx_->jobs->options();
  if (o.min_repeat_ms() > limits.max_min_repeat_ms || o.cooldown_ms() > limits.max_cooldown_ms) {
    return Invalid(absl::StrCat("options: min_repeat_ms is at most ", limits.max_min_repeat_ms,
                                " and cooldown_ms at most ", limits.max_cooldown_ms,
                                " on this server (--max-min-repeat-ms, --max-cooldown-ms)"));
  }
  v1::Device device;
  grpc::Status s = ResolveDevice(request.device_key(), request.device_selector(), caller, &device);
  if (s.ok()) s = PrepareTask(request.artifact(), caller, &manifest, &task);
  if (!s.ok()) return s;
  std::string function = o.function().empty() ? "main" : o.function();
  if (runtime::FindEntryFunction(manifest, function) == nullptr) {
    return Invalid(absl::StrCat("the artifact has no function '", function, "'"));
  }
  task.set_kind(v1::JOB_KIND_PROFILE);
  *task.mutable_profile() = o;
  task.mutable_profile()->set_function(function);
  return EnqueueTask(client, request.idempotency_key(), device.key(), request.deadline_ms(),
                     std::move(task), response);
}

grpc::Status KilnService::HandleInference(const Principal& caller,
                                          const v1::SubmitInferenceRequest& request,
                                          v1::SubmitResponse* response) {
  v1::ArtifactManifest manifest;
  v1::Task task;
  const std::string& client = caller.name;
  if (Deduplicated(client, request.idempotency_key(), response)) return grpc::Status::OK;
  v1::Device device;
  grpc::Status s = ResolveDevice(request.device_key(), request.device_selector(), caller, &device);
  if (s.ok()) s = PrepareTask(request.artifact(), caller, &manifest, &task);
  if (!s.ok()) return s;
  std::string function = request.function().empty() ? "main" : request.function();
  const v1::EntryFunction* entry = runtime::FindEntryFunction(manifest, function);
  if (entry == nullptr)
    return Invalid(absl::StrCat("the artifact has no function '", function, "'"));
  if (absl::Status bad = CheckInputs(*entry, request.inputs()); !bad.ok()) return ToGrpc(bad);
  task.set_kind(v1::JOB_KIND_INFERENCE);
  task.set_function(function);
  *task.mutable_inputs() = request.inputs();
  return EnqueueTask(client, request.idempotency_key(), device.key(), request.deadline_ms(),
                     std::move(task), response, ExpectedOutputs(entry->result()));
}

grpc::Status KilnService::HandleTune(const Principal& caller, const v1::SubmitTuneRequest& request,
                                     v1::SubmitResponse* response) {
  const std::string& client = caller.name;
  if (Deduplicated(client, request.idempotency_key(), response)) return grpc::Status::OK;
  if (grpc::Status s = CheckModule(request.module()); !s.ok()) return s;
  if (request.device_key().empty() && request.device_selector().empty()) {
    return Invalid("device_key: required (the agents measure)");
  }
  const int max_trials = ctx_->jobs->options().max_tune_trials;
  if (!std::isfinite(request.budget_s()) || request.budget_s() < 0) {
    return Invalid(absl::StrCat("budget_s: ", request.budget_s(), " is not a number of seconds"));
  }
  // With a time budget, no trial count means as many as the server allows.
  const bool trials_from_budget = request.budget_s() > 0 && request.trials() == 0;
  if (!trials_from_budget && (request.trials() <= 0 || request.trials() > max_trials)) {
    return Invalid(absl::StrCat("trials: ", request.trials(), " is not in [1, ", max_trials,
                                "] (this server's --max-tune-trials)"));
  }
  if (request.max_trials_per_task() < 0) return Invalid("max_trials_per_task: must be >= 0");
  // A tune may wait for an agent of a key none has registered yet (for its deadline), and
  // then compiles for this server's CPU unless told otherwise.
  v1::Device device;
  device.set_key(request.device_key());
  if (!request.device_key().empty() && !caller.MayUse(request.device_key())) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("unknown device key '", request.device_key(), "'"));
  }
  if (grpc::Status s =
          ResolveDevice(request.device_key(), request.device_selector(), caller, &device);
      !s.ok() &&
      !(s.error_code() == grpc::StatusCode::NOT_FOUND && request.device_selector().empty())) {
    return s;
  }
  std::string target = request.target();
  if (target.empty()) {
    target = device.has_attributes() ? TargetForDevice(device.attributes(), ServerHost()) : "llvm";
  }
  if (grpc::Status s = CheckTarget(target); !s.ok()) return s;
  if (absl::Status s = ctx_->jobs->Admit(client); !s.ok()) return ToGrpc(s);
  v1::Job job;
  job.set_kind(v1::JOB_KIND_TUNE);
  job.set_client(client);
  job.set_idempotency_key(request.idempotency_key());
  job.set_target(target);
  job.set_device_key(device.key());
  job.set_deadline_ms(ctx_->jobs->ClampDeadline(request.deadline_ms()));
  job.set_module_name(request.module().name().empty() ? DefaultModuleName(request.module())
                                                      : request.module().name());
  // The limits alone (a copy of the request would copy its module, up to the message limit).
  v1::SubmitTuneRequest limits;
  limits.set_trials(trials_from_budget ? max_trials : request.trials());
  limits.set_max_trials_per_task(request.max_trials_per_task());
  limits.set_seed(request.seed());
  limits.set_budget_s(request.budget_s());
  Submitted submitted =
      ctx_->jobs->EnqueueTune(std::move(job), request.module(), limits, RecordsOwner(caller));
  *response->mutable_job() = submitted.job;
  response->set_deduplicated(submitted.deduplicated);
  return grpc::Status::OK;
}

grpc::Status KilnService::HandleQuantize(const Principal& caller,
                                         const v1::SubmitQuantizeRequest& request,
                                         v1::SubmitResponse* response) {
  const std::string& client = caller.name;
  if (Deduplicated(client, request.idempotency_key(), response)) return grpc::Status::OK;
  // What can be checked without parsing the model (kilnd never does): its form, the samples'
  // presence, the method. Each sample is checked against the model's inputs in the worker.
  if (grpc::Status s = CheckModule(request.model()); !s.ok()) return s;
  if (request.model().form_case() != v1::ModuleSource::kOnnx) {
    return Invalid("model: quantize takes an ONNX model (ModuleSource.onnx)");
  }
  if (request.calibration().empty()) {
    return Invalid("calibration: no samples (give at least one input to calibrate on)");
  }
  for (const auto* samples : {&request.calibration(), &request.eval()}) {
    for (int i = 0; i < samples->size(); ++i) {
      if ((*samples)[i].inputs().empty()) {
        return Invalid(absl::StrCat(samples == &request.eval() ? "eval" : "calibration", " sample ",
                                    i, ": no tensors"));
      }
    }
  }
  if (!request.method().empty()) {
    if (absl::Status s = quantize::ParseCalibrationMethod(request.method()).status(); !s.ok())
      return ToGrpc(s);
  }
  if (request.percentile() != 0) {  // 0: the default
    if (absl::Status s = quantize::CheckPercentile(request.percentile()); !s.ok()) return ToGrpc(s);
  }
  std::string target;
  v1::Device device;
  if (grpc::Status s = BuildTarget(request.target(), request.device_key(),
                                   request.device_selector(), caller, &device, &target);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ctx_->jobs->Admit(client); !s.ok()) return ToGrpc(s);
  v1::Job job;
  job.set_kind(v1::JOB_KIND_QUANTIZE);
  job.set_client(client);
  job.set_idempotency_key(request.idempotency_key());
  job.set_target(target);
  job.set_device_key(device.key());
  job.set_deadline_ms(ctx_->jobs->ClampDeadline(request.deadline_ms()));
  job.set_module_name(request.model().name().empty() ? "model.onnx" : request.model().name());
  Submitted submitted = ctx_->jobs->EnqueueQuantize(std::move(job), request);
  *response->mutable_job() = submitted.job;
  response->set_deduplicated(submitted.deduplicated);
  return grpc::Status::OK;
}

grpc::Status KilnService::GetJob(grpc::ServerContext* context, const v1::GetJobRequest* request,
                                 v1::Job* response) {
  Principal caller;
  if (grpc::Status s = Authorize(*ctx_->Auth(), *context, Role::kClient, &caller); !s.ok())
    return s;
  if (grpc::Status s = StringsWithin(*request, ctx_->max_string_bytes); !s.ok()) return s;
  absl::StatusOr<v1::Job> job = OwnJob(caller, request->job_id());
  if (!job.ok()) return ToGrpc(job.status());
  *response = *job;
  OutputsForTheWire(response);
  // Said, not hidden: a job whose artifact was evicted since cannot be downloaded or run again.
  if (job->state() == v1::JOB_STATE_SUCCEEDED && !job->artifact_digest().empty()) {
    absl::StatusOr<std::optional<ArtifactRecord>> stored =
        ctx_->store->FindArtifact(job->artifact_digest());
    response->set_artifact_evicted(stored.ok() && !stored->has_value());
  }
  return grpc::Status::OK;
}

namespace {

// One WatchJob stream: the job manager pushes events (under its lock, so Push only queues),
// the reactor writes them one at a time and finishes after the terminal one. No thread waits.
class WatchReactor final : public grpc::ServerWriteReactor<v1::JobEvent> {
 public:
  explicit WatchReactor(JobManager* jobs) : jobs_(jobs) {}

  void Begin(const std::string& id) {
    absl::StatusOr<uint64_t> subscription =
        jobs_->Subscribe(id, [this](const v1::JobEvent& e) { Push(e); });
    std::lock_guard<std::mutex> lock(mu_);
    if (!subscription.ok()) {
      FinishLocked(ToGrpc(subscription.status()));
      return;
    }
    subscription_ = *subscription;
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {
      FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "the watcher went away"));
    } else if (Terminal(current_.state()) || cancelled_) {
      FinishLocked(cancelled_ ? grpc::Status(grpc::StatusCode::CANCELLED, "cancelled")
                              : grpc::Status::OK);
    } else if (!pending_.empty()) {
      WriteNextLocked();
    }
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    if (!writing_) FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
  }

  void OnDone() override {
    if (subscription_ != 0) jobs_->Unsubscribe(subscription_);
    delete this;
  }

 private:
  static bool Terminal(v1::JobState s) {
    return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED ||
           s == v1::JOB_STATE_CANCELLED;
  }

  void Push(const v1::JobEvent& e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    pending_.push_back(e);
    if (!writing_) WriteNextLocked();
  }

  void WriteNextLocked() {
    current_ = std::move(pending_.front());
    pending_.pop_front();
    OutputsForTheWire(current_.mutable_job());
    writing_ = true;
    StartWrite(&current_);
  }

  void FinishLocked(const grpc::Status& status) {
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  JobManager* jobs_;
  std::mutex mu_;
  std::deque<v1::JobEvent> pending_;
  v1::JobEvent current_;  // the one being written
  bool writing_ = false, cancelled_ = false, finished_ = false;
  uint64_t subscription_ = 0;
};

}  // namespace

grpc::ServerWriteReactor<v1::JobEvent>* KilnService::WatchJob(grpc::CallbackServerContext* context,
                                                              const v1::WatchJobRequest* request) {
  auto* reactor = new WatchReactor(ctx_->jobs);
  Principal caller;
  grpc::Status s = Authorize(*ctx_->Auth(), *context, Role::kClient, &caller);
  if (s.ok()) s = StringsWithin(*request, ctx_->max_string_bytes);
  if (s.ok()) {
    if (absl::StatusOr<v1::Job> job = OwnJob(caller, request->job_id()); !job.ok()) {
      s = ToGrpc(job.status());
    }
  }
  if (!s.ok()) {
    reactor->Finish(s);
    return reactor;
  }
  reactor->Begin(request->job_id());
  return reactor;
}

grpc::Status KilnService::CancelJob(grpc::ServerContext* context,
                                    const v1::CancelJobRequest* request, v1::Job* response) {
  Principal caller;
  if (grpc::Status s = Authorize(*ctx_->Auth(), *context, Role::kClient, &caller); !s.ok())
    return s;
  if (grpc::Status s = StringsWithin(*request, ctx_->max_string_bytes); !s.ok()) return s;
  if (absl::StatusOr<v1::Job> owned = OwnJob(caller, request->job_id()); !owned.ok()) {
    return ToGrpc(owned.status());
  }
  absl::StatusOr<v1::Job> job = ctx_->jobs->Cancel(request->job_id(), request->reason());
  if (!job.ok()) return ToGrpc(job.status());
  *response = *job;
  OutputsForTheWire(response);
  return grpc::Status::OK;
}

grpc::Status KilnService::ListJobs(grpc::ServerContext* context, const v1::ListJobsRequest* request,
                                   v1::ListJobsResponse* response) {
  Principal caller;
  if (grpc::Status s = Authorize(*ctx_->Auth(), *context, Role::kClient, &caller); !s.ok())
    return s;
  if (grpc::Status s = StringsWithin(*request, ctx_->max_string_bytes); !s.ok()) return s;
  const std::string& client = caller.name;
  int limit = request->limit() > 0 ? request->limit() : 100;
  for (v1::Job& job : ctx_->jobs->List(request->state(), limit, caller.admin ? "" : client)) {
    // A listing names outputs (names, dtypes, shapes); their data comes with GetJob (where it
    // is small) or DownloadOutputs, one job at a time: no listing grows with what jobs computed.
    OutputsForTheWire(&job, /*inline_bytes=*/0);
    *response->add_jobs() = std::move(job);
  }
  response->set_retention_s(ctx_->jobs->options().job_retention_ms / 1000);
  response->set_max_finished_jobs(ctx_->jobs->options().max_finished_jobs);
  return grpc::Status::OK;
}

grpc::Status KilnService::DownloadArtifact(grpc::ServerContext* context,
                                           const v1::DownloadArtifactRequest* request,
                                           grpc::ServerWriter<v1::ArtifactChunk>* writer) {
  Principal caller;
  if (grpc::Status s = Authorize(*ctx_->Auth(), *context, Role::kClient, &caller); !s.ok())
    return s;
  if (grpc::Status s = StringsWithin(*request, ctx_->max_string_bytes); !s.ok()) return s;
  const std::string& client = caller.name;
  if (!caller.admin && !ctx_->jobs->HasArtifact(client, request->digest())) {
    return NoArtifact(request->digest());
  }
  absl::StatusOr<StreamSlots::Slot> slot = ctx_->streams->Acquire(client);
  if (!slot.ok()) return ToGrpc(slot.status());
  return StreamArtifact(ctx_->cache, request->digest(), writer);
}

grpc::Status KilnService::DownloadOutputs(grpc::ServerContext* context,
                                          const v1::DownloadOutputsRequest* request,
                                          grpc::ServerWriter<v1::OutputChunk>* writer) {
  Principal caller;
  if (grpc::Status s = Authorize(*ctx_->Auth(), *context, Role::kClient, &caller); !s.ok())
    return s;
  if (grpc::Status s = StringsWithin(*request, ctx_->max_string_bytes); !s.ok()) return s;
  absl::StatusOr<StreamSlots::Slot> slot = ctx_->streams->Acquire(caller.name);
  if (!slot.ok()) return ToGrpc(slot.status());
  absl::StatusOr<v1::Job> job = OwnJob(caller, request->job_id());
  if (!job.ok()) return ToGrpc(job.status());
  if (job->state() != v1::JOB_STATE_SUCCEEDED ||
      (job->kind() != v1::JOB_KIND_INFERENCE && job->kind() != v1::JOB_KIND_QUANTIZE)) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("job '", job->id(), "' is no succeeded inference or quantize"));
  }
  if (job->kind() == v1::JOB_KIND_QUANTIZE) {
    // The QDQ model, as one uint8 tensor.
    v1::TensorValue* model = job->mutable_inference()->add_outputs();
    model->set_name("quantized_model");
    model->set_dtype("uint8");
    model->add_shape(static_cast<int64_t>(job->quantize().model().size()));
    model->set_data(std::move(*job->mutable_quantize()->mutable_model()));
  }
  for (int i = 0; i < job->inference().outputs_size(); ++i) {
    const v1::TensorValue& t = job->inference().outputs(i);
    const std::string& data = t.data();
    for (size_t offset = 0; offset == 0 || offset < data.size(); offset += kChunkBytes) {
      v1::OutputChunk chunk;
      chunk.set_index(i);
      chunk.set_offset(static_cast<int64_t>(offset));
      if (offset == 0) {
        *chunk.mutable_tensor() = t;
        chunk.mutable_tensor()->clear_data();
        chunk.set_total_size(static_cast<int64_t>(data.size()));
      }
      chunk.mutable_tensor()->set_data(data.substr(offset, kChunkBytes));
      if (!writer->Write(chunk))
        return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
    }
  }
  return grpc::Status::OK;
}

grpc::Status KilnService::ListDevices(grpc::ServerContext* context,
                                      const v1::ListDevicesRequest* /*request*/,
                                      v1::ListDevicesResponse* response) {
  Principal caller;
  if (grpc::Status s = Authorize(*ctx_->Auth(), *context, Role::kClient, &caller); !s.ok())
    return s;
  for (v1::Device& d : UsableDevices(*ctx_->jobs, caller)) *response->add_devices() = std::move(d);
  return grpc::Status::OK;
}

}  // namespace kiln::server
