// The client API (kiln.v1.Kiln): submissions of compile, profile, inference, tune and quantize
// jobs, reads, watches, cancels, artifact downloads and devices. WatchJob runs on gRPC's callback
// API (a reactor per stream, no thread per watcher); the other methods are synchronous.
#ifndef KILN_SERVER_CLIENT_SERVICE_H_
#define KILN_SERVER_CLIENT_SERVICE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "proto/kiln/v1/service.grpc.pb.h"
#include "runtime/format/artifact.pb.h"
#include "server/service_edge.h"

namespace kiln::server {

// The submits are streamed unary, their handlers reading the body once they hold a receive slot
// (ReceiveSlots says why); WatchJob is a callback method; the rest are plain synchronous ones.
using KilnServiceBase = kiln::v1::Kiln::WithStreamedUnaryMethod_SubmitCompile<
    kiln::v1::Kiln::WithStreamedUnaryMethod_SubmitProfile<
        kiln::v1::Kiln::WithStreamedUnaryMethod_SubmitInference<
            kiln::v1::Kiln::WithStreamedUnaryMethod_SubmitTune<
                kiln::v1::Kiln::WithStreamedUnaryMethod_SubmitQuantize<
                    kiln::v1::Kiln::WithCallbackMethod_WatchJob<kiln::v1::Kiln::Service>>>>>>;

class KilnService final : public KilnServiceBase {
 public:
  explicit KilnService(ServiceContext* ctx) : ctx_(ctx) {}

  grpc::Status GetServerInfo(grpc::ServerContext* context,
                             const kiln::v1::GetServerInfoRequest* request,
                             kiln::v1::ServerInfo* response) override;
  grpc::Status StreamedSubmitCompile(
      grpc::ServerContext* context,
      grpc::ServerUnaryStreamer<kiln::v1::SubmitCompileRequest, kiln::v1::SubmitResponse>* streamer)
      override;
  grpc::Status StreamedSubmitProfile(
      grpc::ServerContext* context,
      grpc::ServerUnaryStreamer<kiln::v1::SubmitProfileRequest, kiln::v1::SubmitResponse>* streamer)
      override;
  grpc::Status StreamedSubmitInference(
      grpc::ServerContext* context,
      grpc::ServerUnaryStreamer<kiln::v1::SubmitInferenceRequest, kiln::v1::SubmitResponse>*
          streamer) override;
  grpc::Status StreamedSubmitTune(
      grpc::ServerContext* context,
      grpc::ServerUnaryStreamer<kiln::v1::SubmitTuneRequest, kiln::v1::SubmitResponse>* streamer)
      override;
  grpc::Status StreamedSubmitQuantize(
      grpc::ServerContext* context,
      grpc::ServerUnaryStreamer<kiln::v1::SubmitQuantizeRequest, kiln::v1::SubmitResponse>*
          streamer) override;
  grpc::Status GetJob(grpc::ServerContext* context, const kiln::v1::GetJobRequest* request,
                      kiln::v1::Job* response) override;
  grpc::ServerWriteReactor<kiln::v1::JobEvent>* WatchJob(
      grpc::CallbackServerContext* context, const kiln::v1::WatchJobRequest* request) override;
  grpc::Status CancelJob(grpc::ServerContext* context, const kiln::v1::CancelJobRequest* request,
                         kiln::v1::Job* response) override;
  grpc::Status ListJobs(grpc::ServerContext* context, const kiln::v1::ListJobsRequest* request,
                        kiln::v1::ListJobsResponse* response) override;
  grpc::Status DownloadArtifact(grpc::ServerContext* context,
                                const kiln::v1::DownloadArtifactRequest* request,
                                grpc::ServerWriter<kiln::v1::ArtifactChunk>* writer) override;
  grpc::Status DownloadOutputs(grpc::ServerContext* context,
                               const kiln::v1::DownloadOutputsRequest* request,
                               grpc::ServerWriter<kiln::v1::OutputChunk>* writer) override;
  grpc::Status ListDevices(grpc::ServerContext* context,
                           const kiln::v1::ListDevicesRequest* request,
                           kiln::v1::ListDevicesResponse* response) override;

