#include "runtime/artifact_signing.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/artifact.h"

namespace kiln::runtime {
namespace {

std::shared_ptr<EVP_PKEY> Own(EVP_PKEY* key) {
  return std::shared_ptr<EVP_PKEY>(key, EVP_PKEY_free);
}

std::string OpenSslError() {
  unsigned long code = ERR_get_error();  // NOLINT: OpenSSL's type
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

std::string KeyIdOf(EVP_PKEY* key) {
  unsigned char raw[64];
  size_t size = sizeof(raw);
  if (EVP_PKEY_get_raw_public_key(key, raw, &size) != 1) return "";
  return Sha256Hex(absl::string_view(reinterpret_cast<const char*>(raw), size)).substr(0, 16);
}

std::string Pem(EVP_PKEY* key, bool private_key) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (private_key) {
    PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  } else {
    PEM_write_bio_PUBKEY(bio, key);
  }
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);  // NOLINT: OpenSSL's type
  std::string out(data, static_cast<size_t>(size));
  BIO_free(bio);
  return out;
}

absl::StatusOr<std::string> ReadWhole(const std::string& path, bool owner_only) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::Status(
        errno == ENOENT ? absl::StatusCode::kNotFound : absl::StatusCode::kPermissionDenied,
        absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || (owner_only && (st.st_mode & 077) != 0)) {
    close(fd);
    return absl::FailedPreconditionError(absl::StrCat(
        path, " is a private key that users other than its owner may read: chmod 600 it"));
  }
  std::string bytes;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) bytes.append(buffer, static_cast<size_t>(n));
  close(fd);
  return bytes;
}

// Writes `bytes` to `path` with `mode` only where it does not exist yet (a temporary file
// linked into place): false where another process created it first.
absl::StatusOr<bool> CreateExclusive(const std::string& path, const std::string& bytes,
                                     mode_t mode) {
  std::string temp = absl::StrCat(path, ".tmp.", getpid());
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0)
    return absl::InternalError(absl::StrCat("cannot write ", temp, ": ", std::strerror(errno)));
  const bool written = write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
  fchmod(fd, mode);
  close(fd);
  if (!written) {
    unlink(temp.c_str());
    return absl::InternalError(absl::StrCat("cannot write ", temp));
  }
  const bool linked = link(temp.c_str(), path.c_str()) == 0;
  const int link_errno = errno;
  unlink(temp.c_str());
  if (linked) return true;
  if (link_errno == EEXIST) return false;
  return absl::InternalError(absl::StrCat("cannot create ", path, ": ", std::strerror(link_errno)));
}

}  // namespace

std::string SignedStatement(absl::string_view digest) {
  return absl::StrCat("kiln-artifact-v3:", digest);
}

SigningKey::SigningKey(std::shared_ptr<EVP_PKEY> key)
    : key_(std::move(key)), key_id_(KeyIdOf(key_.get())) {}

absl::StatusOr<SigningKey> SigningKey::Generate() {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  if (key == nullptr)
    return absl::InternalError("cannot generate an Ed25519 key: " + OpenSslError());
  return SigningKey(Own(key));
}

absl::StatusOr<SigningKey> SigningKey::Load(const std::string& path) {
  absl::StatusOr<std::string> pem = ReadWhole(path, /*owner_only=*/true);
  if (!pem.ok()) return pem.status();
  BIO* bio = BIO_new_mem_buf(pem->data(), static_cast<int>(pem->size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not a PEM private key: ", OpenSslError()));
  }
  if (EVP_PKEY_get_id(key) != EVP_PKEY_ED25519) {
    EVP_PKEY_free(key);
    return absl::InvalidArgumentError(absl::StrCat(path, " is not an Ed25519 key"));
  }
  return SigningKey(Own(key));
}

absl::StatusOr<SigningKey> SigningKey::LoadOrCreate(const std::string& path) {
  absl::StatusOr<SigningKey> existing = Load(path);
  if (existing.ok() || !absl::IsNotFound(existing.status())) return existing;
  absl::StatusOr<SigningKey> fresh = Generate();
  if (!fresh.ok()) return fresh.status();
  absl::StatusOr<bool> created = CreateExclusive(path, fresh->PrivateKeyPem(), 0600);
  if (!created.ok()) return created.status();
  if (!*created) return Load(path);  // another process was first: its key
  absl::StatusOr<bool> pub = CreateExclusive(path + ".pub", fresh->PublicKeyPem(), 0644);
  if (!pub.ok()) return pub.status();
  return fresh;
}

std::string SigningKey::PrivateKeyPem() const { return Pem(key_.get(), /*private_key=*/true); }
std::string SigningKey::PublicKeyPem() const { return Pem(key_.get(), /*private_key=*/false); }

std::string SigningKey::Sign(absl::string_view message) const {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned char signature[64];
  size_t size = sizeof(signature);
  std::string out;
  if (EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, key_.get()) == 1 &&
      EVP_DigestSign(ctx, signature, &size, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) == 1) {
    out.assign(reinterpret_cast<const char*>(signature), size);
  }
  EVP_MD_CTX_free(ctx);
  return out;
}

