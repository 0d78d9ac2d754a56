#include "server/jobs/worker_pool.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "runtime/support/subprocess.h"
#include "server/log.h"
#include "server/worker_frames.h"

namespace kiln::server {

WorkerPool::WorkerPool(WorkerPoolOptions options, JobTable* table, AgentDispatcher* agents,
                       ArtifactCache* cache)
    : options_(std::move(options)), table_(table), agents_(agents), cache_(cache) {}

WorkerPool::~WorkerPool() { Stop(); }

void WorkerPool::Start() {
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    threads_.emplace_back([this] { CompileLoop(); });
  }
}

void WorkerPool::Enqueue(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  queue_.push_back(id);
  ready_.notify_one();
}

void WorkerPool::Withdraw(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.erase(std::remove(queue_.begin(), queue_.end(), id), queue_.end());
}

int WorkerPool::FreeSlots() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::max(1, options_.workers) - busy_ - static_cast<int>(queue_.size());
}

int64_t WorkerPool::Queued() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

int64_t WorkerPool::Busy() {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_;
}

int64_t WorkerPool::Compiles() {
  std::lock_guard<std::mutex> lock(mu_);
  return compiles_;
}

double WorkerPool::CompileSeconds() {
  std::lock_guard<std::mutex> lock(mu_);
  return compile_seconds_;
}

void WorkerPool::SetDraining() {
  std::lock_guard<std::mutex> lock(mu_);
  draining_ = true;
}

void WorkerPool::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    queue_.clear();
    retries_.clear();
    ready_.notify_all();
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void WorkerPool::CompileLoop() {
  // The next worker is started while the thread waits, so a compile does not wait for a process
  // start (exec and LLVM's shared libraries) and each job still gets a fresh process.
  std::unique_ptr<runtime::Child> spare;
  while (true) {
    if (spare == nullptr || !spare->Alive()) {
      absl::StatusOr<std::unique_ptr<runtime::Child>> started =
          runtime::Child::Start({options_.worker_path}, options_.worker_memory_bytes);
      spare = started.ok() ? std::move(*started) : nullptr;
    }
    std::string id;
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (!stopping_ && queue_.empty()) {
        // Jobs whose store was away, due to try again.
        const int64_t now = NowUnixMs();
        while (!retries_.empty() && retries_.begin()->first <= now) {
          queue_.push_back(retries_.begin()->second);
          retries_.erase(retries_.begin());
        }
        if (!queue_.empty()) break;
        const int64_t wait_ms = retries_.empty() ? 60000 : retries_.begin()->first - now;
        ready_.wait_for(lock, std::chrono::milliseconds(wait_ms));
      }
      if (stopping_) return;
      id = queue_.front();
      queue_.pop_front();
      ++busy_;
    }
    std::optional<HeldJob> job = table_->StartInWorker(id);  // nullopt: cancelled, handed over
    if (job.has_value()) {
      if (job->job.kind() == v1::JOB_KIND_TUNE) {
        RunTune(*job, std::move(spare));
      } else if (job->job.kind() == v1::JOB_KIND_QUANTIZE) {
        RunQuantize(*job, std::move(spare));
      } else {
        RunCompile(*job, std::move(spare));
      }
      table_->WorkerDone(id);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_;
    }
    if (on_free_) on_free_();
  }
}

absl::StatusOr<runtime::ChildResult> WorkerPool::RunWorker(
    const HeldJob& job, std::unique_ptr<runtime::Child> worker, const WorkerInput& input,
    int64_t timeout_ms, const std::string& started,
    const std::function<std::string(const WorkerMessage&)>& answer, std::string* broken, int* pid) {
  runtime::ChildOptions child;
  child.memory_limit_bytes = options_.worker_memory_bytes;
  child.timeout_ms = timeout_ms;
  child.cancel = job.cancel.get();
  child.on_start = [&](pid_t started_pid) {
    *pid = started_pid;
    table_->Publish(job.job.id(), absl::StrCat(started, " in kiln-worker pid ", started_pid),
                    [&](v1::Job& j) { j.set_worker_pid(started_pid); });
  };
  child.on_output = [&](std::string* output) {
    std::string reply, payload;
    bool oversized = false;
    while (broken->empty() && TakeFrame(output, &payload, &oversized)) {
      WorkerMessage message;
      if (!message.ParseFromString(payload)) {
        *broken = "sent a message that does not parse";
      } else {
        reply += answer(message);
      }
    }
    if (oversized) *broken = "sent a frame over the size limit";
    return reply;
  };
  if (worker == nullptr || !worker->Alive()) {  // no spare, or it died while waiting
    absl::StatusOr<std::unique_ptr<runtime::Child>> fresh =
        runtime::Child::Start({options_.worker_path}, options_.worker_memory_bytes);
    if (!fresh.ok()) return fresh.status();
    worker = std::move(*fresh);
  }
  return worker->Run(Frame(input), child);
}

