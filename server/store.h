// kilnd's durable state behind one interface: jobs, devices and the artifact index, and the
// artifact bytes with the module each came from, so finished jobs and compiled artifacts survive
// a restart. Two implementations:
//
//   SqliteStore (sqlite_store.h)      the embedded default: DIR/kiln.db (WAL), bytes as files
//   PostgresStore (postgres_store.h)  a cluster's shared state in PostgreSQL, bytes included;
//                                     DIR keeps only this instance's local copies of artifacts
//
//   DIR/artifacts/DIGEST.kiln      the artifact bytes, written to a temporary file and renamed
//   DIR/artifacts/DIGEST.module    the module that compiled to it (cache hits compare it)
//
// Every artifact read is verified against its digest; a corrupted artifact is dropped from the
// index and reported as DataLoss, never served. Implementations are thread-safe.
#ifndef KILN_SERVER_STORE_H_
#define KILN_SERVER_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/kiln/v1/jobs.pb.h"

namespace kiln::server {

class ClusterStore;

struct ArtifactRecord {
  std::string digest;
  std::string cache_key;  // empty for artifacts uploaded by clients
  int64_t size = 0;
  int64_t last_used_unix_ms = 0;
};

class Store {
 public:
  // The embedded store (SqliteStore) in `dir`.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& dir);
  virtual ~Store() = default;

  // Queues the job's row (a later save of the same job replaces an unwritten one); a read sees
  // it at once.
  virtual uint64_t SaveJob(const v1::Job& job) = 0;
  // Blocks until everything queued up to `ticket` is committed; the save's error if it failed.
  virtual absl::Status AwaitSaved(uint64_t ticket) = 0;
  // Whether everything queued up to `ticket` was committed (or refused), without waiting.
  virtual bool Saved(uint64_t ticket) = 0;
  virtual absl::StatusOr<std::optional<v1::Job>> GetJob(const std::string& id) = 0;
  // The newest `limit` jobs, newest first.
  virtual absl::StatusOr<std::vector<v1::Job>> LoadJobs(int limit) = 0;

  virtual absl::Status PutDevice(const v1::Device& device) = 0;
  virtual absl::StatusOr<std::vector<v1::Device>> LoadDevices() = 0;

  // Writes the bytes (and the module, when given) and indexes them.
  virtual absl::Status PutArtifact(const std::string& digest, const std::string& cache_key,
                                   const std::string& bytes, const std::string& module) = 0;
  // The verified bytes: NotFound when absent, DataLoss (and dropped) when corrupted.
  virtual absl::StatusOr<std::string> ReadArtifact(const std::string& digest) = 0;
  virtual absl::StatusOr<std::string> ReadModule(const std::string& digest) = 0;
  virtual absl::StatusOr<std::optional<ArtifactRecord>> FindArtifact(const std::string& digest) = 0;
  virtual absl::StatusOr<std::vector<std::string>> FindByCacheKey(const std::string& cache_key) = 0;
  // Marks an artifact used now (possibly written later, before anything that orders by it).
  virtual void TouchArtifact(const std::string& digest) = 0;
  virtual absl::StatusOr<int64_t> TotalArtifactBytes() = 0;
  // The database's size (files on disk, or the server's count).
  virtual int64_t DatabaseBytes() const = 0;
  // Removes the rows of jobs that retention pruned.
  virtual absl::Status DeleteJobs(const std::vector<std::string>& ids) = 0;
  // Removes least-recently-used artifacts until at most `max_bytes` remain, sparing `keep`.
  // Returns how many were removed.
  // Only artifacts `evictable` accepts (all, when it is empty) go; it is called without the
  // store's lock held.
  virtual absl::StatusOr<int> EvictTo(
      int64_t max_bytes, const std::string& keep,
      const std::function<bool(const std::string& digest)>& evictable = nullptr) = 0;
  virtual absl::Status DropArtifact(const std::string& digest) = 0;
  // What an unfinished job needs to run again after a crash or a takeover (its module, task or
  // tune), kept until it finishes; deleting the jobs deletes theirs.
  virtual absl::Status PutJobInput(const std::string& id, const std::string& input) = 0;
  virtual absl::StatusOr<std::optional<std::string>> GetJobInput(const std::string& id) = 0;
  virtual absl::Status DeleteJobInputs(const std::vector<std::string>& ids) = 0;
  // OK while the store can be used: what readiness reports (an embedded store always can).
  virtual absl::Status Ping() { return absl::OkStatus(); }
  // The work this store shares with other instances (cluster_store.h); null for one instance.
  virtual ClusterStore* cluster() { return nullptr; }

  const std::string& dir() const { return dir_; }
  // Where an artifact's bytes live on this machine (whether or not it is stored).
  std::string ArtifactPath(const std::string& digest) const;

 protected:
  explicit Store(std::string dir) : dir_(std::move(dir)) {}
  std::string ModulePath(const std::string& digest) const;

 private:
  std::string dir_;
};

// Shared by the implementations.
// Written owner-only (0600) through a temporary file renamed into place.
absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes);
// `dir` and its `subdirs`, owner-only (0700), tightened where they exist already.
absl::Status CreatePrivateDirectories(const std::string& dir,
                                      const std::vector<std::string>& subdirs);
// Whether the artifact file at `path` is there and verifies against `digest`: a stored digest is
// written once (a content digest names its bytes, the signature aside), never rewritten.
bool IntactArtifactFile(const std::string& path, const std::string& digest);
absl::StatusOr<std::string> ReadFile(const std::string& path);
// OK when `bytes` parse as an artifact whose content digest is `digest`.
absl::Status VerifyArtifact(const std::string& bytes, const std::string& digest);

int64_t NowUnixMs();

}  // namespace kiln::server

#endif  // KILN_SERVER_STORE_H_
