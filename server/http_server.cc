#include "server/http_server.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace kiln::server {
namespace {

// Request line and headers together; anything larger is refused (libmicrohttpd answers 431).
constexpr size_t kMaxRequestBytes = 64 << 10;

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in.good() || text.str().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("http: cannot read the ", what, " ", path));
  }
  return text.str();
}

// The subject (CN) of the client certificate, when the TLS session has one and it verifies
// against the client CA; "" otherwise.
std::string VerifiedClientCommonName(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (info == nullptr || info->tls_session == nullptr) return "";
  auto session = static_cast<gnutls_session_t>(info->tls_session);
  unsigned int problems = 0;
  if (gnutls_certificate_verify_peers2(session, &problems) != GNUTLS_E_SUCCESS || problems != 0) {
    return "";
  }
  unsigned int count = 0;
  const gnutls_datum_t* chain = gnutls_certificate_get_peers(session, &count);
  if (chain == nullptr || count == 0) return "";
  gnutls_x509_crt_t cert;
  if (gnutls_x509_crt_init(&cert) != GNUTLS_E_SUCCESS) return "";
  std::string cn;
  if (gnutls_x509_crt_import(cert, &chain[0], GNUTLS_X509_FMT_DER) == GNUTLS_E_SUCCESS) {
    char buffer[256];
    size_t size = sizeof(buffer);
    if (gnutls_x509_crt_get_dn_by_oid(cert, GNUTLS_OID_X520_COMMON_NAME, 0, 0, buffer, &size) ==
        GNUTLS_E_SUCCESS) {
      cn.assign(buffer, size);
    }
  }
  gnutls_x509_crt_deinit(cert);
  return cn;
}

MHD_Result AddParam(void* cls, MHD_ValueKind, const char* key, const char* value) {
  (*static_cast<std::map<std::string, std::string>*>(cls))[key] = value != nullptr ? value : "";
  return MHD_YES;
}

MHD_Result Queue(MHD_Connection* connection, const HttpResponse& response) {
  MHD_Response* r = MHD_create_response_from_buffer(
      response.body.size(), const_cast<char*>(response.body.data()), MHD_RESPMEM_MUST_COPY);
  if (r == nullptr) return MHD_NO;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, response.content_type.c_str());
  // Scripts, styles and data from this origin only; never framed, never cached.
  MHD_add_response_header(r, "Content-Security-Policy",
                          "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  const MHD_Result queued =
      MHD_queue_response(connection, static_cast<unsigned int>(response.status), r);
  MHD_destroy_response(r);
  return queued;
}

}  // namespace

// libmicrohttpd's request callback, on one of its event loops. A GET is answered at its first
// call (the headers are in; a body, if any, is never read).
static MHD_Result Answer(void* cls, MHD_Connection* connection, const char* url, const char* method,
                         const char* /*version*/, const char* /*upload_data*/,
                         size_t* /*upload_data_size*/, void** /*req_cls*/) {
  const auto& handler = *static_cast<const HttpHandler*>(cls);
  if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
      std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
    HttpResponse refused;
    refused.status = 405;
    refused.body = "kilnd's HTTP side is read-only (GET)\n";
    return Queue(connection, refused);
  }
  HttpRequest request;
  request.path = url;
  MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, AddParam, &request.params);
  const char* authorization =
      MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  if (authorization != nullptr) request.authorization = authorization;
  request.client_cn = VerifiedClientCommonName(connection);
  return Queue(connection, handler(request));
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpOptions& options,
                                                              HttpHandler handler) {
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->handler_ = std::move(handler);
  server->tls_ = !options.tls_cert.empty() && !options.tls_key.empty();
  if (server->tls_) {
    absl::StatusOr<std::string> cert = ReadPem(options.tls_cert, "certificate");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPem(options.tls_key, "key");
    if (!key.ok()) return key.status();
    server->cert_pem_ = *std::move(cert);
    server->key_pem_ = *std::move(key);
    if (!options.tls_client_ca.empty()) {
      absl::StatusOr<std::string> ca = ReadPem(options.tls_client_ca, "client CA");
      if (!ca.ok()) return ca.status();
      server->client_ca_pem_ = *std::move(ca);
    }
  }

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(options.port);
  if (getaddrinfo(options.address.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("http: '", options.address, "' is not an IPv4 or IPv6 address"));
  }
  const bool v6 = found->ai_family == AF_INET6;
  unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
  if (v6) flags |= options.address == "::" ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
  if (server->tls_) flags |= MHD_USE_TLS;

  std::vector<MHD_OptionItem> items = {
      {MHD_OPTION_SOCK_ADDR, 0, found->ai_addr},
      {MHD_OPTION_THREAD_POOL_SIZE, std::max(1, options.threads), nullptr},
      {MHD_OPTION_CONNECTION_LIMIT, std::max(1, options.max_connections), nullptr},
      {MHD_OPTION_PER_IP_CONNECTION_LIMIT, std::max(1, options.max_connections_per_address),
       nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, std::max(1, options.idle_timeout_s), nullptr},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<intptr_t>(kMaxRequestBytes), nullptr},
  };
  if (server->tls_) {
    items.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, server->cert_pem_.data()});
    items.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, server->key_pem_.data()});
    if (!server->client_ca_pem_.empty()) {
      items.push_back({MHD_OPTION_HTTPS_MEM_TRUST, 0, server->client_ca_pem_.data()});
    }
  }
  items.push_back({MHD_OPTION_END, 0, nullptr});
  server->daemon_ = MHD_start_daemon(flags, 0, nullptr, nullptr, &Answer, &server->handler_,
                                     MHD_OPTION_ARRAY, items.data(), MHD_OPTION_END);
  freeaddrinfo(found);
  if (server->daemon_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("http: cannot listen on ", options.address, ":", options.port,
                     server->tls_ ? " (or the certificate and key are not a usable pair)" : ""));
  }
  const MHD_DaemonInfo* bound = MHD_get_daemon_info(server->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  server->port_ = bound != nullptr ? bound->port : options.port;
  return server;
}

HttpServer::~HttpServer() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

}  // namespace kiln::server
