#include "server/job_manager.h"

#include <grpcpp/server_context.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "runtime/support/subprocess.h"
#include "server/log.h"
#include "server/worker.pb.h"
#include "server/worker_frames.h"

namespace kiln::server {

struct JobManager::Entry {
  v1::Job job;
  std::vector<v1::JobEvent> events;
  // What running the job needs; dropped when it finishes.
  v1::ModuleSource source;
  std::string fingerprint;
  v1::CompileOptions options;
  v1::Task task;
  v1::SubmitTuneRequest tune;  // the trial budget, per-task limit and seed of a tune
  int64_t deadline_unix_ms = 0;
  std::atomic<bool> cancel{false};  // kills a running compile's worker
  bool counted_active = false;      // in active_by_client_
  uint64_t saved_ticket = 0;        // the store's ticket for its latest row
  // Cluster mode: since when this instance holds it; it is to be released once its input is
  // saved (no agent of its device here); it runs here no more (HandOverLocked); a compile
  // thread runs it (so the entry outlives a hand-over until that thread lets go).
  int64_t held_since_ms = 0;
  bool awaiting_release = false;
  bool handed_over = false;
  bool in_worker = false;
};

namespace {

bool Terminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_CANCELLED;
}

std::string StateName(v1::JobState s) {
  std::string name = v1::JobState_Name(s);
  return absl::AsciiStrToLower(name.substr(name.rfind('_') + 1));
}

}  // namespace

JobManager::JobManager(JobManagerOptions options, Store* store, ArtifactCache* cache)
    : options_(std::move(options)), store_(store), cluster_(store->cluster()), cache_(cache) {}

JobManager::~JobManager() { Drain(0); }

absl::Status JobManager::Start() {
  absl::StatusOr<std::vector<v1::Job>> jobs = store_->LoadJobs(100000);
  if (!jobs.ok()) return jobs.status();
  std::lock_guard<std::mutex> lock(mu_);
  for (v1::Job& job : *jobs) {
    // In a cluster an unfinished job is another instance's, or claimed once its lease runs out.
    if (cluster_ != nullptr && !Terminal(job.state())) continue;
    auto e = std::make_unique<Entry>();
    bool resume = false;
    if (!Terminal(job.state())) {
      // Lost with the kilnd that ran it (killed, or crashed): run it again when the store kept
      // its input; otherwise the client sees why and can resubmit.
      absl::StatusOr<std::optional<std::string>> input = store_->GetJobInput(job.id());
      if (!input.ok()) return input.status();
      JobInput parsed;
      resume = input->has_value() && parsed.ParseFromString(**input);
      if (resume) {
        e->source = std::move(*parsed.mutable_source());
        e->fingerprint = parsed.fingerprint();
        e->options = parsed.options();
        e->task = std::move(*parsed.mutable_task());
        e->tune = parsed.tune();
      } else {
        job.set_state(v1::JOB_STATE_FAILED);
        job.set_reason("interrupted: kilnd restarted before the job finished");
        job.set_finished_unix_ms(NowUnixMs());
        if (absl::Status s = store_->AwaitSaved(store_->SaveJob(job)); !s.ok()) return s;
      }
    }
    if (!job.idempotency_key().empty()) {
      idempotency_[{job.client(), job.idempotency_key()}] = job.id();
    }
    if (!job.artifact_digest().empty()) artifacts_.insert({job.client(), job.artifact_digest()});
    ++stored_by_client_[job.client()];
    e->job = std::move(job);
    std::string id = e->job.id();
    jobs_[id] = std::move(e);
    if (resume) ResumeLocked(*jobs_[id]);
  }
  absl::StatusOr<std::vector<v1::Device>> devices = store_->LoadDevices();
  if (!devices.ok()) return devices.status();
  for (v1::Device& d : *devices) {
    d.set_agents_connected(0);
    devices_[d.key()] = d;
  }
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    threads_.emplace_back([this] { CompileLoop(); });
  }
  threads_.emplace_back([this] { MonitorLoop(); });
  if (cluster_ != nullptr) {
    threads_.emplace_back([this] { ClusterLoop(); });
    LogEvent(
        LogLevel::kInfo, "sharing work with the cluster's instances",
        {{"instance", cluster_->instance()}, {"lease_ms", std::to_string(cluster_->lease_ms())}});
  }
  return absl::OkStatus();
}

void JobManager::ResumeLocked(Entry& e) {
  e.deadline_unix_ms = e.job.created_unix_ms() + e.job.deadline_ms();
  const bool for_worker = e.job.kind() == v1::JOB_KIND_COMPILE || e.job.kind() == v1::JOB_KIND_TUNE;
  // `attempts` counts the workers and agents it is given to, so a resume adds none of its own.
  TransitionLocked(e, v1::JOB_STATE_QUEUED,
                   "resumed: the kilnd running it stopped before it finished");
  if (for_worker) {
    compile_queue_.push_back(e.job.id());
  } else {
    e.task.set_task_id(e.job.id());
    task_queues_[e.job.device_key()].push_back(e.job.id());
  }
}

void JobManager::SaveInput(const Submitted& s, const JobInput& input) {
  if (s.deduplicated) return;
  // After the job's row: a crash in between leaves a job that cannot resume, which fails as
  // before. A job that already finished has nothing to resume, so its input is not kept.
  if (absl::Status status = store_->PutJobInput(s.job.id(), input.SerializeAsString());
      !status.ok()) {
    LogEvent(LogLevel::kError, "cannot save a job's input",
             {{"job", s.job.id()}, {"error", status.ToString()}});
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(s.job.id());
    if (it == jobs_.end() || Terminal(it->second->job.state())) {
      inputs_done_.push_back(s.job.id());
      return;
    }
    if (!it->second->awaiting_release) return;
    HandOverLocked(*it->second);
  }
  // No agent of its device here: an instance that has one claims it, its input now saved.
  if (absl::Status released = cluster_->ReleaseJobs({s.job.id()}); !released.ok()) {
    LogEvent(LogLevel::kWarning, "cannot release a job (its lease will run out instead)",
             {{"job", s.job.id()}, {"error", released.ToString()}});
  }
}

std::string JobManager::NewIdLocked() {
  static std::mt19937_64 rng(std::random_device{}());
  while (true) {
    std::string id = absl::StrCat("job-", absl::Hex(rng() & 0xffffffffffff, absl::kZeroPad12));
    if (jobs_.count(id) == 0) return id;
  }
}

std::optional<v1::Job> JobManager::FindIdempotent(const std::string& client,
                                                  const std::string& key) {
  if (key.empty()) return std::nullopt;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = idempotency_.find({client, key});
    if (it != idempotency_.end()) return jobs_.at(it->second)->job;
  }
  if (cluster_ == nullptr) return std::nullopt;
  absl::StatusOr<std::optional<v1::Job>> earlier = cluster_->FindIdempotent(client, key);
  return earlier.ok() ? *earlier : std::nullopt;
}

int JobManager::ActiveJobsLocked(const std::string& client) const {
  auto it = active_by_client_.find(client);
  return it == active_by_client_.end() ? 0 : it->second;
}

absl::Status JobManager::RefuseLocked(const std::string& limit, std::string message) {
  ++limit_refusals_[limit];
  return absl::ResourceExhaustedError(std::move(message));
}

void JobManager::SetStoreHealth(const absl::Status& health) {
  std::lock_guard<std::mutex> lock(mu_);
  store_health_ = health;
}

absl::Status JobManager::Admit(const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  if (draining_) return absl::UnavailableError("kilnd is shutting down and takes no new jobs");
  if (!store_health_.ok()) {
    return absl::UnavailableError(absl::StrCat("the store is unreachable (",
                                               store_health_.message(),
                                               "): new jobs are refused until it is back"));
  }
  int active = ActiveJobsLocked(client);
  if (active >= options_.max_active_jobs_per_client) {
    return RefuseLocked(
        "active_jobs",
        absl::StrCat("client ", client, " already has ", active, " unfinished jobs (the limit is ",
                     options_.max_active_jobs_per_client, "); wait for some to finish"));
  }
  int64_t now = NowUnixMs();
  if (options_.max_stored_jobs_per_client > 0) {
    auto stored = stored_by_client_.find(client);
    if (stored != stored_by_client_.end() &&
        stored->second >= options_.max_stored_jobs_per_client) {
      return RefuseLocked(
          "stored_jobs",
          absl::StrCat("client ", client, " has ", stored->second, " stored jobs (the limit is ",
                       options_.max_stored_jobs_per_client, "); finished jobs are pruned after ",
                       options_.job_retention_ms / 1000, " s"));
    }
  }
  if (absl::Status room = StoreRoomLocked(now); !room.ok()) return room;
  if (options_.max_jobs_per_minute_per_client > 0) {
    Rate& rate = rate_by_client_[client];
    if (now - rate.window_start_ms >= 60000) rate = Rate{now, 0};
    if (rate.count >= options_.max_jobs_per_minute_per_client) {
      return RefuseLocked("jobs_per_minute",
                          absl::StrCat("client ", client, " submitted ", rate.count,
                                       " jobs this minute (the limit is ",
                                       options_.max_jobs_per_minute_per_client, "); try again in ",
                                       (rate.window_start_ms + 60000 - now + 999) / 1000, " s"));
    }
    ++rate.count;
  }
  return absl::OkStatus();
}

