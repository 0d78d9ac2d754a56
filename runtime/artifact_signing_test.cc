#include "runtime/artifact_signing.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "gtest/gtest.h"
#include "runtime/artifact.h"

namespace kiln::runtime {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

// A small artifact as SerializeArtifact writes it, parsed back.
v1::ArtifactProto SomeArtifact() {
  v1::ArtifactProto a;
  a.set_executable("executable bytes");
  a.set_kernels("kernel bytes");
  a.mutable_manifest()->set_target("llvm");
  a.mutable_manifest()->add_functions()->set_name("main");
  absl::StatusOr<v1::ArtifactProto> parsed =
      ParseArtifact(SerializeArtifact(a), /*check_host=*/false);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return *parsed;
}

TEST(ArtifactDigestTest, CoversTheWholeManifest) {
  v1::ArtifactProto a = SomeArtifact();
  // An entry renamed (or any manifest field edited) without a new digest: refused as corrupt.
  a.mutable_manifest()->mutable_functions(0)->set_name("main2");
  absl::StatusOr<v1::ArtifactProto> edited =
      ParseArtifact(a.SerializeAsString(), /*check_host=*/false);
  ASSERT_FALSE(edited.ok());
  EXPECT_EQ(edited.status().code(), absl::StatusCode::kDataLoss) << edited.status();
  a.mutable_manifest()->mutable_functions(0)->set_name("main");
  a.mutable_manifest()->set_compiler_version("another compiler");
  EXPECT_FALSE(ParseArtifact(a.SerializeAsString(), false).ok());
}

TEST(ArtifactSigningTest, OnlyTrustedKeysSignaturesOfTheDigestPass) {
  absl::StatusOr<SigningKey> kilnd = SigningKey::Generate();
  absl::StatusOr<SigningKey> other = SigningKey::Generate();
  ASSERT_TRUE(kilnd.ok() && other.ok());
  EXPECT_EQ(kilnd->key_id().size(), 16u);
  EXPECT_NE(kilnd->key_id(), other->key_id());
  absl::StatusOr<TrustedKeys> trusted = TrustedKeys::FromPem(kilnd->PublicKeyPem(), "test");
  ASSERT_TRUE(trusted.ok()) << trusted.status();

  v1::ArtifactProto a = SomeArtifact();
  absl::Status unsigned_status = CheckArtifactSignature(a, *trusted);
  EXPECT_EQ(unsigned_status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(unsigned_status.message().find("not signed"), std::string::npos) << unsigned_status;

  SignArtifact(*kilnd, &a);
  EXPECT_TRUE(CheckArtifactSignature(a, *trusted).ok());
  // The signature survives the file: serialized, parsed, checked.
  absl::StatusOr<v1::ArtifactProto> reread = ParseArtifact(a.SerializeAsString(), false);
  ASSERT_TRUE(reread.ok());
  EXPECT_TRUE(CheckArtifactSignature(*reread, *trusted).ok());

  // Another key's signature names that key.
  v1::ArtifactProto foreign = SomeArtifact();
  SignArtifact(*other, &foreign);
  absl::Status s = CheckArtifactSignature(foreign, *trusted);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find(other->key_id()), std::string::npos) << s;
  EXPECT_NE(s.message().find("does not trust"), std::string::npos) << s;

  // A signature moved onto another artifact (another digest) does not match it.
  v1::ArtifactProto moved = SomeArtifact();
  moved.set_kernels("other kernels");
  absl::StatusOr<v1::ArtifactProto> other_artifact = ParseArtifact(SerializeArtifact(moved), false);
  ASSERT_TRUE(other_artifact.ok());
  *other_artifact->mutable_signature() = a.signature();
  s = CheckArtifactSignature(*other_artifact, *trusted);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("does not match"), std::string::npos) << s;
}

