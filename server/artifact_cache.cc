#include "server/artifact_cache.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "compiler/ir/structural.h"
#include "compiler/version.h"
#include "compiler/wire/ir_proto.h"
#include "runtime/artifact.h"

namespace kiln::server {
namespace {

// Deserialized modules kept for equality checks on hits, and request fingerprints.
constexpr size_t kModuleMemo = 64;
constexpr size_t kFingerprintMemo = 4096;

}  // namespace

std::string CacheKey(const ir::IRModule& mod, const std::string& target,
                     const v1::CompileOptions& options) {
  std::string options_bytes;
  options.SerializeToString(&options_bytes);  // deterministic for a message of scalars
  return runtime::Sha256Hex(absl::StrCat("kiln-cache-key-v1\n", ir::StructuralHash(mod), "\n",
                                         target, "\n", options_bytes, "\n", kCompilerVersion));
}

std::optional<int64_t> ArtifactCache::IntactSize(const std::string& digest) {
  struct stat st;
  std::string path = store_->ArtifactPath(digest);
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  std::pair<int64_t, int64_t> stamp(st.st_size,
                                    int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = verified_.find(digest);
    if (it != verified_.end() && it->second == stamp) return stamp.first;
  }
  if (!store_->ReadArtifact(digest).ok()) return std::nullopt;  // a corrupt one is dropped there
  std::lock_guard<std::mutex> lock(mu_);
  verified_[digest] = stamp;
  return stamp.first;
}

absl::StatusOr<std::optional<CachedArtifact>> ArtifactCache::Lookup(const std::string& key,
                                                                    const ir::IRModule& mod) {
  absl::StatusOr<std::vector<std::string>> candidates = store_->FindByCacheKey(key);
  if (!candidates.ok()) return candidates.status();
  for (const std::string& digest : *candidates) {
    std::optional<ir::IRModule> stored;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = modules_.find(digest);
      if (it != modules_.end()) stored = it->second;
    }
    if (!stored.has_value()) {
      absl::StatusOr<std::string> bytes = store_->ReadModule(digest);
      if (!bytes.ok()) continue;
      absl::StatusOr<ir::IRModule> parsed = wire::DeserializeModule(*bytes);
      if (!parsed.ok()) continue;
      stored = *parsed;
      std::lock_guard<std::mutex> lock(mu_);
      if (modules_.size() >= kModuleMemo) modules_.erase(modules_.begin());
      modules_[digest] = *parsed;
    }
    if (!ir::StructuralEqual(*stored, mod)) continue;
    std::optional<int64_t> size = IntactSize(digest);
    if (!size.has_value()) continue;
    store_->TouchArtifact(digest);
    ++hits_;
    return std::optional<CachedArtifact>(CachedArtifact{digest, *size});
  }
  ++misses_;
  return std::optional<CachedArtifact>();
}

std::optional<CachedArtifact> ArtifactCache::LookupFingerprint(const std::string& fingerprint) {
  std::string digest;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = fingerprints_.find(fingerprint);
    if (it == fingerprints_.end()) return std::nullopt;
    digest = it->second;
  }
  std::optional<int64_t> size = IntactSize(digest);
  if (!size.has_value()) {
    std::lock_guard<std::mutex> lock(mu_);
    fingerprints_.erase(fingerprint);  // evicted or corrupted since
    return std::nullopt;
  }
  store_->TouchArtifact(digest);
  ++hits_;
  return CachedArtifact{digest, *size};
}

void ArtifactCache::RememberFingerprint(const std::string& fingerprint, const std::string& digest) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fingerprints_.size() >= kFingerprintMemo) fingerprints_.clear();
  fingerprints_[fingerprint] = digest;
}

absl::Status ArtifactCache::Insert(const std::string& key, const std::string& digest,
                                   const std::string& artifact, const std::string& module_bytes) {
  if (absl::Status s = store_->PutArtifact(digest, key, artifact, module_bytes); !s.ok()) return s;
  absl::StatusOr<int> evicted = store_->EvictTo(max_bytes_, digest);
  if (!evicted.ok()) return evicted.status();
  evictions_ += *evicted;
  return absl::OkStatus();
}

}  // namespace kiln::server