absl::Status JobManager::StoreRoomLocked(int64_t now_ms) {
  if (options_.store_max_bytes <= 0) return absl::OkStatus();
  // Measured at most once a second: the database's files and the artifacts' bytes.
  if (now_ms - store_checked_ms_ >= 1000) {
    store_checked_ms_ = now_ms;
    int64_t database = store_->DatabaseBytes();
    int64_t artifacts = store_->TotalArtifactBytes().value_or(0);
    if (database + artifacts > options_.store_max_bytes) {
      absl::StatusOr<int> evicted =
          store_->EvictTo(std::max<int64_t>(0, options_.store_max_bytes - database), "");
      artifacts = store_->TotalArtifactBytes().value_or(0);
      if (evicted.ok() && *evicted > 0) {
        LogEvent(LogLevel::kInfo, "store over its bound: artifacts evicted",
                 {{"evicted", std::to_string(*evicted)}});
      }
    }
    store_full_ = database + artifacts > options_.store_max_bytes;
  }
  if (!store_full_) return absl::OkStatus();
  return RefuseLocked("store_bytes", absl::StrCat("the store is full (over its limit of ",
                                                  options_.store_max_bytes >> 20,
                                                  " MiB, --store-max-mb); new jobs are refused "
                                                  "until finished jobs are pruned"));
}

void JobManager::PruneLocked(int64_t now_ms) {
  // Finished jobs, oldest first; a job is kept at least 2 s after it finished, so that a watcher
  // reading its last event never finds it gone.
  std::vector<std::pair<int64_t, const std::string*>> finished;
  for (const auto& [id, e] : jobs_) {
    if (Terminal(e->job.state()) && now_ms - e->job.finished_unix_ms() >= 2000) {
      finished.push_back({e->job.created_unix_ms(), &id});
    }
  }
  std::sort(finished.begin(), finished.end());
  size_t over_count = options_.max_finished_jobs > 0 &&
                              finished.size() > static_cast<size_t>(options_.max_finished_jobs)
                          ? finished.size() - options_.max_finished_jobs
                          : 0;
  std::vector<std::string> pruned;
  for (size_t i = 0; i < finished.size(); ++i) {
    bool too_old =
        options_.job_retention_ms > 0 && now_ms - finished[i].first > options_.job_retention_ms;
    if (i >= over_count && !too_old) break;
    std::string id = *finished[i].second;  // a copy: the key goes with the erase
    const v1::Job& job = jobs_.at(id)->job;
    if (!job.idempotency_key().empty()) idempotency_.erase({job.client(), job.idempotency_key()});
    if (--stored_by_client_[job.client()] <= 0) stored_by_client_.erase(job.client());
    pruned.push_back(id);
    jobs_.erase(id);
  }
  if (pruned.empty()) return;
  jobs_pruned_ += static_cast<int64_t>(pruned.size());
  if (absl::Status s = store_->DeleteJobs(pruned); !s.ok()) {
    LogEvent(LogLevel::kError, "cannot delete pruned jobs", {{"error", s.ToString()}});
  }
  LogEvent(LogLevel::kInfo, "finished jobs pruned", {{"jobs", std::to_string(pruned.size())}});
}

int64_t JobManager::ClampDeadline(int64_t requested_ms) const {
  if (requested_ms <= 0) return options_.default_deadline_ms;
  return std::min(requested_ms, options_.max_deadline_ms);
}

Submitted JobManager::InsertLocked(v1::Job job, std::unique_ptr<Entry> e) {
  if (!job.idempotency_key().empty()) {
    auto it = idempotency_.find({job.client(), job.idempotency_key()});
    if (it != idempotency_.end()) {
      const Entry& earlier = *jobs_.at(it->second);
      return Submitted{earlier.job, true, earlier.saved_ticket};
    }
  }
  e->held_since_ms = NowUnixMs();
  if (cluster_ != nullptr) job.set_instance(cluster_->instance());
  job.set_id(NewIdLocked());
  ++stored_by_client_[job.client()];
  job.set_created_unix_ms(NowUnixMs());
  e->job = std::move(job);
  e->deadline_unix_ms = e->job.created_unix_ms() + e->job.deadline_ms();
  std::string id = e->job.id();
  if (!e->job.idempotency_key().empty()) {
    idempotency_[{e->job.client(), e->job.idempotency_key()}] = id;
  }
  Entry& entry = *e;
  jobs_[id] = std::move(e);
  return Submitted{entry.job, false, 0};
}

Submitted JobManager::Saved(std::unique_lock<std::mutex>& lock, Submitted s) {
  lock.unlock();
  absl::Status status = store_->AwaitSaved(s.saved_ticket);
  if (status.code() == absl::StatusCode::kAlreadyExists && cluster_ != nullptr && !s.deduplicated) {
    // Another instance took the same idempotency key a moment earlier (the database's unique
    // index refused this row): its job is the answer, and this one goes.
    absl::StatusOr<std::optional<v1::Job>> earlier =
        cluster_->FindIdempotent(s.job.client(), s.job.idempotency_key());
    lock.lock();
    if (auto it = jobs_.find(s.job.id()); it != jobs_.end()) HandOverLocked(*it->second);
    lock.unlock();
    if (earlier.ok() && earlier->has_value()) return Submitted{**earlier, true, 0};
  }
  if (!status.ok()) {
    LogEvent(LogLevel::kError, "cannot save a job",
             {{"job", s.job.id()}, {"error", status.ToString()}});
  }
  return s;
}

Submitted JobManager::AddCacheHit(v1::Job job) {
  std::unique_lock<std::mutex> lock(mu_);
  job.set_cache_hit(true);
  Submitted s = InsertLocked(std::move(job), std::make_unique<Entry>());
  if (s.deduplicated) return Saved(lock, std::move(s));
  Entry& e = *jobs_.at(s.job.id());
  e.job.set_started_unix_ms(e.job.created_unix_ms());
  TransitionLocked(e, v1::JOB_STATE_SUCCEEDED, "served from the artifact cache");
  s.job = e.job;
  s.saved_ticket = e.saved_ticket;
  return Saved(lock, std::move(s));
}

Submitted JobManager::EnqueueCompile(v1::Job job, v1::ModuleSource source,
                                     v1::CompileOptions options, std::string fingerprint) {
  JobInput input;
  *input.mutable_source() = source;
  input.set_fingerprint(fingerprint);
  *input.mutable_options() = options;
  auto entry = std::make_unique<Entry>();
  entry->source = std::move(source);
  entry->fingerprint = std::move(fingerprint);
  entry->options = std::move(options);
  Submitted s = EnqueueForWorker(std::move(job), std::move(entry), "queued for a compile worker");
  SaveInput(s, input);
  return s;
}

Submitted JobManager::EnqueueForWorker(v1::Job job, std::unique_ptr<Entry> entry,
                                       const char* message) {
  std::unique_lock<std::mutex> lock(mu_);
  Submitted s = InsertLocked(std::move(job), std::move(entry));
  if (s.deduplicated) return Saved(lock, std::move(s));
  Entry& e = *jobs_.at(s.job.id());
  TransitionLocked(e, v1::JOB_STATE_QUEUED, message);
  if (RunsHereLocked(e.job)) {
    compile_queue_.push_back(e.job.id());
    compile_ready_.notify_one();
  } else {
    e.awaiting_release = true;
  }
  s.job = e.job;
  s.saved_ticket = e.saved_ticket;
  return Saved(lock, std::move(s));
}

Submitted JobManager::EnqueueTask(v1::Job job, v1::Task task) {
  JobInput input;
  *input.mutable_task() = task;
  Submitted s = InsertTask(std::move(job), std::move(task));
  SaveInput(s, input);
  return s;
}

