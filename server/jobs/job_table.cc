#include "server/jobs/job_table.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "server/log.h"

namespace kiln::server {

v1::JobEvent EventOf(const v1::Job& job, const std::string& message, int64_t unix_ms) {
  v1::JobEvent event;
  event.set_job_id(job.id());
  event.set_unix_ms(unix_ms);
  event.set_state(job.state());
  event.set_message(message);
  *event.mutable_job() = job;
  return event;
}

bool Terminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_CANCELLED;
}

std::string StateName(v1::JobState s) {
  std::string name = v1::JobState_Name(s);
  return absl::AsciiStrToLower(name.substr(name.rfind('_') + 1));
}

absl::StatusOr<v1::Job> StoredJob(Store& store, const std::string& id) {
  absl::StatusOr<std::optional<v1::Job>> stored = store.GetJob(id);
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) return absl::NotFoundError(absl::StrCat("no job '", id, "'"));
  return **stored;
}

bool RunsInWorker(const v1::Job& job) {
  return job.kind() == v1::JOB_KIND_COMPILE || job.kind() == v1::JOB_KIND_TUNE ||
         job.kind() == v1::JOB_KIND_QUANTIZE;
}

JobTable::JobTable(Store* store, std::string instance)
    : store_(store), instance_(std::move(instance)) {}

JobTable::~JobTable() = default;

absl::StatusOr<std::vector<v1::Job>> JobTable::Load(bool resume) {
  absl::StatusOr<std::vector<v1::Job>> jobs = store_->LoadJobs(100000);
  if (!jobs.ok()) return jobs.status();
  std::vector<v1::Job> resumed;
  std::lock_guard<std::mutex> lock(mu_);
  for (v1::Job& job : *jobs) {
    // In a cluster an unfinished job is another instance's, or claimed once its lease runs out.
    if (!resume && !Terminal(job.state())) continue;
    auto e = std::make_unique<Entry>();
    bool resuming = false;
    if (!Terminal(job.state())) {
      // Lost with the kilnd that ran it (killed, or crashed): run it again when the store kept
      // its input; otherwise the client sees why and can resubmit.
      absl::StatusOr<std::optional<std::string>> input = store_->GetJobInput(job.id());
      if (!input.ok()) return input.status();
      resuming = input->has_value() && e->input.ParseFromString(**input);
      if (!resuming) {
        job.set_state(v1::JOB_STATE_FAILED);
        job.set_reason("interrupted: kilnd restarted before the job finished");
        job.set_finished_unix_ms(NowUnixMs());
        if (absl::Status s = store_->AwaitSaved(store_->SaveJob(job)); !s.ok()) return s;
      }
    }
    const std::string id = job.id();
    IndexLocked(job, id);
    e->job = std::move(job);
    e->deadline_unix_ms = e->job.created_unix_ms() + e->job.deadline_ms();
    Entry& entry = *e;
    jobs_[id] = std::move(e);
    if (!resuming) continue;
    // `attempts` counts the workers and agents it is given to, so a resume adds none of its own.
    TransitionLocked(entry, v1::JOB_STATE_QUEUED,
                     "resumed: the kilnd running it stopped before it finished");
    resumed.push_back(entry.job);
  }
  return resumed;
}

void JobTable::IndexLocked(const v1::Job& job, const std::string& id) {
  if (!job.idempotency_key().empty()) idempotency_[{job.client(), job.idempotency_key()}] = id;
  if (!job.artifact_digest().empty()) {
    clients_by_artifact_[job.artifact_digest()].insert(job.client());
  }
  ++stored_by_client_[job.client()];
}

std::string JobTable::NewIdLocked() {
  static std::mt19937_64 rng(std::random_device{}());
  while (true) {
    std::string id = absl::StrCat("job-", absl::Hex(rng() & 0xffffffffffff, absl::kZeroPad12));
    if (jobs_.count(id) == 0) return id;
  }
}

JobTable::Entry* JobTable::FindHeldLocked(const std::string& id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() || it->second->handed_over ? nullptr : it->second.get();
}

HeldJob JobTable::CopyLocked(const Entry& e) {
  return HeldJob{e.job, e.input, e.deadline_unix_ms, e.cancel};
}

