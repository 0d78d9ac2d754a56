// How a Kiln client or agent reaches kilnd: plain TCP or TLS (with a client certificate for
// mutual TLS), and a bearer token sent with every call.
#ifndef KILN_RUNTIME_AGENT_CHANNEL_H_
#define KILN_RUNTIME_AGENT_CHANNEL_H_

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace kiln::runtime {

struct ChannelOptions {
  std::string address;   // host:port
  std::string token;     // bearer token; empty for none
  std::string tls_ca;    // PEM file of the CA that signed the server; empty for plain TCP
  std::string tls_cert;  // PEM client certificate and key, for mutual TLS
  std::string tls_key;
};

// Reads the token and certificate files named by flags into `options`' fields.
absl::StatusOr<std::string> ReadTextFile(const std::string& path);
// A file holding a token: its first line, trimmed.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const ChannelOptions& options);

// Adds "authorization: Bearer TOKEN" when a token is set.
void AddToken(const ChannelOptions& options, grpc::ClientContext* context);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_AGENT_CHANNEL_H_
