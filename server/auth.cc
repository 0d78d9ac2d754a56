#include "server/auth.h"

#include <grpc/grpc_security_constants.h>
#include <openssl/crypto.h>

#include <fstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "runtime/artifact.h"

namespace kiln::server {
namespace {

// The principal `token` names in `tokens`, comparing every token in constant time so that the
// time taken says nothing about how much of a guess was right.
const Principal* Find(const std::map<std::string, Principal>& tokens, const std::string& token) {
  const Principal* found = nullptr;
  for (const auto& [known, principal] : tokens) {
    bool same = known.size() == token.size() &&
                CRYPTO_memcmp(known.data(), token.data(), token.size()) == 0;
    if (same) found = &principal;
  }
  return found;
}

}  // namespace

absl::StatusOr<std::map<std::string, Principal>> ReadTokens(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the token file"));
  std::map<std::string, Principal> tokens;
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    std::string text(absl::StripAsciiWhitespace(line));
    if (text.empty() || text[0] == '#') continue;
    std::vector<std::string> fields = absl::StrSplit(text, ' ', absl::SkipWhitespace());
    Principal p;
    p.name = absl::StrCat("token:", runtime::Sha256Hex(fields[0]).substr(0, 8));
    for (size_t i = 1; i < fields.size(); ++i) {
      if (absl::StartsWith(fields[i], "name=") && fields[i].size() > 5) {
        p.name = fields[i].substr(5);
      } else if (fields[i] == "role=admin") {
        p.admin = true;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", lineno, ": unknown field '", fields[i],
                         "' (expected name=NAME or role=admin after the token)"));
      }
    }
    if (!tokens.emplace(fields[0], p).second) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", lineno, ": a repeated token"));
    }
  }
  if (tokens.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no tokens"));
  return tokens;
}

grpc::Status Authorize(const AuthConfig& config, const grpc::ServerContext& context, Role role,
                       Principal* principal) {
  if (!config.enabled()) {
    // Mutual TLS without tokens: the verified client certificate's subject is the principal.
    std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
    if (auth != nullptr && auth->IsPeerAuthenticated()) {
      std::vector<grpc::string_ref> cn = auth->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME);
      if (!cn.empty()) {
        principal->name = absl::StrCat("cert:", std::string(cn[0].data(), cn[0].size()));
        principal->admin = false;
        return grpc::Status::OK;
      }
    }
    // "ipv4:127.0.0.1:54321" -> "127.0.0.1": one identity per host, whatever its port.
    std::string peer = context.peer();
    size_t colon = peer.find(':');
    size_t last = peer.rfind(':');
    principal->name = colon != std::string::npos && last > colon
                          ? peer.substr(colon + 1, last - colon - 1)
                          : peer;
    principal->admin = true;  // no tokens, no tenants
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
  const auto& mine = role == Role::kClient ? config.client_tokens : config.agent_tokens;
  const auto& other = role == Role::kClient ? config.agent_tokens : config.client_tokens;
  if (const Principal* p = Find(mine, token)) {
    *principal = *p;
    return grpc::Status::OK;
  }
  if (Find(other, token) != nullptr) {
    return grpc::Status(
        grpc::StatusCode::PERMISSION_DENIED,
        absl::StrCat(role == Role::kClient ? "an agent" : "a client", " token cannot be used as ",
                     role == Role::kClient ? "a client" : "an agent", " token"));
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "unknown token");
}

}  // namespace kiln::server