Submitted JobManager::InsertTask(v1::Job job, v1::Task task) {
  std::unique_lock<std::mutex> lock(mu_);
  auto entry = std::make_unique<Entry>();
  entry->task = std::move(task);
  Submitted s = InsertLocked(std::move(job), std::move(entry));
  if (s.deduplicated) return Saved(lock, std::move(s));
  Entry& e = *jobs_.at(s.job.id());
  e.task.set_task_id(e.job.id());
  TransitionLocked(e, v1::JOB_STATE_QUEUED,
                   absl::StrCat("queued for an agent of device '", e.job.device_key(), "'"));
  if (RunsHereLocked(e.job)) {
    task_queues_[e.job.device_key()].push_back(e.job.id());
    DispatchLocked();
  } else {
    e.awaiting_release = true;
  }
  s.job = e.job;
  s.saved_ticket = e.saved_ticket;
  return Saved(lock, std::move(s));
}

Submitted JobManager::EnqueueTune(v1::Job job, v1::ModuleSource source,
                                  const v1::SubmitTuneRequest& request) {
  auto entry = std::make_unique<Entry>();
  entry->tune.set_trials(request.trials());
  entry->tune.set_max_trials_per_task(request.max_trials_per_task());
  entry->tune.set_seed(request.seed());
  JobInput input;
  *input.mutable_source() = source;
  *input.mutable_tune() = entry->tune;
  entry->source = std::move(source);
  Submitted s = EnqueueForWorker(std::move(job), std::move(entry), "queued for a tune worker");
  SaveInput(s, input);
  return s;
}

void JobManager::TransitionLocked(Entry& e, v1::JobState state, const std::string& message) {
  if (e.handed_over) return;  // another instance writes its rows now
  int64_t now = NowUnixMs();
  e.job.set_state(state);
  if (Terminal(state) == e.counted_active) {
    e.counted_active = !e.counted_active;
    active_by_client_[e.job.client()] += e.counted_active ? 1 : -1;
  }
  if (state == v1::JOB_STATE_RUNNING) e.job.set_started_unix_ms(now);
  if (Terminal(state)) {
    e.job.set_finished_unix_ms(now);
    if (state != v1::JOB_STATE_SUCCEEDED) e.job.set_reason(message);
    e.source.Clear();
    e.task.Clear();
    inputs_done_.push_back(e.job.id());  // deleted by the monitor, outside this lock
  }
  if (!e.job.artifact_digest().empty())
    artifacts_.insert({e.job.client(), e.job.artifact_digest()});
  e.saved_ticket = store_->SaveJob(e.job);
  LogEvent(
      Terminal(state) && state != v1::JOB_STATE_SUCCEEDED ? LogLevel::kWarning : LogLevel::kInfo,
      "job " + StateName(state),
      {{"job", e.job.id()},
       {"kind", v1::JobKind_Name(e.job.kind())},
       {"client", e.job.client()},
       {"message", message}});
  PublishLocked(e, message);
}

void JobManager::PublishLocked(Entry& e, const std::string& message) {
  v1::JobEvent& event = e.events.emplace_back();
  event.set_job_id(e.job.id());
  event.set_unix_ms(NowUnixMs());
  event.set_state(e.job.state());
  event.set_message(message);
  *event.mutable_job() = e.job;
  if (auto it = watchers_.find(e.job.id()); it != watchers_.end()) {
    for (auto& [subscription, push] : it->second) push(event);
  }
  changed_.notify_all();
}

absl::StatusOr<v1::Job> JobManager::Get(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(id);
    if (it != jobs_.end() && !it->second->handed_over) return it->second->job;
  }
  absl::StatusOr<std::optional<v1::Job>> stored = store_->GetJob(id);
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) return absl::NotFoundError(absl::StrCat("no job '", id, "'"));
  return **stored;
}

absl::StatusOr<std::vector<v1::JobEvent>> JobManager::Events(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(id);
    if (it != jobs_.end()) return it->second->events;
    if (cluster_ == nullptr) return absl::NotFoundError(absl::StrCat("no job '", id, "'"));
  }
  // Held by another instance: its events are there; the job as stored is one.
  absl::StatusOr<v1::Job> job = Get(id);
  if (!job.ok()) return job.status();
  v1::JobEvent event;
  event.set_job_id(id);
  event.set_unix_ms(NowUnixMs());
  event.set_state(job->state());
  event.set_message(job->reason());
  *event.mutable_job() = *job;
  return std::vector<v1::JobEvent>{std::move(event)};
}

std::vector<v1::Job> JobManager::List(v1::JobState state, int limit, const std::string& client) {
  if (cluster_ != nullptr) {  // every instance's jobs
    absl::StatusOr<std::vector<v1::Job>> jobs = cluster_->ListJobs(state, client, limit);
    if (jobs.ok()) return *std::move(jobs);
    LogEvent(LogLevel::kWarning, "cannot list the cluster's jobs; listing this instance's",
             {{"error", jobs.status().ToString()}});
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const v1::Job*> matching;
  for (const auto& [id, e] : jobs_) {
    if (!client.empty() && e->job.client() != client) continue;
    if (state == v1::JOB_STATE_UNSPECIFIED || e->job.state() == state) {
      matching.push_back(&e->job);
    }
  }
  std::sort(matching.begin(), matching.end(), [](const v1::Job* a, const v1::Job* b) {
    if (a->created_unix_ms() != b->created_unix_ms()) {
      return a->created_unix_ms() > b->created_unix_ms();
    }
    return a->id() > b->id();
  });
  std::vector<v1::Job> out;
  for (size_t i = 0; i < matching.size() && static_cast<int>(i) < limit; ++i) {
    out.push_back(*matching[i]);
  }
  return out;
}

bool JobManager::HasArtifact(const std::string& client, const std::string& digest) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (artifacts_.count({client, digest}) > 0) return true;
  }
  if (cluster_ == nullptr) return false;
  absl::StatusOr<bool> elsewhere = cluster_->ClientHasArtifact(client, digest);
  return elsewhere.ok() && *elsewhere;
}

absl::StatusOr<v1::Job> JobManager::Cancel(const std::string& id, const std::string& reason) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second->handed_over) {
    if (cluster_ == nullptr) return absl::NotFoundError(absl::StrCat("no job '", id, "'"));
    lock.unlock();
    return CancelElsewhere(id, reason);
  }
  Entry& e = *it->second;
  if (Terminal(e.job.state())) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " already ", StateName(e.job.state())));
  }
  std::string why = reason.empty() ? "cancelled by the client" : "cancelled: " + reason;
  e.cancel = true;  // a running worker is killed by its supervisor
  if (e.job.kind() == v1::JOB_KIND_COMPILE || e.job.kind() == v1::JOB_KIND_TUNE) {
    compile_queue_.erase(std::remove(compile_queue_.begin(), compile_queue_.end(), id),
                         compile_queue_.end());
  } else {
    WithdrawTaskLocked(id, e.job.device_key());
  }
  TransitionLocked(e, v1::JOB_STATE_CANCELLED, why);
  return e.job;
}

absl::StatusOr<v1::Job> JobManager::CancelElsewhere(const std::string& id,
                                                    const std::string& reason) {
  // Nobody live holds it (released, or its instance died): take it and cancel it here.
  absl::StatusOr<std::optional<v1::Job>> claimed = cluster_->ClaimJob(id);
  if (!claimed.ok()) return claimed.status();
  if (claimed->has_value()) {
    std::unique_lock<std::mutex> lock(mu_);
    const bool adopted = AdoptLocked(**claimed, false, std::nullopt);
    lock.unlock();
    if (adopted) return Cancel(id, reason);
    cluster_->ReleaseJobs({id}).IgnoreError();
    return absl::UnavailableError(
        absl::StrCat("job ", id, " is changing hands; cancel it again in a moment"));
  }
  absl::StatusOr<v1::Job> job = Get(id);
  if (!job.ok()) return job.status();
  if (Terminal(job->state())) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " already ", StateName(job->state())));
  }
  // Its instance cancels it at its next lease renewal; the answer waits for that a while.
  std::string why = reason.empty() ? "cancelled by the client" : "cancelled: " + reason;
  if (absl::Status s = cluster_->RequestCancel(id, why); !s.ok()) return s;
  const int64_t until = NowUnixMs() + cluster_->lease_ms();
  while (NowUnixMs() < until && !Terminal(job->state())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    absl::StatusOr<v1::Job> now = Get(id);
    if (!now.ok()) return now.status();
    job = std::move(now);
  }
  return job;
}

