// The artifact cache: compiled artifacts content-addressed by a cache key
// (server/worker/cache_key.h), each stored with the module it was compiled from. kilnd never parses
// a module: the worker that loaded a submission asks for the candidates under its key and decides a
// hit by structural equality itself. Bounded in bytes, evicting the least recently used artifact
// first.
#ifndef KILN_SERVER_ARTIFACT_CACHE_H_
#define KILN_SERVER_ARTIFACT_CACHE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/artifact_signing.h"
#include "server/store.h"
#include "server/worker.pb.h"

struct stat;

namespace kiln::server {

// A hit: the artifact's digest and size in bytes.
struct CachedArtifact {
  std::string digest;
  int64_t size = 0;
};

// A stored artifact's file, open and verified, for streaming it in pieces: a download holds a
// descriptor and one piece at a time, never the artifact. Closes the descriptor.
class ArtifactFile {
 public:
  ArtifactFile(int fd, int64_t size) : fd_(fd), size_(size) {}
  ArtifactFile(ArtifactFile&& other) noexcept : fd_(other.fd_), size_(other.size_) {
    other.fd_ = -1;
  }
  ArtifactFile& operator=(ArtifactFile&&) = delete;
  ~ArtifactFile();
  int64_t size() const { return size_; }
  // Up to `n` bytes from `offset`; an error names what failed.
  absl::StatusOr<std::string> Read(int64_t offset, size_t n) const;

 private:
  int fd_;
  int64_t size_;
};

class ArtifactCache {
 public:
  // `signer`, where given, signs every artifact before it is stored (runtime/artifact_signing.h).
  ArtifactCache(Store* store, int64_t max_bytes, const runtime::SigningKey* signer = nullptr)
      : store_(store), max_bytes_(max_bytes), signer_(signer) {}

  // The intact artifacts stored under `key`, each with the module it was compiled from.
  absl::StatusOr<CacheCandidates> Candidates(const std::string& key);
  // A worker found `digest` structurally equal to its module (counted, marked recently used);
  // or found none.
  void RecordHit(const std::string& digest);
  void RecordMiss() { ++misses_; }
  // Stores a fresh artifact with the module it came from, signed, then evicts down to the
  // bound; the stored size. The artifact must verify against `digest` (DataLoss otherwise).
  // Made for `tenant`: what it evicts is never an artifact another tenant's job refers to
  // (SetReferences); the cache may stay over its bound rather than take one.
  absl::StatusOr<int64_t> Insert(const std::string& key, const std::string& digest,
                                 const std::string& artifact, const std::string& module_bytes,
                                 const std::string& tenant = "");
  // Whether a job of another tenant than `tenant` refers to `digest` (the job table knows).
  using References = std::function<bool(const std::string& digest, const std::string& tenant)>;
  void SetReferences(References others_refer) { others_refer_ = std::move(others_refer); }

  // Requests seen before, by a fingerprint of their exact bytes (module source, target,
  // options): the same bytes parse to the same module, so a remembered fingerprint is a hit
  // without parsing at all. Only intact artifacts are returned.
  std::optional<CachedArtifact> LookupFingerprint(const std::string& fingerprint);
  // (An empty fingerprint is never remembered.)
  void RememberFingerprint(const std::string& fingerprint, const std::string& digest);

  // The artifact `digest` open for streaming, verified (again only when its file changed since
  // the last check): NotFound when it is not stored, DataLoss when corrupt (then dropped).
  absl::StatusOr<ArtifactFile> OpenVerified(const std::string& digest);

  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  int64_t evictions() const { return evictions_; }
  int64_t max_bytes() const { return max_bytes_; }

 private:
  // What eviction on behalf of `tenant` may take (anything, for "").
  std::function<bool(const std::string&)> EvictableFor(const std::string& tenant) const;
  // The size of the artifact file if it is there and verifies (VerifyOnce).
  std::optional<int64_t> IntactSize(const std::string& digest);
  // Whether the artifact file `st` describes verifies: read and checked again only when its size
  // or mtime changed since the last check (eviction and corruption both show there).
  absl::Status VerifyOnce(const std::string& digest, const struct stat& st);

  Store* store_;
  int64_t max_bytes_;
  const runtime::SigningKey* signer_;
  References others_refer_;
  std::atomic<int64_t> hits_{0}, misses_{0}, evictions_{0};
  std::mutex mu_;
  std::map<std::string, std::pair<int64_t, int64_t>> verified_;  // digest -> (size, mtime ns)
  std::map<std::string, std::string> fingerprints_;              // request -> digest
};

}  // namespace kiln::server

#endif  // KILN_SERVER_ARTIFACT_CACHE_H_
