// kiln-worker: loads and compiles (or tunes, or quantizes) one module, then exits. kilnd runs each
// compile in a fresh worker process under the job's deadline and the configured memory and CPU-time
// limits (runtime/support/subprocess.h), so a front end or compiler crash, hang or runaway
// allocation costs that one job and never the daemon. The conversation with kilnd is in
// worker.proto.
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/backend/build.h"
#include "compiler/codegen/codegen_llvm.h"
#include "compiler/frontend/load_module.h"
#include "compiler/tir/transform/transform.h"
#include "compiler/tune/apply.h"
#include "compiler/tune/database.h"
#include "compiler/tune/postgres_connection.h"
#include "compiler/wire/ir_proto.h"
#include "llvm/Support/ErrorHandling.h"
#include "runtime/format/artifact.pb.h"
#include "runtime/support/large_stack.h"
#include "server/worker.pb.h"
#include "server/worker/cache_key.h"
#include "server/worker/worker_quantize.h"
#include "server/worker/worker_tune.h"
#include "server/worker_frames.h"

namespace kiln::server {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Fail(const absl::Status& status, CompileOutcome* outcome) {
  outcome->set_ok(false);
  outcome->set_code(static_cast<int>(status.code()));
  outcome->set_error(ValidUtf8(status.message()));
}

#ifdef KILN_WORKER_TEST_HOOKS
// Only in the test build (//server:kiln-worker-test-hooks): a module with one of these names
// makes the front end misbehave, so tests can show what a crashing front end costs (or slow,
// so a test can act while a compile surely runs).
void TestHooks(const std::string& module_name) {
  if (module_name == "kiln-test-abort-in-frontend") std::abort();
  // Slow, then as usual: a job that is surely running when a test kills its kilnd.
  if (absl::StartsWith(module_name, "kiln-test-slow-frontend")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  }
  if (module_name == "kiln-test-spin-in-frontend") {
    for (volatile uint64_t i = 0;; i = i + 1) {
    }
  }
}
// A quantize of a model named so pauses once calibration has begun (and kilnd was told): a test
// can cancel it, let its deadline pass or kill its worker mid-calibration.
void QuantizeStageHook(const std::string& module_name, const std::string& stage) {
  if (module_name == "kiln-test-slow-calibration" && absl::StartsWith(stage, "calibrating")) {
    std::this_thread::sleep_for(std::chrono::seconds(5));
  }
}
#else
void TestHooks(const std::string& /*module_name*/) {}
void QuantizeStageHook(const std::string& /*module_name*/, const std::string& /*stage*/) {}
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

// Parses, imports and normalizes the module as submitted.
absl::StatusOr<ir::IRModule> Load(const v1::ModuleSource& source, const std::string& name,
                                  int64_t max_constant_bytes) {
  TestHooks(name);
  absl::StatusOr<frontend::SourceForm> form = FormOf(source);
  if (!form.ok()) return form.status();
  frontend::LoadOptions load_options;
  if (max_constant_bytes > 0) load_options.max_constant_bytes = max_constant_bytes;
  return frontend::LoadModule(*form, SourceBytes(source), name, load_options);
}

// Load, ask kilnd's cache, and build on a miss.
void Compile(const CompileWork& work, CompileOutcome* outcome) {
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<ir::IRModule> mod =
      Load(work.source(), work.module_name(), work.max_constant_bytes());
  outcome->set_load_seconds(SecondsSince(start));
  if (!mod.ok()) return Fail(mod.status(), outcome);

  // The service's tuning records, where there are any: applied, and named in the cache key.
  std::shared_ptr<const tune::TuningDatabase> db;
  std::string records;
  if (!work.tuning_db_path().empty() && !work.options().no_tuning() &&
      (tune::PgConnection::IsUrl(work.tuning_db_path()) ||
       std::filesystem::exists(work.tuning_db_path()))) {
    absl::StatusOr<std::unique_ptr<tune::TuningDatabase>> opened =
        tune::TuningDatabase::Open(work.tuning_db_path());
    if (!opened.ok()) return Fail(opened.status(), outcome);
    (*opened)->set_owner(work.records_owner());
    absl::StatusOr<std::string> digest = tune::AppliedRecordsDigest(**opened, work.target());
    if (!digest.ok()) return Fail(digest.status(), outcome);
    records = *digest;
    if (!records.empty()) db = std::move(*opened);
  }
  std::string key = CacheKey(*mod, work.target(), work.options(), records);
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
  if (work.max_constant_bytes() > 0)
    options.fold_limits.max_constant_bytes = work.max_constant_bytes();
  if (work.max_folded_bytes() > 0) options.fold_limits.max_total_bytes = work.max_folded_bytes();
  if (db != nullptr) {
    // A record that no longer replays leaves its kernel to the default schedule: not an error.
    options.schedule_passes.push_back(
        tune::ApplyTuningRecordsPass(db, work.target(), [](const std::string&) {}));
  }
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

// A worker is started ahead of the job it will run. When no job is waiting for it, it spends the
// wait on what the first compile in a fresh process pays and a later one does not: LLVM's target
// set-up, the first touch of the compiler's code and data (measured: about 90 ms of a 300 ms
// compile). When a job is already there (back-to-back jobs), it starts on the job at once.
constexpr int kIdleBeforeWarmUpMs = 200;

bool InputWithin(int timeout_ms) {
  pollfd fd{0, POLLIN, 0};
  return poll(&fd, 1, timeout_ms) > 0;
}

void WarmUp() {
  // The kinds of kernel models are made of: a convolution with an epilogue, a pool, a dense
  // layer, a reduction; and a kernel on constants, which FoldConstant compiles, loads and runs.
  constexpr char kTiny[] = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 8, 8), "float32"), w: R.Tensor((8, 4, 3, 3), "float32"),
             b: R.Tensor((1, 8, 1, 1), "float32"), d: R.Tensor((128, 10), "float32")):
        with R.dataflow():
            c = R.nn.relu(R.add(R.nn.conv2d(x, w, padding=[1, 1, 1, 1]), b))
            p = R.nn.max_pool2d(c, pool_size=[2, 2], strides=[2, 2])
            f = R.reshape(p, R.shape([1, 128]))
            s = R.multiply(R.const([0.5, 2.0], "float32"), R.const(3.0, "float32"))
            y = R.nn.softmax(R.matmul(f, d), axis=-1)
            R.output(y)
        return (y, s)
)";
  absl::StatusOr<codegen::LlvmTargetInfo> target = codegen::ParseTarget("llvm");
  absl::StatusOr<ir::IRModule> mod =
      frontend::LoadModule(frontend::SourceForm::kTvmScript, kTiny, "warm-up.py");
  if (!target.ok() || !mod.ok()) return;
  backend::BuildOptions options;
  options.verify = false;
  absl::StatusOr<ir::IRModule> lowered =
      backend::RunPasses(*mod, backend::Pipeline(options), options);
  if (lowered.ok()) lowered = tir::LowerTir(*lowered);
  // Everything but the final link, which is a process of its own and warms nothing here.
  if (lowered.ok()) (void)codegen::CompileToObject(*lowered, *target);
}