absl::StatusOr<uint64_t> JobManager::Subscribe(const std::string& id,
                                               std::function<void(const v1::JobEvent&)> push) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(id);
    if (it != jobs_.end() && !it->second->handed_over) {
      const Entry& e = *it->second;
      v1::JobEvent now;  // the job as it is; later events follow from PublishLocked
      now.set_job_id(id);
      now.set_unix_ms(NowUnixMs());
      now.set_state(e.job.state());
      now.set_message(e.events.empty() ? "" : e.events.back().message());
      *now.mutable_job() = e.job;
      push(now);
      const uint64_t subscription = next_subscription_++;
      watchers_[id].emplace(subscription, std::move(push));
      watched_job_[subscription] = id;
      return subscription;
    }
  }
  // Older than what is kept in memory, or held by another instance.
  absl::StatusOr<v1::Job> job = Get(id);
  if (!job.ok()) return job.status();
  v1::JobEvent event;
  event.set_job_id(id);
  event.set_unix_ms(Terminal(job->state()) ? job->finished_unix_ms() : NowUnixMs());
  event.set_state(job->state());
  *event.mutable_job() = *job;
  std::lock_guard<std::mutex> lock(mu_);
  push(event);
  if (Terminal(job->state()) || cluster_ == nullptr) return 0;
  // Followed through the database (PollRemoteWatches) until it finishes or comes here.
  const uint64_t subscription = next_subscription_++;
  RemoteWatch& watch = remote_watchers_[id];
  if (watch.pushes.empty()) watch.last = job->SerializeAsString();
  watch.pushes.emplace(subscription, std::move(push));
  watched_job_[subscription] = id;
  return subscription;
}

void JobManager::Unsubscribe(uint64_t subscription) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = watched_job_.find(subscription);
  if (it == watched_job_.end()) return;
  auto job = watchers_.find(it->second);
  if (job != watchers_.end()) {
    job->second.erase(subscription);
    if (job->second.empty()) watchers_.erase(job);
  }
  auto remote = remote_watchers_.find(it->second);
  if (remote != remote_watchers_.end()) {
    remote->second.pushes.erase(subscription);
    if (remote->second.pushes.empty()) remote_watchers_.erase(remote);
  }
  watched_job_.erase(it);
}

// --- compiles -----------------------------------------------------------------------------

void JobManager::CompileLoop() {
  // Each compile thread keeps its next worker started and waiting for input, so a compile does
  // not wait for a process start (exec and LLVM's shared libraries) and each job still gets a
  // fresh process.
  std::unique_ptr<runtime::Child> spare;
  while (true) {
    if (spare == nullptr || !spare->Alive()) {
      absl::StatusOr<std::unique_ptr<runtime::Child>> started =
          runtime::Child::Start({options_.worker_path}, options_.worker_memory_bytes);
      spare = started.ok() ? std::move(*started) : nullptr;
    }
    std::string id;
    bool tune = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      compile_ready_.wait(lock, [this] { return stopping_ || !compile_queue_.empty(); });
      if (stopping_) return;
      id = compile_queue_.front();
      compile_queue_.pop_front();
      auto it = jobs_.find(id);
      if (it == jobs_.end() || it->second->handed_over) continue;
      Entry& e = *it->second;
      e.in_worker = true;
      e.job.set_attempts(e.job.attempts() + 1);
      ++workers_busy_;
      tune = e.job.kind() == v1::JOB_KIND_TUNE;
      TransitionLocked(e, v1::JOB_STATE_RUNNING,
                       tune ? "starting a tune worker" : "starting a compile worker");
    }
    if (tune) {
      RunTune(id, std::move(spare));
    } else {
      RunCompile(id, std::move(spare));
    }
    std::lock_guard<std::mutex> lock(mu_);
    --workers_busy_;
    if (auto it = jobs_.find(id); it != jobs_.end()) {
      it->second->in_worker = false;
      if (it->second->handed_over) ForgetLocked(id);
    }
    changed_.notify_all();
    claim_soon_ = true;  // a worker is free
    cluster_wake_.notify_all();
  }
}

