#include "server/http_server.h"

#include <httplib.h>

#include "absl/strings/str_cat.h"

namespace kiln::server {
namespace {

// Requests are a line and a few headers: anything larger is refused.
constexpr size_t kMaxRequestBytes = 64 << 10;

// The subject (CN) of the client certificate the TLS handshake verified, or "".
std::string ClientCommonName(const httplib::Request& req) {
  if (req.ssl == nullptr) return "";
  X509* cert = SSL_get1_peer_certificate(req.ssl);
  if (cert == nullptr) return "";
  char cn[256];
  const int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn,
                                          static_cast<int>(sizeof(cn)));
  X509_free(cert);
  return n > 0 ? std::string(cn, static_cast<size_t>(n)) : "";
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpOptions& options,
                                                              HttpHandler handler) {
  std::unique_ptr<HttpServer> server(new HttpServer());
  if (!options.tls_cert.empty() && !options.tls_key.empty()) {
    auto tls = std::make_unique<httplib::SSLServer>(
        options.tls_cert.c_str(), options.tls_key.c_str(),
        options.tls_client_ca.empty() ? nullptr : options.tls_client_ca.c_str());
    if (!tls->is_valid()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "http: cannot use the certificate ", options.tls_cert, " and key ", options.tls_key));
    }
    server->server_ = std::move(tls);
  } else {
    server->server_ = std::make_unique<httplib::Server>();
  }
  httplib::Server& s = *server->server_;
  const int threads = std::max(1, options.threads);
  s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  s.set_payload_max_length(kMaxRequestBytes);
  s.set_read_timeout(5, 0);
  s.set_write_timeout(5, 0);
  s.set_keep_alive_max_count(100);
  s.set_keep_alive_timeout(5);
  s.Get(".*", [handler](const httplib::Request& req, httplib::Response& res) {
    HttpRequest request;
    request.path = req.path;
    for (const auto& [key, value] : req.params) request.params[key] = value;
    request.authorization = req.get_header_value("Authorization");
    request.client_cn = ClientCommonName(req);
    HttpResponse response = handler(request);
    res.status = response.status;
    // Scripts, styles and data from this origin only; never framed, never cached.
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Cache-Control", "no-store");
    res.set_content(response.body, response.content_type.c_str());
  });
  // Only GET: everything is read-only.
  auto refuse = [](const httplib::Request&, httplib::Response& res) {
    res.status = 405;
    res.set_content("kilnd's HTTP side is read-only (GET)\n", "text/plain");
  };
  s.Post(".*", refuse);
  s.Put(".*", refuse);
  s.Delete(".*", refuse);
  s.Patch(".*", refuse);
  server->port_ = options.port == 0
                      ? s.bind_to_any_port(options.address)
                      : (s.bind_to_port(options.address, options.port) ? options.port : -1);
  if (server->port_ <= 0) {
    return absl::UnavailableError(
        absl::StrCat("http: cannot listen on ", options.address, ":", options.port));
  }
  httplib::Server* raw = server->server_.get();
  server->thread_ = std::thread([raw] { raw->listen_after_bind(); });
  return server;
}

HttpServer::~HttpServer() {
  if (server_ != nullptr) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace kiln::server