// RLIMIT_CPU for the job: `seconds` more than this process has used so far (SIGXCPU at the soft
// limit, SIGKILL a second later).
void LimitCpu(int64_t seconds) {
  if (seconds <= 0) return;
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  rlim_t used = static_cast<rlim_t>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + 1);
  struct rlimit limit;
  limit.rlim_cur = used + static_cast<rlim_t>(seconds);
  limit.rlim_max = limit.rlim_cur + 1;
  setrlimit(RLIMIT_CPU, &limit);
}

std::string MemoryLimit() {
  struct rlimit limit;
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return "";
  return absl::StrCat(" of ", limit.rlim_cur >> 20, " MiB");
}

// Out of memory anywhere — in LLVM (built without exceptions, it would abort), in a thread of
// the compiler's own, or where nothing catches std::bad_alloc — the worker writes the outcome
// made before the work started (RESOURCE_EXHAUSTED) and ends: what kilnd reports does not depend
// on where the last allocation failed. The frame is written as it is: nothing is allocated.
std::string* out_of_memory_frame = nullptr;
std::atomic_flag out_of_memory_written = ATOMIC_FLAG_INIT;

[[noreturn]] void OutOfMemory() {
  if (out_of_memory_written.test_and_set()) {
    for (;;) pause();  // another thread is writing it and ending the process
  }
  const std::string& frame = *out_of_memory_frame;
  size_t written = 0;
  while (written < frame.size()) {
    ssize_t n = write(STDOUT_FILENO, frame.data() + written, frame.size() - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  _exit(written == frame.size() ? 0 : 1);
}

void OnLlvmOutOfMemory(void* /*user_data*/, const char* /*reason*/, bool /*gen_crash_diag*/) {
  OutOfMemory();
}

// Made before the work starts (the message names the module and the limit).
void PrepareForOutOfMemory(const WorkerInput& work) {
  const char* doing = work.has_tune()       ? "tuning "
                      : work.has_quantize() ? "quantizing "
                                            : "compiling ";
  const std::string& name = work.has_tune()       ? work.tune().module_name()
                            : work.has_quantize() ? work.quantize().module_name()
                                                  : work.compile().module_name();
  absl::Status status = absl::ResourceExhaustedError(
      absl::StrCat("out of memory: ", doing, ValidUtf8(name),
                   " needs more than the worker's memory limit", MemoryLimit()));
  WorkerMessage reply;
  if (work.has_tune()) {
    reply.mutable_tune_outcome()->set_code(static_cast<int>(status.code()));
    reply.mutable_tune_outcome()->set_error(std::string(status.message()));
  } else if (work.has_quantize()) {
    reply.mutable_quantize_outcome()->set_code(static_cast<int>(status.code()));
    reply.mutable_quantize_outcome()->set_error(std::string(status.message()));
  } else {
    Fail(status, reply.mutable_outcome());
  }
  out_of_memory_frame = new std::string(Frame(reply));
  std::set_new_handler(OutOfMemory);
  llvm::install_bad_alloc_error_handler(OnLlvmOutOfMemory);
}

}  // namespace
}  // namespace kiln::server