absl::StatusOr<runtime::ChildResult> JobManager::RunWorker(
    Entry& e, std::unique_ptr<runtime::Child> worker, const WorkerInput& input, int64_t timeout_ms,
    const std::string& started, const std::function<std::string(const WorkerMessage&)>& answer,
    std::string* broken) {
  runtime::ChildOptions child;
  child.memory_limit_bytes = options_.worker_memory_bytes;
  child.timeout_ms = timeout_ms;
  child.cancel = &e.cancel;
  child.on_start = [&](pid_t pid) {
    std::lock_guard<std::mutex> lock(mu_);
    e.job.set_worker_pid(pid);
    PublishLocked(e, absl::StrCat(started, " in kiln-worker pid ", pid));
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

void JobManager::RunCompile(const std::string& id, std::unique_ptr<runtime::Child> worker) {
  CompileWork work;
  Entry* e;
  int64_t timeout_ms;
  {
    std::lock_guard<std::mutex> lock(mu_);
    e = jobs_.at(id).get();
    *work.mutable_source() = e->source;
    work.set_target(e->job.target());
    *work.mutable_options() = e->options;
    work.set_module_name(e->job.module_name());
    work.set_cpu_limit_seconds(options_.worker_cpu_seconds);
    work.set_max_constant_bytes(options_.max_constant_bytes);
    work.set_max_folded_bytes(options_.max_folded_bytes);
    work.set_tuning_db_path(options_.tuning_db_path);
    timeout_ms = std::max<int64_t>(1, e->deadline_unix_ms - NowUnixMs());
  }
  // The compile's side of the conversation (worker.proto): the worker's cache query is answered
  // with the candidates stored under its key; its outcome is kept.
  std::map<std::string, int64_t> offered;  // candidate digest -> artifact size
  CompileOutcome outcome;
  bool have_outcome = false;
  std::string broken;  // why the worker's output made no sense
  WorkerInput input;
  *input.mutable_compile() = std::move(work);
  absl::StatusOr<runtime::ChildResult> ran = RunWorker(
      *e, std::move(worker), input, timeout_ms, "compiling",
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
      &broken);
  if (ran.ok() && ran->outcome == runtime::ChildResult::Outcome::kCancelled) {
    return;  // Cancel() already recorded it
  }

  absl::StatusCode code = absl::StatusCode::kInternal;
  std::string failure = WorkerFailure(*e, ran, have_outcome, broken, timeout_ms, "compile", &code);
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
    absl::Status stored =
        cache_->Insert(outcome.cache_key(), outcome.digest(), outcome.artifact(), outcome.module());
    if (!stored.ok()) {
      failure = absl::StrCat("cannot store the artifact: ", stored.message());
      code = stored.code();
    }
  }
  if (failure.empty()) cache_->RememberFingerprint(e->fingerprint, outcome.digest());
  std::lock_guard<std::mutex> lock(mu_);
  if (Terminal(e->job.state())) return;  // cancelled meanwhile
  if (ran.ok()) {
    e->job.set_compile_seconds(ran->seconds);
    if (!outcome.cache_hit()) {  // the metrics count builds
      ++compiles_;
      compile_seconds_ += ran->seconds;
    }
  }
  if (!failure.empty()) {
    if (RetryLaterLocked(*e, code, failure)) return;
    e->job.set_error_code(static_cast<int>(code));
    TransitionLocked(*e, v1::JOB_STATE_FAILED, failure);
    return;
  }
  e->job.set_artifact_digest(outcome.digest());
  e->job.set_artifact_size(artifact_size);
  if (outcome.cache_hit()) {
    e->job.set_cache_hit(true);
    TransitionLocked(
        *e, v1::JOB_STATE_SUCCEEDED,
        absl::StrCat("served from the artifact cache: the module loaded in ",
                     absl::SixDigits(outcome.load_seconds()), " s matches a stored one"));
    return;
  }
  TransitionLocked(*e, v1::JOB_STATE_SUCCEEDED,
                   absl::StrCat("compiled in ", absl::SixDigits(ran->seconds), " s"));
}

std::string JobManager::WorkerFailure(const Entry& e,
                                      const absl::StatusOr<runtime::ChildResult>& ran,
                                      bool have_outcome, const std::string& broken,
                                      int64_t timeout_ms, const char* what,
                                      absl::StatusCode* code) {
  if (!ran.ok()) {
    return absl::StrCat("cannot start the ", what, " worker ", options_.worker_path, ": ",
                        ran.status().message());
  }
  if (ran->outcome == runtime::ChildResult::Outcome::kTimedOut) {
    *code = absl::StatusCode::kDeadlineExceeded;
    return absl::StrCat("the ", what, " exceeded its deadline of ", e.job.deadline_ms(),
                        " ms; its worker was killed");
  }
  if (ran->exited_ok() && have_outcome && broken.empty()) return "";
  std::string failure = absl::StrCat("the ", what, " worker (pid ", e.job.worker_pid(), ") ",
                                     broken.empty() ? ran->Describe(timeout_ms) : broken);
  if (ran->outcome == runtime::ChildResult::Outcome::kSignaled) {
    if (ran->signal == SIGXCPU && options_.worker_cpu_seconds > 0) {
      absl::StrAppend(&failure, ": over its CPU-time limit of ", options_.worker_cpu_seconds, " s");
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

bool JobManager::RetryLaterLocked(Entry& e, absl::StatusCode code, const std::string& why) {
  // Only a dependency that was away (the database: its tuning records, the artifact store) and
  // only while the job has time left; anything else is the job's own failure.
  constexpr int64_t kRetryDelayMs = 1000;
  const int64_t at = NowUnixMs() + kRetryDelayMs;
  if (code != absl::StatusCode::kUnavailable || draining_ || at >= e.deadline_unix_ms) return false;
  TransitionLocked(e, v1::JOB_STATE_QUEUED, absl::StrCat(why, "; trying again in 1 s"));
  retries_.emplace(at, e.job.id());
  return true;
}

// --- tunes --------------------------------------------------------------------------------

void JobManager::RunTune(const std::string& id, std::unique_ptr<runtime::Child> worker) {
  WorkerInput input;
  TuneWork& work = *input.mutable_tune();
  Entry* e;
  int64_t timeout_ms;
  {
    std::lock_guard<std::mutex> lock(mu_);
    e = jobs_.at(id).get();
    *work.mutable_source() = e->source;
    work.set_target(e->job.target());
    work.set_module_name(e->job.module_name());
    work.set_trials(e->tune.trials());
    work.set_max_trials_per_task(e->tune.max_trials_per_task());
    work.set_seed(e->tune.seed());
    work.set_tuning_db_path(options_.tuning_db_path);
    work.set_device_key(e->job.device_key());
    work.set_cpu_limit_seconds(options_.worker_cpu_seconds);
    work.set_max_constant_bytes(options_.max_constant_bytes);
    timeout_ms = std::max<int64_t>(1, e->deadline_unix_ms - NowUnixMs());
  }
  // The tune's side of the conversation: each MeasureBatch is measured on the job's agents (the
  // worker waits for the answer), progress is kept on the job, the outcome here.
  TuneOutcome outcome;
  bool have_outcome = false;
  std::string broken;
  absl::StatusOr<runtime::ChildResult> ran = RunWorker(
      *e, std::move(worker), input, timeout_ms,
      absl::StrCat("tuning for device '", e->job.device_key(), "'"),
      [&](const WorkerMessage& message) {
        if (message.has_measure()) {
          std::optional<MeasureResults> results = MeasureOnAgents(*e, message.measure());
          return results ? Frame(*results) : std::string();
        }
        if (message.has_tune_progress()) TuneProgress(*e, message.tune_progress());
        if (message.has_tune_outcome()) {
          outcome = message.tune_outcome();
          have_outcome = true;
        }
        return std::string();
      },
      &broken);
  if (ran.ok() && ran->outcome == runtime::ChildResult::Outcome::kCancelled) {
    return;  // Cancel() already recorded it; every record measured so far is in the database
  }
  cache_->ForgetFingerprints();  // the records measured so far, whatever the outcome
  absl::StatusCode code = absl::StatusCode::kInternal;
  std::string failure = WorkerFailure(*e, ran, have_outcome, broken, timeout_ms, "tune", &code);
  if (failure.empty() && !outcome.ok()) {
    failure = outcome.error();
    code = static_cast<absl::StatusCode>(outcome.code());
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (Terminal(e->job.state())) return;
  if (ran.ok()) e->job.set_compile_seconds(ran->seconds);
  if (!failure.empty()) {
    if (RetryLaterLocked(*e, code, failure)) return;
    e->job.set_error_code(static_cast<int>(code));
    TransitionLocked(*e, v1::JOB_STATE_FAILED, failure);
    return;
  }
  *e->job.mutable_tune() = outcome.result();
  const v1::TuneResult& r = outcome.result();
  std::string summary =
      absl::StrCat("tuned: ", r.trials(), " trials in ", absl::SixDigits(r.elapsed_s()), " s");
  if (r.curve_size() > 0) {
    absl::StrAppend(&summary, ", estimated model latency ",
                    absl::SixDigits(r.curve(0).estimated_seconds() * 1e3), " ms -> ",
                    absl::SixDigits(r.curve(r.curve_size() - 1).estimated_seconds() * 1e3), " ms");
  }
  TransitionLocked(*e, v1::JOB_STATE_SUCCEEDED, summary);
}

std::optional<MeasureResults> JobManager::MeasureOnAgents(Entry& e, const MeasureBatch& batch) {
  std::unique_lock<std::mutex> lock(mu_);
  const std::string& key = e.job.device_key();
  std::vector<std::string> ids;
  for (const v1::KernelMeasure& m : batch.candidates()) {
    std::string id = absl::StrCat(e.job.id(), ".m", next_measurement_++);
    Measurement& measurement = measurements_[id];
    measurement.job_id = e.job.id();
    measurement.device_key = key;
    measurement.measure = m;
    measure_queues_[key].push_back(id);
    ids.push_back(id);
  }
  auto device = devices_.find(key);
  if (device == devices_.end() || device->second.agents_connected() == 0) {
    PublishLocked(e, absl::StrCat("waiting for an agent of device '", key, "' to measure ",
                                  ids.size(), " candidates"));
  }
  DispatchLocked();
  auto all_done = [&] {
    for (const std::string& id : ids) {
      if (!measurements_.at(id).done) return false;
    }
    return true;
  };
  while (!all_done() && !e.cancel && !stopping_ && NowUnixMs() < e.deadline_unix_ms) {
    changed_.wait_for(lock, std::chrono::milliseconds(100));
  }
  const bool complete = all_done();
  MeasureResults out;
  std::deque<std::string>& queue = measure_queues_[key];
  for (const std::string& id : ids) {
    const Measurement& m = measurements_.at(id);
    MeasureResult* r = out.add_results();
    r->set_ok(m.ok);
    r->set_seconds(m.seconds);
    r->set_error(m.error);
    // Not measured yet: out of the queue, and off the agent measuring it.
    queue.erase(std::remove(queue.begin(), queue.end(), id), queue.end());
    for (auto& [agent_id, agent] : agents_) {
      if (agent->busy_measurement != id) continue;
      v1::ServerMessage cancel;
      cancel.mutable_cancel()->set_task_id(id);
      SendLocked(*agent, std::move(cancel));
    }
    measurements_.erase(id);
  }
  changed_.notify_all();
  // A tune stopped (cancelled, past its deadline, kilnd draining) gets no answer: its worker is
  // killed while it waits, and no candidate that was never measured is recorded as failed.
  return complete ? out : std::optional<MeasureResults>();
}

void JobManager::TuneProgress(Entry& e, const v1::TuneResult& progress) {
  // New records may change what a compile applies: a repeated request is no longer answered by
  // its fingerprint alone (the worker's cache key names the records it applies).
  cache_->ForgetFingerprints();
  std::lock_guard<std::mutex> lock(mu_);
  if (Terminal(e.job.state())) return;
  *e.job.mutable_tune() = progress;
  std::string message = absl::StrCat(progress.trials(), "/", progress.budget(), " trials");
  if (progress.curve_size() > 0) {
    absl::StrAppend(
        &message, ", estimated model latency ",
        absl::SixDigits(progress.curve(progress.curve_size() - 1).estimated_seconds() * 1e3),
        " ms");
  }
  PublishLocked(e, message);
}

// --- agents -------------------------------------------------------------------------------

std::shared_ptr<AgentLink> JobManager::RegisterAgent(const v1::RegisterAgent& hello,
                                                     const std::string& principal,
                                                     grpc::ServerContextBase* context,
                                                     std::function<void(v1::ServerMessage)> send) {
  std::lock_guard<std::mutex> lock(mu_);
  auto agent = std::make_shared<AgentLink>();
  agent->send = std::move(send);
  agent->id = absl::StrCat("agent-", next_agent_++);
  agent->device_key = hello.device_key();
  agent->principal = principal;
  agent->context = context;
  agent->last_seen_ms = NowUnixMs();
  agents_[agent->id] = agent;
  v1::Device& device = devices_[hello.device_key()];
  device.set_key(hello.device_key());
  *device.mutable_attributes() = hello.attributes();
  device.set_reported_by(principal);
  device.set_agents_connected(device.agents_connected() + 1);
  device.set_last_seen_unix_ms(agent->last_seen_ms);
  if (absl::Status s = store_->PutDevice(device); !s.ok()) {
    LogEvent(LogLevel::kError, "cannot save a device", {{"error", s.ToString()}});
  }
  if (cluster_ != nullptr) {
    if (absl::Status s = cluster_->PutAgentSession(agent->id, agent->device_key); !s.ok()) {
      LogEvent(LogLevel::kError, "cannot save an agent session", {{"error", s.ToString()}});
    }
    claim_soon_ = true;  // the tasks waiting for its device
    cluster_wake_.notify_all();
  }
  LogEvent(LogLevel::kInfo, "agent connected",
           {{"agent", agent->id},
            {"device_key", agent->device_key},
            {"triple", hello.attributes().target_triple()},
            {"peer", context->peer()}});
  DispatchLocked();
  return agent;
}

bool JobManager::AgentMayFetch(const std::string& agent_id, const std::string& principal,
                               const std::string& task_id, const std::string& digest) {
  std::lock_guard<std::mutex> lock(mu_);
  auto agent = agents_.find(agent_id);
  if (agent == agents_.end() || agent->second->gone || agent->second->principal != principal ||
      task_id.empty() || agent->second->busy_task != task_id) {
    return false;
  }
  auto job = jobs_.find(task_id);
  return job != jobs_.end() && job->second->job.artifact_digest() == digest;
}

void JobManager::AgentHeartbeat(const std::shared_ptr<AgentLink>& agent) {
  std::lock_guard<std::mutex> lock(mu_);
  agent->last_seen_ms = NowUnixMs();
  devices_[agent->device_key].set_last_seen_unix_ms(agent->last_seen_ms);
}

void JobManager::AgentResult(const std::shared_ptr<AgentLink>& agent,
                             const v1::TaskResult& result) {
  std::lock_guard<std::mutex> lock(mu_);
  agent->last_seen_ms = NowUnixMs();
  if (!agent->busy_measurement.empty() && agent->busy_measurement == result.task_id()) {
    agent->busy_measurement.clear();
    auto m = measurements_.find(result.task_id());
    if (m != measurements_.end()) {  // else the tune stopped waiting for it
      m->second.done = true;
      m->second.ok = result.ok();
      m->second.seconds = result.measured_seconds();
      m->second.error = result.ok() ? "" : absl::StrCat("on ", agent->id, ": ", result.error());
    }
    DispatchLocked();
    return;
  }
  if (cluster_ != nullptr) {  // idle now: maybe a task waits for its device elsewhere
    claim_soon_ = true;
    cluster_wake_.notify_all();
  }
  if (agent->busy_task != result.task_id()) return;  // not the task it was given
  agent->busy_task.clear();
  auto it = jobs_.find(result.task_id());
  if (it != jobs_.end() && it->second->job.state() == v1::JOB_STATE_RUNNING) {
    Entry& e = *it->second;
    if (result.ok()) {
      if (result.has_profile()) *e.job.mutable_profile() = result.profile();
      if (result.has_inference()) *e.job.mutable_inference() = result.inference();
      TransitionLocked(e, v1::JOB_STATE_SUCCEEDED, absl::StrCat("done on ", agent->id));
    } else {
      TransitionLocked(e, v1::JOB_STATE_FAILED,
                       absl::StrCat("on ", agent->id, ": ", result.error()));
    }
  }
  DispatchLocked();
}

void JobManager::AgentGone(const std::shared_ptr<AgentLink>& agent) {
  std::lock_guard<std::mutex> lock(mu_);
  if (agent->gone) return;
  agent->gone = true;
  agent->send = nullptr;  // its stream is ending
  agents_.erase(agent->id);
  v1::Device& device = devices_[agent->device_key];
  device.set_agents_connected(std::max(0, device.agents_connected() - 1));
  if (cluster_ != nullptr) cluster_->DropAgentSession(agent->id).IgnoreError();  // or it expires
  LogEvent(LogLevel::kWarning, "agent disconnected",
           {{"agent", agent->id}, {"device_key", agent->device_key}});
  if (!agent->busy_task.empty()) {
    auto it = jobs_.find(agent->busy_task);
    if (it != jobs_.end() && !it->second->handed_over &&
        it->second->job.state() == v1::JOB_STATE_RUNNING) {
      RequeueOrFailLocked(*it->second, absl::StrCat(agent->id, " disappeared"));
    }
    agent->busy_task.clear();
  }
  if (!agent->busy_measurement.empty()) {
    // Measured elsewhere, up to three agents; then a failed candidate and the tune goes on.
    auto m = measurements_.find(agent->busy_measurement);
    if (m != measurements_.end() && !m->second.done) {
      if (m->second.attempts >= 3) {
        m->second.done = true;
        m->second.error =
            absl::StrCat("3 agents disappeared while measuring it, the last ", agent->id);
      } else {
        measure_queues_[m->second.device_key].push_front(m->first);
      }
    }
    agent->busy_measurement.clear();
  }
  changed_.notify_all();
  DispatchLocked();
}

void JobManager::WithdrawTaskLocked(const std::string& id, const std::string& device_key) {
  std::deque<std::string>& queue = task_queues_[device_key];
  queue.erase(std::remove(queue.begin(), queue.end(), id), queue.end());
  for (auto& [agent_id, agent] : agents_) {
    if (agent->busy_task != id) continue;
    v1::ServerMessage m;
    m.mutable_cancel()->set_task_id(id);
    SendLocked(*agent, std::move(m));
  }
}

void JobManager::RequeueOrFailLocked(Entry& e, const std::string& why) {
  if (draining_) {
    TransitionLocked(e, v1::JOB_STATE_FAILED, why + " while kilnd was shutting down");
    return;
  }
  e.job.clear_agent_id();
  task_queues_[e.job.device_key()].push_front(e.job.id());
  TransitionLocked(e, v1::JOB_STATE_QUEUED,
                   why + "; the task goes to another agent of device '" + e.job.device_key() + "'");
}

void JobManager::DispatchLocked() {
  for (auto& [id, agent] : agents_) {
    if (agent->gone || !agent->busy_task.empty() || !agent->busy_measurement.empty()) continue;
    std::deque<std::string>& queue = task_queues_[agent->device_key];
    while (!queue.empty()) {
      std::string job_id = queue.front();
      queue.pop_front();
      auto it = jobs_.find(job_id);
      if (it == jobs_.end() || it->second->handed_over) continue;
      Entry& e = *it->second;
      if (e.job.state() != v1::JOB_STATE_QUEUED) continue;
      agent->busy_task = job_id;
      e.job.set_agent_id(agent->id);
      e.job.set_attempts(e.job.attempts() + 1);
      v1::ServerMessage m;
      *m.mutable_task() = e.task;
      m.mutable_task()->set_timeout_ms(std::max<int64_t>(1, e.deadline_unix_ms - NowUnixMs()));
      SendLocked(*agent, std::move(m));
      TransitionLocked(e, v1::JOB_STATE_RUNNING, absl::StrCat("running on ", agent->id));
      break;
    }
    if (!agent->busy_task.empty()) continue;
    // Tuning candidates: one per agent at a time (concurrent measurements on one board would
    // corrupt each other's timings); the timeout runs from when the agent starts it.
    std::deque<std::string>& measures = measure_queues_[agent->device_key];
    while (!measures.empty()) {
      auto m = measurements_.find(measures.front());
      measures.pop_front();
      if (m == measurements_.end() || m->second.done) continue;
      ++m->second.attempts;
      agent->busy_measurement = m->first;
      v1::ServerMessage message;
      v1::Task* task = message.mutable_task();
      task->set_task_id(m->first);
      task->set_kind(v1::JOB_KIND_TUNE);
      *task->mutable_measure() = m->second.measure;
      task->set_timeout_ms(options_.measure_timeout_ms);
      SendLocked(*agent, std::move(message));
      break;
    }
  }
  changed_.notify_all();
}

void JobManager::SendLocked(AgentLink& agent, v1::ServerMessage message) {
  if (!agent.gone && agent.send) agent.send(std::move(message));
}

std::vector<v1::Device> JobManager::Devices() {
  if (cluster_ != nullptr) {  // every instance's agents and queues
    absl::StatusOr<std::vector<v1::Device>> devices = store_->LoadDevices();
    absl::StatusOr<std::map<std::string, int>> agents = cluster_->AgentsByDevice();
    absl::StatusOr<std::map<std::string, int>> queued = cluster_->TasksQueuedByDevice();
    if (devices.ok() && agents.ok() && queued.ok()) {
      for (v1::Device& d : *devices) {
        d.set_agents_connected(agents->count(d.key()) ? agents->at(d.key()) : 0);
        d.set_tasks_queued(queued->count(d.key()) ? queued->at(d.key()) : 0);
      }
      return *std::move(devices);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<v1::Device> out;
  for (const auto& [key, device] : devices_) {
    v1::Device d = device;
    auto q = task_queues_.find(key);
    d.set_tasks_queued(q == task_queues_.end() ? 0 : static_cast<int32_t>(q->second.size()));
    out.push_back(std::move(d));
  }
  return out;
}

// --- deadlines, heartbeats, shutdown ------------------------------------------------------

void JobManager::MonitorLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    changed_.wait_for(lock, std::chrono::milliseconds(100));
    int64_t now = NowUnixMs();
    // A prune scans every job: about a tenth of the retention apart (1 s to 1 min), or each
    // second while there are more jobs than finished ones may be kept.
    int64_t prune_every = std::clamp<int64_t>(
        options_.job_retention_ms > 0 ? options_.job_retention_ms / 10 : 60000, 1000, 60000);
    bool over_count = options_.max_finished_jobs > 0 &&
                      jobs_.size() > static_cast<size_t>(options_.max_finished_jobs);
    if (now - last_prune_ms_ >= (over_count ? 1000 : prune_every)) {
      last_prune_ms_ = now;
      PruneLocked(now);
    }
    if (!inputs_done_.empty()) {
      std::vector<std::string> done;
      done.swap(inputs_done_);
      lock.unlock();
      if (absl::Status s = store_->DeleteJobInputs(done); !s.ok()) {
        LogEvent(LogLevel::kError, "cannot delete finished jobs' inputs",
                 {{"error", s.ToString()}});
      }
      lock.lock();
    }
    // Worker jobs whose store was away, due to try again.
    while (!retries_.empty() && retries_.begin()->first <= now) {
      const std::string id = retries_.begin()->second;
      retries_.erase(retries_.begin());
      auto it = jobs_.find(id);
      if (it == jobs_.end() || it->second->handed_over) continue;
      if (it->second->job.state() != v1::JOB_STATE_QUEUED) continue;
      compile_queue_.push_back(id);
      compile_ready_.notify_one();
    }
    // Agent tasks past their deadline (compiles are killed by their own supervisor). Every
    // unfinished task is in a device queue or on an agent, so finished jobs are never scanned.
    std::vector<std::string> open_tasks;
    for (const auto& [key, queue] : task_queues_) {
      open_tasks.insert(open_tasks.end(), queue.begin(), queue.end());
    }
    for (const auto& [agent_id, agent] : agents_) {
      if (!agent->busy_task.empty()) open_tasks.push_back(agent->busy_task);
    }
    for (const std::string& id : open_tasks) {
      auto it = jobs_.find(id);
      if (it == jobs_.end()) continue;
      Entry& e = *it->second;
      if (e.handed_over || Terminal(e.job.state()) || now < e.deadline_unix_ms) continue;
      std::string where =
          e.job.state() == v1::JOB_STATE_QUEUED
              ? absl::StrCat("no agent of device '", e.job.device_key(), "' took it")
              : absl::StrCat(e.job.agent_id(), " did not finish it");
      WithdrawTaskLocked(id, e.job.device_key());
      TransitionLocked(e, v1::JOB_STATE_FAILED,
                       absl::StrCat("deadline of ", e.job.deadline_ms(), " ms exceeded: ", where));
    }
    // Agents that stopped heartbeating: end their streams; AgentGone requeues their tasks.
    for (auto& [id, agent] : agents_) {
      if (now - agent->last_seen_ms > 5 * int64_t{options_.heartbeat_interval_ms}) {
        agent->context->TryCancel();
      }
    }
  }
}

// --- sharing work with the cluster's other instances -----------------------------------------

bool JobManager::RunsHereLocked(const v1::Job& job) const {
  if (cluster_ == nullptr || job.kind() == v1::JOB_KIND_COMPILE || job.device_key().empty()) {
    return true;
  }
  for (const auto& [id, agent] : agents_) {
    if (!agent->gone && agent->device_key == job.device_key()) return true;
  }
  return false;
}

void JobManager::HandOverLocked(Entry& e) {
  const std::string id = e.job.id();
  e.handed_over = true;
  e.cancel = true;  // a worker running it is killed; its outcome is not written
  compile_queue_.erase(std::remove(compile_queue_.begin(), compile_queue_.end(), id),
                       compile_queue_.end());
  WithdrawTaskLocked(id, e.job.device_key());
  for (auto& [agent_id, agent] : agents_) {
    if (agent->busy_task == id) agent->busy_task.clear();
  }
  if (!e.in_worker) ForgetLocked(id);
}

void JobManager::ForgetLocked(const std::string& id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  const v1::Job& job = it->second->job;
  if (it->second->counted_active) --active_by_client_[job.client()];
  if (--stored_by_client_[job.client()] <= 0) stored_by_client_.erase(job.client());
  auto key = idempotency_.find({job.client(), job.idempotency_key()});
  if (key != idempotency_.end() && key->second == id) idempotency_.erase(key);
  // Its watchers follow it through the database from now on.
  if (auto w = watchers_.find(id); w != watchers_.end()) {
    RemoteWatch& remote = remote_watchers_[id];
    remote.last = job.SerializeAsString();
    for (auto& [subscription, push] : w->second) remote.pushes.emplace(subscription, push);
    watchers_.erase(w);
  }
  jobs_.erase(it);
}

bool JobManager::AdoptLocked(v1::Job job, bool interrupted, std::optional<std::string> input) {
  if (auto stale = jobs_.find(job.id()); stale != jobs_.end()) {
    // This instance ran it before losing its lease: its compile thread may still hold the old
    // entry, which must go first. Until then the job is not taken (the caller gives it back).
    if (stale->second->in_worker) return false;
    ForgetLocked(job.id());
  }
  auto owned = std::make_unique<Entry>();
  Entry& e = *owned;
  e.held_since_ms = NowUnixMs();
  e.deadline_unix_ms = job.created_unix_ms() + job.deadline_ms();
  ++stored_by_client_[job.client()];
  if (!job.idempotency_key().empty())
    idempotency_[{job.client(), job.idempotency_key()}] = job.id();
  const std::string id = job.id();
  job.set_instance(cluster_->instance());
  e.job = std::move(job);
  jobs_[id] = std::move(owned);
  // Its watchers here follow it from memory again.
  if (auto w = remote_watchers_.find(id); w != remote_watchers_.end()) {
    for (auto& [subscription, push] : w->second.pushes) watchers_[id].emplace(subscription, push);
    remote_watchers_.erase(w);
  }
  if (!input.has_value()) return true;  // taken to be cancelled
  JobInput parsed;
  if (!parsed.ParseFromString(*input)) {
    TransitionLocked(e, v1::JOB_STATE_FAILED,
                     "interrupted: the instance running it stopped, and its input is unreadable");
    return true;
  }
  e.source = std::move(*parsed.mutable_source());
  e.fingerprint = parsed.fingerprint();
  e.options = parsed.options();
  e.task = std::move(*parsed.mutable_task());
  e.tune = parsed.tune();
  if (interrupted) {
    ResumeLocked(e);
    compile_ready_.notify_one();
    DispatchLocked();
    return true;
  }
  // Released by the instance it was submitted to, which had no agent of its device.
  const bool for_worker = e.job.kind() == v1::JOB_KIND_COMPILE || e.job.kind() == v1::JOB_KIND_TUNE;
  TransitionLocked(e, v1::JOB_STATE_QUEUED,
                   absl::StrCat("taken by ", cluster_->instance(), ", where an agent of device '",
                                e.job.device_key(), "' is connected"));
  if (for_worker) {
    compile_queue_.push_back(id);
    compile_ready_.notify_one();
  } else {
    e.task.set_task_id(id);
    task_queues_[e.job.device_key()].push_back(id);
    DispatchLocked();
  }
  return true;
}

void JobManager::ClusterLoop() {
  // Leases are renewed a few times per lease. Claims are polled every 100 ms after one found
  // work, backing off to 500 ms while none does; an agent arriving or a worker freeing up asks
  // for one at once.
  const int64_t renew_every = std::max<int64_t>(200, cluster_->lease_ms() / 4);
  int64_t poll_ms = 100, next_renew = 0, next_claim = 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const int64_t now = NowUnixMs();
    const bool claim = claim_soon_ || now >= next_claim;
    claim_soon_ = false;
    lock.unlock();
    if (now >= next_renew) {
      RenewLeases();
      next_renew = now + renew_every;
    }
    if (claim) {
      poll_ms = ClaimJobs() > 0 ? 100 : std::min<int64_t>(500, poll_ms * 2);
      next_claim = now + poll_ms;
    }
    PollRemoteWatches();
    lock.lock();
    const int64_t wait_ms = std::max<int64_t>(
        1, std::min({next_claim, next_renew, remote_watchers_.empty() ? next_claim : now + 100}) -
               NowUnixMs());
    cluster_wake_.wait_for(lock, std::chrono::milliseconds(wait_ms),
                           [&] { return stopping_ || claim_soon_; });
  }
}

void JobManager::RenewLeases() {
  const int64_t asked_ms = NowUnixMs();
  absl::StatusOr<LeaseRenewal> renewal = cluster_->RenewLeases();
  if (!renewal.ok()) return;  // readiness reports the database; the next round tries again
  std::set<std::string> held(renewal->held.begin(), renewal->held.end());
  std::vector<std::string> release;
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Entry*> lost, queued_without_agent;
  for (auto& [id, e] : jobs_) {
    if (e->handed_over || Terminal(e->job.state())) continue;
    if (held.count(id) == 0) {
      // Held by this instance before the renewal asked, yet not renewed: another instance
      // claimed it (this one was paused or cut off past its lease). (A row still queued in
      // the store counts as held.)
      if (e->held_since_ms < asked_ms) lost.push_back(e.get());
    } else if (e->job.state() == v1::JOB_STATE_QUEUED && !e->awaiting_release &&
               !RunsHereLocked(e->job)) {
      // Its agent left: another instance may have one. (A job awaiting release is released by
      // SaveInput once its input is saved: released before, another instance would find none.)
      queued_without_agent.push_back(e.get());
    }
  }
  for (Entry* e : lost) {
    LogEvent(LogLevel::kWarning, "lease lost: another instance holds the job now",
             {{"job", e->job.id()}});
    HandOverLocked(*e);
  }
  for (Entry* e : queued_without_agent) {
    release.push_back(e->job.id());
    HandOverLocked(*e);
  }
  for (const auto& [id, why] : renewal->cancel_requests) {
    auto it = jobs_.find(id);
    if (it == jobs_.end() || it->second->handed_over || Terminal(it->second->job.state())) continue;
    Entry& e = *it->second;
    e.cancel = true;
    compile_queue_.erase(std::remove(compile_queue_.begin(), compile_queue_.end(), id),
                         compile_queue_.end());
    WithdrawTaskLocked(id, e.job.device_key());
    TransitionLocked(e, v1::JOB_STATE_CANCELLED, why);
  }
  if (!release.empty()) cluster_->ReleaseJobs(release).IgnoreError();  // or the lease runs out
}

int JobManager::ClaimJobs() {
  bool compiles;
  std::vector<std::string> keys;
  int limit;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (draining_ || !store_health_.ok()) return 0;
    const int free_workers =
        std::max(1, options_.workers) - workers_busy_ - static_cast<int>(compile_queue_.size());
    compiles = free_workers > 0;
    std::set<std::string> idle_keys;
    for (const auto& [id, agent] : agents_) {
      if (agent->gone || !agent->busy_task.empty() || !agent->busy_measurement.empty()) continue;
      if (task_queues_[agent->device_key].empty()) idle_keys.insert(agent->device_key);
    }
    keys.assign(idle_keys.begin(), idle_keys.end());
    limit = std::max<int>(std::max(free_workers, 0), static_cast<int>(keys.size()));
  }
  if (limit == 0 || (!compiles && keys.empty())) return 0;
  absl::StatusOr<std::vector<ClaimedJob>> claimed = cluster_->ClaimJobs(compiles, keys, limit);
  if (!claimed.ok()) return 0;
  std::vector<std::string> give_back;  // still held by one of this instance's compile threads
  for (ClaimedJob& c : *claimed) {
    absl::StatusOr<std::optional<std::string>> input = store_->GetJobInput(c.job.id());
    std::lock_guard<std::mutex> lock(mu_);
    const std::string id = c.job.id();
    LogEvent(LogLevel::kInfo, "job claimed",
             {{"job", id},
              {"kind", v1::JobKind_Name(c.job.kind())},
              {"from", c.interrupted ? "an instance whose lease ran out" : "released"}});
    if (!input.ok()) {  // the database is away: another round will take it
      give_back.push_back(id);
      continue;
    }
    if (!input->has_value()) {
      if (AdoptLocked(std::move(c.job), false, std::nullopt)) {
        TransitionLocked(*jobs_.at(id), v1::JOB_STATE_FAILED,
                         "interrupted: the instance running it stopped and its input was not kept");
      } else {
        give_back.push_back(id);
      }
      continue;
    }
    if (!AdoptLocked(std::move(c.job), c.interrupted, std::move(**input))) give_back.push_back(id);
  }
  if (!give_back.empty()) cluster_->ReleaseJobs(give_back).IgnoreError();
  return static_cast<int>(claimed->size());
}

void JobManager::PollRemoteWatches() {
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, watch] : remote_watchers_) ids.push_back(id);
  }
  for (const std::string& id : ids) {
    absl::StatusOr<std::optional<v1::Job>> stored = store_->GetJob(id);
    if (!stored.ok() || !stored->has_value()) continue;
    const v1::Job& job = **stored;
    std::string row = job.SerializeAsString();
    std::lock_guard<std::mutex> lock(mu_);
    auto it = remote_watchers_.find(id);
    if (it == remote_watchers_.end() || it->second.last == row) continue;
    it->second.last = std::move(row);
    v1::JobEvent event;
    event.set_job_id(id);
    event.set_unix_ms(NowUnixMs());
    event.set_state(job.state());
    event.set_message(Terminal(job.state()) ? job.reason() : StateName(job.state()));
    *event.mutable_job() = job;
    for (auto& [subscription, push] : it->second.pushes) push(event);
  }
}