 private:
  // A submit's way in: the caller authorized, its body read while it holds a receive slot and
  // admitted (AdmitSubmit), then `handle`d, and the answer written.
  template <typename Request>
  using SubmitHandler = grpc::Status (KilnService::*)(const Principal&, const Request&,
                                                      kiln::v1::SubmitResponse*);
  template <typename Request>
  grpc::Status ReceiveAndSubmit(
      grpc::ServerContext* context,
      grpc::ServerUnaryStreamer<Request, kiln::v1::SubmitResponse>* streamer, const char* method,
      SubmitHandler<Request> handle);
  grpc::Status HandleCompile(const Principal& caller, const kiln::v1::SubmitCompileRequest& request,
                             kiln::v1::SubmitResponse* response);
  grpc::Status HandleProfile(const Principal& caller, const kiln::v1::SubmitProfileRequest& request,
                             kiln::v1::SubmitResponse* response);
  grpc::Status HandleInference(const Principal& caller,
                               const kiln::v1::SubmitInferenceRequest& request,
                               kiln::v1::SubmitResponse* response);
  grpc::Status HandleTune(const Principal& caller, const kiln::v1::SubmitTuneRequest& request,
                          kiln::v1::SubmitResponse* response);
  grpc::Status HandleQuantize(const Principal& caller,
                              const kiln::v1::SubmitQuantizeRequest& request,
                              kiln::v1::SubmitResponse* response);
  // What every submit checks once its body is read: room in the budget of large requests
  // (`*inflight`, held while the handler runs), its string fields and its deadline.
  grpc::Status AdmitSubmit(const google::protobuf::Message& request, int64_t deadline_ms,
                           std::optional<InflightBytes::Reservation>* inflight);
  // The job `id` if the caller may see it; NotFound for another principal's job.
  absl::StatusOr<kiln::v1::Job> OwnJob(const Principal& caller, const std::string& id);
  // A submitted module within the size limit and given in some form.
  grpc::Status CheckModule(const kiln::v1::ModuleSource& module) const;
  // A target string LLVM's target parser accepts.
  grpc::Status CheckTarget(const std::string& target) const;
  // The device a request names by key or by selector (not both), among those `caller` may use:
  // NotFound when no such registered device is, or matches, it.
  grpc::Status ResolveDevice(const std::string& key, const std::string& selector,
                             const Principal& caller, kiln::v1::Device* device) const;
  // The target a compile or quantize builds for: `given` when set, else the device's (by key or
  // selector, resolved into `*device`), else this server's ("llvm"); one LLVM accepts.
  grpc::Status BuildTarget(const std::string& given, const std::string& key,
                           const std::string& selector, const Principal& caller,
                           kiln::v1::Device* device, std::string* target) const;
  // Shared by profile and inference (the caller is authorized, the device resolved): the
  // artifact, checked (a digest must be one of the caller's artifacts), and stored.
  grpc::Status PrepareTask(const kiln::v1::ArtifactRef& ref, const Principal& caller,
                           kiln::v1::ArtifactManifest* manifest, kiln::v1::Task* task);
  // True (and the earlier job in `response`) when `key` already names a job of `client`.
  bool Deduplicated(const std::string& client, const std::string& key,
                    kiln::v1::SubmitResponse* response);
  // A checked profile or inference task, as a queued job.
  grpc::Status EnqueueTask(const std::string& client, const std::string& key,
                           const std::string& device_key, int64_t deadline_ms, kiln::v1::Task task,
                           kiln::v1::SubmitResponse* response,
                           std::vector<kiln::v1::TensorValue> expected_outputs = {});
  ServiceContext* ctx_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_CLIENT_SERVICE_H_
