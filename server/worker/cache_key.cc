#include "server/worker/cache_key.h"

#include "absl/strings/str_cat.h"
#include "compiler/ir/structural.h"
#include "compiler/version.h"
#include "compiler/wire/ir_proto.h"
#include "runtime/artifact.h"

namespace kiln::server {

std::string CacheKey(const ir::IRModule& mod, const std::string& target,
                     const v1::CompileOptions& options, const std::string& records,
                     const std::string& compiler_identity) {
  std::string options_bytes;
  options.SerializeToString(&options_bytes);  // deterministic for a message of scalars
  return runtime::Sha256Hex(absl::StrCat("kiln-cache-key-v1\n", ir::StructuralHash(mod), "\n",
                                         target, "\n", options_bytes, "\n", compiler_identity,
                                         records.empty() ? "" : "\ntuned ", records));
}

const CachedModule* FindStructuralMatch(const ir::IRModule& mod,
                                        const CacheCandidates& candidates) {
  for (const CachedModule& candidate : candidates.candidates()) {
    absl::StatusOr<ir::IRModule> stored = wire::DeserializeModule(candidate.module());
    if (stored.ok() && ir::StructuralEqual(*stored, mod)) return &candidate;
  }
  return nullptr;
}

}  // namespace kiln::server
