// kilnd's HTTP side: /metrics and the dashboard, on cpp-httplib (Debian's libcpp-httplib-dev):
// IPv6 and IPv4, keep-alive, HTTPS with the daemon's certificate when TLS is configured (and its
// client CA: mutual TLS), bounded request sizes, connections and time per request. What each
// path answers is the caller's handler; this file knows nothing of jobs.
#ifndef KILN_SERVER_HTTP_SERVER_H_
#define KILN_SERVER_HTTP_SERVER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

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
  int threads = 4;                    // connections served at once; more wait for a thread
};

class HttpServer {
 public:
  // Serves GET requests with `handler` (other methods: 405).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpOptions& options,
                                                           HttpHandler handler);
  ~HttpServer();
  int port() const { return port_; }

 private:
  HttpServer() = default;
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_HTTP_SERVER_H_
