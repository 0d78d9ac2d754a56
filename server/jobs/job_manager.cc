#include "server/jobs/job_manager.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "server/cluster_store.h"
#include "server/jobs/cluster_sync.h"
#include "server/log.h"

namespace kiln::server {
namespace {

WorkerPoolOptions PoolOptions(const JobManagerOptions& o) {
  WorkerPoolOptions pool;
  pool.worker_path = o.worker_path;
  pool.workers = o.workers;
  pool.worker_memory_bytes = o.worker_memory_bytes;
  pool.worker_cpu_seconds = o.worker_cpu_seconds;
  pool.compile_cpu_seconds_base = o.compile_cpu_seconds_base;
  pool.compile_cpu_seconds_per_mb = o.compile_cpu_seconds_per_mb;
  pool.max_constant_bytes = o.max_constant_bytes;
  pool.max_folded_bytes = o.max_folded_bytes;
  pool.tuning_db_path = o.tuning_db_path;
  pool.candidate_checkers = o.candidate_checkers;
  return pool;
}

AdmissionOptions LimitOptions(const JobManagerOptions& o) {
  AdmissionOptions limits;
  limits.max_active_jobs_per_client = o.max_active_jobs_per_client;
  limits.max_jobs_per_minute_per_client = o.max_jobs_per_minute_per_client;
  limits.max_stored_jobs_per_client = o.max_stored_jobs_per_client;
  limits.job_retention_ms = o.job_retention_ms;
  limits.store_max_bytes = o.store_max_bytes;
  return limits;
}

}  // namespace

JobManager::JobManager(JobManagerOptions options, Store* store, ArtifactCache* cache)
    : options_(std::move(options)),
      store_(store),
      table_(store, store->cluster() != nullptr ? store->cluster()->instance() : ""),
      admission_(LimitOptions(options_), store),
      agents_(DispatcherOptions{options_.heartbeat_interval_ms, options_.measure_timeout_ms,
                                options_.max_output_bytes, options_.sign_measurement},
              &table_, store),
      pool_(PoolOptions(options_), &table_, &agents_, cache),
      runners_{&pool_, &agents_} {
  if (store->cluster() != nullptr) {
    sharing_ = std::make_unique<ClusterSync>(store->cluster(), store, &table_, runners_,
                                             [this] { return admission_.Accepting(); });
  } else {
    sharing_ = std::make_unique<SoloSharing>();
  }
  agents_.SetObserver(sharing_.get());
  pool_.SetOnFree([this] { sharing_->WorkerFree(); });
  // One tenant's work never evicts an artifact another tenant's job refers to.
  auto others_refer = [this](const std::string& digest, const std::string& client) {
    return table_.OthersReferTo(digest, client);
  };
  if (cache != nullptr) cache->SetReferences(others_refer);
  admission_.SetReferences(others_refer);
}

JobManager::~JobManager() { Drain(0); }

absl::Status JobManager::Start() {
  absl::StatusOr<std::vector<v1::Job>> resumed = table_.Load(sharing_->ResumesUnfinished());
  if (!resumed.ok()) return resumed.status();
  if (absl::Status s = agents_.Load(); !s.ok()) return s;
  for (const v1::Job& job : *resumed) runners_.Queue(job);
  pool_.Start();
  monitor_ = std::thread([this] { MonitorLoop(); });
  sharing_->Start();
  return absl::OkStatus();
}

std::optional<v1::Job> JobManager::FindIdempotent(const std::string& client,
                                                  const std::string& key) {
  if (key.empty()) return std::nullopt;
  if (std::optional<v1::Job> here = table_.FindIdempotent(client, key)) return here;
  return sharing_->FindIdempotent(client, key);
}

absl::Status JobManager::Admit(const std::string& client) {
  return admission_.Admit(client, table_.ActiveJobs(client), table_.StoredJobs(client));
}

void JobManager::SetStoreHealth(const absl::Status& health) { admission_.SetStoreHealth(health); }

int64_t JobManager::ClampDeadline(int64_t requested_ms) const {
  if (requested_ms <= 0) return options_.default_deadline_ms;
  return std::min(requested_ms, options_.max_deadline_ms);
}

Submitted JobManager::AddCacheHit(v1::Job job) {
  job.set_cache_hit(true);
  return Saved(table_.Insert(std::move(job), JobInput(), v1::JOB_STATE_SUCCEEDED,
                             "served from the artifact cache"));
}

Submitted JobManager::EnqueueCompile(v1::Job job, v1::ModuleSource source,
                                     v1::CompileOptions options, std::string fingerprint,
                                     const std::string& records_owner) {
  JobInput input;
  input.set_records_owner(records_owner);
  *input.mutable_source() = std::move(source);
  input.set_fingerprint(std::move(fingerprint));
  *input.mutable_options() = std::move(options);
  return Submit(std::move(job), std::move(input), "queued for a compile worker");
}

Submitted JobManager::EnqueueTask(v1::Job job, v1::Task task,
                                  std::vector<v1::TensorValue> expected_outputs) {
  JobInput input;
  *input.mutable_task() = std::move(task);
  for (v1::TensorValue& t : expected_outputs) *input.add_expected_outputs() = std::move(t);
  const std::string message =
      absl::StrCat("queued for an agent of device '", job.device_key(), "'");
  return Submit(std::move(job), std::move(input), message);
}

Submitted JobManager::EnqueueTune(v1::Job job, v1::ModuleSource source,
                                  const v1::SubmitTuneRequest& request,
                                  const std::string& records_owner) {
  JobInput input;
  input.set_records_owner(records_owner);
  *input.mutable_source() = std::move(source);
  input.mutable_tune()->set_trials(request.trials());
  input.mutable_tune()->set_max_trials_per_task(request.max_trials_per_task());
  input.mutable_tune()->set_seed(request.seed());
  input.mutable_tune()->set_budget_s(request.budget_s());
  return Submit(std::move(job), std::move(input), "queued for a tune worker");
}

Submitted JobManager::EnqueueQuantize(v1::Job job, v1::SubmitQuantizeRequest request) {
  JobInput input;
  *input.mutable_quantize() = std::move(request);
  return Submit(std::move(job), std::move(input), "queued for a quantize worker");
}

Submitted JobManager::Submit(v1::Job job, JobInput input, const std::string& message) {
  const bool here = sharing_->RunsHere(job);
  // Serialized for the store before the table takes the input: a module of 30 MB is held once
  // more, not twice.
  const std::string serialized = input.SerializeAsString();
  Submitted s =
      table_.Insert(std::move(job), std::move(input), v1::JOB_STATE_QUEUED, message, !here);
  if (!s.deduplicated && here) runners_.Queue(s.job);
  s = Saved(std::move(s));
  SaveInput(s, serialized);
  return s;
}

Submitted JobManager::Saved(Submitted s) {
  absl::Status status = store_->AwaitSaved(s.saved_ticket);
  if (status.code() == absl::StatusCode::kAlreadyExists && !s.deduplicated) {
    // Another instance took the same idempotency key a moment earlier (the database's unique
    // index refused this row): its job is the answer, and this one goes.
    if (std::optional<v1::Job> earlier = sharing_->TakenElsewhere(s.job)) {
      return Submitted{*std::move(earlier), true, 0};
    }
  }
  if (!status.ok()) {
    LogEvent(LogLevel::kError, "cannot save a job",
             {{"job", s.job.id()}, {"error", status.ToString()}});
  }
  return s;
}

void JobManager::SaveInput(const Submitted& s, const std::string& serialized_input) {
  if (s.deduplicated) return;
  // After the job's row: a crash in between leaves a job that cannot resume, which fails as
  // before.
  if (absl::Status status = store_->PutJobInput(s.job.id(), serialized_input); !status.ok()) {
    LogEvent(LogLevel::kError, "cannot save a job's input",
             {{"job", s.job.id()}, {"error", status.ToString()}});
  }
  if (table_.InputSaved(s.job.id())) sharing_->Release(s.job);
}

absl::StatusOr<v1::Job> JobManager::Get(const std::string& id) {
  if (std::optional<v1::Job> here = table_.Get(id)) return *std::move(here);
  return StoredJob(*store_, id);
}

absl::StatusOr<std::vector<v1::JobEvent>> JobManager::Events(const std::string& id) {
  if (auto here = table_.Events(id)) return *std::move(here);
  return sharing_->Events(id);
}

std::vector<v1::Job> JobManager::List(v1::JobState state, int limit, const std::string& client) {
  if (auto everywhere = sharing_->List(state, client, limit)) return *std::move(everywhere);
  return table_.List(state, limit, client);
}

bool JobManager::HasArtifact(const std::string& client, const std::string& digest) {
  return table_.HasArtifact(client, digest) || sharing_->ClientHasArtifact(client, digest);
}

absl::StatusOr<v1::Job> JobManager::Cancel(const std::string& id, const std::string& reason) {
  const std::string why = reason.empty() ? "cancelled by the client" : "cancelled: " + reason;
  absl::StatusOr<v1::Job> job = table_.Cancel(id, why);
  if (absl::IsNotFound(job.status())) return sharing_->Cancel(id, why);
  if (job.ok()) runners_.Withdraw(*job);
  return job;
}

absl::StatusOr<uint64_t> JobManager::Subscribe(const std::string& id, EventPush push) {
  if (std::optional<uint64_t> here = table_.Subscribe(id, push)) return *here;
  // Older than what is kept in memory, or held by another instance.
  absl::StatusOr<v1::Job> job = Get(id);
  if (!job.ok()) return job.status();
  return table_.FollowStored(*job, std::move(push), sharing_->FollowsElsewhere());
}

void JobManager::Unsubscribe(uint64_t subscription) { table_.Unsubscribe(subscription); }

std::shared_ptr<AgentLink> JobManager::RegisterAgent(const v1::RegisterAgent& hello,
                                                     const std::string& principal,
                                                     grpc::ServerContextBase* context,
                                                     std::function<void(v1::ServerMessage)> send) {
  return agents_.Register(hello, principal, context, std::move(send));
}

bool JobManager::AgentMayFetch(const std::string& agent_id, const std::string& principal,
                               const std::string& task_id, const std::string& digest) {
  return agents_.MayFetch(agent_id, principal, task_id, digest);
}

void JobManager::AgentHeartbeat(const std::shared_ptr<AgentLink>& agent) {
  agents_.Heartbeat(agent);
}

void JobManager::AgentResult(const std::shared_ptr<AgentLink>& agent,
                             const v1::TaskResult& result) {
  agents_.Result(agent, result);
}

void JobManager::AgentGone(const std::shared_ptr<AgentLink>& agent) { agents_.Gone(agent); }

std::vector<v1::Device> JobManager::Devices() {
  if (auto everywhere = sharing_->Devices()) return *std::move(everywhere);
  return agents_.Devices();
}

JobStats JobManager::Stats() {
  JobStats stats;
  stats.jobs_by_state = table_.CountByState();
  stats.compile_queue = pool_.Queued();
  stats.workers_busy = pool_.Busy();
  stats.compiles = pool_.Compiles();
  stats.compile_seconds = pool_.CompileSeconds();
  stats.task_queue = agents_.TasksQueued();
  stats.agents_connected = agents_.AgentsConnected();
  stats.limit_refusals = admission_.Refusals();
  std::lock_guard<std::mutex> lock(mu_);
  stats.jobs_pruned = jobs_pruned_;
  return stats;
}

void JobManager::DeleteFinishedInputs() {
  std::vector<std::string> done = table_.TakeFinishedInputs();
  if (done.empty()) return;
  if (absl::Status s = store_->DeleteJobInputs(done); !s.ok()) {
    LogEvent(LogLevel::kError, "cannot delete finished jobs' inputs", {{"error", s.ToString()}});
  }
}

void JobManager::MonitorLoop() {
  // A prune scans every job: about a tenth of the retention apart (1 s to 1 min), or each second
  // while there are more jobs than finished ones may be kept.
  const int64_t prune_every = std::clamp<int64_t>(
      options_.job_retention_ms > 0 ? options_.job_retention_ms / 10 : 60000, 1000, 60000);
  int64_t last_prune_ms = 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopped_) {
    stop_monitor_.wait_for(lock, std::chrono::milliseconds(100));
    if (stopped_) break;
    lock.unlock();
    const int64_t now = NowUnixMs();
    const bool over_count = options_.max_finished_jobs > 0 &&
                            table_.size() > static_cast<size_t>(options_.max_finished_jobs);
    if (now - last_prune_ms >= (over_count ? 1000 : prune_every)) {
      last_prune_ms = now;
      std::vector<std::string> pruned =
          table_.Prune(now, options_.job_retention_ms, options_.max_finished_jobs);
      if (!pruned.empty()) {
        if (absl::Status s = store_->DeleteJobs(pruned); !s.ok()) {
          LogEvent(LogLevel::kError, "cannot delete pruned jobs", {{"error", s.ToString()}});
        }
        LogEvent(LogLevel::kInfo, "finished jobs pruned",
                 {{"jobs", std::to_string(pruned.size())}});
      }
      std::lock_guard<std::mutex> relock(mu_);
      jobs_pruned_ += static_cast<int64_t>(pruned.size());
    }
    DeleteFinishedInputs();
    agents_.Tick(now);
    lock.lock();
  }
}

void JobManager::Drain(int64_t timeout_ms) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (drained_) return;
    drained_ = true;
  }
  admission_.SetDraining();
  pool_.SetDraining();
  agents_.SetDraining();
  table_.WaitUntilNoneRunning(timeout_ms);
  sharing_->HandBackAll();
  table_.FailUnfinished("kilnd shut down before the job started",
                        "kilnd shut down before the job finished");
  agents_.Stop();
  pool_.Stop();
  sharing_->Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    stop_monitor_.notify_all();
  }
  if (monitor_.joinable()) monitor_.join();
  // The monitor is gone: the inputs of what finished last are deleted here.
  DeleteFinishedInputs();
}

}  // namespace kiln::server
