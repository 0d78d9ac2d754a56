// The job service as kilnd's handlers see it, composed of parts with one job each:
//
//   JobTable         the jobs held here: rows, transitions, events, watchers, idempotency
//   Admission        whether a new job is taken: draining, store health, per-client limits
//   WorkerPool       compiles and tunes in supervised kiln-worker processes
//   AgentDispatcher  device agents, their task and measurement queues, deadlines, heartbeats
//   JobSharing       one kilnd (SoloSharing), or an instance of a cluster (ClusterSync)
//
// A submission is admitted, inserted in the table, queued where it runs (or released to the
// cluster when no agent of its device is here), and answered once its row is committed.
#ifndef KILN_SERVER_JOBS_JOB_MANAGER_H_
#define KILN_SERVER_JOBS_JOB_MANAGER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/kiln/v1/agent.pb.h"
#include "proto/kiln/v1/jobs.pb.h"
#include "server/artifact_cache.h"
#include "server/jobs/admission.h"
#include "server/jobs/agent_dispatcher.h"
#include "server/jobs/job_sharing.h"
#include "server/jobs/job_table.h"
#include "server/jobs/worker_pool.h"
#include "server/store.h"

namespace kiln::server {

struct JobManagerOptions {
  std::string worker_path;            // the kiln-worker binary
  int workers = 2;                    // concurrent compiles
  int64_t worker_memory_bytes = 0;    // per worker (RLIMIT_AS); 0 for none
  int64_t worker_cpu_seconds = 1800;  // per worker (RLIMIT_CPU); 0 for none
  // A compile's CPU time grows with its input: it may use the base plus so much per MB of its
  // module (within worker_cpu_seconds), so that a small input cannot hold a worker for minutes.
  int64_t compile_cpu_seconds_base = 30;
  int64_t compile_cpu_seconds_per_mb = 60;
  // Compile-time constants (CompileWork): the largest one, and what folding may add in all.
  int64_t max_constant_bytes = int64_t{64} << 20;
  int64_t max_folded_bytes = int64_t{256} << 20;
  int64_t default_deadline_ms = 10 * 60 * 1000;
  int64_t max_deadline_ms = 60 * 60 * 1000;
  int max_active_jobs_per_client = 16;
  // Quotas and retention (0 turns each off). Submissions a client may make per minute (cache
  // hits included: they finish at once, so the unfinished-jobs limit never holds them), and jobs
  // it may have stored; finished jobs are pruned once older than the retention, and beyond the
  // newest max_finished_jobs.
  int max_jobs_per_minute_per_client = 600;
  int max_stored_jobs_per_client = 10000;
  int64_t job_retention_ms = int64_t{7} * 24 * 3600 * 1000;
  int max_finished_jobs = 100000;
  // The store's whole size (database and artifacts): past it, least recently used artifacts are
  // evicted, and when that is not enough new jobs are refused. 0: unbounded.
  int64_t store_max_bytes = 0;
  int heartbeat_interval_ms = 1000;  // agents are dropped after 5 missed heartbeats
  // Tuning: the service's database (shared by every tune job), the largest trial budget a job
  // may ask for, and how long an agent may take over one candidate, from the moment it starts
  // it (time in the queue never counts).
  std::string tuning_db_path;
  std::map<std::string, std::vector<std::string>> candidate_checkers;  // WorkerPoolOptions
  int max_tune_trials = 2000;
  int64_t measure_timeout_ms = 20000;
  // What one task may cost others on a shared device and in the store: an inference's outputs
  // in all, and a profile's per-repeat minimum and cool-down (a client asking more is refused).
  int64_t max_output_bytes = int64_t{64} << 20;
  int max_min_repeat_ms = 1000;
  int max_cooldown_ms = 1000;
  // Signs each tuning candidate before an agent gets it (DispatcherOptions).
  std::function<void(v1::KernelMeasure*)> sign_measurement;
};

// Counts for the metrics endpoint.
struct JobStats {
  std::map<v1::JobState, int64_t> jobs_by_state;
  int64_t compile_queue = 0;
  int64_t task_queue = 0;
  int64_t workers_busy = 0;
  int64_t agents_connected = 0;
  int64_t compiles = 0;
  double compile_seconds = 0;
  int64_t jobs_pruned = 0;
  std::map<std::string, int64_t> limit_refusals;  // by limit: "jobs_per_minute", ...
};

class JobManager {
 public:
  JobManager(JobManagerOptions options, Store* store, ArtifactCache* cache);
  ~JobManager();

  // Loads jobs and devices from the store (jobs a restart interrupted run again, or fail when
  // their input was not kept) and starts the workers, the monitor and the cluster's thread.
  absl::Status Start();

  // The job an idempotency key already names, if any.
  std::optional<v1::Job> FindIdempotent(const std::string& client, const std::string& key);
  absl::Status Admit(const std::string& client);
  void SetStoreHealth(const absl::Status& health);
  int64_t ClampDeadline(int64_t requested_ms) const;

