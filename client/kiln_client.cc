#include "client/kiln_client.h"

#include <chrono>
#include <random>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runtime/artifact.h"

namespace kiln::client {
namespace {

absl::Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

// Calls `rpc` until it answers something other than Unavailable (a connection lost during the
// call), at most six times, 100 ms apart and doubling. Submits carry an idempotency key, so a
// retry never makes a second job.
template <typename Response, typename Rpc>
absl::StatusOr<Response> WithRetries(const Rpc& rpc) {
  grpc::Status status;
  int backoff_ms = 100;
  for (int attempt = 0; attempt < 6; ++attempt) {
    if (attempt > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
      backoff_ms *= 2;
    }
    Response response;
    status = rpc(&response);
    if (status.ok()) return response;
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE) break;
  }
  return FromGrpc(status);
}

}  // namespace

absl::StatusOr<v1::ModuleSource> ModuleSourceFromFile(const std::string& path) {
  absl::StatusOr<std::string> bytes = runtime::ReadTextFile(path);
  if (!bytes.ok()) return bytes.status();
  v1::ModuleSource source;
  source.set_name(path.substr(path.rfind('/') + 1));
  if (absl::EndsWith(path, ".py")) {
    source.set_tvmscript(*bytes);
  } else if (absl::EndsWith(path, ".onnx")) {
    source.set_onnx(*bytes);
  } else if (absl::EndsWith(path, ".pb")) {
    source.set_ir_proto(*bytes);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected TVMScript (.py), protobuf IR (.pb) or ONNX (.onnx)"));
  }
  return source;
}

std::string NewIdempotencyKey() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrCat(absl::Hex(rng(), absl::kZeroPad16), absl::Hex(rng(), absl::kZeroPad16));
}

absl::StatusOr<std::unique_ptr<KilnClient>> KilnClient::Connect(runtime::ChannelOptions options) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = runtime::MakeChannel(options);
  if (!channel.ok()) return channel.status();
  std::unique_ptr<KilnClient> client(new KilnClient());
  client->options_ = std::move(options);
  client->stub_ = v1::Kiln::NewStub(*channel);
  return client;
}

void KilnClient::Prepare(grpc::ClientContext* context) const {
  runtime::AddToken(options_, context);
  context->set_wait_for_ready(false);
}

void KilnClient::PrepareSubmit(grpc::ClientContext* context) const {
  runtime::AddToken(options_, context);
  // A submit waits through a daemon's restart (gRPC reconnects on its own schedule) for up to
  // kSubmitWaitSeconds; its idempotency key makes any retry after that safe.
  context->set_wait_for_ready(true);
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(kSubmitWaitSeconds));
}

absl::StatusOr<v1::ServerInfo> KilnClient::ServerInfo(int timeout_seconds) {
  grpc::ClientContext context;
  Prepare(&context);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(timeout_seconds));
  v1::ServerInfo info;
  absl::Status s = FromGrpc(stub_->GetServerInfo(&context, v1::GetServerInfoRequest(), &info));
  if (!s.ok()) return s;
  return info;
}

absl::StatusOr<v1::SubmitResponse> KilnClient::SubmitCompile(v1::SubmitCompileRequest request) {
  if (request.idempotency_key().empty()) request.set_idempotency_key(NewIdempotencyKey());
  return WithRetries<v1::SubmitResponse>([&](v1::SubmitResponse* response) {
    grpc::ClientContext context;
    PrepareSubmit(&context);
    return stub_->SubmitCompile(&context, request, response);
  });
}

absl::StatusOr<v1::SubmitResponse> KilnClient::SubmitProfile(v1::SubmitProfileRequest request) {
  if (request.idempotency_key().empty()) request.set_idempotency_key(NewIdempotencyKey());
  return WithRetries<v1::SubmitResponse>([&](v1::SubmitResponse* response) {
    grpc::ClientContext context;
    PrepareSubmit(&context);
    return stub_->SubmitProfile(&context, request, response);
  });
}

absl::StatusOr<v1::SubmitResponse> KilnClient::SubmitInference(v1::SubmitInferenceRequest request) {
  if (request.idempotency_key().empty()) request.set_idempotency_key(NewIdempotencyKey());
  return WithRetries<v1::SubmitResponse>([&](v1::SubmitResponse* response) {
    grpc::ClientContext context;
    PrepareSubmit(&context);
    return stub_->SubmitInference(&context, request, response);
  });
}

absl::StatusOr<v1::SubmitResponse> KilnClient::SubmitTune(v1::SubmitTuneRequest request) {
  if (request.idempotency_key().empty()) request.set_idempotency_key(NewIdempotencyKey());
  return WithRetries<v1::SubmitResponse>([&](v1::SubmitResponse* response) {
    grpc::ClientContext context;
    PrepareSubmit(&context);
    return stub_->SubmitTune(&context, request, response);
  });
}

absl::StatusOr<v1::SubmitResponse> KilnClient::SubmitQuantize(v1::SubmitQuantizeRequest request) {
  if (request.idempotency_key().empty()) request.set_idempotency_key(NewIdempotencyKey());
  return WithRetries<v1::SubmitResponse>([&](v1::SubmitResponse* response) {
    grpc::ClientContext context;
    PrepareSubmit(&context);
    return stub_->SubmitQuantize(&context, request, response);
  });
}

absl::StatusOr<v1::Job> KilnClient::Wait(const std::string& job_id, const EventFn& on_event) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::WatchJobRequest request;
  request.set_job_id(job_id);
  std::unique_ptr<grpc::ClientReader<v1::JobEvent>> reader = stub_->WatchJob(&context, request);
  v1::JobEvent event;
  v1::Job last;
  while (reader->Read(&event)) {
    if (on_event) on_event(event);
    last = event.job();
  }
  absl::Status s = FromGrpc(reader->Finish());
  if (!s.ok()) return s;
  if (last.id().empty()) return absl::UnavailableError("the watch ended without an event");
  return last;
}

