#include "server/jobs/admission.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/cluster_store.h"
#include "server/log.h"

namespace kiln::server {

Admission::Admission(AdmissionOptions options, Store* store) : options_(options), store_(store) {}

void Admission::SetStoreHealth(const absl::Status& health) {
  std::lock_guard<std::mutex> lock(mu_);
  store_health_ = health;
}

void Admission::SetDraining() {
  std::lock_guard<std::mutex> lock(mu_);
  draining_ = true;
}

bool Admission::Accepting() {
  std::lock_guard<std::mutex> lock(mu_);
  return !draining_ && store_health_.ok();
}

std::map<std::string, int64_t> Admission::Refusals() {
  std::lock_guard<std::mutex> lock(mu_);
  return refusals_;
}

absl::Status Admission::RefuseLocked(const std::string& limit, std::string message) {
  ++refusals_[limit];
  return absl::ResourceExhaustedError(std::move(message));
}

absl::Status Admission::Admit(const std::string& client, int active, int stored) {
  std::lock_guard<std::mutex> lock(mu_);
  if (draining_) return absl::UnavailableError("kilnd is shutting down and takes no new jobs");
  if (!store_health_.ok()) {
    return absl::UnavailableError(absl::StrCat("the store is unreachable (",
                                               store_health_.message(),
                                               "): new jobs are refused until it is back"));
  }
  // In a cluster every instance counts the same jobs and submissions: the database's.
  ClusterStore* cluster = store_->cluster();
  if (cluster != nullptr) {
    absl::StatusOr<std::pair<int, int>> counts = cluster->ClientJobCounts(client);
    if (!counts.ok())
      return absl::UnavailableError(absl::StrCat("quotas: ", counts.status().message()));
    active = std::max(active, counts->first);
    stored = std::max(stored, counts->second);
  }
  if (active >= options_.max_active_jobs_per_client) {
    return RefuseLocked(
        "active_jobs",
        absl::StrCat("client ", client, " already has ", active, " unfinished jobs (the limit is ",
                     options_.max_active_jobs_per_client, "); wait for some to finish"));
  }
  const int64_t now = NowUnixMs();
  if (options_.max_stored_jobs_per_client > 0 && stored >= options_.max_stored_jobs_per_client) {
    return RefuseLocked(
        "stored_jobs",
        absl::StrCat("client ", client, " has ", stored, " stored jobs (the limit is ",
                     options_.max_stored_jobs_per_client, "); finished jobs are pruned after ",
                     options_.job_retention_ms / 1000, " s"));
  }
  if (absl::Status room = StoreRoomLocked(now, client); !room.ok()) return room;
  if (options_.max_jobs_per_minute_per_client > 0 && cluster != nullptr) {
    const int limit = options_.max_jobs_per_minute_per_client;
    absl::StatusOr<std::pair<std::optional<int>, int64_t>> counted =
        cluster->CountSubmission(client, limit);
    if (!counted.ok()) {
      return absl::UnavailableError(absl::StrCat("quotas: ", counted.status().message()));
    }
    if (!counted->first.has_value()) {
      return RefuseLocked("jobs_per_minute",
                          absl::StrCat("client ", client, " submitted ", limit,
                                       " jobs this minute across the cluster (the limit is ", limit,
                                       "); try again in ", (counted->second + 999) / 1000, " s"));
    }
  } else if (options_.max_jobs_per_minute_per_client > 0) {
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

absl::Status Admission::StoreRoomLocked(int64_t now_ms, const std::string& client) {
  if (options_.store_max_bytes <= 0) return absl::OkStatus();
  // Measured at most once a second: the database's files and the artifacts' bytes.
  if (now_ms - store_checked_ms_ >= 1000) {
    store_checked_ms_ = now_ms;
    const int64_t database = store_->DatabaseBytes();
    int64_t artifacts = store_->TotalArtifactBytes().value_or(0);
    if (database + artifacts > options_.store_max_bytes) {
      // Never another client's artifact on this one's behalf.
      std::function<bool(const std::string&)> evictable;
      if (others_refer_) {
        evictable = [&](const std::string& digest) { return !others_refer_(digest, client); };
      }
      absl::StatusOr<int> evicted =
          store_->EvictTo(std::max<int64_t>(0, options_.store_max_bytes - database), "", evictable);
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

}  // namespace kiln::server