Submitted JobTable::Insert(v1::Job job, JobInput input, v1::JobState state,
                           const std::string& message, bool awaiting_release) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!job.idempotency_key().empty()) {
    auto it = idempotency_.find({job.client(), job.idempotency_key()});
    if (it != idempotency_.end()) {
      const Entry& earlier = *jobs_.at(it->second);
      return Submitted{earlier.job, true, earlier.saved_ticket};
    }
  }
  auto owned = std::make_unique<Entry>();
  Entry& e = *owned;
  e.held_since_ms = NowUnixMs();
  e.awaiting_release = awaiting_release;
  e.input = std::move(input);
  if (!instance_.empty()) job.set_instance(instance_);
  job.set_id(NewIdLocked());
  job.set_created_unix_ms(NowUnixMs());
  if (Terminal(state)) job.set_started_unix_ms(job.created_unix_ms());
  const std::string id = job.id();
  e.job = std::move(job);
  e.deadline_unix_ms = e.job.created_unix_ms() + e.job.deadline_ms();
  // The digest is indexed by the transition, once the job is known to have it.
  ++stored_by_client_[e.job.client()];
  if (!e.job.idempotency_key().empty())
    idempotency_[{e.job.client(), e.job.idempotency_key()}] = id;
  jobs_[id] = std::move(owned);
  TransitionLocked(e, state, message);
  return Submitted{e.job, false, e.saved_ticket};
}

bool JobTable::InputSaved(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = FindHeldLocked(id);
  if (e == nullptr || Terminal(e->job.state())) {
    // A job that already finished has nothing to resume, so its input is not kept.
    inputs_done_.push_back({id, e == nullptr ? 0 : e->saved_ticket});
    return false;
  }
  return e->awaiting_release;
}

void JobTable::TransitionLocked(Entry& e, v1::JobState state, const std::string& message) {
  if (e.handed_over) return;  // another instance writes its rows now
  const int64_t now = NowUnixMs();
  e.job.set_state(state);
  if (Terminal(state) == e.counted_active) {
    e.counted_active = !e.counted_active;
    active_by_client_[e.job.client()] += e.counted_active ? 1 : -1;
  }
  if (state == v1::JOB_STATE_RUNNING) e.job.set_started_unix_ms(now);
  if (Terminal(state)) {
    e.job.set_finished_unix_ms(now);
    if (state != v1::JOB_STATE_SUCCEEDED) e.job.set_reason(message);
    e.input.Clear();
  }
  if (!e.job.artifact_digest().empty()) {
    clients_by_artifact_[e.job.artifact_digest()].insert(e.job.client());
  }
  e.saved_ticket = store_->SaveJob(e.job);
  // Its input is deleted by the monitor, outside this lock, once this row is committed.
  if (Terminal(state)) inputs_done_.push_back({e.job.id(), e.saved_ticket});
  LogEvent(
      Terminal(state) && state != v1::JOB_STATE_SUCCEEDED ? LogLevel::kWarning : LogLevel::kInfo,
      "job " + StateName(state),
      {{"job", e.job.id()},
       {"kind", v1::JobKind_Name(e.job.kind())},
       {"client", e.job.client()},
       {"message", message}});
  PublishLocked(e, message);
}

void JobTable::PublishLocked(Entry& e, const std::string& message) {
  const v1::JobEvent& event = e.events.emplace_back(EventOf(e.job, message, NowUnixMs()));
  if (auto it = watchers_.find(e.job.id()); it != watchers_.end()) {
    for (auto& [subscription, push] : it->second) push(event);
  }
  changed_.notify_all();
}

std::optional<v1::Job> JobTable::FindIdempotent(const std::string& client, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = idempotency_.find({client, key});
  if (it == idempotency_.end()) return std::nullopt;
  return jobs_.at(it->second)->job;
}

std::optional<v1::Job> JobTable::Get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = FindHeldLocked(id);
  if (e == nullptr) return std::nullopt;
  return e->job;
}

std::optional<std::vector<v1::JobEvent>> JobTable::Events(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  return it->second->events;
}

std::vector<v1::Job> JobTable::List(v1::JobState state, int limit, const std::string& client) {
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

bool JobTable::HasArtifact(const std::string& client, const std::string& digest) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_by_artifact_.find(digest);
  return it != clients_by_artifact_.end() && it->second.count(client) > 0;
}