  // `job` carries kind, client, key and its descriptive fields; the manager fills in the rest.
  Submitted AddCacheHit(v1::Job job);
  // A compile of `source` as submitted: a kiln-worker loads it, asks the cache and builds on a
  // miss. `fingerprint` (the request's exact bytes) answers a repeat of it once it succeeded.
  // `records_owner`: whose tuning records apply beside the published ones (a tenant's; "").
  Submitted EnqueueCompile(v1::Job job, v1::ModuleSource source, v1::CompileOptions options,
                           std::string fingerprint, const std::string& records_owner = "");
  // A profile or inference task for an agent of the job's device; `expected_outputs`: what an
  // inference must answer (JobInput), empty where the signature does not say.
  Submitted EnqueueTask(v1::Job job, v1::Task task,
                        std::vector<v1::TensorValue> expected_outputs = {});
  // A tune: a kiln-worker searches and builds, the agents of the job's device key measure; its
  // records are `records_owner`'s ("": published).
  Submitted EnqueueTune(v1::Job job, v1::ModuleSource source, const v1::SubmitTuneRequest& request,
                        const std::string& records_owner = "");
  // A quantize: a kiln-worker calibrates, evaluates and builds the QDQ model for the job's
  // target; `request` is kept whole (the model and samples) until the job ends.
  Submitted EnqueueQuantize(v1::Job job, v1::SubmitQuantizeRequest request);

  absl::StatusOr<v1::Job> Get(const std::string& id);
  // The events of a job still in memory (a pruned one's are gone: NotFound).
  absl::StatusOr<std::vector<v1::JobEvent>> Events(const std::string& id);
  // The newest `limit` jobs in `state` (any when unspecified) of `client` (everyone's when empty).
  std::vector<v1::Job> List(v1::JobState state, int limit, const std::string& client = "");
  // Whether one of `client`'s jobs produced or ran the artifact `digest` (a cache hit counts).
  bool HasArtifact(const std::string& client, const std::string& digest);
  absl::StatusOr<v1::Job> Cancel(const std::string& id, const std::string& reason);
  // A watch without a waiting thread (WatchJob on gRPC's callback API): `push` gets the job as
  // it is now, then every later event in order, until Unsubscribe. It is called with the table's
  // lock held, so it must only queue. Returns the subscription, or 0 for a job no longer in
  // memory (then its one event is the job as stored, a finished one).
  absl::StatusOr<uint64_t> Subscribe(const std::string& id, EventPush push);
  // After it returns, the subscription's `push` is not running and never runs again.
  void Unsubscribe(uint64_t subscription);

  // Agents (AgentDispatcher).
  std::shared_ptr<AgentLink> RegisterAgent(const v1::RegisterAgent& hello,
                                           const std::string& principal,
                                           grpc::ServerContextBase* context,
                                           std::function<void(v1::ServerMessage)> send);
  bool AgentMayFetch(const std::string& agent_id, const std::string& principal,
                     const std::string& task_id, const std::string& digest);
  void AgentHeartbeat(const std::shared_ptr<AgentLink>& agent);
  void AgentResult(const std::shared_ptr<AgentLink>& agent, const v1::TaskResult& result);
  void AgentGone(const std::shared_ptr<AgentLink>& agent);
  std::vector<v1::Device> Devices();

  JobStats Stats();
  // The bytes of the inputs (modules, artifacts) held for this kilnd's unfinished jobs.
  int64_t HeldInputBytes() { return table_.HeldInputBytes(); }
  int heartbeat_interval_ms() const { return options_.heartbeat_interval_ms; }
  const JobManagerOptions& options() const { return options_; }

  // Graceful shutdown: refuse new jobs, wait up to `timeout_ms` for running ones, hand back (in
  // a cluster) or fail what is unfinished, stop the threads.
  void Drain(int64_t timeout_ms);

 private:
  // Inserts a queued job and queues it where it runs, or marks it for release.
  Submitted Submit(v1::Job job, JobInput input, const std::string& message);
  // Waits until the submitted job's row is committed: a client is answered only once its job
  // would survive a restart.
  Submitted Saved(Submitted s);
  // Keeps what the submitted job needs to run again until it finishes.
  void SaveInput(const Submitted& s, const std::string& serialized_input);
  // Prunes, deletes finished jobs' inputs, checks task deadlines and heartbeats.
  void MonitorLoop();
  void DeleteFinishedInputs();

  const JobManagerOptions options_;
  Store* const store_;
  JobTable table_;
  Admission admission_;
  AgentDispatcher agents_;
  WorkerPool pool_;
  const Runners runners_;  // where a held job runs: the pool or the agents
  std::unique_ptr<JobSharing> sharing_;

  std::mutex mu_;  // the monitor's
  std::condition_variable stop_monitor_;
  bool drained_ = false;  // Drain began
  bool stopped_ = false;  // the monitor is to stop
  int64_t jobs_pruned_ = 0;
  std::thread monitor_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_JOBS_JOB_MANAGER_H_
