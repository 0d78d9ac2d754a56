// The job state machine, its queues and the things that run jobs.
//
//   queued -> running -> succeeded | failed | cancelled     (reasons and timestamps on the Job)
//
// Compile jobs run in supervised kiln-worker processes, at most `workers` at once, each under
// the job's deadline and a memory limit; whatever kills a worker fails only its job. Profile
// and inference jobs are tasks for device agents: each device key has a queue, an idle agent of
// that key takes the next task, and a task whose agent disappears goes back to the front of the
// queue for another agent of the same key. Every state change is saved to the Store and
// published to watchers.
//
// On a store shared by several instances (Store::cluster(), cluster_store.h) each instance runs
// the jobs it holds: the ones submitted to it — a task or tune only while an agent of its device
// is here, else it is released — and the ones it claims: compiles whose instance died, tasks and
// tunes for the devices whose agents it has. A job held elsewhere is read, listed, watched and
// cancelled through the database, so every instance answers alike.
#ifndef KILN_SERVER_JOB_MANAGER_H_
#define KILN_SERVER_JOB_MANAGER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/kiln/v1/agent.pb.h"
#include "proto/kiln/v1/jobs.pb.h"
#include "server/artifact_cache.h"
#include "server/cluster_store.h"
#include "server/store.h"
#include "server/worker.pb.h"

namespace grpc {
class ServerContextBase;
}
namespace kiln::runtime {
class Child;
struct ChildResult;
}  // namespace kiln::runtime

namespace kiln::server {

struct JobManagerOptions {
  std::string worker_path;            // the kiln-worker binary
  int workers = 2;                    // concurrent compiles
  int64_t worker_memory_bytes = 0;    // per worker (RLIMIT_AS); 0 for none
  int64_t worker_cpu_seconds = 1800;  // per worker (RLIMIT_CPU); 0 for none
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
  int max_tune_trials = 2000;
  int64_t measure_timeout_ms = 20000;
};

struct Submitted {
  v1::Job job;
  bool deduplicated = false;  // an earlier job with the same idempotency key
  uint64_t saved_ticket = 0;  // the store's ticket for the job's row
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

// One connected agent, as the Connect stream and the dispatcher share it.
struct AgentLink {
  std::string id;
  std::string device_key;
  std::string principal;  // the credential that opened the session
  grpc::ServerContextBase* context = nullptr;
  // Queues a message for the agent's stream (called under JobManager's lock: it only queues).
  std::function<void(v1::ServerMessage)> send;
  std::string busy_task;         // the job it runs
  std::string busy_measurement;  // or the tuning candidate it measures; both empty when idle
  int64_t last_seen_ms = 0;
  bool gone = false;
};

class JobManager {
 public:
  JobManager(JobManagerOptions options, Store* store, ArtifactCache* cache);
  ~JobManager();

  // Loads jobs and devices from the store (jobs a restart interrupted are failed) and starts the
  // worker threads and the monitor.
  absl::Status Start();

  // The job an idempotency key already names, if any.
  std::optional<v1::Job> FindIdempotent(const std::string& client, const std::string& key);
  // ResourceExhausted when `client` has too many unfinished jobs; Unavailable while draining or
  // while the store cannot be reached (a job it could not save would not survive this kilnd).
  absl::Status Admit(const std::string& client);
  // What readiness found of the store (server.cc asks it every second).
  void SetStoreHealth(const absl::Status& health);
  int64_t ClampDeadline(int64_t requested_ms) const;

  // `job` carries kind, client, key and its descriptive fields; the manager fills in the rest.
  Submitted AddCacheHit(v1::Job job);
  // A compile of `source` as submitted: a kiln-worker loads it, asks the cache and builds on a
  // miss. `fingerprint` (the request's exact bytes) answers a repeat of it once it succeeded.
  Submitted EnqueueCompile(v1::Job job, v1::ModuleSource source, v1::CompileOptions options,
                           std::string fingerprint);
  Submitted EnqueueTask(v1::Job job, v1::Task task);
  // A tune: a kiln-worker searches and builds, the agents of the job's device key measure.
  Submitted EnqueueTune(v1::Job job, v1::ModuleSource source, const v1::SubmitTuneRequest& request);

  absl::StatusOr<v1::Job> Get(const std::string& id);
  // The events of a job still in memory (a pruned one's are gone: NotFound).
  absl::StatusOr<std::vector<v1::JobEvent>> Events(const std::string& id);
  // The newest `limit` jobs in `state` (any when unspecified) of `client` (everyone's when empty).
  std::vector<v1::Job> List(v1::JobState state, int limit, const std::string& client = "");
  // Whether one of `client`'s jobs produced or ran the artifact `digest` (a cache hit counts).
  bool HasArtifact(const std::string& client, const std::string& digest);
  absl::StatusOr<v1::Job> Cancel(const std::string& id, const std::string& reason);
  // A watch without a waiting thread (WatchJob on gRPC's callback API): `push` gets the job as
  // it is now, then every later event in order, until Unsubscribe. It is called with the
  // manager's lock held, so it must only queue what it gets. Returns the subscription, or 0 for
  // a job no longer in memory (then its one event is the job as stored, a finished one).
  absl::StatusOr<uint64_t> Subscribe(const std::string& id,
                                     std::function<void(const v1::JobEvent&)> push);
  // After it returns, the subscription's `push` is not running and never runs again.
  void Unsubscribe(uint64_t subscription);

