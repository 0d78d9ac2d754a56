// The .kiln artifact: a manifest (target, entry signatures, compiler version, content digest),
// the VM executable and the kernel library in one file (runtime/format/artifact.proto).
// Loading verifies the format version, the digest and that the target can run on this host.
#ifndef KILN_RUNTIME_ARTIFACT_H_
#define KILN_RUNTIME_ARTIFACT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/format/artifact.pb.h"
#include "runtime/thread_pool.h"
#include "runtime/vm/vm.h"

namespace kiln::runtime {

// 3: the digest covers the whole manifest (entry names, signatures, compiler) as well as the
// code, and a signature of it may come beside (artifact_signing.h).
inline constexpr uint32_t kArtifactFormatVersion = 3;

// SHA-256 of `bytes`, lowercase hex.
std::string Sha256Hex(absl::string_view bytes);

// Fills in the digest and serializes.
std::string SerializeArtifact(kiln::v1::ArtifactProto artifact);

// Parses and verifies: version, digest, and (when `check_host`) that this machine runs the code:
// the target triple's architecture and the CPU features the manifest lists (CheckCodeRunsOn).
// Errors name what does not match.
absl::StatusOr<kiln::v1::ArtifactProto> ParseArtifact(absl::string_view bytes, bool check_host);

// Only the manifest of serialized artifact `bytes`, skipping the executable and the kernels
// unread and unchecked (what a summary needs of a 50 MB artifact).
absl::StatusOr<kiln::v1::ArtifactManifest> ReadArtifactManifest(absl::string_view bytes);

// The manifest's entry `name`, or null.
const kiln::v1::EntryFunction* FindEntryFunction(const kiln::v1::ArtifactManifest& manifest,
                                                 absl::string_view name);

// A float32 tensor of `param`'s static shape, uniform in [-1, 1) from `seed`: what a profile
// without given inputs runs on. InvalidArgument, naming the parameter, for any other kind or
// dtype and for a symbolic dimension (the inputs must then be given).
absl::StatusOr<Tensor> RandomArgument(const kiln::v1::ValueSignature& param, uint64_t seed);

// A loaded model: the kernel library and the VM over its executable.
struct LoadedArtifact {
  kiln::v1::ArtifactManifest manifest;
  std::shared_ptr<KernelLibrary> kernels;
  std::unique_ptr<vm::VirtualMachine> vm;
};
absl::StatusOr<LoadedArtifact> LoadArtifact(absl::string_view bytes,
                                            std::shared_ptr<ThreadPool> pool);
// The same for an artifact ParseArtifact(..., check_host=true) returned (and whose signature
// the caller may have checked first: artifact_signing.h).
absl::StatusOr<LoadedArtifact> LoadParsedArtifact(const kiln::v1::ArtifactProto& artifact,
                                                  std::shared_ptr<ThreadPool> pool);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_ARTIFACT_H_
