// The artifact cache's key and its hit test, computed where the module is loaded: in
// kiln-worker, never in kilnd. The key is the SHA-256 of (structural hash of the module, target,
// options, tuning records applied, compiler version); a key match is only a candidate, and a hit
// also needs the stored module to be structurally equal, so a 64-bit hash collision can never serve
// the wrong code.
#ifndef KILN_SERVER_WORKER_CACHE_KEY_H_
#define KILN_SERVER_WORKER_CACHE_KEY_H_

#include <string>

#include "compiler/ir/module.h"
#include "compiler/version.h"
#include "proto/kiln/v1/jobs.pb.h"
#include "server/worker.pb.h"

namespace kiln::server {

// `records` is the digest of the tuning records the compile applies (tune/apply.h; "" for
// none). `compiler_identity` is this build's (compiler/version.h) but for tests: another
// compiler's artifacts are never a hit.
std::string CacheKey(const ir::IRModule& mod, const std::string& target,
                     const v1::CompileOptions& options, const std::string& records = "",
                     const std::string& compiler_identity = CompilerIdentity());

// The first candidate whose stored module is structurally equal to `mod`; nullptr if none
// (candidates whose bytes do not decode are skipped).
const CachedModule* FindStructuralMatch(const ir::IRModule& mod, const CacheCandidates& candidates);

}  // namespace kiln::server

#endif  // KILN_SERVER_WORKER_CACHE_KEY_H_
