// Who may call what. With token files configured, every call carries "authorization: Bearer
// TOKEN": client tokens open the Kiln service, agent tokens the agent service, and neither opens
// the other. Without them (loopback development), callers are told apart by address.
#ifndef KILN_SERVER_AUTH_H_
#define KILN_SERVER_AUTH_H_

#include <grpcpp/server_context.h>

#include <set>
#include <string>

#include "absl/status/statusor.h"

namespace kiln::server {

enum class Role { kClient, kAgent };

struct AuthConfig {
  std::set<std::string> client_tokens;
  std::set<std::string> agent_tokens;
  bool enabled() const { return !client_tokens.empty() || !agent_tokens.empty(); }
};

// One token per line; blank lines and lines starting with '#' are skipped.
absl::StatusOr<std::set<std::string>> ReadTokens(const std::string& path);

// OK with the caller's identity in `identity` ("token:1a2b3c4d" or the peer's address), or
// Unauthenticated (no or unknown token) / PermissionDenied (a token of the other role).
grpc::Status Authorize(const AuthConfig& config, const grpc::ServerContext& context, Role role,
                       std::string* identity);

}  // namespace kiln::server

#endif  // KILN_SERVER_AUTH_H_
