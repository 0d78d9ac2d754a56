// The embedded store: SQLite (WAL) for jobs, devices and the artifact index in DIR/kiln.db, the
// artifact bytes as files under DIR/artifacts, and unfinished jobs' inputs under DIR/inputs.
// One connection behind a mutex.
//
// Job rows and artifact last-used times are written by one background thread in batches, one
// transaction per batch: concurrent submits share a commit (group commit), and a cache hit costs
// no synchronous write of its own. SaveJob queues a row and returns a ticket; AwaitSaved blocks
// until the row is committed, so a client is answered only after its job is durable.
#ifndef KILN_SERVER_SQLITE_STORE_H_
#define KILN_SERVER_SQLITE_STORE_H_

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "server/store.h"

struct sqlite3;

namespace kiln::server {

class SqliteStore final : public Store {
 public:
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& dir);
  ~SqliteStore() override;

  uint64_t SaveJob(const v1::Job& job) override;
  absl::Status AwaitSaved(uint64_t ticket) override;
  bool Saved(uint64_t ticket) override;
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
  absl::StatusOr<int> EvictTo(
      int64_t max_bytes, const std::string& keep,
      const std::function<bool(const std::string& digest)>& evictable = nullptr) override;
  absl::Status DropArtifact(const std::string& digest) override;
  absl::Status PutJobInput(const std::string& id, const std::string& input) override;
  absl::StatusOr<std::optional<std::string>> GetJobInput(const std::string& id) override;
  absl::Status DeleteJobInputs(const std::vector<std::string>& ids) override;

 private:
  explicit SqliteStore(std::string dir) : Store(std::move(dir)) {}
  absl::Status Exec(const std::string& sql);
  std::string InputPath(const std::string& id) const;
  absl::Status DropArtifactLocked(const std::string& digest);
  void WriterLoop();
  // Commits the queued rows in one transaction (db_ locked by the caller).
  absl::Status WriteBatchLocked(std::map<std::string, std::pair<int64_t, std::string>> jobs,
                                std::map<std::string, int64_t> touches);
  // Takes the queued rows and commits them; called by the writer and before LRU eviction.
  void FlushQueueLocked();

  sqlite3* db_ = nullptr;
  std::mutex mu_;  // db_

  // The write queue, under queue_mu_ (taken after mu_ when both are held).
  std::mutex queue_mu_;
  std::condition_variable queued_, committed_;
  std::map<std::string, std::pair<int64_t, std::string>> queued_jobs_;  // id -> (created, row)
  std::map<std::string, int64_t> queued_touches_;                       // digest -> unix ms
  uint64_t queued_ticket_ = 0;                // the last ticket handed out
  uint64_t committed_ticket_ = 0;             // every ticket up to this one is written (or failed)
  uint64_t failed_from_ = 0, failed_to_ = 0;  // the tickets of the last failed batch
  absl::Status failed_status_;
  bool stopping_ = false;
  std::thread writer_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_SQLITE_STORE_H_