  // Agents.
  // `send` queues a message on the agent's stream; it is called with the manager's lock held
  // and never after AgentGone.
  std::shared_ptr<AgentLink> RegisterAgent(const v1::RegisterAgent& hello,
                                           const std::string& principal,
                                           grpc::ServerContextBase* context,
                                           std::function<void(v1::ServerMessage)> send);
  // Whether the session `agent_id`, opened by `principal`, was given task `task_id` and that
  // task runs the artifact `digest`: the only artifacts an agent may fetch.
  bool AgentMayFetch(const std::string& agent_id, const std::string& principal,
                     const std::string& task_id, const std::string& digest);
  void AgentHeartbeat(const std::shared_ptr<AgentLink>& agent);
  void AgentResult(const std::shared_ptr<AgentLink>& agent, const v1::TaskResult& result);
  void AgentGone(const std::shared_ptr<AgentLink>& agent);
  std::vector<v1::Device> Devices();

  JobStats Stats();
  int heartbeat_interval_ms() const { return options_.heartbeat_interval_ms; }
  const JobManagerOptions& options() const { return options_; }

  // Graceful shutdown: refuse new jobs, wait up to `timeout_ms` for running ones, fail what is
  // still queued, stop the threads.
  void Drain(int64_t timeout_ms);

 private:
  struct Entry;
  // A tuning candidate waiting for, or on, an agent of its job's device key.
  struct Measurement {
    std::string job_id;
    std::string device_key;
    v1::KernelMeasure measure;
    int attempts = 0;  // agents it was given to
    bool done = false;
    bool ok = false;
    double seconds = 0;
    std::string error;
  };
  std::string NewIdLocked();
  Submitted InsertLocked(v1::Job job, std::unique_ptr<Entry> entry);
  // Inserts a compile or tune job and queues it for a worker.
  Submitted EnqueueForWorker(v1::Job job, std::unique_ptr<Entry> entry, const char* message);
  Submitted InsertTask(v1::Job job, v1::Task task);
  // Keeps what the submitted job needs to run again (JobInput) until it finishes.
  void SaveInput(const Submitted& s, const JobInput& input);
  // Queues a job loaded unfinished from the store, with its input, to run again.
  void ResumeLocked(Entry& e);
  // Unlocks and waits until the submitted job's row is committed: a client is answered only
  // once its job would survive a restart.
  Submitted Saved(std::unique_lock<std::mutex>& lock, Submitted s);
  // Records a state change: timestamps, persistence, an event for watchers.
  void TransitionLocked(Entry& e, v1::JobState state, const std::string& message);
  void PublishLocked(Entry& e, const std::string& message);
  void DispatchLocked();
  void RequeueOrFailLocked(Entry& e, const std::string& why);
  // Takes a task out of its device queue and tells the agent running it, if any, to stop.
  void WithdrawTaskLocked(const std::string& id, const std::string& device_key);
  void SendLocked(AgentLink& agent, v1::ServerMessage message);
  void CompileLoop();
  // Compiles in `worker` (a started kiln-worker waiting for input), or in a fresh one.
  void RunCompile(const std::string& id, std::unique_ptr<runtime::Child> worker);
  // Runs `input` in `worker` (or a fresh one when it is gone) under the job's deadline, limits and
  // cancel flag: each message the worker sends goes to `answer`, whose bytes go back to it; a
  // message that does not parse or a frame over the limit ends the conversation (`*broken`).
  absl::StatusOr<runtime::ChildResult> RunWorker(
      Entry& e, std::unique_ptr<runtime::Child> worker, const WorkerInput& input,
      int64_t timeout_ms, const std::string& started,
      const std::function<std::string(const WorkerMessage&)>& answer, std::string* broken);
  // Tunes in `worker` (or a fresh one): the worker's MeasureBatch frames are measured on agents.
  void RunTune(const std::string& id, std::unique_ptr<runtime::Child> worker);
  // Queues `batch` for the agents of `e`'s device key, one candidate per idle agent, and waits for
  // every result; nullopt when the job was cancelled, passed its deadline or kilnd stops first.
  std::optional<MeasureResults> MeasureOnAgents(Entry& e, const MeasureBatch& batch);
  void TuneProgress(Entry& e, const v1::TuneResult& progress);
  // Queues a worker job again in a second when it failed only because the store was
  // unreachable (`code` Unavailable) and its deadline allows; false otherwise.
  bool RetryLaterLocked(Entry& e, absl::StatusCode code, const std::string& why);
  // Why a worker that ran (or could not start) gave no usable outcome, or "" when it did;
  // `*code` is the status code to report.
  std::string WorkerFailure(const Entry& e, const absl::StatusOr<runtime::ChildResult>& ran,
                            bool have_outcome, const std::string& broken, int64_t timeout_ms,
                            const char* what, absl::StatusCode* code);
  void MonitorLoop();
  // Cluster mode: renews this instance's leases (acting on cancellations asked elsewhere and on
  // jobs it lost), claims the jobs it may run, releases queued tasks it has no agent for, and
  // feeds the watchers of jobs held elsewhere.
  void ClusterLoop();
  void RenewLeases();
  int ClaimJobs();  // how many it claimed
  void PollRemoteWatches();
  // Whether this instance may run `job`: a compile always, a task or tune while an agent of its
  // device is here.
  bool RunsHereLocked(const v1::Job& job) const;
  // Stops running `e` here without a further row (it is released, or held by another instance
  // now): its worker or agent is stopped and its watchers follow it through the database. The
  // entry is forgotten at once, or by its compile thread when a worker still runs it.
  void HandOverLocked(Entry& e);
  void ForgetLocked(const std::string& id);
  // Cancels a job this instance does not hold: claimed and cancelled here when nobody holds it,
  // else asked of its instance through the database.
  absl::StatusOr<v1::Job> CancelElsewhere(const std::string& id, const std::string& reason);
  // Takes a job claimed from the database into this instance: its input is loaded and it is
  // queued, or failed when no input was kept. False (nothing taken) while a compile thread here
  // still holds the job from before this instance lost it.
  bool AdoptLocked(v1::Job job, bool interrupted, std::optional<std::string> input);
  int ActiveJobsLocked(const std::string& client) const;
  absl::Status RefuseLocked(const std::string& limit, std::string message);
  // Drops finished jobs past the retention (age, then count) from memory and the store.
  void PruneLocked(int64_t now_ms);
  // OK when the store fits its bound, after evicting artifacts if need be.
  absl::Status StoreRoomLocked(int64_t now_ms);