void WorkerPool::RunCompile(const HeldJob& job, std::unique_ptr<runtime::Child> worker) {
  WorkerInput input;
  CompileWork& work = *input.mutable_compile();
  *work.mutable_source() = job.input.source();
  work.set_target(job.job.target());
  *work.mutable_options() = job.input.options();
  work.set_module_name(job.job.module_name());
  const auto [cpu_seconds, cpu_budget] = CompileCpuBudget(job);
  work.set_cpu_limit_seconds(cpu_seconds);
  work.set_max_constant_bytes(options_.max_constant_bytes);
  work.set_max_folded_bytes(options_.max_folded_bytes);
  work.set_tuning_db_path(options_.tuning_db_path);
  work.set_records_owner(job.input.records_owner());
  const int64_t timeout_ms = std::max<int64_t>(1, job.deadline_unix_ms - NowUnixMs());
  // The compile's side of the conversation (worker.proto): the worker's cache query is answered
  // with the candidates stored under its key; its outcome is kept.
  std::map<std::string, int64_t> offered;  // candidate digest -> artifact size
  CompileOutcome outcome;
  bool have_outcome = false;
  std::string broken;  // why the worker's output made no sense
  int pid = 0;
  absl::StatusOr<runtime::ChildResult> ran = RunWorker(
      job, std::move(worker), input, timeout_ms, "compiling",
      [&](const WorkerMessage& message) {
        if (message.has_cache_query()) {
          absl::StatusOr<CacheCandidates> candidates =
              cache_->Candidates(message.cache_query().cache_key());
          CacheCandidates answer = candidates.ok() ? *std::move(candidates) : CacheCandidates();
          for (const CachedModule& c : answer.candidates()) offered[c.digest()] = c.size();
          return Frame(answer);
        }
        if (message.has_outcome()) {
          outcome = message.outcome();
          have_outcome = true;
        }
        return std::string();
      },
      &broken, &pid);
  if (ran.ok() && ran->outcome == runtime::ChildResult::Outcome::kCancelled) {
    return;  // the cancel already recorded it, or the job is held elsewhere now
  }
  absl::StatusCode code = absl::StatusCode::kInternal;
  std::string failure =
      WorkerFailure(job, ran, have_outcome, broken, pid, timeout_ms, "compile", cpu_budget, &code);
  if (failure.empty() && !outcome.ok()) {
    failure = outcome.error();
    code = static_cast<absl::StatusCode>(outcome.code());
  }
  int64_t artifact_size = static_cast<int64_t>(outcome.artifact().size());
  if (failure.empty() && outcome.cache_hit()) {
    auto known = offered.find(outcome.digest());
    if (known == offered.end()) {
      failure = "the compile worker named a cached artifact it was not offered";
    } else {
      artifact_size = known->second;
      cache_->RecordHit(outcome.digest());
    }
  } else if (failure.empty()) {
    cache_->RecordMiss();
    absl::StatusOr<int64_t> stored =
        cache_->Insert(outcome.cache_key(), outcome.digest(), outcome.artifact(), outcome.module(),
                       job.job.client());
    if (!stored.ok()) {
      failure = absl::StrCat("cannot store the artifact: ", stored.status().message());
      code = stored.status().code();
    } else {
      artifact_size = *stored;  // signed
    }
  }
  if (failure.empty()) cache_->RememberFingerprint(job.input.fingerprint(), outcome.digest());
  const double seconds = ran.ok() ? ran->seconds : 0;
  if (ran.ok() && !outcome.cache_hit()) {  // the metrics count builds
    std::lock_guard<std::mutex> lock(mu_);
    ++compiles_;
    compile_seconds_ += seconds;
  }
  auto record_time = [&](v1::Job& j) {
    if (ran.ok()) j.set_compile_seconds(seconds);
  };
  if (!failure.empty()) {
    Fail(job, code, failure, record_time);
    return;
  }
  const std::string message =
      outcome.cache_hit()
          ? absl::StrCat("served from the artifact cache: the module loaded in ",
                         absl::SixDigits(outcome.load_seconds()), " s matches a stored one")
          : absl::StrCat("compiled in ", absl::SixDigits(seconds), " s");
  table_->Transition(job.job.id(), v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED, message,
                     [&](v1::Job& j) {
                       record_time(j);
                       j.set_artifact_digest(outcome.digest());
                       j.set_artifact_size(artifact_size);
                       if (outcome.cache_hit()) j.set_cache_hit(true);
                     });
}

