// JobTable's watchers: subscriptions to the jobs held here (fed as they change) and to jobs held
// elsewhere (fed from the database by the cluster's synchronization).
#include "server/jobs/job_table.h"

namespace kiln::server {

std::optional<uint64_t> JobTable::Subscribe(const std::string& id, EventPush push) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = FindHeldLocked(id);
  if (e == nullptr) return std::nullopt;
  // The job as it is; later events follow from PublishLocked.
  push(EventOf(e->job, e->events.empty() ? "" : e->events.back().message(), NowUnixMs()));
  const uint64_t subscription = next_subscription_++;
  watchers_[id].emplace(subscription, std::move(push));
  watched_job_[subscription] = id;
  return subscription;
}

uint64_t JobTable::FollowStored(const v1::Job& job, EventPush push, bool follow) {
  std::lock_guard<std::mutex> lock(mu_);
  push(EventOf(job, "", Terminal(job.state()) ? job.finished_unix_ms() : NowUnixMs()));
  if (Terminal(job.state()) || !follow) return 0;
  const uint64_t subscription = next_subscription_++;
  RemoteWatch& watch = remote_watchers_[job.id()];
  if (watch.pushes.empty()) watch.last = job.SerializeAsString();
  watch.pushes.emplace(subscription, std::move(push));
  watched_job_[subscription] = job.id();
  return subscription;
}

void JobTable::Unsubscribe(uint64_t subscription) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = watched_job_.find(subscription);
  if (it == watched_job_.end()) return;
  if (auto job = watchers_.find(it->second); job != watchers_.end()) {
    job->second.erase(subscription);
    if (job->second.empty()) watchers_.erase(job);
  }
  if (auto remote = remote_watchers_.find(it->second); remote != remote_watchers_.end()) {
    remote->second.pushes.erase(subscription);
    if (remote->second.pushes.empty()) remote_watchers_.erase(remote);
  }
  watched_job_.erase(it);
}

std::vector<std::string> JobTable::RemotelyWatched() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> ids;
  for (const auto& [id, watch] : remote_watchers_) ids.push_back(id);
  return ids;
}

void JobTable::PushRemote(const v1::Job& job) {
  std::string row = job.SerializeAsString();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = remote_watchers_.find(job.id());
  if (it == remote_watchers_.end() || it->second.last == row) return;
  it->second.last = std::move(row);
  v1::JobEvent event =
      EventOf(job, Terminal(job.state()) ? job.reason() : StateName(job.state()), NowUnixMs());
  for (auto& [subscription, push] : it->second.pushes) push(event);
}

}  // namespace kiln::server