absl::StatusOr<TrustedKeys> TrustedKeys::FromPem(absl::string_view pem, const std::string& what) {
  TrustedKeys out;
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  while (EVP_PKEY* key = PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr)) {
    if (EVP_PKEY_get_id(key) != EVP_PKEY_ED25519) {
      EVP_PKEY_free(key);
      BIO_free(bio);
      return absl::InvalidArgumentError(absl::StrCat(what, ": a key that is not Ed25519"));
    }
    out.keys_.push_back({KeyIdOf(key), Own(key)});
  }
  BIO_free(bio);
  ERR_clear_error();  // the end of the file reads as an error
  if (out.keys_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " holds no PEM public key"));
  }
  return out;
}

absl::StatusOr<TrustedKeys> TrustedKeys::Load(const std::string& path) {
  absl::StatusOr<std::string> pem = ReadWhole(path, /*owner_only=*/false);
  if (!pem.ok()) return pem.status();
  return FromPem(*pem, path);
}

void TrustedKeys::Add(const SigningKey& key) {
  absl::StatusOr<TrustedKeys> one = FromPem(key.PublicKeyPem(), "the signing key");
  if (one.ok()) keys_.push_back(one->keys_.front());
}

void TrustedKeys::Add(const TrustedKeys& more) {
  keys_.insert(keys_.end(), more.keys_.begin(), more.keys_.end());
}

std::vector<std::string> TrustedKeys::key_ids() const {
  std::vector<std::string> ids;
  for (const Key& k : keys_) ids.push_back(k.key_id);
  return ids;
}

std::string TrustedKeys::Pem() const {
  std::string out;
  for (const Key& k : keys_) out += runtime::Pem(k.key.get(), /*private_key=*/false);
  return out;
}

absl::Status TrustedKeys::Verify(absl::string_view key_id, absl::string_view message,
                                 absl::string_view signature) const {
  for (const Key& k : keys_) {
    if (k.key_id != key_id) continue;
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    const bool ok =
        EVP_DigestVerifyInit(ctx, nullptr, nullptr, nullptr, k.key.get()) == 1 &&
        EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(signature.data()),
                         signature.size(), reinterpret_cast<const unsigned char*>(message.data()),
                         message.size()) == 1;
    EVP_MD_CTX_free(ctx);
    ERR_clear_error();
    if (ok) return absl::OkStatus();
    return absl::PermissionDeniedError(
        absl::StrCat("its signature by key ", key_id, " does not match its digest"));
  }
  return absl::PermissionDeniedError(
      absl::StrCat("it is signed by key ", key_id.empty() ? "(none named)" : key_id,
                   ", which this process does not trust (trusted: ",
                   keys_.empty() ? "none" : absl::StrJoin(key_ids(), ", "), ")"));
}

void SignArtifact(const SigningKey& key, kiln::v1::ArtifactProto* artifact) {
  kiln::v1::ArtifactSignature* s = artifact->mutable_signature();
  s->set_key_id(key.key_id());
  s->set_signature(key.Sign(SignedStatement(artifact->manifest().digest())));
}

absl::Status CheckArtifactSignature(const kiln::v1::ArtifactProto& artifact,
                                    const TrustedKeys& trusted) {
  if (!artifact.has_signature() || artifact.signature().signature().empty()) {
    return absl::PermissionDeniedError(
        "it is not signed: only artifacts a trusted kilnd built (or signed) run on a device");
  }
  return trusted.Verify(artifact.signature().key_id(),
                        SignedStatement(artifact.manifest().digest()),
                        artifact.signature().signature());
}

std::string MeasurementStatement(const kiln::v1::KernelMeasure& measure) {
  std::string framed;
  for (const std::string* part :
       {&measure.reference(), &measure.candidate(), &measure.function()}) {
    absl::StrAppend(&framed, part->size(), ":", *part);
  }
  return absl::StrCat("kiln-measure-v1:", Sha256Hex(framed));
}

void SignMeasurement(const SigningKey& key, kiln::v1::KernelMeasure* measure) {
  measure->set_signing_key_id(key.key_id());
  measure->set_signature(key.Sign(MeasurementStatement(*measure)));
}

absl::Status CheckMeasurementSignature(const kiln::v1::KernelMeasure& measure,
                                       const TrustedKeys& trusted) {
  if (measure.signature().empty()) {
    return absl::PermissionDeniedError(
        "the candidate's libraries are not signed: only kernels a trusted kilnd built run on a "
        "device");
  }
  return trusted.Verify(measure.signing_key_id(), MeasurementStatement(measure),
                        measure.signature());
}

}  // namespace kiln::runtime
