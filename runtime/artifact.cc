#include "runtime/artifact.h"

#include <openssl/evp.h>

#include <random>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format_lite.h"
#include "runtime/device_info.h"
#include "runtime/support/status_macros.h"

namespace kiln::runtime {

std::string Sha256Hex(absl::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), size));
}

namespace {

// SHA-256 over every byte of the artifact but the signature: the executable, the kernels and the
// manifest (its digest field empty), each length-prefixed so that no two different artifacts
// hash the same bytes. The code and what decides where and how it runs: the same kernels
// compiled for a board without SVE and for one with it are two artifacts, and a manifest edited
// (fewer CPU features claimed, an entry renamed) no longer matches its digest. The manifest is
// serialized deterministically; fields this runtime does not know are kept and covered.
std::string ContentDigest(const kiln::v1::ArtifactProto& a) {
  kiln::v1::ArtifactManifest manifest = a.manifest();
  manifest.clear_digest();
  std::string manifest_bytes;
  {
    google::protobuf::io::StringOutputStream stream(&manifest_bytes);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);
    manifest.SerializeToCodedStream(&out);
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  auto add = [&](const std::string& field) {
    const uint64_t length = field.size();
    EVP_DigestUpdate(ctx, &length, sizeof(length));
    EVP_DigestUpdate(ctx, field.data(), field.size());
  };
  add(a.executable());
  add(a.kernels());
  add(manifest_bytes);
  EVP_DigestFinal_ex(ctx, digest, &size);
  EVP_MD_CTX_free(ctx);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), size));
}

}  // namespace

std::string SerializeArtifact(kiln::v1::ArtifactProto artifact) {
  artifact.set_format_version(kArtifactFormatVersion);
  artifact.mutable_manifest()->set_digest(ContentDigest(artifact));
  return artifact.SerializeAsString();
}

absl::StatusOr<kiln::v1::ArtifactManifest> ReadArtifactManifest(absl::string_view bytes) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  constexpr int kManifestField = 2;  // ArtifactProto.manifest
  while (uint32_t tag = in.ReadTag()) {
    if (google::protobuf::internal::WireFormatLite::GetTagFieldNumber(tag) == kManifestField) {
      std::string manifest_bytes;
      uint32_t length = 0;
      kiln::v1::ArtifactManifest manifest;
      if (!in.ReadVarint32(&length) || !in.ReadString(&manifest_bytes, static_cast<int>(length)) ||
          !manifest.ParseFromString(manifest_bytes)) {
        break;
      }
      return manifest;
    }
    if (!google::protobuf::internal::WireFormatLite::SkipField(&in, tag)) break;
  }
  return absl::InvalidArgumentError("not a Kiln artifact");
}

const kiln::v1::EntryFunction* FindEntryFunction(const kiln::v1::ArtifactManifest& manifest,
                                                 absl::string_view name) {
  for (const kiln::v1::EntryFunction& f : manifest.functions()) {
    if (f.name() == name) return &f;
  }
  return nullptr;
}

absl::StatusOr<Tensor> RandomArgument(const kiln::v1::ValueSignature& param, uint64_t seed) {
  if (param.kind() != "tensor" || param.dtype() != "float32") {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter '", param.name(), "' is not a float32 tensor: give the inputs explicitly"));
  }
  std::vector<int64_t> shape;
  for (const std::string& d : param.dims()) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(d, &v)) {
      return absl::InvalidArgumentError(absl::StrCat("parameter '", param.name(),
                                                     "' has the symbolic dimension '", d,
                                                     "': give the inputs explicitly"));
    }
    shape.push_back(v);
  }
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(shape, *ParseDataType("float32")));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  float* data = static_cast<float*>(t.data());
  for (int64_t i = 0; i < t.NumElements(); ++i) data[i] = dist(rng);
  return t;
}

absl::StatusOr<kiln::v1::ArtifactProto> ParseArtifact(absl::string_view bytes, bool check_host) {
  kiln::v1::ArtifactProto a;
  if (!a.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) || !a.has_manifest()) {
    return absl::InvalidArgumentError("not a Kiln artifact");
  }
  if (a.format_version() != kArtifactFormatVersion) {
    return absl::InvalidArgumentError(absl::StrCat("artifact format version ", a.format_version(),
                                                   " is not supported (this runtime reads ",
                                                   kArtifactFormatVersion, ")"));
  }
  std::string digest = ContentDigest(a);
  if (digest != a.manifest().digest()) {
    return absl::DataLossError(absl::StrCat("the artifact's content digest is ", digest,
                                            ", its manifest says ", a.manifest().digest(),
                                            ": the file is corrupt"));
  }
  if (check_host) {
    static const kiln::v1::DeviceAttributes* here =
        new kiln::v1::DeviceAttributes(LocalDeviceAttributes());
    std::vector<std::string> features(a.manifest().cpu_features().begin(),
                                      a.manifest().cpu_features().end());
    KILN_RETURN_IF_ERROR(CheckCodeRunsOn(a.manifest().target_triple(), features, *here));
  }
  return a;
}

absl::StatusOr<LoadedArtifact> LoadArtifact(absl::string_view bytes,
                                            std::shared_ptr<ThreadPool> pool) {
  KILN_ASSIGN_OR_RETURN(kiln::v1::ArtifactProto a, ParseArtifact(bytes, /*check_host=*/true));
  return LoadParsedArtifact(a, std::move(pool));
}

absl::StatusOr<LoadedArtifact> LoadParsedArtifact(const kiln::v1::ArtifactProto& a,
                                                  std::shared_ptr<ThreadPool> pool) {
  LoadedArtifact out;
  out.manifest = a.manifest();
  KILN_ASSIGN_OR_RETURN(out.kernels, KernelLibrary::LoadFromMemory(a.kernels(), "artifact"));
  KILN_ASSIGN_OR_RETURN(vm::Executable exec, vm::Executable::Deserialize(a.executable()));
  KILN_ASSIGN_OR_RETURN(
      out.vm, vm::VirtualMachine::Create(std::make_shared<const vm::Executable>(std::move(exec)),
                                         out.kernels, std::move(pool), nullptr));
  return out;
}

}  // namespace kiln::runtime
