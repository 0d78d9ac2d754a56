#include "server/jobs/cluster_sync.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "absl/strings/str_cat.h"
#include "server/log.h"

namespace kiln::server {
ClusterSync::ClusterSync(ClusterStore* cluster, Store* store, JobTable* table, Runners runners,
                         std::function<bool()> accepting)
    : cluster_(cluster),
      store_(store),
      table_(table),
      runners_(runners),
      accepting_(std::move(accepting)) {}

ClusterSync::~ClusterSync() { Stop(); }

void ClusterSync::Start() {
  thread_ = std::thread([this] { Loop(); });
  LogEvent(
      LogLevel::kInfo, "sharing work with the cluster's instances",
      {{"instance", cluster_->instance()}, {"lease_ms", std::to_string(cluster_->lease_ms())}});
}

void ClusterSync::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void ClusterSync::ClaimSoon() {
  std::lock_guard<std::mutex> lock(mu_);
  claim_soon_ = true;
  wake_.notify_all();
}

bool ClusterSync::RunsHere(const v1::Job& job) {
  // Compiles and quantizes need no agent (a device only gives them their target).
  return job.kind() == v1::JOB_KIND_COMPILE || job.kind() == v1::JOB_KIND_QUANTIZE ||
         job.device_key().empty() || runners_.agents->HasAgent(job.device_key());
}

void ClusterSync::HandOver(const v1::Job& job) {
  if (table_->HandOver(job.id())) runners_.Withdraw(job, /*release_agent=*/true);
}

void ClusterSync::Release(const v1::Job& job) {
  // No agent of its device here: an instance that has one claims it, its input now saved.
  HandOver(job);
  if (absl::Status released = cluster_->ReleaseJobs({job.id()}); !released.ok()) {
    LogEvent(LogLevel::kWarning, "cannot release a job (its lease will run out instead)",
             {{"job", job.id()}, {"error", released.ToString()}});
  }
}

std::optional<v1::Job> ClusterSync::TakenElsewhere(const v1::Job& job) {
  absl::StatusOr<std::optional<v1::Job>> earlier =
      cluster_->FindIdempotent(job.client(), job.idempotency_key());
  HandOver(job);
  if (earlier.ok() && earlier->has_value()) return **earlier;
  return std::nullopt;
}

int ClusterSync::HandBackAll() {
  // A draining instance hands its leases back: another instance runs the rest.
  std::vector<std::string> ids;
  for (const HeldSummary& held : table_->Held()) {
    if (Terminal(held.job.state())) continue;
    HandOver(held.job);
    ids.push_back(held.job.id());
  }
  if (ids.empty()) return 0;
  absl::Status released = cluster_->ReleaseJobs(ids);
  LogEvent(released.ok() ? LogLevel::kInfo : LogLevel::kWarning, "jobs handed back",
           {{"jobs", std::to_string(ids.size())}, {"status", released.ToString()}});
  return static_cast<int>(ids.size());
}

void ClusterSync::AgentJoined(const std::string& agent_id, const std::string& device_key) {
  if (absl::Status s = cluster_->PutAgentSession(agent_id, device_key); !s.ok()) {
    LogEvent(LogLevel::kError, "cannot save an agent session", {{"error", s.ToString()}});
  }
  ClaimSoon();  // the tasks waiting for its device
}

void ClusterSync::AgentLeft(const std::string& agent_id) {
  cluster_->DropAgentSession(agent_id).IgnoreError();  // or it expires
}

std::optional<v1::Job> ClusterSync::FindIdempotent(const std::string& client,
                                                   const std::string& key) {
  absl::StatusOr<std::optional<v1::Job>> earlier = cluster_->FindIdempotent(client, key);
  return earlier.ok() ? *earlier : std::nullopt;
}

std::optional<std::vector<v1::Job>> ClusterSync::List(v1::JobState state, const std::string& client,
                                                      int limit) {
  absl::StatusOr<std::vector<v1::Job>> jobs = cluster_->ListJobs(state, client, limit);
  if (jobs.ok()) return *std::move(jobs);
  LogEvent(LogLevel::kWarning, "cannot list the cluster's jobs; listing this instance's",
           {{"error", jobs.status().ToString()}});
  return std::nullopt;
}

bool ClusterSync::ClientHasArtifact(const std::string& client, const std::string& digest) {
  absl::StatusOr<bool> elsewhere = cluster_->ClientHasArtifact(client, digest);
  return elsewhere.ok() && *elsewhere;
}

absl::StatusOr<std::vector<v1::JobEvent>> ClusterSync::Events(const std::string& id) {
  // Held by another instance: its events are there; the job as stored is one.
  absl::StatusOr<v1::Job> job = StoredJob(*store_, id);
  if (!job.ok()) return job.status();
  return std::vector<v1::JobEvent>{EventOf(*job, job->reason(), NowUnixMs())};
}

absl::StatusOr<v1::Job> ClusterSync::Cancel(const std::string& id, const std::string& why) {
  // Nobody live holds it (released, or its instance died): take it and cancel it here.
  absl::StatusOr<std::optional<v1::Job>> claimed = cluster_->ClaimJob(id);
  if (!claimed.ok()) return claimed.status();
  if (claimed->has_value()) {
    if (table_->Adopt(**claimed, JobInput())) return table_->Cancel(id, why);
    cluster_->ReleaseJobs({id}).IgnoreError();
    return absl::UnavailableError(
        absl::StrCat("job ", id, " is changing hands; cancel it again in a moment"));
  }
  absl::StatusOr<v1::Job> job = StoredJob(*store_, id);
  if (!job.ok()) return job.status();
  if (Terminal(job->state())) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " already ", StateName(job->state())));
  }
  // Its instance cancels it at its next lease renewal; the answer waits for that a while.
  if (absl::Status s = cluster_->RequestCancel(id, why); !s.ok()) return s;
  const int64_t until = NowUnixMs() + cluster_->lease_ms();
  while (NowUnixMs() < until && !Terminal(job->state())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    absl::StatusOr<v1::Job> now = StoredJob(*store_, id);
    if (!now.ok()) return now.status();
    job = std::move(now);
  }
  return job;
}

