// Real nginx for tests and benchmarks: the deployment's server block (deploy/nginx/kiln.conf)
// with its upstream servers and listen port replaced, in the foreground, under a directory of
// its own. Stopped when destroyed.
#ifndef KILN_TESTS_NGINX_H_
#define KILN_TESTS_NGINX_H_

#include <memory>
#include <string>
#include <vector>

#include "tests/service_cluster.h"

namespace kiln::testing {

class Nginx {
 public:
  // Balances gRPC over kilnd instances on loopback at `upstream_ports`; `dir` holds its files.
  Nginx(const std::vector<int>& upstream_ports, const std::string& dir);
  std::string address() const;
  std::string Log() const;  // its error log

 private:
  int port_;
  std::string error_log_;
  std::unique_ptr<Process> process_;
};

}  // namespace kiln::testing

#endif  // KILN_TESTS_NGINX_H_