  JobManagerOptions options_;
  Store* store_;
  ClusterStore* cluster_;  // null for one instance
  ArtifactCache* cache_;

  std::mutex mu_;
  std::condition_variable changed_;  // any job event
  // Watchers by job: subscription -> push (Subscribe).
  std::map<std::string, std::map<uint64_t, std::function<void(const v1::JobEvent&)>>> watchers_;
  std::map<uint64_t, std::string> watched_job_;  // subscription -> job id
  // Watchers of jobs held by other instances, fed from the database.
  struct RemoteWatch {
    std::string last;  // the job's row as last pushed
    std::map<uint64_t, std::function<void(const v1::JobEvent&)>> pushes;
  };
  std::map<std::string, RemoteWatch> remote_watchers_;
  std::multimap<int64_t, std::string> retries_;  // unix ms -> worker job to queue again
  std::condition_variable cluster_wake_;         // claim_soon_ or stopping
  bool claim_soon_ = false;                      // an agent arrived or a worker became free
  uint64_t next_subscription_ = 1;
  std::vector<std::string> inputs_done_;
  absl::Status store_health_;  // the store's last answer to Ping   // finished jobs whose stored
                               // input is to be deleted
  std::condition_variable compile_ready_;  // the compile queue grew or the manager stops
  std::map<std::string, std::unique_ptr<Entry>> jobs_;
  std::map<std::pair<std::string, std::string>, std::string> idempotency_;  // (client, key)
  std::map<std::string, int> active_by_client_;                             // unfinished jobs
  std::map<std::string, int> stored_by_client_;                             // all its jobs
  struct Rate {
    int64_t window_start_ms = 0;
    int count = 0;
  };
  std::map<std::string, Rate> rate_by_client_;  // submissions in the current minute
  std::map<std::string, int64_t> limit_refusals_;
  int64_t jobs_pruned_ = 0;
  int64_t last_prune_ms_ = 0;
  int64_t store_checked_ms_ = 0;
  bool store_full_ = false;
  std::set<std::pair<std::string, std::string>> artifacts_;  // (client, digest) of its jobs
  std::deque<std::string> compile_queue_;
  std::map<std::string, std::deque<std::string>> task_queues_;  // by device key
  std::map<std::string, std::shared_ptr<AgentLink>> agents_;
  std::map<std::string, Measurement> measurements_;                // by id
  std::map<std::string, std::deque<std::string>> measure_queues_;  // by device key
  uint64_t next_measurement_ = 1;
  std::map<std::string, v1::Device> devices_;
  uint64_t next_agent_ = 1;
  int workers_busy_ = 0;
  int64_t compiles_ = 0;
  double compile_seconds_ = 0;
  bool draining_ = false;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_JOB_MANAGER_H_