void WorkerPool::RunTune(const HeldJob& job, std::unique_ptr<runtime::Child> worker) {
  WorkerInput input;
  TuneWork& work = *input.mutable_tune();
  *work.mutable_source() = job.input.source();
  work.set_target(job.job.target());
  work.set_module_name(job.job.module_name());
  work.set_trials(job.input.tune().trials());
  work.set_max_trials_per_task(job.input.tune().max_trials_per_task());
  work.set_seed(job.input.tune().seed());
  work.set_budget_s(job.input.tune().budget_s());
  work.set_tuning_db_path(options_.tuning_db_path);
  work.set_records_owner(job.input.records_owner());
  work.set_device_key(job.job.device_key());
  work.set_cpu_limit_seconds(options_.worker_cpu_seconds);
  work.set_max_constant_bytes(options_.max_constant_bytes);
  for (const auto& [arch, command] : options_.candidate_checkers) {
    CandidateChecker* checker = work.add_candidate_checkers();
    checker->set_arch(arch);
    for (const std::string& part : command) checker->add_command(part);
  }
  const int64_t timeout_ms = std::max<int64_t>(1, job.deadline_unix_ms - NowUnixMs());
  // The tune's side of the conversation: each MeasureBatch is measured on the job's agents (the
  // worker waits for the answer), progress is kept on the job, the outcome here.
  TuneOutcome outcome;
  bool have_outcome = false;
  std::string broken;
  int pid = 0;
  absl::StatusOr<runtime::ChildResult> ran = RunWorker(
      job, std::move(worker), input, timeout_ms,
      absl::StrCat("tuning for device '", job.job.device_key(), "'"),
      [&](const WorkerMessage& message) {
        if (message.has_measure()) {
          std::optional<MeasureResults> results = agents_->Measure(job, message.measure());
          return results ? Frame(*results) : std::string();
        }
        if (message.has_tune_progress()) {
          const v1::TuneResult& progress = message.tune_progress();
          std::string text = absl::StrCat(progress.trials(), "/", progress.budget(), " trials");
          if (progress.curve_size() > 0) {
            absl::StrAppend(
                &text, ", estimated model latency ",
                absl::SixDigits(progress.curve(progress.curve_size() - 1).estimated_seconds() *
                                1e3),
                " ms");
          }
          table_->Publish(job.job.id(), text, [&](v1::Job& j) { *j.mutable_tune() = progress; });
        }
        if (message.has_tune_outcome()) {
          outcome = message.tune_outcome();
          have_outcome = true;
        }
        return std::string();
      },
      &broken, &pid);
  if (ran.ok() && ran->outcome == runtime::ChildResult::Outcome::kCancelled) {
    return;  // every record measured so far is in the database
  }
  absl::StatusCode code = absl::StatusCode::kInternal;
  std::string failure =
      WorkerFailure(job, ran, have_outcome, broken, pid, timeout_ms, "tune",
                    absl::StrCat(options_.worker_cpu_seconds, " s (--worker-cpu-s)"), &code);
  if (failure.empty() && !outcome.ok()) {
    failure = outcome.error();
    code = static_cast<absl::StatusCode>(outcome.code());
  }
  auto record_time = [&](v1::Job& j) {
    if (ran.ok()) j.set_compile_seconds(ran->seconds);
  };
  if (!failure.empty()) {
    Fail(job, code, failure, record_time);
    return;
  }
  const v1::TuneResult& r = outcome.result();
  std::string summary =
      absl::StrCat("tuned: ", r.trials(), " trials in ", absl::SixDigits(r.elapsed_s()), " s");
  if (r.curve_size() > 0) {
    absl::StrAppend(&summary, ", estimated model latency ",
                    absl::SixDigits(r.curve(0).estimated_seconds() * 1e3), " ms -> ",
                    absl::SixDigits(r.curve(r.curve_size() - 1).estimated_seconds() * 1e3), " ms");
  }
  table_->Transition(job.job.id(), v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED, summary,
                     [&](v1::Job& j) {
                       record_time(j);
                       *j.mutable_tune() = r;
                     });
}

