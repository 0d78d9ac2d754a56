#include "server/auth.h"

#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "runtime/artifact.h"

namespace kiln::server {

absl::StatusOr<std::set<std::string>> ReadTokens(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the token file"));
  std::set<std::string> tokens;
  std::string line;
  while (std::getline(in, line)) {
    std::string token(absl::StripAsciiWhitespace(line));
    if (!token.empty() && token[0] != '#') tokens.insert(token);
  }
  if (tokens.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no tokens"));
  return tokens;
}

grpc::Status Authorize(const AuthConfig& config, const grpc::ServerContext& context, Role role,
                       std::string* identity) {
  if (!config.enabled()) {
    // "ipv4:127.0.0.1:54321" -> "127.0.0.1": one identity per host, whatever its port.
    std::string peer = context.peer();
    size_t colon = peer.find(':');
    size_t last = peer.rfind(':');
    *identity = colon != std::string::npos && last > colon
                    ? peer.substr(colon + 1, last - colon - 1)
                    : peer;
    return grpc::Status::OK;
  }
  const char* role_name = role == Role::kClient ? "a client" : "an agent";
  auto header = context.client_metadata().find("authorization");
  if (header == context.client_metadata().end()) {
    return grpc::Status(
        grpc::StatusCode::UNAUTHENTICATED,
        absl::StrCat("this server requires ", role_name, " token (authorization: Bearer TOKEN)"));
  }
  std::string value(header->second.data(), header->second.size());
  if (!absl::StartsWith(value, "Bearer ")) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "the authorization header must be 'Bearer TOKEN'");
  }
  std::string token = value.substr(7);
  const std::set<std::string>& mine =
      role == Role::kClient ? config.client_tokens : config.agent_tokens;
  const std::set<std::string>& other =
      role == Role::kClient ? config.agent_tokens : config.client_tokens;
  if (mine.count(token)) {
    *identity = absl::StrCat("token:", runtime::Sha256Hex(token).substr(0, 8));
    return grpc::Status::OK;
  }
  if (other.count(token)) {
    return grpc::Status(
        grpc::StatusCode::PERMISSION_DENIED,
        absl::StrCat(role == Role::kClient ? "an agent" : "a client", " token cannot be used as ",
                     role == Role::kClient ? "a client" : "an agent", " token"));
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "unknown token");
}

}  // namespace kiln::server
