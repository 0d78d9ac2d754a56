// The metrics endpoint: Prometheus text format over plain HTTP/1.0 on its own port
// (GET /metrics). Scrapes are rare and tiny, so one thread answers them in turn.
#ifndef KILN_SERVER_METRICS_H_
#define KILN_SERVER_METRICS_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace kiln::server {

class MetricsServer {
 public:
  // Serves `render()` at http://ADDRESS:PORT/metrics; port 0 picks a free one.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& address, int port,
                                                              std::function<std::string()> render);
  ~MetricsServer();
  int port() const { return port_; }

 private:
  MetricsServer() = default;
  void Serve();
  int fd_ = -1;
  int port_ = 0;
  std::function<std::string()> render_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_METRICS_H_
