// What several kilnd instances on one database share beyond the Store's rows: which instance
// holds each unfinished job (a lease it renews), the jobs nobody holds, requests to cancel a job
// held elsewhere, and the agents each instance has. PostgresStore implements it; the embedded
// store has one instance and none (Store::cluster() is null).
//
//   submitted here ──► held by this instance (lease renewed every second) ──► finished
//        │                        │ the instance dies: its lease runs out
//        ▼                        ▼
//   released (no agent of its device here) ──► claimed by an instance that has one, or any
//                                              instance for a compile
//
// Rows are fenced: an instance writes a job only while it holds it, so an instance that lost a
// lease (paused past it, cut off) cannot overwrite what the new holder wrote.
#ifndef KILN_SERVER_CLUSTER_STORE_H_
#define KILN_SERVER_CLUSTER_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/kiln/v1/jobs.pb.h"

namespace kiln::server {

struct ClaimedJob {
  v1::Job job;
  // Another instance held it and its lease ran out (it was interrupted), rather than released.
  bool interrupted = false;
};

struct LeaseRenewal {
  std::vector<std::string> held;  // the unfinished jobs this instance still holds
  // Cancellations asked through other instances, by job id: the reason.
  std::map<std::string, std::string> cancel_requests;
};

class ClusterStore {
 public:
  virtual ~ClusterStore() = default;

  // This instance's name in leases, agent sessions and metrics (host:pid:random).
  virtual const std::string& instance() const = 0;
  // How long a lease lasts without renewal: how soon another instance takes over a dead one's
  // jobs.
  virtual int64_t lease_ms() const = 0;

  // Takes up to `limit` unfinished jobs no live instance holds, oldest first: compiles when
  // `compiles`, tasks and tunes only of `device_keys` (the devices whose agents are here).
  virtual absl::StatusOr<std::vector<ClaimedJob>> ClaimJobs(
      bool compiles, const std::vector<std::string>& device_keys, int limit) = 0;
  // Takes one job if no live instance holds it (to cancel it here); nullopt when one does.
  virtual absl::StatusOr<std::optional<v1::Job>> ClaimJob(const std::string& id) = 0;
  // Extends the leases of this instance's jobs and agent sessions.
  virtual absl::StatusOr<LeaseRenewal> RenewLeases() = 0;
  // Gives jobs back (no agent of their device here, or this instance drains).
  virtual absl::Status ReleaseJobs(const std::vector<std::string>& ids) = 0;
  // Asks the instance holding an unfinished job to cancel it.
  virtual absl::Status RequestCancel(const std::string& id, const std::string& reason) = 0;

  // What every instance answers alike, read from the database.
  virtual absl::StatusOr<std::vector<v1::Job>> ListJobs(v1::JobState state,
                                                        const std::string& client, int limit) = 0;
  virtual absl::StatusOr<std::optional<v1::Job>> FindIdempotent(const std::string& client,
                                                                const std::string& key) = 0;
  virtual absl::StatusOr<bool> ClientHasArtifact(const std::string& client,
                                                 const std::string& digest) = 0;

  // Quotas every instance counts alike. The client's unfinished and stored jobs, wherever
  // submitted:
  virtual absl::StatusOr<std::pair<int, int>> ClientJobCounts(const std::string& client) = 0;
  // One more submission of `client` in the current minute (the database's clock), unless it
  // made `limit` already: then nullopt. The second: ms left of the minute.
  virtual absl::StatusOr<std::pair<std::optional<int>, int64_t>> CountSubmission(
      const std::string& client, int limit) = 0;

  // Agent sessions, renewed with the leases: how many agents each device has in the cluster.
  virtual absl::Status PutAgentSession(const std::string& agent_id,
                                       const std::string& device_key) = 0;
  virtual absl::Status DropAgentSession(const std::string& agent_id) = 0;
  virtual absl::StatusOr<std::map<std::string, int>> AgentsByDevice() = 0;
  // Unfinished tasks queued for each device, wherever they wait.
  virtual absl::StatusOr<std::map<std::string, int>> TasksQueuedByDevice() = 0;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_CLUSTER_STORE_H_
