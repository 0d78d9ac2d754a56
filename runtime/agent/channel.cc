#include "runtime/agent/channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace kiln::runtime {

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the file"));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  std::string line = text->substr(0, text->find('\n'));
  std::string token(absl::StripAsciiWhitespace(line));
  if (token.empty())
    return absl::InvalidArgumentError(absl::StrCat(path, ": no token in the file"));
  return token;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const ChannelOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // gRPC waits a second or more before it reconnects after a refused connection, and fails every
  // call in between at once; the callers' own retries (100 ms, then doubling) would all land in
  // that wait. Reconnecting on the same schedule lets a retry reach a daemon that just came up.
  // (The minimum reconnect backoff stays: it is also how long one connection attempt may take.)
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  if (options.tls_ca.empty()) {
    if (!options.tls_cert.empty()) {
      return absl::InvalidArgumentError("a client certificate needs --tls-ca as well");
    }
    return grpc::CreateCustomChannel(options.address, grpc::InsecureChannelCredentials(), args);
  }
  grpc::SslCredentialsOptions ssl;
  absl::StatusOr<std::string> ca = ReadTextFile(options.tls_ca);
  if (!ca.ok()) return ca.status();
  ssl.pem_root_certs = *ca;
  if (!options.tls_cert.empty() || !options.tls_key.empty()) {
    absl::StatusOr<std::string> cert = ReadTextFile(options.tls_cert);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadTextFile(options.tls_key);
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *cert;
    ssl.pem_private_key = *key;
  }
  return grpc::CreateCustomChannel(options.address, grpc::SslCredentials(ssl), args);
}

void AddToken(const ChannelOptions& options, grpc::ClientContext* context) {
  if (!options.token.empty()) {
    context->AddMetadata("authorization", absl::StrCat("Bearer ", options.token));
  }
}

}  // namespace kiln::runtime
