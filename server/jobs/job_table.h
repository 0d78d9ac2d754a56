// The jobs this kilnd holds: each job's row, events and input, its state transitions, the
// watchers that follow it, idempotency keys and per-client counts.
//
//   queued -> running -> succeeded | failed | cancelled     (reasons and timestamps on the Job)
//
// Every state change is saved to the Store and published to watchers. The table runs nothing:
// the worker pool and the agent dispatcher move jobs through it with conditional transitions
// (a job cancelled meanwhile is not started, a finished one is not finished again). It has one
// lock and calls nothing else while holding it except the store's queueing SaveJob and a
// watcher's `push`, which only queue; so any part may call it while holding its own lock.
#ifndef KILN_SERVER_JOBS_JOB_TABLE_H_
#define KILN_SERVER_JOBS_JOB_TABLE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/kiln/v1/jobs.pb.h"
#include "server/store.h"
#include "server/worker.pb.h"

namespace kiln::server {

bool Terminal(v1::JobState state);
// "queued", "running", ...
std::string StateName(v1::JobState state);
// Compiles, tunes and quantizes run in kiln-worker processes; profiles and inferences on agents.
bool RunsInWorker(const v1::Job& job);
// The job as the store has it: NotFound when it has no row.
absl::StatusOr<v1::Job> StoredJob(Store& store, const std::string& id);
// An event of `job` as it is now.
v1::JobEvent EventOf(const v1::Job& job, const std::string& message, int64_t unix_ms);

struct Submitted {
  v1::Job job;
  bool deduplicated = false;  // an earlier job with the same idempotency key
  uint64_t saved_ticket = 0;  // the store's ticket for the job's row
};

// What a runner needs of a job it starts, copied out under the table's lock.
struct HeldJob {
  v1::Job job;
  JobInput input;
  int64_t deadline_unix_ms = 0;
  // Set when the job is cancelled or handed over: a running worker is killed, a measurement
  // stops waiting.
  std::shared_ptr<std::atomic<bool>> cancel;
};

// One held job as the cluster's lease renewal looks at it.
struct HeldSummary {
  v1::Job job;
  int64_t held_since_ms = 0;
  bool awaiting_release = false;
};

using JobEdit = std::function<void(v1::Job&)>;
using EventPush = std::function<void(const v1::JobEvent&)>;

class JobTable {
 public:
  // `instance` names this kilnd in its jobs' rows in a cluster; empty for one instance.
  JobTable(Store* store, std::string instance);
  ~JobTable();

  // Loads the stored jobs. An unfinished one (its kilnd stopped) is kept and returned to be
  // queued again when `resume` and its input was saved, failed when its input was not, and left
  // to the cluster (not loaded) when not `resume`.
  absl::StatusOr<std::vector<v1::Job>> Load(bool resume);

  // Inserts `job` with a new id, created now, in `state`, or answers the earlier job of its
  // idempotency key (deduplicated). `awaiting_release`: it is held only until its input is
  // saved, then handed over (no agent of its device here).
  Submitted Insert(v1::Job job, JobInput input, v1::JobState state, const std::string& message,
                   bool awaiting_release = false);
  // The job's input is saved: true when the job is now to be released (Insert's
  // `awaiting_release`); a job that finished meanwhile has its input deleted.
  bool InputSaved(const std::string& id);

  // Reads of the jobs held here.
  std::optional<v1::Job> FindIdempotent(const std::string& client, const std::string& key);
  std::optional<v1::Job> Get(const std::string& id);
  std::optional<std::vector<v1::JobEvent>> Events(const std::string& id);
  // The newest `limit` jobs in `state` (any when unspecified) of `client` (all when empty).
  std::vector<v1::Job> List(v1::JobState state, int limit, const std::string& client);
  bool HasArtifact(const std::string& client, const std::string& digest);
  // Whether a job of a client other than `client` refers to `digest` (then `client`'s work
  // never evicts it).
  bool OthersReferTo(const std::string& digest, const std::string& client);
  int ActiveJobs(const std::string& client);
  // The bytes of the inputs held for unfinished jobs (their modules and artifacts).
  int64_t HeldInputBytes();
  int StoredJobs(const std::string& client);
  std::vector<HeldSummary> Held();
  // Blocks until no job runs or `timeout_ms` passes.
  void WaitUntilNoneRunning(int64_t timeout_ms);
  std::map<v1::JobState, int64_t> CountByState();

