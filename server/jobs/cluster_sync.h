// One kilnd among several on a shared database (Store::cluster(), cluster_store.h): each instance
// runs the jobs it holds — the ones submitted to it (a task or tune only while an agent of its
// device is here, else it is released) and the ones it claims: compiles whose instance died,
// tasks and tunes for the devices whose agents it has. A job held elsewhere is read, listed,
// watched and cancelled through the database, so every instance answers alike.
//
// A background thread renews this instance's leases (acting on cancellations asked elsewhere and
// on jobs it lost), claims the jobs it may run, releases queued tasks it has no agent for, and
// feeds the watchers of jobs held elsewhere. It calls the table, the pool and the dispatcher
// without holding its own lock.
#ifndef KILN_SERVER_JOBS_CLUSTER_SYNC_H_
#define KILN_SERVER_JOBS_CLUSTER_SYNC_H_

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "server/cluster_store.h"
#include "server/jobs/job_sharing.h"
#include "server/jobs/job_table.h"
#include "server/jobs/worker_pool.h"
#include "server/store.h"

namespace kiln::server {

class ClusterSync : public JobSharing {
 public:
  // `accepting` says whether this instance takes work now (not draining, its store reachable).
  ClusterSync(ClusterStore* cluster, Store* store, JobTable* table, Runners runners,
              std::function<bool()> accepting);
  ~ClusterSync() override;

  std::string instance() const override { return cluster_->instance(); }
  bool ResumesUnfinished() const override { return false; }
  void Start() override;
  void Stop() override;
  bool RunsHere(const v1::Job& job) override;
  void Release(const v1::Job& job) override;
  std::optional<v1::Job> TakenElsewhere(const v1::Job& job) override;
  int HandBackAll() override;
  void WorkerFree() override { ClaimSoon(); }
  void AgentJoined(const std::string& agent_id, const std::string& device_key) override;
  void AgentLeft(const std::string& agent_id) override;
  void AgentIdle() override { ClaimSoon(); }
  std::optional<v1::Job> FindIdempotent(const std::string& client, const std::string& key) override;
  std::optional<std::vector<v1::Job>> List(v1::JobState state, const std::string& client,
                                           int limit) override;
  bool ClientHasArtifact(const std::string& client, const std::string& digest) override;
  absl::StatusOr<std::vector<v1::JobEvent>> Events(const std::string& id) override;
  absl::StatusOr<v1::Job> Cancel(const std::string& id, const std::string& why) override;
  bool FollowsElsewhere() const override { return true; }
  std::optional<std::vector<v1::Device>> Devices() override;

 private:
  void Loop();
  void ClaimSoon();
  void RenewLeases();
  int ClaimJobs();  // how many it claimed
  void PollRemoteWatches();
  // Stops running `job` here without a further row: its worker or agent is stopped and its
  // watchers follow it through the database.
  void HandOver(const v1::Job& job);

  ClusterStore* const cluster_;
  Store* const store_;
  JobTable* const table_;
  const Runners runners_;
  const std::function<bool()> accepting_;

  std::mutex mu_;
  std::condition_variable wake_;  // claim_soon_ or stopping_
  bool claim_soon_ = false;       // an agent arrived or a worker became free
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_JOBS_CLUSTER_SYNC_H_