void WorkerPool::RunQuantize(const HeldJob& job, std::unique_ptr<runtime::Child> worker) {
  WorkerInput input;
  QuantizeWork& work = *input.mutable_quantize();
  *work.mutable_request() = job.input.quantize();
  work.set_target(job.job.target());
  work.set_module_name(job.job.module_name());
  work.set_cpu_limit_seconds(options_.worker_cpu_seconds);
  work.set_max_constant_bytes(options_.max_constant_bytes);
  const int64_t timeout_ms = std::max<int64_t>(1, job.deadline_unix_ms - NowUnixMs());
  // The quantize's side of the conversation: each stage becomes an event; the outcome is kept.
  QuantizeOutcome outcome;
  bool have_outcome = false;
  std::string broken;
  int pid = 0;
  absl::StatusOr<runtime::ChildResult> ran = RunWorker(
      job, std::move(worker), input, timeout_ms, "quantizing",
      [&](const WorkerMessage& message) {
        if (message.has_progress()) table_->Publish(job.job.id(), ValidUtf8(message.progress()));
        if (message.has_quantize_outcome()) {
          outcome = message.quantize_outcome();
          have_outcome = true;
        }
        return std::string();
      },
      &broken, &pid);
  if (ran.ok() && ran->outcome == runtime::ChildResult::Outcome::kCancelled) return;
  absl::StatusCode code = absl::StatusCode::kInternal;
  std::string failure =
      WorkerFailure(job, ran, have_outcome, broken, pid, timeout_ms, "quantize",
                    absl::StrCat(options_.worker_cpu_seconds, " s (--worker-cpu-s)"), &code);
  if (failure.empty() && !outcome.ok()) {
    failure = outcome.error();
    code = static_cast<absl::StatusCode>(outcome.code());
  }
  // Only a whole outcome is kept: the QDQ model and the artifact built from it, both or neither.
  const CompileOutcome& compiled = outcome.compiled();
  int64_t artifact_size = 0;
  if (failure.empty()) {
    absl::StatusOr<int64_t> stored =
        cache_->Insert(compiled.cache_key(), compiled.digest(), compiled.artifact(),
                       compiled.module(), job.job.client());
    if (!stored.ok()) {
      failure = absl::StrCat("cannot store the artifact: ", stored.status().message());
      code = stored.status().code();
    } else {
      artifact_size = *stored;
    }
  }
  auto record_time = [&](v1::Job& j) {
    if (ran.ok()) j.set_compile_seconds(ran->seconds);
  };
  if (!failure.empty()) {
    Fail(job, code, failure, record_time);
    return;
  }
  const v1::QuantizeResult& r = outcome.result();
  std::string summary = absl::StrCat("quantized in ", absl::SixDigits(ran->seconds),
                                     " s: ", r.layers_size(), " int8 layers");
  for (const v1::QuantizedOutputAccuracy& o : r.outputs()) {
    absl::StrAppend(&summary, ", output ", o.name(), " SQNR ", absl::SixDigits(o.sqnr_db()), " dB");
  }
  table_->Transition(job.job.id(), v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED, summary,
                     [&](v1::Job& j) {
                       record_time(j);
                       j.set_artifact_digest(compiled.digest());
                       j.set_artifact_size(artifact_size);
                       *j.mutable_quantize() = r;
                     });
}