JobStats JobManager::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  JobStats stats;
  for (v1::JobState s : {v1::JOB_STATE_QUEUED, v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED,
                         v1::JOB_STATE_FAILED, v1::JOB_STATE_CANCELLED}) {
    stats.jobs_by_state[s] = 0;
  }
  for (const auto& [id, e] : jobs_) ++stats.jobs_by_state[e->job.state()];
  stats.compile_queue = static_cast<int64_t>(compile_queue_.size());
  for (const auto& [key, q] : task_queues_) stats.task_queue += static_cast<int64_t>(q.size());
  stats.workers_busy = workers_busy_;
  stats.agents_connected = static_cast<int64_t>(agents_.size());
  stats.jobs_pruned = jobs_pruned_;
  stats.limit_refusals = limit_refusals_;
  stats.compiles = compiles_;
  stats.compile_seconds = compile_seconds_;
  return stats;
}

void JobManager::Drain(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) return;
  draining_ = true;
  auto running = [this] {
    for (const auto& [id, e] : jobs_) {
      if (e->job.state() == v1::JOB_STATE_RUNNING) return true;
    }
    return false;
  };
  changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return !running(); });
  std::vector<std::string> handed_back;
  if (cluster_ != nullptr) {
    // A draining instance hands its leases back: another instance runs the rest.
    std::vector<Entry*> unfinished;
    for (auto& [id, e] : jobs_) {
      if (!Terminal(e->job.state()) && !e->handed_over) unfinished.push_back(e.get());
    }
    for (Entry* e : unfinished) {
      handed_back.push_back(e->job.id());
      HandOverLocked(*e);
    }
  }
  for (auto& [id, e] : jobs_) {
    if (Terminal(e->job.state()) || e->handed_over) continue;
    e->cancel = true;
    TransitionLocked(*e, v1::JOB_STATE_FAILED,
                     e->job.state() == v1::JOB_STATE_QUEUED
                         ? "kilnd shut down before the job started"
                         : "kilnd shut down before the job finished");
  }
  compile_queue_.clear();
  task_queues_.clear();
  measure_queues_.clear();
  stopping_ = true;
  compile_ready_.notify_all();
  changed_.notify_all();
  cluster_wake_.notify_all();
  lock.unlock();
  if (!handed_back.empty()) {
    absl::Status released = cluster_->ReleaseJobs(handed_back);
    LogEvent(released.ok() ? LogLevel::kInfo : LogLevel::kWarning, "jobs handed back",
             {{"jobs", std::to_string(handed_back.size())}, {"status", released.ToString()}});
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  // The monitor is gone: the inputs of what finished last are deleted here.
  std::vector<std::string> done;
  {
    std::lock_guard<std::mutex> relock(mu_);
    done.swap(inputs_done_);
  }
  if (!done.empty()) store_->DeleteJobInputs(done).IgnoreError();
}

}  // namespace kiln::server
