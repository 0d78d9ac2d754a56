// Assembles kilnd's gRPC server: the Kiln service, gRPC health checking and reflection.
#ifndef KILN_SERVER_SERVER_H_
#define KILN_SERVER_SERVER_H_

#include <grpcpp/server.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace kiln::server {

struct ServerOptions {
  // host:port to listen on; port 0 picks a free port (tests use 127.0.0.1:0).
  std::string listen_address = "127.0.0.1:7077";
};

class KilnServer {
 public:
  // Starts serving. Fails with Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<KilnServer>> Start(const ServerOptions& options);
  ~KilnServer();

  // The port actually bound (the chosen one when the options asked for port 0).
  int port() const { return port_; }
  // Blocks until Shutdown() is called from another thread.
  void Wait();
  void Shutdown();

 private:
  KilnServer() = default;
  struct Services;
  std::unique_ptr<Services> services_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_SERVER_H_
