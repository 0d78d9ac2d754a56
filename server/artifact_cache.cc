#include "server/artifact_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/artifact.h"

namespace kiln::server {
namespace {

// Request fingerprints remembered.
constexpr size_t kFingerprintMemo = 4096;

}  // namespace

ArtifactFile::~ArtifactFile() {
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<std::string> ArtifactFile::Read(int64_t offset, size_t n) const {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd_, out.data() + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return absl::InternalError(absl::StrCat("reading an artifact: ", strerror(errno)));
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  out.resize(got);
  return out;
}

absl::Status ArtifactCache::VerifyOnce(const std::string& digest, const struct stat& st) {
  const std::pair<int64_t, int64_t> stamp(
      st.st_size, int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = verified_.find(digest);
    if (it != verified_.end() && it->second == stamp) return absl::OkStatus();
  }
  absl::StatusOr<std::string> bytes = store_->ReadArtifact(digest);  // a corrupt one is dropped
  if (!bytes.ok()) return bytes.status();
  if (static_cast<int64_t>(bytes->size()) != stamp.first) {
    return absl::UnavailableError(absl::StrCat("artifact ", digest, " changed while read"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  verified_[digest] = stamp;
  return absl::OkStatus();
}

absl::StatusOr<ArtifactFile> ArtifactCache::OpenVerified(const std::string& digest) {
  const std::string path = store_->ArtifactPath(digest);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    // Not here (evicted, or a cluster's artifact never copied to this instance): the store
    // brings it, or says why not.
    absl::StatusOr<std::string> bytes = store_->ReadArtifact(digest);
    if (!bytes.ok()) return bytes.status();
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return absl::NotFoundError(absl::StrCat("no artifact ", digest));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return absl::InternalError(absl::StrCat("stat ", path));
  }
  ArtifactFile file(fd, st.st_size);
  if (absl::Status s = VerifyOnce(digest, st); !s.ok()) return s;
  return file;
}

std::optional<int64_t> ArtifactCache::IntactSize(const std::string& digest) {
  struct stat st;
  if (stat(store_->ArtifactPath(digest).c_str(), &st) != 0) return std::nullopt;
  if (!VerifyOnce(digest, st).ok()) return std::nullopt;
  return st.st_size;
}

absl::StatusOr<CacheCandidates> ArtifactCache::Candidates(const std::string& key) {
  absl::StatusOr<std::vector<std::string>> digests = store_->FindByCacheKey(key);
  if (!digests.ok()) return digests.status();
  CacheCandidates out;
  for (const std::string& digest : *digests) {
    absl::StatusOr<std::string> module = store_->ReadModule(digest);
    if (!module.ok()) continue;
    std::optional<int64_t> size = IntactSize(digest);
    if (!size.has_value()) continue;
    CachedModule* candidate = out.add_candidates();
    candidate->set_digest(digest);
    candidate->set_size(*size);
    candidate->set_module(std::move(*module));
  }
  return out;
}

void ArtifactCache::RecordHit(const std::string& digest) {
  store_->TouchArtifact(digest);
  ++hits_;
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
  if (fingerprint.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (fingerprints_.size() >= kFingerprintMemo) fingerprints_.clear();
  fingerprints_[fingerprint] = digest;
}

std::function<bool(const std::string&)> ArtifactCache::EvictableFor(
    const std::string& tenant) const {
  if (tenant.empty() || !others_refer_) return nullptr;
  return [this, tenant](const std::string& digest) { return !others_refer_(digest, tenant); };
}

absl::StatusOr<int64_t> ArtifactCache::Insert(const std::string& key, const std::string& digest,
                                              const std::string& artifact,
                                              const std::string& module_bytes,
                                              const std::string& tenant) {
  std::string bytes = artifact;
  if (signer_ != nullptr) {
    absl::StatusOr<v1::ArtifactProto> parsed = runtime::ParseArtifact(artifact, false);
    if (!parsed.ok()) return parsed.status();
    if (parsed->manifest().digest() != digest) {
      return absl::DataLossError(absl::StrCat("artifact ", digest, ": its content digest is ",
                                              parsed->manifest().digest()));
    }
    runtime::SignArtifact(*signer_, &*parsed);
    bytes = parsed->SerializeAsString();
  }
  if (absl::Status s = store_->PutArtifact(digest, key, bytes, module_bytes); !s.ok()) return s;
  absl::StatusOr<int> evicted = store_->EvictTo(max_bytes_, digest, EvictableFor(tenant));
  if (!evicted.ok()) return evicted.status();
  evictions_ += *evicted;
  return static_cast<int64_t>(bytes.size());
}

}  // namespace kiln::server