// Rotation: an agent trusting the old and the new key accepts both artifacts; once the old key
// is dropped from its file, the old artifacts are refused.
TEST(ArtifactSigningTest, RotationKeepsBothKeysUntilTheOldIsDropped) {
  absl::StatusOr<SigningKey> old_key = SigningKey::Generate();
  absl::StatusOr<SigningKey> new_key = SigningKey::Generate();
  ASSERT_TRUE(old_key.ok() && new_key.ok());
  v1::ArtifactProto before = SomeArtifact(), after = SomeArtifact();
  SignArtifact(*old_key, &before);
  SignArtifact(*new_key, &after);
  absl::StatusOr<TrustedKeys> both =
      TrustedKeys::FromPem(old_key->PublicKeyPem() + new_key->PublicKeyPem(), "both");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->key_ids().size(), 2u);
  EXPECT_TRUE(CheckArtifactSignature(before, *both).ok());
  EXPECT_TRUE(CheckArtifactSignature(after, *both).ok());
  absl::StatusOr<TrustedKeys> new_only = TrustedKeys::FromPem(
      both->Pem().substr(both->Pem().find("-----BEGIN PUBLIC KEY-----", 10)), "new");
  ASSERT_TRUE(new_only.ok());
  EXPECT_FALSE(CheckArtifactSignature(before, *new_only).ok());
  EXPECT_TRUE(CheckArtifactSignature(after, *new_only).ok());
}

TEST(MeasurementSigningTest, EitherLibraryOrTheFunctionChangedIsRefused) {
  absl::StatusOr<SigningKey> key = SigningKey::Generate();
  absl::StatusOr<SigningKey> stranger = SigningKey::Generate();
  ASSERT_TRUE(key.ok() && stranger.ok());
  TrustedKeys trusted;
  trusted.Add(*key);
  v1::KernelMeasure m;
  m.set_reference("reference library");
  m.set_candidate("candidate library");
  m.set_function("fused_matmul");
  m.set_repeat(3);

  absl::Status unsigned_status = CheckMeasurementSignature(m, trusted);
  EXPECT_EQ(unsigned_status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(unsigned_status.message().find("not signed"), std::string::npos) << unsigned_status;

  SignMeasurement(*key, &m);
  EXPECT_TRUE(CheckMeasurementSignature(m, trusted).ok());
  // The timing settings are kilnd's to choose per agent; the code is what is signed.
  m.set_repeat(5);
  EXPECT_TRUE(CheckMeasurementSignature(m, trusted).ok());

  // Moving a byte from one library to the other changes the statement (length-prefixed).
  v1::KernelMeasure moved = m;
  moved.set_reference("reference librar");
  moved.set_candidate("ycandidate library");
  EXPECT_EQ(CheckMeasurementSignature(moved, trusted).code(), absl::StatusCode::kPermissionDenied);
  v1::KernelMeasure other_function = m;
  other_function.set_function("fused_conv");
  EXPECT_EQ(CheckMeasurementSignature(other_function, trusted).code(),
            absl::StatusCode::kPermissionDenied);

  v1::KernelMeasure foreign = m;
  SignMeasurement(*stranger, &foreign);
  absl::Status foreign_status = CheckMeasurementSignature(foreign, trusted);
  EXPECT_EQ(foreign_status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(foreign_status.message().find(stranger->key_id()), std::string::npos) << foreign_status;
}

TEST(SigningKeyTest, CreatedOnceOwnerOnlyAndLoadedAgain) {
  const std::string path = TempPath("signing_key.pem");
  unlink(path.c_str());
  unlink((path + ".pub").c_str());
  absl::StatusOr<SigningKey> created = SigningKey::LoadOrCreate(path);
  ASSERT_TRUE(created.ok()) << created.status();
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  absl::StatusOr<SigningKey> again = SigningKey::LoadOrCreate(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->key_id(), created->key_id());
  absl::StatusOr<TrustedKeys> pub = TrustedKeys::Load(path + ".pub");
  ASSERT_TRUE(pub.ok()) << pub.status();
  EXPECT_EQ(pub->key_ids(), std::vector<std::string>{created->key_id()});

  // A private key others may read is refused; so is a file that is not a key.
  chmod(path.c_str(), 0644);
  absl::StatusOr<SigningKey> shared = SigningKey::Load(path);
  EXPECT_EQ(shared.status().code(), absl::StatusCode::kFailedPrecondition) << shared.status();
  std::ofstream(path + ".junk") << "not a key";
  chmod((path + ".junk").c_str(), 0600);
  EXPECT_EQ(SigningKey::Load(path + ".junk").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(TrustedKeys::FromPem("garbage", "junk").ok());
}

}  // namespace
}  // namespace kiln::runtime