std::pair<int64_t, std::string> WorkerPool::CompileCpuBudget(const HeldJob& job) const {
  const double mb = static_cast<double>(job.input.source().ByteSizeLong()) / (1 << 20);
  int64_t seconds = options_.compile_cpu_seconds_base +
                    static_cast<int64_t>(std::ceil(options_.compile_cpu_seconds_per_mb * mb));
  if (options_.worker_cpu_seconds > 0 && seconds > options_.worker_cpu_seconds) {
    return {options_.worker_cpu_seconds,
            absl::StrCat(options_.worker_cpu_seconds, " s (--worker-cpu-s)")};
  }
  return {seconds, absl::StrCat(seconds, " s: ", options_.compile_cpu_seconds_base, " s and ",
                                options_.compile_cpu_seconds_per_mb, " s per MB of its ",
                                absl::SixDigits(mb),
                                " MB module (--compile-cpu-s-base, "
                                "--compile-cpu-s-per-mb)")};
}

std::string WorkerPool::WorkerFailure(const HeldJob& job,
                                      const absl::StatusOr<runtime::ChildResult>& ran,
                                      bool have_outcome, const std::string& broken, int pid,
                                      int64_t timeout_ms, const char* what,
                                      const std::string& cpu_budget, absl::StatusCode* code) {
  if (!ran.ok()) {
    return absl::StrCat("cannot start the ", what, " worker ", options_.worker_path, ": ",
                        ran.status().message());
  }
  if (ran->outcome == runtime::ChildResult::Outcome::kTimedOut) {
    *code = absl::StatusCode::kDeadlineExceeded;
    return absl::StrCat("the ", what, " exceeded its deadline of ", job.job.deadline_ms(),
                        " ms; its worker was killed");
  }
  if (ran->exited_ok() && have_outcome && broken.empty()) return "";
  std::string failure = absl::StrCat("the ", what, " worker (pid ", pid, ") ",
                                     broken.empty() ? ran->Describe(timeout_ms) : broken);
  if (ran->outcome == runtime::ChildResult::Outcome::kSignaled) {
    if (ran->signal == SIGXCPU) {
      absl::StrAppend(&failure, ": over its CPU-time budget of ", cpu_budget);
      *code = absl::StatusCode::kResourceExhausted;
    } else if (options_.worker_memory_bytes > 0) {
      absl::StrAppend(&failure, " (its memory limit is ", options_.worker_memory_bytes >> 20,
                      " MiB)");
    }
  }
  std::string tail(absl::StripAsciiWhitespace(ran->error_tail));
  if (!tail.empty()) absl::StrAppend(&failure, ": ", tail.substr(tail.rfind('\n') + 1));
  return failure;
}

void WorkerPool::Fail(const HeldJob& job, absl::StatusCode code, const std::string& failure,
                      const JobEdit& edit) {
  // Only a dependency that was away (the database: its tuning records, the artifact store) and
  // only while the job has time left; anything else is the job's own failure.
  constexpr int64_t kRetryDelayMs = 1000;
  const int64_t at = NowUnixMs() + kRetryDelayMs;
  bool retry = code == absl::StatusCode::kUnavailable && at < job.deadline_unix_ms;
  {
    std::lock_guard<std::mutex> lock(mu_);
    retry = retry && !draining_;
  }
  if (retry && table_->Transition(job.job.id(), v1::JOB_STATE_RUNNING, v1::JOB_STATE_QUEUED,
                                  absl::StrCat(failure, "; trying again in 1 s"), edit)) {
    std::lock_guard<std::mutex> lock(mu_);
    retries_.emplace(at, job.job.id());
    ready_.notify_one();
    return;
  }
  if (retry) return;  // cancelled or handed over meanwhile
  table_->Transition(job.job.id(), v1::JOB_STATE_RUNNING, v1::JOB_STATE_FAILED, failure,
                     [&](v1::Job& j) {
                       if (edit) edit(j);
                       j.set_error_code(static_cast<int>(code));
                     });
}

void Runners::Queue(const v1::Job& job) const {
  if (RunsInWorker(job)) {
    pool->Enqueue(job.id());
  } else {
    agents->Enqueue(job.id(), job.device_key(), job.client());
  }
}

void Runners::Withdraw(const v1::Job& job, bool release_agent) const {
  // A running worker is killed through the job's cancel flag, which the table set.
  if (RunsInWorker(job)) {
    pool->Withdraw(job.id());
  } else {
    agents->Withdraw(job.id(), job.device_key(), release_agent);
  }
}

}  // namespace kiln::server
