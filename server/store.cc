#include "server/store.h"

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
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) return absl::InternalError(absl::StrCat("store: cannot write ", temp));
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("store: cannot write ", path, ": ", ec.message()));
  return absl::OkStatus();
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
