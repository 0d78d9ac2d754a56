#include "server/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace kiln::server {

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& address, int port, std::function<std::string()> render) {
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  server->render_ = std::move(render);
  server->fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(server->fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("metrics: bad IPv4 address '", address, "'"));
  }
  if (bind(server->fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(server->fd_, 16) != 0) {
    return absl::UnavailableError(
        absl::StrCat("metrics: cannot listen on ", address, ":", port, ": ", strerror(errno)));
  }
  socklen_t len = sizeof(addr);
  getsockname(server->fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  server->port_ = ntohs(addr.sin_port);
  server->thread_ = std::thread([s = server.get()] { s->Serve(); });
  return server;
}

MetricsServer::~MetricsServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
}

void MetricsServer::Serve() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    // The request line is all we need; a slow or silent client gets a second at most.
    std::string request;
    char buffer[2048];
    while (request.find("\r\n") == std::string::npos && request.size() < 8192) {
      pollfd c{client, POLLIN, 0};
      if (poll(&c, 1, 1000) <= 0) break;
      ssize_t n = read(client, buffer, sizeof(buffer));
      if (n <= 0) break;
      request.append(buffer, static_cast<size_t>(n));
    }
    std::string status = "200 OK", body;
    if (absl::StartsWith(request, "GET /metrics ") || absl::StartsWith(request, "GET / ")) {
      body = render_();
    } else {
      status = "404 Not Found";
      body = "kilnd serves GET /metrics\n";
    }
    std::string response =
        absl::StrCat("HTTP/1.0 ", status, "\r\nContent-Type: text/plain; version=0.0.4\r\n",
                     "Content-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body);
    size_t sent = 0;
    while (sent < response.size()) {
      ssize_t n = send(client, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    close(client);
  }
}

}  // namespace kiln::server
