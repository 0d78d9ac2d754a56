// The tuning database's generation: a counter its triggers bump on every change to what a
// compile may apply (records, their owners, the untuned kernels' times). kilnd reads it before
// it answers a compile request from memory: a request's fingerprint holds only for the records
// it was built with, whichever process changed them (a tune here or on another cluster
// instance, an operator's `kiln tuning-records publish`).
//
// Light on purpose: SQLite or libpq and nothing of the compiler, so that kilnd links it.
#ifndef KILN_COMPILER_TUNE_RECORDS_GENERATION_H_
#define KILN_COMPILER_TUNE_RECORDS_GENERATION_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"

struct sqlite3;

namespace kiln::tune {

class PgConnection;

class RecordsGeneration {
 public:
  // `location`: what TuningDatabase::Open takes (a SQLite path or a PostgreSQL URL). Nothing is
  // opened yet: the database may not exist before the first tune.
  explicit RecordsGeneration(std::string location);
  ~RecordsGeneration();
  RecordsGeneration(const RecordsGeneration&) = delete;
  RecordsGeneration& operator=(const RecordsGeneration&) = delete;

  // The current generation: 0 for a database not created yet or never written; an error when
  // it cannot be read (the caller then trusts nothing it remembered). Thread-safe.
  absl::StatusOr<int64_t> Read();

 private:
  absl::StatusOr<int64_t> ReadSqlite();
  absl::StatusOr<int64_t> ReadPostgres();

  const std::string location_;
  std::mutex mu_;
  sqlite3* sqlite_ = nullptr;
  std::unique_ptr<PgConnection> postgres_;
};

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_RECORDS_GENERATION_H_