namespace kiln::server {
namespace {

// A tune: load the module, then search, build here and measure through kilnd.
void Tune(const TuneWork& work, TuneOutcome* outcome) {
  absl::StatusOr<ir::IRModule> mod =
      Load(work.source(), work.module_name(), work.max_constant_bytes());
  if (!mod.ok()) {
    outcome->set_code(static_cast<int>(mod.status().code()));
    outcome->set_error(ValidUtf8(mod.status().message()));
    return;
  }
  *outcome = TuneInWorker(work, *mod);
}

// A quantize: each stage goes up to kilnd as it begins, for the job's events.
void Quantize(const QuantizeWork& work, QuantizeOutcome* outcome) {
  TestHooks(work.module_name());
  *outcome = QuantizeInWorker(work, [&](const std::string& stage) {
    WorkerMessage progress;
    progress.set_progress(stage);
    WriteFrame(stdout, progress);
    QuantizeStageHook(work.module_name(), stage);
  });
}

int WorkerMain() {
  if (!InputWithin(kIdleBeforeWarmUpMs)) WarmUp();
  std::optional<std::string> input = ReadFrame(stdin);
  WorkerInput work;
  if (!input.has_value() || !work.ParseFromString(*input) ||
      work.work_case() == WorkerInput::WORK_NOT_SET) {
    std::fprintf(stderr, "kiln-worker: no compile, tune or quantize work on stdin\n");
    return 1;
  }
  LimitCpu(work.has_tune()       ? work.tune().cpu_limit_seconds()
           : work.has_quantize() ? work.quantize().cpu_limit_seconds()
                                 : work.compile().cpu_limit_seconds());
  PrepareForOutOfMemory(work);
  WorkerMessage reply;
  if (work.has_tune()) {
    Tune(work.tune(), reply.mutable_tune_outcome());
  } else if (work.has_quantize()) {
    Quantize(work.quantize(), reply.mutable_quantize_outcome());
  } else {
    Compile(work.compile(), reply.mutable_outcome());
  }
  // kilnd waits for the process to end; the destructors of what the compile built (LLVM's
  // statics, the runtime's thread pool, the heap) would make that about 100 ms after the outcome
  // is written, for nothing: the process ends here.
  std::_Exit(WriteFrame(stdout, reply) ? 0 : 1);
}

}  // namespace
}  // namespace kiln::server

// The compiler recurses once per level of the IR's nesting: the work runs on a thread with the
// stack it is tested with (and the allocator set for a process that compiles and exits).
int main() { return kiln::runtime::RunCompilerProcess(kiln::server::WorkerMain); }
