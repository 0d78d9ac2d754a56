// kilnd's HTTP side: /metrics and the dashboard, on GNU libmicrohttpd (Debian's
// libmicrohttpd-dev). Event-driven: a connection that is slow, idle or trickling a byte at a time
// holds a descriptor and a few KB, never a thread, so it delays nobody else. IPv6 and IPv4,
// keep-alive, HTTPS with the daemon's certificate when TLS is configured (and its client CA:
// mutual TLS), request headers within 64 KB, a cap on connections in all and per address, idle
// ones closed. What each path answers is the caller's handler; this file knows nothing of jobs.
#ifndef KILN_SERVER_HTTP_SERVER_H_
#define KILN_SERVER_HTTP_SERVER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

struct MHD_Daemon;

namespace kiln::server {

struct HttpRequest {
  std::string path;
  std::map<std::string, std::string> params;  // the query string's
  std::string authorization;                  // the Authorization header, if any
  // Under mutual TLS: the verified client certificate's subject (CN); empty otherwise.
  std::string client_cn;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpOptions {
  std::string address = "127.0.0.1";  // "::" for every IPv6 and IPv4 address
  int port = 0;                       // 0: a free one
  std::string tls_cert, tls_key;      // PEM files: HTTPS when both are given
  std::string tls_client_ca;          // and clients must present a certificate it signed
  int threads = 2;                    // event loops (handlers run on them)
  int max_connections = 1024;         // open at once; more are closed as they arrive
  int max_connections_per_address = 64;
  int idle_timeout_s = 10;  // a connection with nothing received for this long is closed
};

class HttpServer {
 public:
  // Serves GET (and HEAD) requests with `handler`; other methods: 405.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpOptions& options,
                                                           HttpHandler handler);
  ~HttpServer();
  int port() const { return port_; }

 private:
  HttpServer() = default;
  HttpHandler handler_;
  bool tls_ = false;
  std::string cert_pem_, key_pem_, client_ca_pem_;  // libmicrohttpd reads them while it runs
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_HTTP_SERVER_H_
