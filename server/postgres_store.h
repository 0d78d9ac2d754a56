// A cluster's shared state in PostgreSQL (through libpq): jobs, devices and artifacts — their
// index and their bytes — in one database that every kilnd instance opens. DIR holds only this
// instance's local copies of artifact bytes, each verified by its digest before it is served and
// fetched again from the database when missing or corrupt.
//
// The schema is versioned (kiln_schema_migrations) and migrated at open under an advisory lock,
// so instances starting at once apply each migration exactly once. Writes are synchronous: a
// SaveJob's row is committed when it returns. One connection behind a mutex; a broken
// connection is reset on the next call.
//
// One instance is active on a database at a time: Open waits (a standby) until it holds the
// "active" advisory lock, which PostgreSQL releases when the active instance's session ends —
// killed, crashed, cut off — so a standby takes over by itself. Jobs are not yet leased to
// instances, which is what several active instances would need.
#ifndef KILN_SERVER_POSTGRES_STORE_H_
#define KILN_SERVER_POSTGRES_STORE_H_

#include <functional>
#include <map>
#include <mutex>

#include "compiler/support/postgres_connection.h"
#include "server/store.h"

namespace kiln::server {

class PostgresStore final : public Store {
 public:
  struct OpenOptions {
    // Return only once this instance is the active one (kilnd); false opens the store beside
    // the active instance (tools, tests).
    bool take_active_role = false;
    // Called once when another instance is active and Open starts waiting.
    std::function<void()> on_standby;
  };
  // `url`: a libpq connection string ("postgresql://kiln@127.0.0.1:5432/kiln" or "host=...").
  static absl::StatusOr<std::unique_ptr<PostgresStore>> Open(const std::string& url,
                                                             const std::string& dir,
                                                             const OpenOptions& options);
  static absl::StatusOr<std::unique_ptr<PostgresStore>> Open(const std::string& url,
                                                             const std::string& dir) {
    return Open(url, dir, OpenOptions());
  }
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
  absl::Status PutJobInput(const std::string& id, const std::string& input) override;
  absl::StatusOr<std::optional<std::string>> GetJobInput(const std::string& id) override;
  absl::Status DeleteJobInputs(const std::vector<std::string>& ids) override;
  // Unavailable while the database cannot be reached; Aborted when, reconnected, this instance
  // finds another one active (it must stop: its jobs are that one's now).
  absl::Status Ping() override;

  // The schema version this binary migrates to.
  static int SchemaVersion();

 private:
  explicit PostgresStore(std::string dir) : Store(std::move(dir)) {}
  absl::Status Migrate();
  // Takes the active lock on the current session; false when another instance holds it.
  absl::StatusOr<bool> TryBecomeActive() const;

  std::unique_ptr<support::PgConnection> db_;
  bool lost_active_ = false;
  std::mutex tickets_mu_;
  uint64_t ticket_ = 0;
  std::map<uint64_t, absl::Status> failed_;  // the saves that failed, by ticket
};

}  // namespace kiln::server

#endif  // KILN_SERVER_POSTGRES_STORE_H_
