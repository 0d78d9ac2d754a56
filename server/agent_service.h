// The agent API (kiln.v1.AgentService): each board's Connect stream (registration, heartbeats,
// tasks down, results up) on gRPC's callback API (a reactor per agent stream, no thread per
// agent), and FetchArtifact, which serves a session only the artifact of the task it was given.
#ifndef KILN_SERVER_AGENT_SERVICE_H_
#define KILN_SERVER_AGENT_SERVICE_H_

#include "proto/kiln/v1/agent.grpc.pb.h"
#include "server/service_edge.h"

namespace kiln::server {

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

#endif  // KILN_SERVER_AGENT_SERVICE_H_
