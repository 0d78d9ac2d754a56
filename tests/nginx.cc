#include "tests/nginx.h"

#include <unistd.h>

#include <fstream>
#include <regex>

#include "absl/strings/str_cat.h"

namespace kiln::testing {

Nginx::Nginx(const std::vector<int>& upstream_ports, const std::string& dir)
    : port_(Cluster::FreePort()) {
  std::string site = ReadFileBytes("deploy/nginx/kiln.conf");
  std::string servers;
  for (int p : upstream_ports) {
    absl::StrAppend(&servers, "    server 127.0.0.1:", p, " max_fails=1 fail_timeout=2s;\n");
  }
  site = std::regex_replace(site, std::regex(R"(    server 10\.0\.0\.11:7077[^\n]*\n)"), servers);
  site = std::regex_replace(site, std::regex(R"(    server 10\.0\.0\.\d+:7077[^\n]*\n)"), "");
  site = std::regex_replace(site, std::regex(R"(listen 7070 http2;)"),
                            absl::StrCat("listen 127.0.0.1:", port_, " http2;"));
  std::string conf = absl::StrCat(
      geteuid() == 0 ? "user root;\n" : "", "daemon off;\nworker_processes 1;\npid ", dir,
      "/nginx.pid;\nerror_log ", dir, "/error.log info;\nevents { worker_connections 4096; }\n",
      "http {\n  access_log off;\n  client_body_temp_path ", dir, "/body;\n", "  proxy_temp_path ",
      dir, "/proxy;\n  fastcgi_temp_path ", dir, "/fastcgi;\n", "  uwsgi_temp_path ", dir,
      "/uwsgi;\n  scgi_temp_path ", dir, "/scgi;\n", site, "}\n");
  std::ofstream(dir + "/nginx.conf") << conf;
  process_ = std::make_unique<Process>(
      std::vector<std::string>{"/usr/sbin/nginx", "-c", dir + "/nginx.conf", "-p", dir},
      dir + "/nginx.out");
  error_log_ = dir + "/error.log";
}

std::string Nginx::address() const { return absl::StrCat("127.0.0.1:", port_); }

std::string Nginx::Log() const { return ReadFileBytes(error_log_); }

}  // namespace kiln::testing
