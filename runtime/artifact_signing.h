// Signed artifacts: kilnd signs the digest of every artifact it builds with its Ed25519 key, and
// an agent runs only artifacts signed by a key it was configured to trust, checked before any
// byte of the artifact is loaded or mapped. The digest covers every byte but the signature
// (artifact.h), so a signature vouches for the code, the manifest and the target alike.
//
// Keys are PEM files (OpenSSL's formats): the private key kilnd holds (0600, created on first
// start where none is given), and the public keys an agent trusts, one or more in one file, so
// that a rotation lists the old key beside the new one until every artifact signed by the old
// one is gone (docs/SECURITY.md).
#ifndef KILN_RUNTIME_ARTIFACT_SIGNING_H_
#define KILN_RUNTIME_ARTIFACT_SIGNING_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/kiln/v1/agent.pb.h"
#include "runtime/format/artifact.pb.h"

typedef struct evp_pkey_st EVP_PKEY;

namespace kiln::runtime {

// What a signature signs: "kiln-artifact-v3:" + the digest.
std::string SignedStatement(absl::string_view digest);

// An Ed25519 key.
class SigningKey {
 public:
  // A new random key.
  static absl::StatusOr<SigningKey> Generate();
  // The private key in the PEM file at `path`; an unreadable, malformed or non-Ed25519 file is
  // an error naming it, and so is one that users other than its owner may read.
  static absl::StatusOr<SigningKey> Load(const std::string& path);
  // Load, or where `path` does not exist, Generate and write it (0600) with its public key
  // beside it (`path` + ".pub"). Two processes creating it at once end with the same key.
  static absl::StatusOr<SigningKey> LoadOrCreate(const std::string& path);

  // PEM text.
  std::string PrivateKeyPem() const;
  std::string PublicKeyPem() const;
  // The first 16 hex digits of the SHA-256 of the raw public key.
  const std::string& key_id() const { return key_id_; }
  std::string Sign(absl::string_view message) const;

 private:
  explicit SigningKey(std::shared_ptr<EVP_PKEY> key);
  std::shared_ptr<EVP_PKEY> key_;
  std::string key_id_;
};

// The public keys an agent (or kilnd, for artifacts handed back to it) accepts signatures of.
class TrustedKeys {
 public:
  TrustedKeys() = default;
  // Every Ed25519 public key in `pem` (concatenated PEM blocks); none is an error.
  static absl::StatusOr<TrustedKeys> FromPem(absl::string_view pem, const std::string& what);
  static absl::StatusOr<TrustedKeys> Load(const std::string& path);
  void Add(const SigningKey& key);
  void Add(const TrustedKeys& more);

  bool empty() const { return keys_.empty(); }
  std::vector<std::string> key_ids() const;
  // All of them, as concatenated PEM (what a task child is given).
  std::string Pem() const;

  // OK where `signature` is a signature of `message` by the key `key_id`; PermissionDenied
  // naming the reason otherwise.
  absl::Status Verify(absl::string_view key_id, absl::string_view message,
                      absl::string_view signature) const;

 private:
  struct Key {
    std::string key_id;
    std::shared_ptr<EVP_PKEY> key;
  };
  std::vector<Key> keys_;
};

// Signs `artifact`'s digest (already filled in: SerializeArtifact or ParseArtifact).
void SignArtifact(const SigningKey& key, kiln::v1::ArtifactProto* artifact);

// OK where `artifact` (parsed and its digest checked) carries a signature of its digest by one
// of `trusted`; PermissionDenied saying what is wrong otherwise: unsigned, signed by a key not
// trusted (naming it), or a signature that does not match.
absl::Status CheckArtifactSignature(const kiln::v1::ArtifactProto& artifact,
                                    const TrustedKeys& trusted);

// Tuning candidates travel to agents as two kernel libraries (KernelMeasure), not as artifacts:
// what kilnd signs for them is "kiln-measure-v1:" + the SHA-256 of the reference library, the
// candidate library and the function's name (each length-prefixed), so an agent runs no library
// kilnd's workers did not build either.
std::string MeasurementStatement(const kiln::v1::KernelMeasure& measure);
void SignMeasurement(const SigningKey& key, kiln::v1::KernelMeasure* measure);
// As CheckArtifactSignature, for a measurement.
absl::Status CheckMeasurementSignature(const kiln::v1::KernelMeasure& measure,
                                       const TrustedKeys& trusted);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_ARTIFACT_SIGNING_H_
