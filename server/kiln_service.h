// The gRPC edge: the client API (kiln.v1.Kiln) and the agent API (kiln.v1.AgentService). Each
// handler authorizes the caller, checks the request (sizes, forms, names) and maps the
// components' absl::Status errors to gRPC codes. Nothing is stored for a refused request.
#ifndef KILN_SERVER_KILN_SERVICE_H_
#define KILN_SERVER_KILN_SERVICE_H_

#include <cstdint>
#include <memory>

#include "proto/kiln/v1/agent.grpc.pb.h"
#include "proto/kiln/v1/service.grpc.pb.h"
#include "runtime/format/artifact.pb.h"
#include "server/artifact_cache.h"
#include "server/auth.h"
#include "server/jobs/job_manager.h"
#include "server/store.h"

namespace kiln::server {

// What both services share.
struct ServiceContext {
  // Swapped whole when the token files are reloaded (SIGHUP); handlers take a snapshot.
  std::shared_ptr<const AuthConfig> auth = std::make_shared<AuthConfig>();
  std::shared_ptr<const AuthConfig> Auth() const { return std::atomic_load(&auth); }
  Store* store = nullptr;
  ArtifactCache* cache = nullptr;
  JobManager* jobs = nullptr;
  int64_t max_module_bytes = 32 << 20;
  int64_t max_string_bytes = 4096;  // any string field of a request (ServerOptions)
};

// WatchJob runs on gRPC's callback API (a reactor per stream, no thread per watcher); the other
// methods are synchronous.
class KilnService final
    : public kiln::v1::Kiln::WithCallbackMethod_WatchJob<kiln::v1::Kiln::Service> {
 public:
  explicit KilnService(ServiceContext* ctx) : ctx_(ctx) {}

  grpc::Status GetServerInfo(grpc::ServerContext* context,
                             const kiln::v1::GetServerInfoRequest* request,
                             kiln::v1::ServerInfo* response) override;
  grpc::Status SubmitCompile(grpc::ServerContext* context,
                             const kiln::v1::SubmitCompileRequest* request,
                             kiln::v1::SubmitResponse* response) override;
  grpc::Status SubmitProfile(grpc::ServerContext* context,
                             const kiln::v1::SubmitProfileRequest* request,
                             kiln::v1::SubmitResponse* response) override;
  grpc::Status SubmitInference(grpc::ServerContext* context,
                               const kiln::v1::SubmitInferenceRequest* request,
                               kiln::v1::SubmitResponse* response) override;
  grpc::Status SubmitTune(grpc::ServerContext* context, const kiln::v1::SubmitTuneRequest* request,
                          kiln::v1::SubmitResponse* response) override;
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
  grpc::Status ListDevices(grpc::ServerContext* context,
                           const kiln::v1::ListDevicesRequest* request,
                           kiln::v1::ListDevicesResponse* response) override;

 private:
  // The job `id` if the caller may see it; NotFound for another principal's job.
  absl::StatusOr<kiln::v1::Job> OwnJob(const Principal& caller, const std::string& id);
  // A submitted module within the size limit and given in some form.
  grpc::Status CheckModule(const kiln::v1::ModuleSource& module) const;
  // A target string LLVM's target parser accepts.
  grpc::Status CheckTarget(const std::string& target) const;
  // The device a request names by key or by selector (not both): NotFound when no registered
  // device is, or matches, it.
  grpc::Status ResolveDevice(const std::string& key, const std::string& selector,
                             kiln::v1::Device* device) const;
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
                           kiln::v1::SubmitResponse* response);
  ServiceContext* ctx_;
};

// Connect runs on gRPC's callback API (a reactor per agent stream, no thread per agent).
class AgentServiceImpl final
    : public kiln::v1::AgentService::WithCallbackMethod_Connect<kiln::v1::AgentService::Service> {
 public:
  explicit AgentServiceImpl(ServiceContext* ctx) : ctx_(ctx) {}

  grpc::ServerBidiReactor<kiln::v1::AgentMessage, kiln::v1::ServerMessage>* Connect(
      grpc::CallbackServerContext* context) override;
  grpc::Status FetchArtifact(grpc::ServerContext* context,
                             const kiln::v1::FetchArtifactRequest* request,
                             grpc::ServerWriter<kiln::v1::ArtifactChunk>* writer) override;

 private:
  ServiceContext* ctx_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_KILN_SERVICE_H_