absl::StatusOr<v1::Job> KilnClient::Compile(v1::SubmitCompileRequest request,
                                            const EventFn& on_event) {
  absl::StatusOr<v1::SubmitResponse> submitted = SubmitCompile(std::move(request));
  if (!submitted.ok()) return submitted.status();
  return Wait(submitted->job().id(), on_event);
}

absl::StatusOr<v1::Job> KilnClient::GetJob(const std::string& job_id) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::GetJobRequest request;
  request.set_job_id(job_id);
  v1::Job job;
  absl::Status s = FromGrpc(stub_->GetJob(&context, request, &job));
  if (!s.ok()) return s;
  return job;
}

absl::StatusOr<v1::Job> KilnClient::Cancel(const std::string& job_id, const std::string& reason) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::CancelJobRequest request;
  request.set_job_id(job_id);
  request.set_reason(reason);
  v1::Job job;
  absl::Status s = FromGrpc(stub_->CancelJob(&context, request, &job));
  if (!s.ok()) return s;
  return job;
}

absl::StatusOr<v1::ListJobsResponse> KilnClient::ListJobsPage(v1::JobState state, int limit) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::ListJobsRequest request;
  request.set_state(state);
  request.set_limit(limit);
  v1::ListJobsResponse response;
  absl::Status s = FromGrpc(stub_->ListJobs(&context, request, &response));
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<std::vector<v1::Job>> KilnClient::ListJobs(v1::JobState state, int limit) {
  absl::StatusOr<v1::ListJobsResponse> response = ListJobsPage(state, limit);
  if (!response.ok()) return response.status();
  return std::vector<v1::Job>(response->jobs().begin(), response->jobs().end());
}

absl::StatusOr<std::vector<v1::Device>> KilnClient::ListDevices() {
  grpc::ClientContext context;
  Prepare(&context);
  v1::ListDevicesResponse response;
  absl::Status s = FromGrpc(stub_->ListDevices(&context, v1::ListDevicesRequest(), &response));
  if (!s.ok()) return s;
  return std::vector<v1::Device>(response.devices().begin(), response.devices().end());
}

absl::StatusOr<std::string> KilnClient::DownloadArtifact(const std::string& digest) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::DownloadArtifactRequest request;
  request.set_digest(digest);
  std::unique_ptr<grpc::ClientReader<v1::ArtifactChunk>> reader =
      stub_->DownloadArtifact(&context, request);
  std::string bytes;
  v1::ArtifactChunk chunk;
  while (reader->Read(&chunk)) {
    if (chunk.offset() == 0 && chunk.total_size() > 0) bytes.reserve(chunk.total_size());
    bytes += chunk.data();
  }
  absl::Status s = FromGrpc(reader->Finish());
  if (!s.ok()) return s;
  absl::StatusOr<v1::ArtifactProto> parsed = runtime::ParseArtifact(bytes, /*check_host=*/false);
  if (!parsed.ok()) return parsed.status();
  if (parsed->manifest().digest() != digest) {
    return absl::DataLossError(absl::StrCat("downloaded artifact has digest ",
                                            parsed->manifest().digest(), ", asked for ", digest));
  }
  return bytes;
}

absl::StatusOr<std::vector<v1::TensorValue>> KilnClient::DownloadOutputs(
    const std::string& job_id) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::DownloadOutputsRequest request;
  request.set_job_id(job_id);
  std::unique_ptr<grpc::ClientReader<v1::OutputChunk>> reader =
      stub_->DownloadOutputs(&context, request);
  std::vector<v1::TensorValue> outputs;
  std::vector<int64_t> sizes;  // each output's total_size, as its first piece says
  v1::OutputChunk chunk;
  while (reader->Read(&chunk)) {
    if (chunk.index() == static_cast<int>(outputs.size()) && chunk.offset() == 0) {
      outputs.push_back(chunk.tensor());
      sizes.push_back(chunk.total_size());
      continue;
    }
    if (outputs.empty() || chunk.index() != static_cast<int>(outputs.size()) - 1 ||
        chunk.offset() != static_cast<int64_t>(outputs.back().data().size())) {
      return absl::DataLossError("output pieces arrived out of order");
    }
    outputs.back().mutable_data()->append(chunk.tensor().data());
  }
  absl::Status s = FromGrpc(reader->Finish());
  if (!s.ok()) return s;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (static_cast<int64_t>(outputs[i].data().size()) != sizes[i]) {
      return absl::DataLossError(absl::StrCat("output ", i, ": ", outputs[i].data().size(), " of ",
                                              sizes[i], " bytes came"));
    }
  }
  return outputs;
}

absl::StatusOr<std::string> KilnClient::DownloadQuantizedModel(const v1::Job& job) {
  absl::StatusOr<std::vector<v1::TensorValue>> outputs = DownloadOutputs(job.id());
  if (!outputs.ok()) return outputs.status();
  if (outputs->size() != 1 || (*outputs)[0].name() != "quantized_model") {
    return absl::DataLossError(absl::StrCat("job '", job.id(), "' answered no quantized model"));
  }
  std::string model = std::move(*(*outputs)[0].mutable_data());
  if (runtime::Sha256Hex(model) != job.quantize().model_sha256()) {
    return absl::DataLossError(
        absl::StrCat("the quantized model of job '", job.id(), "' does not match its SHA-256"));
  }
  return model;
}

}  // namespace kiln::client
