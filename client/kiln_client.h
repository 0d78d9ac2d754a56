// The C++ client library of kilnd: submit compile, profile, inference, tune and quantize jobs,
// follow them, list and cancel them, list devices and download artifacts. Errors come back as
// absl::Status with the server's gRPC code and message.
//
//   auto client = kiln::client::KilnClient::Connect({.address = "127.0.0.1:7077"});
//   v1::SubmitCompileRequest request;
//   *request.mutable_module() = *kiln::client::ModuleSourceFromFile("mlp.py");
//   auto job = (*client)->Compile(request);          // submits and waits
//   auto bytes = (*client)->DownloadArtifact(job->artifact_digest());
#ifndef KILN_CLIENT_KILN_CLIENT_H_
#define KILN_CLIENT_KILN_CLIENT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/kiln/v1/service.grpc.pb.h"
#include "runtime/agent/channel.h"

namespace kiln::client {

// A module file as the API takes it: TVMScript (.py), protobuf IR (.pb) or ONNX (.onnx).
absl::StatusOr<v1::ModuleSource> ModuleSourceFromFile(const std::string& path);

// A fresh random idempotency key.
std::string NewIdempotencyKey();

class KilnClient {
 public:
  // How long a submit waits for a daemon that is (re)starting before it gives up.
  static constexpr int kSubmitWaitSeconds = 5;

  using EventFn = std::function<void(const v1::JobEvent&)>;

  static absl::StatusOr<std::unique_ptr<KilnClient>> Connect(runtime::ChannelOptions options);

  absl::StatusOr<v1::ServerInfo> ServerInfo(int timeout_seconds = 10);

  // Submits are retried on Unavailable with the same idempotency key (one is made up when the
  // request has none), so a retry never runs a job twice.
  absl::StatusOr<v1::SubmitResponse> SubmitCompile(v1::SubmitCompileRequest request);
  absl::StatusOr<v1::SubmitResponse> SubmitProfile(v1::SubmitProfileRequest request);
  absl::StatusOr<v1::SubmitResponse> SubmitInference(v1::SubmitInferenceRequest request);
  absl::StatusOr<v1::SubmitResponse> SubmitTune(v1::SubmitTuneRequest request);
  absl::StatusOr<v1::SubmitResponse> SubmitQuantize(v1::SubmitQuantizeRequest request);

  // Follows the job until it is done and returns it as it ended; `on_event` sees every event.
  absl::StatusOr<v1::Job> Wait(const std::string& job_id, const EventFn& on_event = nullptr);
  // Submit + Wait.
  absl::StatusOr<v1::Job> Compile(v1::SubmitCompileRequest request,
                                  const EventFn& on_event = nullptr);

  absl::StatusOr<v1::Job> GetJob(const std::string& job_id);
  absl::StatusOr<v1::Job> Cancel(const std::string& job_id, const std::string& reason = "");
  absl::StatusOr<std::vector<v1::Job>> ListJobs(v1::JobState state = v1::JOB_STATE_UNSPECIFIED,
                                                int limit = 100);
  // The whole answer: the jobs and the server's retention of finished ones.
  absl::StatusOr<v1::ListJobsResponse> ListJobsPage(v1::JobState state, int limit);
  absl::StatusOr<std::vector<v1::Device>> ListDevices();
  // The artifact's bytes, checked against `digest` before they are returned.
  absl::StatusOr<std::string> DownloadArtifact(const std::string& digest);
  // A finished inference's outputs, downloaded in pieces (DownloadOutputs) and put together.
  absl::StatusOr<std::vector<v1::TensorValue>> DownloadOutputs(const std::string& job_id);
  // A finished quantize job's QDQ ONNX model, checked against the SHA-256 the job names.
  absl::StatusOr<std::string> DownloadQuantizedModel(const v1::Job& job);

  const runtime::ChannelOptions& options() const { return options_; }

 private:
  KilnClient() = default;
  void Prepare(grpc::ClientContext* context) const;
  // For submits: wait up to kSubmitWaitSeconds for a daemon that is (re)starting.
  void PrepareSubmit(grpc::ClientContext* context) const;

  runtime::ChannelOptions options_;
  std::unique_ptr<v1::Kiln::Stub> stub_;
};

}  // namespace kiln::client

#endif  // KILN_CLIENT_KILN_CLIENT_H_
