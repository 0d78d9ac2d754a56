// kilnd's embedded state: SQLite for jobs, devices and the artifact index, and a directory for
// artifact bytes, so finished jobs and compiled artifacts survive a restart.
//
//   DIR/kiln.db                    jobs, devices, artifacts (WAL journal)
//   DIR/artifacts/DIGEST.kiln      the artifact bytes, written to a temporary file and renamed
//   DIR/artifacts/DIGEST.module    the module that compiled to it (cache hits compare it)
//
// Every artifact read is verified against its digest; a corrupted file is dropped from the
// index and reported as DataLoss, never served. Thread-safe: one connection behind a mutex.
#ifndef KILN_SERVER_STORE_H_
#define KILN_SERVER_STORE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
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

  absl::Status PutJob(const v1::Job& job);
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
  absl::Status TouchArtifact(const std::string& digest);
  absl::StatusOr<int64_t> TotalArtifactBytes();
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

  std::string dir_;
  sqlite3* db_ = nullptr;
  std::mutex mu_;
};

int64_t NowUnixMs();

}  // namespace kiln::server

#endif  // KILN_SERVER_STORE_H_