std::optional<std::vector<v1::Device>> ClusterSync::Devices() {
  // Every instance's agents and queues.
  absl::StatusOr<std::vector<v1::Device>> devices = store_->LoadDevices();
  absl::StatusOr<std::map<std::string, int>> agents = cluster_->AgentsByDevice();
  absl::StatusOr<std::map<std::string, int>> queued = cluster_->TasksQueuedByDevice();
  if (!devices.ok() || !agents.ok() || !queued.ok()) return std::nullopt;
  for (v1::Device& d : *devices) {
    d.set_agents_connected(agents->count(d.key()) ? agents->at(d.key()) : 0);
    d.set_tasks_queued(queued->count(d.key()) ? queued->at(d.key()) : 0);
  }
  return *std::move(devices);
}

void ClusterSync::Loop() {
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
    const bool watching = !table_->RemotelyWatched().empty();
    lock.lock();
    const int64_t wait_ms = std::max<int64_t>(
        1, std::min({next_claim, next_renew, watching ? now + 100 : next_claim}) - NowUnixMs());
    wake_.wait_for(lock, std::chrono::milliseconds(wait_ms),
                   [&] { return stopping_ || claim_soon_; });
  }
}

void ClusterSync::RenewLeases() {
  const int64_t asked_ms = NowUnixMs();
  absl::StatusOr<LeaseRenewal> renewal = cluster_->RenewLeases();
  if (!renewal.ok()) return;  // readiness reports the database; the next round tries again
  std::set<std::string> held(renewal->held.begin(), renewal->held.end());
  std::vector<std::string> release;
  for (const HeldSummary& h : table_->Held()) {
    if (Terminal(h.job.state())) continue;
    if (held.count(h.job.id()) == 0) {
      // Held by this instance before the renewal asked, yet not renewed: another instance
      // claimed it (this one was paused or cut off past its lease). (A row still queued in the
      // store counts as held.)
      if (h.held_since_ms >= asked_ms) continue;
      LogEvent(LogLevel::kWarning, "lease lost: another instance holds the job now",
               {{"job", h.job.id()}});
      HandOver(h.job);
    } else if (h.job.state() == v1::JOB_STATE_QUEUED && !h.awaiting_release && !RunsHere(h.job)) {
      // Its agent left: another instance may have one. (A job awaiting release is released
      // once its input is saved: released before, another instance would find none.)
      release.push_back(h.job.id());
      HandOver(h.job);
    }
  }
  for (const auto& [id, why] : renewal->cancel_requests) {
    absl::StatusOr<v1::Job> cancelled = table_->Cancel(id, why);
    if (cancelled.ok()) runners_.Withdraw(*cancelled);
  }
  if (!release.empty()) cluster_->ReleaseJobs(release).IgnoreError();  // or the lease runs out
}

