// A PostgreSQL connection through libpq, shared by what keeps state in PostgreSQL: the
// service's store (server/postgres_store) and the tuning database (compiler/tune/database).
// Parameters go as text (bytea ones as binary), results come back binary; one connection behind
// a mutex, reset when it broke (the server restarted, say); a statement that finds it broken
// outside a transaction runs once more on the new one. Connections time out in 5 s and
// notice a dead peer within about 10 s (keepalives, tcp_user_timeout) unless the URL says else.
#ifndef KILN_COMPILER_TUNE_POSTGRES_CONNECTION_H_
#define KILN_COMPILER_TUNE_POSTGRES_CONNECTION_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

struct pg_conn;
struct pg_result;

namespace kiln::tune {

// A query's rows; frees them on destruction.
class PgResult {
 public:
  explicit PgResult(pg_result* r) : r_(r) {}
  PgResult(PgResult&& other) noexcept : r_(other.r_) { other.r_ = nullptr; }
  PgResult& operator=(PgResult&&) = delete;
  ~PgResult();
  int rows() const;
  bool null(int row, int col) const;
  std::string Bytes(int row, int col) const;  // text, bytea
  int64_t Int(int row, int col) const;        // BIGINT (cast others with ::bigint)
  double Double(int row, int col) const;      // DOUBLE PRECISION

 private:
  pg_result* r_;
};

class PgConnection {
 public:
  // `url`: a libpq connection string. Unavailable, with libpq's reason, when it does not connect.
  static absl::StatusOr<std::unique_ptr<PgConnection>> Connect(const std::string& url);
  ~PgConnection();

  // Runs `sql` with `params` ($1, $2, ...; binary[i] marks bytea ones). Unavailable when the
  // server cannot be reached, AlreadyExists for a violated unique constraint, Internal for another
  // error of the statement.
  absl::StatusOr<PgResult> Query(const std::string& sql,
                                 const std::vector<std::string>& params = {},
                                 const std::vector<bool>& binary = {}) const;
  // True once after the connection was reset: session state (advisory locks) is gone.
  bool TakeReset() const;

  // Whether `location` names a PostgreSQL database rather than a file.
  static bool IsUrl(const std::string& location);

 private:
  PgConnection() = default;
  mutable std::mutex mu_;
  pg_conn* conn_ = nullptr;
  mutable bool reset_ = false;
};

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_POSTGRES_CONNECTION_H_
