#include "tests/postgres_server.h"

#include <postgresql/libpq-fe.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "tests/free_port.h"

namespace kiln::testing {
namespace {

constexpr char kBin[] = "/usr/lib/postgresql/15/bin/";

}  // namespace

int PostgresServer::Run(const std::string& command_line) const {
  std::string command =
      geteuid() == 0 ? "/usr/sbin/runuser -u postgres -- " + command_line : command_line;
  command += " >>" + dir_ + "/commands.log 2>&1";
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

absl::StatusOr<std::unique_ptr<PostgresServer>> PostgresServer::Start(bool fsync) {
  std::unique_ptr<PostgresServer> server(new PostgresServer());
  server->fsync_ = fsync;
  // Under /tmp, not the test's temporary directory: the "postgres" user must reach it.
  char pattern[] = "/tmp/kiln-pg-XXXXXX";
  if (mkdtemp(pattern) == nullptr) return absl::InternalError("mkdtemp failed");
  server->dir_ = pattern;
  if (geteuid() == 0) {
    const passwd* pg = getpwnam("postgres");
    if (pg == nullptr)
      return absl::FailedPreconditionError("no 'postgres' user (apt install postgresql)");
    if (chown(pattern, pg->pw_uid, pg->pw_gid) != 0) return absl::InternalError("chown failed");
  }
  if (server->Run(absl::StrCat(kBin, "initdb -D ", server->dir_, "/data -U kiln --auth=trust ",
                               "-E UTF8 --no-sync")) != 0) {
    return absl::InternalError(absl::StrCat("initdb failed; see ", server->dir_, "/commands.log"));
  }
  if (absl::Status s = server->StartAgain(); !s.ok()) return s;
  return server;
}

absl::Status PostgresServer::StartAgain() {
  if (port_ == 0) port_ = FreeLoopbackPort();
  if (Run(absl::StrCat(kBin, "pg_ctl -D ", dir_, "/data -l ", dir_, "/server.log -w -t 60 ",
                       "-o '-k ", dir_, " -p ", port_, " -c listen_addresses=127.0.0.1 -c fsync=",
                       fsync_ ? "on" : "off", "' start")) != 0) {
    return absl::InternalError(absl::StrCat("pg_ctl start failed; see ", dir_, "/server.log"));
  }
  running_ = true;
  return absl::OkStatus();
}

absl::Status PostgresServer::Stop() {
  if (!running_) return absl::OkStatus();
  running_ = false;
  if (Run(absl::StrCat(kBin, "pg_ctl -D ", dir_, "/data -m fast -w stop")) != 0) {
    return absl::InternalError("pg_ctl stop failed");
  }
  return absl::OkStatus();
}

PostgresServer::~PostgresServer() {
  Stop().IgnoreError();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string PostgresServer::Url(const std::string& database) const {
  return absl::StrCat("postgresql://kiln@127.0.0.1:", port_, "/", database);
}

absl::StatusOr<std::string> PostgresServer::CreateDatabase(const std::string& name) {
  PGconn* conn = PQconnectdb(Url("postgres").c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string error = PQerrorMessage(conn);
    PQfinish(conn);
    return absl::UnavailableError(error);
  }
  PGresult* r = PQexec(conn, absl::StrCat("CREATE DATABASE ", name).c_str());
  bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  std::string error = PQresultErrorMessage(r);
  PQclear(r);
  PQfinish(conn);
  if (!ok) return absl::InternalError(error);
  return Url(name);
}

PostgresServer* SharedPostgresServer() {
  // A static's destructor stops the server and removes its directory when the binary exits.
  static std::unique_ptr<PostgresServer> shared = [] {
    absl::StatusOr<std::unique_ptr<PostgresServer>> started = PostgresServer::Start();
    if (started.ok()) return std::move(*started);
    std::fprintf(stderr, "PostgreSQL did not start: %s\n", started.status().ToString().c_str());
    return std::unique_ptr<PostgresServer>();
  }();
  return shared.get();
}

}  // namespace kiln::testing
