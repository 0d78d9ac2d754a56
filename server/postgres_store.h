// A cluster's shared state in PostgreSQL (through libpq): jobs, devices and artifacts — their
// index and their bytes — in one database that every kilnd instance opens. DIR holds only this
// instance's local copies of artifact bytes, each verified by its digest before it is served and
// fetched again from the database when missing or corrupt.
//
// The schema is versioned (kiln_schema_migrations) and migrated at open under an advisory lock,
// so instances starting at once apply each migration exactly once. Writes are synchronous: a
// SaveJob's row is committed when it returns. One connection behind a mutex; a broken
// connection is reset on the next call.
#ifndef KILN_SERVER_POSTGRES_STORE_H_
#define KILN_SERVER_POSTGRES_STORE_H_

#include <map>
#include <mutex>

#include "server/store.h"

struct pg_conn;

namespace kiln::server {

class PostgresStore final : public Store {
 public:
  // `url`: a libpq connection string ("postgresql://kiln@127.0.0.1:5432/kiln" or "host=...").
  static absl::StatusOr<std::unique_ptr<PostgresStore>> Open(const std::string& url,
                                                             const std::string& dir);
  ~PostgresStore() override;

  uint64_t SaveJob(const v1::Job& job) override;
  absl::Status AwaitSaved(uint64_t ticket) override;
  absl::StatusOr<std::optional<v1::Job>> GetJob(const std::string& id) override;
  absl::StatusOr<std::vector<v1::Job>> LoadJobs(int limit) override;
  absl::Status PutDevice(const v1::Device& device) override;
  absl::StatusOr<std::vector<v1::Device>> LoadDevices() override;
  absl::Status PutArtifact(const std::string& digest, const std::string& cache_key,
                           const std::string& bytes, const std::string& module) override;
  absl::StatusOr<std::string> ReadArtifact(const std::string& digest) override;
  absl::StatusOr<std::string> ReadModule(const std::string& digest) override;
  absl::StatusOr<std::optional<ArtifactRecord>> FindArtifact(const std::string& digest) override;
  absl::StatusOr<std::vector<std::string>> FindByCacheKey(const std::string& cache_key) override;
  void TouchArtifact(const std::string& digest) override;
  absl::StatusOr<int64_t> TotalArtifactBytes() override;
  int64_t DatabaseBytes() const override;
  absl::Status DeleteJobs(const std::vector<std::string>& ids) override;
  absl::StatusOr<int> EvictTo(int64_t max_bytes, const std::string& keep) override;
  absl::Status DropArtifact(const std::string& digest) override;

  // The schema version this binary migrates to.
  static int SchemaVersion();

 private:
  class Result;
  PostgresStore(std::string dir) : Store(std::move(dir)) {}
  // Runs `sql` with text parameters (`binary` marks the bytea ones); results in binary form.
  absl::StatusOr<Result> Query(const std::string& sql, const std::vector<std::string>& params,
                               const std::vector<bool>& binary = {}) const;
  absl::Status Migrate();

  mutable std::mutex mu_;  // conn_
  pg_conn* conn_ = nullptr;
  std::mutex tickets_mu_;
  uint64_t ticket_ = 0;
  std::map<uint64_t, absl::Status> failed_;  // the saves that failed, by ticket
};

}  // namespace kiln::server

#endif  // KILN_SERVER_POSTGRES_STORE_H_
