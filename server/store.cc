#include "server/store.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "runtime/artifact.h"

namespace kiln::server {

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Store::ArtifactPath(const std::string& digest) const {
  return absl::StrCat(dir_, "/artifacts/", digest, ".kiln");
}

std::string Store::ModulePath(const std::string& digest) const {
  return absl::StrCat(dir_, "/artifacts/", digest, ".module");
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes) {
  std::string temp = absl::StrCat(path, ".tmp.", getpid());
  {
    // Owner-only: artifacts and inputs are tenants' data.
    int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return absl::InternalError(absl::StrCat("store: cannot write ", temp));
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    close(fd);
    if (done != bytes.size())
      return absl::InternalError(absl::StrCat("store: cannot write ", temp));
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("store: cannot write ", path, ": ", ec.message()));
  return absl::OkStatus();
}

absl::Status CreatePrivateDirectories(const std::string& dir,
                                      const std::vector<std::string>& subdirs) {
  std::error_code ec;
  for (const std::string& sub : subdirs) {
    std::filesystem::create_directories(dir + "/" + sub, ec);
    if (!ec) std::filesystem::permissions(dir + "/" + sub, std::filesystem::perms::owner_all, ec);
    if (ec) break;
  }
  if (!ec) std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("store: cannot create ", dir, ": ", ec.message()));
  }
  return absl::OkStatus();
}

bool IntactArtifactFile(const std::string& path, const std::string& digest) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  return bytes.ok() && VerifyArtifact(*bytes, digest).ok();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("store: no file ", path));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

absl::Status VerifyArtifact(const std::string& bytes, const std::string& digest) {
  absl::StatusOr<v1::ArtifactProto> parsed = runtime::ParseArtifact(bytes, /*check_host=*/false);
  if (!parsed.ok()) return parsed.status();
  if (parsed->manifest().digest() != digest) {
    return absl::DataLossError(absl::StrCat("its content digest is ", parsed->manifest().digest()));
  }
  return absl::OkStatus();
}

}  // namespace kiln::server
