// kilnd's embedded state: SQLite for jobs, devices and the artifact index, and a directory for
// artifact bytes, so finished jobs and compiled artifacts survive a restart.
//
//   DIR/kiln.db                    jobs, devices, artifacts (WAL journal)
//   DIR/artifacts/DIGEST.kiln      the artifact bytes, written to a temporary file and renamed
//   DIR/artifacts/DIGEST.module    the module that compiled to it (cache hits compare it)
//
// Every artifact read is verified against its digest; a corrupted file is dropped from the
// index and reported as DataLoss, never served. Thread-safe: one connection behind a mutex.
//
// Job rows and artifact last-used times are written by one background thread in batches, one
// transaction per batch: concurrent submits share a commit (group commit), and a cache hit costs
// no synchronous write of its own. SaveJob queues a row and returns a ticket; AwaitSaved blocks
// until the row is committed, so a client is answered only after its job is durable.
#ifndef KILN_SERVER_STORE_H_
#define KILN_SERVER_STORE_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/kiln/v1/jobs.pb.h"

struct sqlite3;

namespace kiln::server {

struct ArtifactRecord {
  std::string digest;
  std::string cache_key;  // empty for artifacts uploaded by clients
  int64_t size = 0;
  int64_t last_used_unix_ms = 0;
};

class Store {
 public:
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& dir);
  ~Store();

  // Queues the job's row (a later save of the same job replaces an unwritten one).
  uint64_t SaveJob(const v1::Job& job);
  // Blocks until everything queued up to `ticket` is committed; the batch's error if it failed.
  absl::Status AwaitSaved(uint64_t ticket);
  absl::StatusOr<std::optional<v1::Job>> GetJob(const std::string& id);
  // The newest `limit` jobs, newest first.
  absl::StatusOr<std::vector<v1::Job>> LoadJobs(int limit);

  absl::Status PutDevice(const v1::Device& device);
  absl::StatusOr<std::vector<v1::Device>> LoadDevices();

  // Writes the bytes (and the module, when given) and indexes them.
  absl::Status PutArtifact(const std::string& digest, const std::string& cache_key,
                           const std::string& bytes, const std::string& module);
  // The verified bytes: NotFound when absent, DataLoss (and dropped) when corrupted.
  absl::StatusOr<std::string> ReadArtifact(const std::string& digest);
  absl::StatusOr<std::string> ReadModule(const std::string& digest);
  absl::StatusOr<std::optional<ArtifactRecord>> FindArtifact(const std::string& digest);
  absl::StatusOr<std::vector<std::string>> FindByCacheKey(const std::string& cache_key);
  // Marks an artifact used now; written with the next batch.
  void TouchArtifact(const std::string& digest);
  absl::StatusOr<int64_t> TotalArtifactBytes();
  // The database's files on disk (the WAL included).
  int64_t DatabaseBytes() const;
  // Removes the rows of jobs that retention pruned.
  absl::Status DeleteJobs(const std::vector<std::string>& ids);
  // Removes least-recently-used artifacts until at most `max_bytes` remain, sparing `keep`.
  // Returns how many were removed.
  absl::StatusOr<int> EvictTo(int64_t max_bytes, const std::string& keep);
  absl::Status DropArtifact(const std::string& digest);

  const std::string& dir() const { return dir_; }
  // Where an artifact's bytes live (whether or not it is stored).
  std::string ArtifactPath(const std::string& digest) const;

 private:
  Store() = default;
  absl::Status Exec(const std::string& sql);
  std::string ModulePath(const std::string& digest) const;
  absl::Status DropArtifactLocked(const std::string& digest);
  void WriterLoop();
  // Commits the queued rows in one transaction (db_ locked by the caller).
  absl::Status WriteBatchLocked(std::map<std::string, std::pair<int64_t, std::string>> jobs,
                                std::map<std::string, int64_t> touches);
  // Takes the queued rows and commits them; called by the writer and before LRU eviction.
  void FlushQueueLocked();

  std::string dir_;
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

int64_t NowUnixMs();

}  // namespace kiln::server

#endif  // KILN_SERVER_STORE_H_
