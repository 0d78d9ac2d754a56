#include "compiler/tune/postgres_connection.h"

#include <endian.h>
#include <postgresql/libpq-fe.h>

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace kiln::tune {

PgResult::~PgResult() { PQclear(r_); }
int PgResult::rows() const { return PQntuples(r_); }
bool PgResult::null(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }

std::string PgResult::Bytes(int row, int col) const {
  return std::string(PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col)));
}

int64_t PgResult::Int(int row, int col) const {  // big-endian on the wire
  uint64_t v = 0;
  if (PQgetlength(r_, row, col) != 8) return 0;
  std::memcpy(&v, PQgetvalue(r_, row, col), 8);
  return static_cast<int64_t>(be64toh(v));
}

double PgResult::Double(int row, int col) const {
  const uint64_t bits = static_cast<uint64_t>(Int(row, col));
  double v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

absl::StatusOr<std::unique_ptr<PgConnection>> PgConnection::Connect(const std::string& url) {
  std::unique_ptr<PgConnection> c(new PgConnection());
  // Bounds on a dead or cut-off server, so that no call blocks for TCP's own timeouts (the
  // caller may hold a lock); given first, so that the URL's own settings win.
  const char* keywords[] = {
      "connect_timeout",  "keepalives",       "keepalives_idle", "keepalives_interval",
      "keepalives_count", "tcp_user_timeout", "dbname",          nullptr};
  const char* values[] = {"5", "1", "5", "2", "3", "10000", url.c_str(), nullptr};
  c->conn_ = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (PQstatus(c->conn_) != CONNECTION_OK) {
    std::string why = PQerrorMessage(c->conn_);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return absl::UnavailableError(absl::StrCat("cannot connect to PostgreSQL: ", why));
  }
  // Notices ("relation already exists, skipping") are not errors; keep them off stderr.
  PQsetNoticeProcessor(
      c->conn_, [](void*, const char*) {}, nullptr);
  return c;
}

PgConnection::~PgConnection() { PQfinish(conn_); }

absl::StatusOr<PgResult> PgConnection::Query(const std::string& sql,
                                             const std::vector<std::string>& params,
                                             const std::vector<bool>& binary) const {
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  for (size_t i = 0; i < params.size(); ++i) {
    values.push_back(params[i].c_str());
    lengths.push_back(static_cast<int>(params[i].size()));
    formats.push_back(i < binary.size() && binary[i] ? 1 : 0);
  }
  std::lock_guard<std::mutex> lock(mu_);
  pg_result* r = nullptr;
  for (int attempt = 0;; ++attempt) {
    if (PQstatus(conn_) != CONNECTION_OK) {
      PQreset(conn_);
      if (PQstatus(conn_) == CONNECTION_OK) reset_ = true;
    }
    const bool idle = PQtransactionStatus(conn_) == PQTRANS_IDLE;
    r = PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(),
                     lengths.data(), formats.data(), /*resultFormat=*/1);
    ExecStatusType status = PQresultStatus(r);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return PgResult(r);
    // A connection that broke while idle (the server restarted since its last use) is found
    // out only by using it: once more on a new one. Not inside a transaction, which is gone.
    if (attempt > 0 || !idle || PQstatus(conn_) == CONNECTION_OK) break;
    PQclear(r);
  }
  std::string message = r != nullptr ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
  const char* sqlstate = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const bool unique_violation = sqlstate != nullptr && std::string(sqlstate) == "23505";
  PQclear(r);
  while (!message.empty() && message.back() == '\n') message.pop_back();
  std::string what = absl::StrCat("PostgreSQL: ", message, " (in: ", sql.substr(0, 60), ")");
  if (PQstatus(conn_) != CONNECTION_OK) return absl::UnavailableError(what);
  if (unique_violation) return absl::AlreadyExistsError(what);
  return absl::InternalError(what);
}

bool PgConnection::TakeReset() const {
  std::lock_guard<std::mutex> lock(mu_);
  bool was = reset_;
  reset_ = false;
  return was;
}

bool PgConnection::IsUrl(const std::string& location) {
  return absl::StartsWith(location, "postgresql://") || absl::StartsWith(location, "postgres://");
}

}  // namespace kiln::tune
