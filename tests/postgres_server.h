// A real PostgreSQL server for tests: initdb and pg_ctl from Debian's postgresql package, in a
// fresh directory under /tmp, on a free loopback port, with trust authentication for the role
// "kiln". PostgreSQL refuses to run as root, so as root the server runs as the "postgres" user.
#ifndef KILN_TESTS_POSTGRES_SERVER_H_
#define KILN_TESTS_POSTGRES_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace kiln::testing {

class PostgresServer {
 public:
  // Tests run it with fsync off (nothing here must survive a power cut); a benchmark asks for
  // fsync, as a real server runs.
  static absl::StatusOr<std::unique_ptr<PostgresServer>> Start(bool fsync = false);
  ~PostgresServer();  // stops the server and removes its directory

  // A new, empty database, and the libpq URL of it.
  absl::StatusOr<std::string> CreateDatabase(const std::string& name);
  std::string Url(const std::string& database) const;
  absl::Status Stop();
  absl::Status StartAgain();

 private:
  PostgresServer() = default;
  // Runs a PostgreSQL program (as "postgres" when this process is root); its exit status.
  int Run(const std::string& command_line) const;

  std::string dir_;
  int port_ = 0;
  bool fsync_ = false;
  bool running_ = false;
};

// One server for the whole test binary, started on the first call and stopped when the binary
// exits; null (with the reason on stderr) when it does not start.
PostgresServer* SharedPostgresServer();

}  // namespace kiln::testing

#endif  // KILN_TESTS_POSTGRES_SERVER_H_
