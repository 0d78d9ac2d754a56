// kiln-worker: loads and compiles one module, then exits. kilnd runs each compile in a fresh
// worker process under the job's deadline and the configured memory and CPU-time limits
// (runtime/support/subprocess.h), so a front end or compiler crash, hang or runaway allocation
// costs that one job and never the daemon. The conversation with kilnd is in worker.proto.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/backend/build.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/frontend/load_module.h"
#include "compiler/wire/ir_proto.h"
#include "runtime/format/artifact.pb.h"
#include "server/cache_key.h"
#include "server/worker.pb.h"
#include "server/worker_frames.h"

namespace kiln::server {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Fail(const absl::Status& status, CompileOutcome* outcome) {
  outcome->set_ok(false);
  outcome->set_code(static_cast<int>(status.code()));
  outcome->set_error(std::string(status.message()));
}

#ifdef KILN_WORKER_TEST_HOOKS
// Only in the test build (//server:kiln-worker-test-hooks): a module with one of these names
// makes the front end misbehave, so tests can show what a crashing front end costs.
void TestHooks(const std::string& module_name) {
  if (module_name == "kiln-test-abort-in-frontend") std::abort();
  if (module_name == "kiln-test-spin-in-frontend") {
    for (volatile uint64_t i = 0;; i = i + 1) {
    }
  }
}
#else
void TestHooks(const std::string& /*module_name*/) {}
#endif

absl::StatusOr<frontend::SourceForm> FormOf(const v1::ModuleSource& source) {
  switch (source.form_case()) {
    case v1::ModuleSource::kIrProto:
      return frontend::SourceForm::kIrProto;
    case v1::ModuleSource::kTvmscript:
      return frontend::SourceForm::kTvmScript;
    case v1::ModuleSource::kOnnx:
      return frontend::SourceForm::kOnnx;
    default:
      return absl::InvalidArgumentError(
          "module: give it as ir_proto, tvmscript or onnx (none was set)");
  }
}

absl::string_view SourceBytes(const v1::ModuleSource& source) {
  switch (source.form_case()) {
    case v1::ModuleSource::kIrProto:
      return source.ir_proto();
    case v1::ModuleSource::kTvmscript:
      return source.tvmscript();
    default:
      return source.onnx();
  }
}

// Load, ask kilnd's cache, and build on a miss.
void Compile(const CompileWork& work, CompileOutcome* outcome) {
  auto start = std::chrono::steady_clock::now();
  TestHooks(work.module_name());
  absl::StatusOr<frontend::SourceForm> form = FormOf(work.source());
  if (!form.ok()) return Fail(form.status(), outcome);
  absl::StatusOr<ir::IRModule> mod =
      frontend::LoadModule(*form, SourceBytes(work.source()), work.module_name());
  outcome->set_load_seconds(SecondsSince(start));
  if (!mod.ok()) return Fail(mod.status(), outcome);

  std::string key = CacheKey(*mod, work.target(), work.options());
  outcome->set_cache_key(key);
  WorkerMessage query;
  query.mutable_cache_query()->set_cache_key(key);
  if (!WriteFrame(stdout, query)) return Fail(absl::InternalError("kilnd went away"), outcome);
  std::optional<std::string> answer = ReadFrame(stdin);
  CacheCandidates candidates;
  if (!answer.has_value() || !candidates.ParseFromString(*answer)) {
    return Fail(absl::InternalError("kilnd sent no cache answer"), outcome);
  }
  if (const CachedModule* hit = FindStructuralMatch(*mod, candidates)) {
    outcome->set_ok(true);
    outcome->set_cache_hit(true);
    outcome->set_digest(hit->digest());
    outcome->set_seconds(SecondsSince(start));
    return;
  }

  backend::BuildOptions options;
  options.fuse = !work.options().no_fuse();
  options.fold_constants = !work.options().no_fold();
  absl::StatusOr<std::string> artifact = backend::BuildArtifact(*mod, work.target(), options);
  outcome->set_seconds(SecondsSince(start));
  if (!artifact.ok()) return Fail(artifact.status(), outcome);
  v1::ArtifactProto parsed;
  parsed.ParseFromString(*artifact);
  outcome->set_ok(true);
  outcome->set_digest(parsed.manifest().digest());
  outcome->set_module(wire::SerializeModule(*mod));
  outcome->set_artifact(std::move(*artifact));
}

// A worker is started ahead of the job it will run and waits for it; it spends that wait on
// what every compile in a fresh process pays first and that does not depend on the job: LLVM's
// target registry and the host CPU's features. (A whole warm-up compile was measured too: it
// delays a job that arrives while the worker still runs it, which back-to-back jobs always do.)
void WarmUp() { (void)codegen::ParseTarget("llvm"); }

std::string MemoryLimit() {
  struct rlimit limit;
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return "";
  return absl::StrCat(" of ", limit.rlim_cur >> 20, " MiB");
}

}  // namespace
}  // namespace kiln::server

int main() {
  using namespace kiln::server;  // NOLINT: a main of one namespace
  WarmUp();
  std::optional<std::string> input = ReadFrame(stdin);
  CompileWork work;
  if (!input.has_value() || !work.ParseFromString(*input)) {
    std::fprintf(stderr, "kiln-worker: no compile work on stdin\n");
    return 1;
  }
  WorkerMessage reply;
  try {
    Compile(work, reply.mutable_outcome());
  } catch (const std::bad_alloc&) {
    reply.Clear();
    Fail(absl::ResourceExhaustedError(absl::StrCat("out of memory: compiling ", work.module_name(),
                                                   " needs more than the worker's memory limit",
                                                   MemoryLimit())),
         reply.mutable_outcome());
  }
  return WriteFrame(stdout, reply) ? 0 : 1;
}
