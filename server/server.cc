#include "server/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/strings/str_cat.h"
#include "server/kiln_service.h"

namespace kiln::server {

struct KilnServer::Services {
  KilnService kiln;
};

absl::StatusOr<std::unique_ptr<KilnServer>> KilnServer::Start(const ServerOptions& options) {
  // Both are process-wide switches that must be set before the builder runs.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  std::unique_ptr<KilnServer> server(new KilnServer());
  server->services_ = std::make_unique<Services>();

  grpc::ServerBuilder builder;
  // TLS and tokens come with the service issue; until then kilnd listens on loopback by default.
  builder.AddListeningPort(options.listen_address, grpc::InsecureServerCredentials(),
                           &server->port_);
  builder.RegisterService(&server->services_->kiln);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on '", options.listen_address, "'"));
  }
  return server;
}

KilnServer::~KilnServer() { Shutdown(); }

void KilnServer::Wait() { server_->Wait(); }

void KilnServer::Shutdown() {
  if (server_ != nullptr) server_->Shutdown();
}

}  // namespace kiln::server