int ClusterSync::ClaimJobs() {
  if (!accepting_()) return 0;
  const int free_workers = runners_.pool->FreeSlots();
  const bool compiles = free_workers > 0;
  const std::vector<std::string> keys = runners_.agents->IdleKeys();
  const int limit = std::max<int>(std::max(free_workers, 0), static_cast<int>(keys.size()));
  if (limit == 0 || (!compiles && keys.empty())) return 0;
  absl::StatusOr<std::vector<ClaimedJob>> claimed = cluster_->ClaimJobs(compiles, keys, limit);
  if (!claimed.ok()) return 0;
  std::vector<std::string> give_back;  // the database is away, or a worker here still runs it
  for (ClaimedJob& c : *claimed) {
    const std::string id = c.job.id();
    LogEvent(LogLevel::kInfo, "job claimed",
             {{"job", id},
              {"kind", v1::JobKind_Name(c.job.kind())},
              {"from", c.interrupted ? "an instance whose lease ran out" : "released"}});
    absl::StatusOr<std::optional<std::string>> stored = store_->GetJobInput(id);
    if (!stored.ok()) {  // another round will take it
      give_back.push_back(id);
      continue;
    }
    JobInput input;
    const bool readable = stored->has_value() && input.ParseFromString(**stored);
    const std::string key = c.job.device_key();
    if (!table_->Adopt(std::move(c.job), std::move(input))) {
      give_back.push_back(id);
      continue;
    }
    if (!readable) {
      table_->Transition(id, v1::JOB_STATE_UNSPECIFIED, v1::JOB_STATE_FAILED,
                         stored->has_value()
                             ? "interrupted: the instance running it stopped, and its input is "
                               "unreadable"
                             : "interrupted: the instance running it stopped and its input was "
                               "not kept");
      continue;
    }
    const std::string message =
        c.interrupted ? "resumed: the kilnd running it stopped before it finished"
                      : absl::StrCat("taken by ", cluster_->instance(),
                                     ", where an agent of device '", key, "' is connected");
    if (table_->Transition(id, v1::JOB_STATE_UNSPECIFIED, v1::JOB_STATE_QUEUED, message)) {
      if (std::optional<v1::Job> job = table_->Get(id)) runners_.Queue(*job);
    }
  }
  if (!give_back.empty()) cluster_->ReleaseJobs(give_back).IgnoreError();
  return static_cast<int>(claimed->size());
}

void ClusterSync::PollRemoteWatches() {
  for (const std::string& id : table_->RemotelyWatched()) {
    absl::StatusOr<std::optional<v1::Job>> stored = store_->GetJob(id);
    if (stored.ok() && stored->has_value()) table_->PushRemote(**stored);
  }
}

}  // namespace kiln::server
