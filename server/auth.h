// Who may call what, and whose jobs a caller sees. With token files configured, every call carries
// "authorization: Bearer TOKEN": client tokens open the Kiln service, agent tokens the agent
// service, and neither opens the other. A client token names a principal; a job belongs to the
// principal that submitted it, and only an admin token sees and cancels every principal's jobs.
// Without token files but with mutual TLS, the client certificate's subject (CN) is the principal
// ("cert:NAME"). With neither (loopback development), callers are told apart by address and every
// caller sees everything.
#ifndef KILN_SERVER_AUTH_H_
#define KILN_SERVER_AUTH_H_

#include <grpcpp/server_context.h>

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace kiln::server {

enum class Role { kClient, kAgent };

// Who a caller is: the principal its jobs belong to, and whether it may see everyone's.
struct Principal {
  std::string name;
  bool admin = false;
};

struct AuthConfig {
  std::map<std::string, Principal> client_tokens;  // by token
  std::map<std::string, Principal> agent_tokens;
  bool enabled() const { return !client_tokens.empty() || !agent_tokens.empty(); }
};

// One token per line, optionally followed by fields: `TOKEN [name=NAME] [role=admin]`; blank
// lines and lines starting with '#' are skipped. A token without a name is known by a digest of
// itself ("token:1a2b3c4d"), never by the token.
absl::StatusOr<std::map<std::string, Principal>> ReadTokens(const std::string& path);

// OK with the caller in `principal`, or Unauthenticated (no or unknown token) / PermissionDenied
// (a token of the other role). Tokens are compared in constant time.
grpc::Status Authorize(const AuthConfig& config, const grpc::ServerContext& context, Role role,
                       Principal* principal);

}  // namespace kiln::server

#endif  // KILN_SERVER_AUTH_H_