  // Moves a held job from `from` (UNSPECIFIED: any unfinished state) to `to`, after `edit` (may
  // be null) changed its fields; false, and nothing changed, when it is not held here or not in
  // `from`.
  bool Transition(const std::string& id, v1::JobState from, v1::JobState to,
                  const std::string& message, const JobEdit& edit = nullptr);
  // An event without a state change (progress, a worker's pid); not for a finished job.
  void Publish(const std::string& id, const std::string& message, const JobEdit& edit = nullptr);
  // The job cancelled with `why`: FailedPrecondition when it already finished, NotFound when it
  // is not held here.
  absl::StatusOr<v1::Job> Cancel(const std::string& id, const std::string& why);
  // A queued worker job taken by a worker (running, one more attempt); nullopt when it is not
  // queued here any more. WorkerDone must follow.
  std::optional<HeldJob> StartInWorker(const std::string& id);
  void WorkerDone(const std::string& id);
  // A queued task given to `agent_id` (running, one more attempt).
  std::optional<HeldJob> StartOnAgent(const std::string& id, const std::string& agent_id);
  // A task past its deadline failed; false when it is not held unfinished or has time left.
  bool ExpireTask(const std::string& id, int64_t now_ms);
  // Every unfinished job failed with `message_queued` or `message_running` (a shutdown).
  void FailUnfinished(const std::string& message_queued, const std::string& message_running);

  // Stops holding a job without a further row (released, or another instance holds it now): its
  // cancel flag is set and it is forgotten, by WorkerDone when a worker still runs it. Its
  // watchers follow it through the database. False when it was not held.
  bool HandOver(const std::string& id);
  // Takes a job claimed from the database; false (nothing taken) while a worker here still runs
  // the entry it had before this instance lost it.
  bool Adopt(v1::Job job, JobInput input);

  // Watchers. `push` gets the job as it is now, then every later event in order, until
  // Unsubscribe; it is called under the table's lock, so it must only queue. nullopt when the
  // job is not held here.
  std::optional<uint64_t> Subscribe(const std::string& id, EventPush push);
  // A job not held here, as stored: `push` gets it at once and, when `follow` and it is
  // unfinished, each change PushRemote feeds from the database. 0 when not followed.
  uint64_t FollowStored(const v1::Job& job, EventPush push, bool follow);
  void Unsubscribe(uint64_t subscription);
  std::vector<std::string> RemotelyWatched();
  void PushRemote(const v1::Job& job);

  // Drops finished jobs (kept at least 2 s after they finish) older than `retention_ms` (0: no
  // age limit), then the oldest beyond `max_finished` (0: no count limit). Returns the ids.
  std::vector<std::string> Prune(int64_t now_ms, int64_t retention_ms, int max_finished);
  size_t size();
  // Finished jobs whose stored input is to be deleted: those whose final row is committed (until
  // then a cluster's instance that claims the job, its lease lapsed, still needs the input).
  std::vector<std::string> TakeFinishedInputs();

 private:
  struct Entry {
    v1::Job job;
    std::vector<v1::JobEvent> events;
    JobInput input;  // what running it needs; dropped when it finishes
    int64_t deadline_unix_ms = 0;
    std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
    bool counted_active = false;  // in active_by_client_
    uint64_t saved_ticket = 0;    // the store's ticket for its latest row
    // Cluster mode: since when this instance holds it; it is to be released once its input is
    // saved; it is held here no more (HandOver); a worker runs it (so the entry outlives a
    // hand-over until WorkerDone).
    int64_t held_since_ms = 0;
    bool awaiting_release = false;
    bool handed_over = false;
    bool in_worker = false;
  };
  struct RemoteWatch {
    std::string last;  // the job's row as last pushed
    std::map<uint64_t, EventPush> pushes;
  };
  Entry* FindHeldLocked(const std::string& id);
  void TransitionLocked(Entry& e, v1::JobState state, const std::string& message);
  void PublishLocked(Entry& e, const std::string& message);
  void ForgetLocked(const std::string& id);
  void IndexLocked(const v1::Job& job, const std::string& id);
  std::string NewIdLocked();
  HeldJob CopyLocked(const Entry& e);

  Store* store_;
  const std::string instance_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, std::unique_ptr<Entry>> jobs_;
  std::map<std::pair<std::string, std::string>, std::string> idempotency_;  // (client, key)
  std::map<std::string, int> active_by_client_;                             // unfinished jobs
  std::map<std::string, int> stored_by_client_;                             // all its jobs
  // Each artifact digest of its jobs: the clients whose jobs made or ran it.
  std::map<std::string, std::set<std::string>> clients_by_artifact_;
  std::map<std::string, std::map<uint64_t, EventPush>> watchers_;
  std::map<std::string, RemoteWatch> remote_watchers_;
  std::map<uint64_t, std::string> watched_job_;  // subscription -> job id
  uint64_t next_subscription_ = 1;
  std::vector<std::pair<std::string, uint64_t>> inputs_done_;  // (job, its final row's ticket)
};

}  // namespace kiln::server

#endif  // KILN_SERVER_JOBS_JOB_TABLE_H_