bool JobTable::OthersReferTo(const std::string& digest, const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_by_artifact_.find(digest);
  if (it == clients_by_artifact_.end()) return false;
  return it->second.size() > 1 || (it->second.size() == 1 && !it->second.count(client));
}

int JobTable::ActiveJobs(const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = active_by_client_.find(client);
  return it == active_by_client_.end() ? 0 : it->second;
}

int64_t JobTable::HeldInputBytes() {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t bytes = 0;
  for (const auto& [id, e] : jobs_) {
    if (!Terminal(e->job.state())) bytes += static_cast<int64_t>(e->input.ByteSizeLong());
  }
  return bytes;
}

int JobTable::StoredJobs(const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = stored_by_client_.find(client);
  return it == stored_by_client_.end() ? 0 : it->second;
}

std::vector<HeldSummary> JobTable::Held() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<HeldSummary> out;
  for (const auto& [id, e] : jobs_) {
    if (!e->handed_over) out.push_back({e->job, e->held_since_ms, e->awaiting_release});
  }
  return out;
}

void JobTable::WaitUntilNoneRunning(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
    for (const auto& [id, e] : jobs_) {
      if (e->job.state() == v1::JOB_STATE_RUNNING) return false;
    }
    return true;
  });
}

std::map<v1::JobState, int64_t> JobTable::CountByState() {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<v1::JobState, int64_t> counts;
  for (v1::JobState s : {v1::JOB_STATE_QUEUED, v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED,
                         v1::JOB_STATE_FAILED, v1::JOB_STATE_CANCELLED}) {
    counts[s] = 0;
  }
  for (const auto& [id, e] : jobs_) ++counts[e->job.state()];
  return counts;
}

bool JobTable::Transition(const std::string& id, v1::JobState from, v1::JobState to,
                          const std::string& message, const JobEdit& edit) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = FindHeldLocked(id);
  if (e == nullptr || Terminal(e->job.state())) return false;
  if (from != v1::JOB_STATE_UNSPECIFIED && e->job.state() != from) return false;
  if (edit) edit(e->job);
  TransitionLocked(*e, to, message);
  return true;
}

void JobTable::Publish(const std::string& id, const std::string& message, const JobEdit& edit) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = FindHeldLocked(id);
  if (e == nullptr || Terminal(e->job.state())) return;
  if (edit) edit(e->job);
  PublishLocked(*e, message);
}

absl::StatusOr<v1::Job> JobTable::Cancel(const std::string& id, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = FindHeldLocked(id);
  if (e == nullptr) return absl::NotFoundError(absl::StrCat("no job '", id, "'"));
  if (Terminal(e->job.state())) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " already ", StateName(e->job.state())));
  }
  *e->cancel = true;  // a running worker is killed by its supervisor
  TransitionLocked(*e, v1::JOB_STATE_CANCELLED, why);
  return e->job;
}

std::optional<HeldJob> JobTable::StartInWorker(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = FindHeldLocked(id);
  if (e == nullptr || e->job.state() != v1::JOB_STATE_QUEUED) return std::nullopt;
  e->in_worker = true;
  e->job.set_attempts(e->job.attempts() + 1);
  TransitionLocked(*e, v1::JOB_STATE_RUNNING,
                   e->job.kind() == v1::JOB_KIND_TUNE       ? "starting a tune worker"
                   : e->job.kind() == v1::JOB_KIND_QUANTIZE ? "starting a quantize worker"
                                                            : "starting a compile worker");
  return CopyLocked(*e);
}

void JobTable::WorkerDone(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  it->second->in_worker = false;
  if (it->second->handed_over) ForgetLocked(id);
  changed_.notify_all();
}

std::optional<HeldJob> JobTable::StartOnAgent(const std::string& id, const std::string& agent_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = FindHeldLocked(id);
  if (e == nullptr || e->job.state() != v1::JOB_STATE_QUEUED) return std::nullopt;
  e->job.set_agent_id(agent_id);
  e->job.set_attempts(e->job.attempts() + 1);
  TransitionLocked(*e, v1::JOB_STATE_RUNNING, absl::StrCat("running on ", agent_id));
  HeldJob held = CopyLocked(*e);
  held.input.mutable_task()->set_task_id(id);
  return held;
}

