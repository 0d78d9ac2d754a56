// kiln-worker: compiles one module and exits. kilnd runs each compile in a fresh worker process
// under a deadline and a memory limit, so a compiler crash, hang or runaway allocation costs that
// one job and never the daemon (server/worker_pool.h).
#include <chrono>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "compiler/backend/build.h"
#include "compiler/wire/ir_proto.h"
#include "proto/kiln/v1/artifact.pb.h"
#include "server/worker.pb.h"

namespace {

kiln::server::CompileOutcome Compile(const kiln::server::CompileWork& work) {
  kiln::server::CompileOutcome outcome;
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<kiln::ir::IRModule> mod = kiln::wire::DeserializeModule(work.module());
  absl::StatusOr<std::string> artifact = absl::InternalError("not compiled");
  if (!mod.ok()) {
    artifact = mod.status();
  } else {
    kiln::backend::BuildOptions options;
    options.fuse = !work.options().no_fuse();
    options.fold_constants = !work.options().no_fold();
    artifact = kiln::backend::BuildArtifact(*mod, work.target(), options);
  }
  outcome.set_seconds(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (!artifact.ok()) {
    outcome.set_code(static_cast<int>(artifact.status().code()));
    outcome.set_error(std::string(artifact.status().message()));
    return outcome;
  }
  kiln::v1::ArtifactProto parsed;
  parsed.ParseFromString(*artifact);
  outcome.set_ok(true);
  outcome.set_digest(parsed.manifest().digest());
  outcome.set_artifact(std::move(*artifact));
  return outcome;
}

}  // namespace

int main() {
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  kiln::server::CompileWork work;
  if (!work.ParseFromString(input)) {
    std::fprintf(stderr, "kiln-worker: the work on stdin does not parse\n");
    return 1;
  }
  std::string out = Compile(work).SerializeAsString();
  return std::fwrite(out.data(), 1, out.size(), stdout) == out.size() ? 0 : 1;
}
