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
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::server {

enum class Role { kClient, kAgent };

// Who a caller is: the principal its jobs belong to, and whether it may see everyone's.
struct Principal {
  std::string name;
  bool admin = false;
  // The device keys of the credential (`keys=board1,board2` in the token file): an agent's may
  // serve them (registering under another is refused), a client's may use them (others are
  // neither listed nor usable: they answer as unknown). Empty: every key (kilnd warns at
  // start); an admin uses every device.
  std::vector<std::string> device_keys;
  bool MayServe(const std::string& device_key) const;
  bool MayUse(const std::string& device_key) const { return admin || MayServe(device_key); }
  // A client credential's `upload=allow`: it may run artifacts kilnd did not build (they are
  // signed on arrival, and run as any artifact does). Without it, only artifacts signed by a key
  // kilnd trusts (its own) are accepted back.
  bool may_upload = false;
};

struct AuthConfig {
  std::map<std::string, Principal> client_tokens;  // by TokenDigest of the token
  std::map<std::string, Principal> agent_tokens;
  // Without tokens, under mutual TLS: agents by their certificate's subject (CN), each with the
  // device keys it may serve (`--agent-certs`: lines `CN keys=K1,K2`). When set, a certificate
  // not listed is no agent.
  std::map<std::string, Principal> agent_certs;
  // Mutual TLS is on (a client CA): without tokens, certificates are the principals, on gRPC and
  // on the dashboard alike.
  bool mutual_tls = false;
  // Under mutual TLS without tokens or --agent-certs: every CA-signed certificate may register
  // any device key (--allow-any-certificate-as-agent, which says the risk).
  bool any_certificate_is_an_agent = false;
  bool enabled() const { return !client_tokens.empty() || !agent_tokens.empty(); }
};

// The SHA-256 of a token, in hex: what kilnd keeps and compares, so that a comparison's time says
// nothing about the token, not even its length.
std::string TokenDigest(absl::string_view token);

// One token per line, optionally followed by fields: `TOKEN [name=NAME] [role=admin]
// [keys=K1,K2] [upload=allow]`; blank lines and lines starting with '#' are skipped. A token
// without a name is known by a digest of itself ("token:1a2b3c4d"), never by the token. Keyed by
// TokenDigest. A file that users other than its owner may read is refused (FailedPrecondition),
// unless `allow_shared_file`, when `warning` says so.
absl::StatusOr<std::map<std::string, Principal>> ReadTokens(const std::string& path,
                                                            bool allow_shared_file = false,
                                                            std::string* warning = nullptr);

// The agent certificates file: one `CN keys=K1,K2` per line ('#' comments), principals named
// "cert:CN".
absl::StatusOr<std::map<std::string, Principal>> ReadAgentCerts(const std::string& path);

// The principal of an "Authorization: Bearer TOKEN" header value for `role`, or Unauthenticated
// (no header, another form, or a token this role does not accept). For the HTTP side: without
// tokens, under mutual TLS, the client certificate's subject `client_cn` is the principal, as on
// gRPC (an agent certificate is no client); with neither, the caller is an admin.
absl::StatusOr<Principal> AuthorizeBearer(const AuthConfig& config, absl::string_view header,
                                          Role role, absl::string_view client_cn = "");

// The principal a verified client certificate of subject `subject` is for `role`: for an agent,
// its --agent-certs line (or any certificate, with any_certificate_is_an_agent); for a client,
// "cert:SUBJECT", unless the certificate is an agent's.
absl::StatusOr<Principal> CertificatePrincipal(const AuthConfig& config, const std::string& subject,
                                               Role role);

// OK with the caller in `principal`, or Unauthenticated: no token, or one this role does not
// accept (an unknown token and the other role's get the same answer, so a guess learns nothing).
// Digests are compared in constant time.
grpc::Status Authorize(const AuthConfig& config, const grpc::ServerContextBase& context, Role role,
                       Principal* principal);

}  // namespace kiln::server

#endif  // KILN_SERVER_AUTH_H_