bool JobTable::ExpireTask(const std::string& id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = FindHeldLocked(id);
  if (e == nullptr || Terminal(e->job.state()) || now_ms < e->deadline_unix_ms) return false;
  std::string where = e->job.state() == v1::JOB_STATE_QUEUED
                          ? absl::StrCat("no agent of device '", e->job.device_key(), "' took it")
                          : absl::StrCat(e->job.agent_id(), " did not finish it");
  TransitionLocked(*e, v1::JOB_STATE_FAILED,
                   absl::StrCat("deadline of ", e->job.deadline_ms(), " ms exceeded: ", where));
  return true;
}

void JobTable::FailUnfinished(const std::string& message_queued,
                              const std::string& message_running) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, e] : jobs_) {
    if (Terminal(e->job.state()) || e->handed_over) continue;
    *e->cancel = true;
    TransitionLocked(*e, v1::JOB_STATE_FAILED,
                     e->job.state() == v1::JOB_STATE_QUEUED ? message_queued : message_running);
  }
}

bool JobTable::HandOver(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = FindHeldLocked(id);
  if (e == nullptr) return false;
  e->handed_over = true;
  *e->cancel = true;  // a worker running it is killed; its outcome is not written
  if (!e->in_worker) ForgetLocked(id);
  return true;
}

void JobTable::ForgetLocked(const std::string& id) {
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

bool JobTable::Adopt(v1::Job job, JobInput input) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string id = job.id();
  if (auto stale = jobs_.find(id); stale != jobs_.end()) {
    // This instance ran it before losing its lease: a worker may still hold the old entry,
    // which must go first.
    if (stale->second->in_worker) return false;
    ForgetLocked(id);
  }
  auto owned = std::make_unique<Entry>();
  owned->held_since_ms = NowUnixMs();
  owned->deadline_unix_ms = job.created_unix_ms() + job.deadline_ms();
  owned->input = std::move(input);
  IndexLocked(job, id);
  job.set_instance(instance_);
  owned->job = std::move(job);
  jobs_[id] = std::move(owned);
  // Its watchers here follow it from memory again.
  if (auto w = remote_watchers_.find(id); w != remote_watchers_.end()) {
    for (auto& [subscription, push] : w->second.pushes) watchers_[id].emplace(subscription, push);
    remote_watchers_.erase(w);
  }
  return true;
}

std::vector<std::string> JobTable::Prune(int64_t now_ms, int64_t retention_ms, int max_finished) {
  std::lock_guard<std::mutex> lock(mu_);
  // Finished jobs, oldest first; a job is kept at least 2 s after it finished, so that a watcher
  // reading its last event never finds it gone.
  std::vector<std::pair<int64_t, std::string>> finished;
  for (const auto& [id, e] : jobs_) {
    if (Terminal(e->job.state()) && now_ms - e->job.finished_unix_ms() >= 2000) {
      finished.push_back({e->job.created_unix_ms(), id});
    }
  }
  std::sort(finished.begin(), finished.end());  // by age, then id
  size_t over_count = max_finished > 0 && finished.size() > static_cast<size_t>(max_finished)
                          ? finished.size() - max_finished
                          : 0;
  std::vector<std::string> pruned;
  for (size_t i = 0; i < finished.size(); ++i) {
    bool too_old = retention_ms > 0 && now_ms - finished[i].first > retention_ms;
    if (i >= over_count && !too_old) break;
    const std::string& id = finished[i].second;
    const v1::Job& job = jobs_.at(id)->job;
    if (!job.idempotency_key().empty()) idempotency_.erase({job.client(), job.idempotency_key()});
    if (--stored_by_client_[job.client()] <= 0) stored_by_client_.erase(job.client());
    pruned.push_back(id);
    jobs_.erase(id);
  }
  return pruned;
}

size_t JobTable::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.size();
}

std::vector<std::string> JobTable::TakeFinishedInputs() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> done;
  std::vector<std::pair<std::string, uint64_t>> waiting;
  for (auto& [id, ticket] : inputs_done_) {
    if (store_->Saved(ticket)) {
      done.push_back(std::move(id));
    } else {
      waiting.push_back({std::move(id), ticket});
    }
  }
  inputs_done_.swap(waiting);
  return done;
}

}  // namespace kiln::server
