#include "server/auth.h"

#include <grpc/grpc_security_constants.h>
#include <openssl/crypto.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "runtime/artifact.h"

namespace kiln::server {
namespace {

// The principal whose token has `digest` in `tokens`, comparing every digest in constant time so
// that the time taken says nothing about how much of a guess was right.
const Principal* Find(const std::map<std::string, Principal>& tokens, const std::string& digest) {
  const Principal* found = nullptr;
  for (const auto& [known, principal] : tokens) {
    bool same = known.size() == digest.size() &&
                CRYPTO_memcmp(known.data(), digest.data(), digest.size()) == 0;
    if (same) found = &principal;
  }
  return found;
}

}  // namespace

bool Principal::MayServe(const std::string& device_key) const {
  return device_keys.empty() ||
         std::find(device_keys.begin(), device_keys.end(), device_key) != device_keys.end();
}

std::string TokenDigest(absl::string_view token) { return runtime::Sha256Hex(token); }

absl::StatusOr<std::map<std::string, Principal>> ReadTokens(const std::string& path,
                                                            bool allow_shared_file,
                                                            std::string* warning) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the token file"));
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%03o", static_cast<unsigned>(st.st_mode & 0777));
    std::string message = absl::StrCat(path, ": the token file is readable by other users (mode ",
                                       mode, "); chmod 600 it");
    if (!allow_shared_file) return absl::FailedPreconditionError(message);
    if (warning != nullptr) *warning = message;
  }
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
      } else if (fields[i] == "upload=allow") {
        p.may_upload = true;
      } else if (absl::StartsWith(fields[i], "keys=") && fields[i].size() > 5) {
        p.device_keys = absl::StrSplit(fields[i].substr(5), ',', absl::SkipEmpty());
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ":", lineno, ": unknown field '", fields[i],
            "' (expected name=NAME, role=admin, keys=K1,K2 or upload=allow after the token)"));
      }
    }
    if (!tokens.emplace(TokenDigest(fields[0]), p).second) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", lineno, ": a repeated token"));
    }
  }
  if (tokens.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no tokens"));
  return tokens;
}

absl::StatusOr<std::map<std::string, Principal>> ReadAgentCerts(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the agent certificates"));
  std::map<std::string, Principal> certs;
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    std::string text(absl::StripAsciiWhitespace(line));
    if (text.empty() || text[0] == '#') continue;
    std::vector<std::string> fields = absl::StrSplit(text, ' ', absl::SkipWhitespace());
    if (fields.size() != 2 || !absl::StartsWith(fields[1], "keys=") || fields[1].size() <= 5) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", lineno, ": expected 'CN keys=K1,K2'"));
    }
    Principal p;
    p.name = absl::StrCat("cert:", fields[0]);
    p.device_keys = absl::StrSplit(fields[1].substr(5), ',', absl::SkipEmpty());
    if (!certs.emplace(fields[0], p).second) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", lineno, ": a repeated CN"));
    }
  }
  return certs;
}

absl::StatusOr<Principal> CertificatePrincipal(const AuthConfig& config, const std::string& subject,
                                               Role role) {
  auto agent = config.agent_certs.find(subject);
  if (role == Role::kAgent) {
    if (agent != config.agent_certs.end()) return agent->second;
    if (!config.any_certificate_is_an_agent) {
      return absl::UnauthenticatedError("not an agent certificate of this server");
    }
  } else if (agent != config.agent_certs.end()) {
    // A certificate is an agent or a client, never both.
    return absl::UnauthenticatedError("an agent certificate is not a client certificate");
  }
  Principal p;
  p.name = absl::StrCat("cert:", subject);
  return p;
}

grpc::Status Authorize(const AuthConfig& config, const grpc::ServerContextBase& context, Role role,
                       Principal* principal) {
  if (!config.enabled()) {
    // Mutual TLS without tokens: the verified client certificate's subject is the principal.
    std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
    if (auth != nullptr && auth->IsPeerAuthenticated()) {
      std::vector<grpc::string_ref> cn = auth->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME);
      if (!cn.empty()) {
        std::string subject(cn[0].data(), cn[0].size());
        absl::StatusOr<Principal> p = CertificatePrincipal(config, subject, role);
        if (!p.ok()) {
          return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(p.status().message()));
        }
        *principal = *std::move(p);
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
  auto header = context.client_metadata().find("authorization");
  absl::StatusOr<Principal> found =
      AuthorizeBearer(config,
                      header == context.client_metadata().end()
                          ? absl::string_view()
                          : absl::string_view(header->second.data(), header->second.size()),
                      role);
  if (!found.ok()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(found.status().message()));
  }
  *principal = *std::move(found);
  return grpc::Status::OK;
}

absl::StatusOr<Principal> AuthorizeBearer(const AuthConfig& config, absl::string_view header,
                                          Role role, absl::string_view client_cn) {
  if (!config.enabled() && config.mutual_tls) {
    if (client_cn.empty()) return absl::UnauthenticatedError("a client certificate is required");
    return CertificatePrincipal(config, std::string(client_cn), role);
  }
  if (!config.enabled()) {
    Principal anyone;
    anyone.name = "http";
    anyone.admin = true;
    return anyone;
  }
  const char* role_name = role == Role::kClient ? "a client" : "an agent";
  if (header.empty()) {
    return absl::UnauthenticatedError(
        absl::StrCat("this server requires ", role_name, " token (authorization: Bearer TOKEN)"));
  }
  if (!absl::StartsWith(header, "Bearer ")) {
    return absl::UnauthenticatedError("the authorization header must be 'Bearer TOKEN'");
  }
  const auto& mine = role == Role::kClient ? config.client_tokens : config.agent_tokens;
  if (const Principal* p = Find(mine, TokenDigest(header.substr(7)))) return *p;
  return absl::UnauthenticatedError(absl::StrCat("not ", role_name, " token of this server"));
}

}  // namespace kiln::server
