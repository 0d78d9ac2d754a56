// Compiles, tunes and quantizes, each in a fresh kiln-worker process under the job's deadline, a
// memory limit and a CPU-time limit, at most `workers` at once; whatever kills a worker fails only
// its job. Each compile thread keeps its next worker started and waiting for input. A job that
// failed only because the store was unreachable is queued again a second later while its deadline
// allows. A tune's candidates are measured through the agent dispatcher.
//
// Lock order: the pool's lock is never held while calling the table, the dispatcher or a worker.
#ifndef KILN_SERVER_JOBS_WORKER_POOL_H_
#define KILN_SERVER_JOBS_WORKER_POOL_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "server/artifact_cache.h"
#include "server/jobs/agent_dispatcher.h"
#include "server/jobs/job_table.h"
#include "server/worker.pb.h"

namespace kiln::runtime {
class Child;
struct ChildResult;
}  // namespace kiln::runtime

namespace kiln::server {

struct WorkerPoolOptions {
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
  std::string tuning_db_path;  // the service's tuning database
  // By architecture: the kiln-agent (and emulator) that checks tuning candidates for targets
  // this machine cannot run; an empty command trusts the agents' own check.
  std::map<std::string, std::vector<std::string>> candidate_checkers;
};

class WorkerPool {
 public:
  WorkerPool(WorkerPoolOptions options, JobTable* table, AgentDispatcher* agents,
             ArtifactCache* cache);
  ~WorkerPool();
  // Called without the pool's lock whenever a worker becomes free.
  void SetOnFree(std::function<void()> on_free) { on_free_ = std::move(on_free); }
  void Start();

  // Queues a compile or tune the table holds queued.
  void Enqueue(const std::string& id);
  void Withdraw(const std::string& id);
  // Workers neither busy nor promised to a queued job.
  int FreeSlots();
  int64_t Queued();
  int64_t Busy();
  int64_t Compiles();  // builds, cache hits not counted
  double CompileSeconds();

  // No retry is queued from now on.
  void SetDraining();
  // Empties the queue and joins the compile threads (running jobs end first).
  void Stop();

 private:
  void CompileLoop();
  void RunCompile(const HeldJob& job, std::unique_ptr<runtime::Child> worker);
  void RunTune(const HeldJob& job, std::unique_ptr<runtime::Child> worker);
  void RunQuantize(const HeldJob& job, std::unique_ptr<runtime::Child> worker);
  // Runs `input` in `worker` (or a fresh one when it is gone) under the job's deadline, limits and
  // cancel flag: each message the worker sends goes to `answer`, whose bytes go back to it; a
  // message that does not parse or a frame over the limit ends the conversation (`*broken`).
  // `*pid` is the worker's process.
  absl::StatusOr<runtime::ChildResult> RunWorker(
      const HeldJob& job, std::unique_ptr<runtime::Child> worker, const WorkerInput& input,
      int64_t timeout_ms, const std::string& started,
      const std::function<std::string(const WorkerMessage&)>& answer, std::string* broken,
      int* pid);
  // Why a worker that ran (or could not start) gave no usable outcome, or "" when it did;
  // `*code` is the status code to report.
  // `cpu_budget` is what the worker's CPU-time limit explains.
  std::string WorkerFailure(const HeldJob& job, const absl::StatusOr<runtime::ChildResult>& ran,
                            bool have_outcome, const std::string& broken, int pid,
                            int64_t timeout_ms, const char* what, const std::string& cpu_budget,
                            absl::StatusCode* code);
  // The CPU seconds a compile of `job` may use, and how that follows from its size.
  std::pair<int64_t, std::string> CompileCpuBudget(const HeldJob& job) const;
  // Fails the job with `failure`, or queues it again in a second when it failed only because
  // the store was unreachable (`code` Unavailable) and its deadline allows.
  void Fail(const HeldJob& job, absl::StatusCode code, const std::string& failure,
            const JobEdit& edit);

  const WorkerPoolOptions options_;
  JobTable* const table_;
  AgentDispatcher* const agents_;
  ArtifactCache* const cache_;
  std::function<void()> on_free_;

  std::mutex mu_;
  std::condition_variable ready_;  // the queue grew, a retry is due, or the pool stops
  std::deque<std::string> queue_;
  std::multimap<int64_t, std::string> retries_;  // unix ms -> job to queue again
  int busy_ = 0;
  int64_t compiles_ = 0;
  double compile_seconds_ = 0;
  bool draining_ = false;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// Where a held job runs: compiles and tunes in the pool, tasks on the dispatcher's agents.
struct Runners {
  WorkerPool* pool;
  AgentDispatcher* agents;
  // Queues a job the table holds queued.
  void Queue(const v1::Job& job) const;
  // Takes a job out of its queue and off the worker or agent running it.
  void Withdraw(const v1::Job& job, bool release_agent = false) const;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_JOBS_WORKER_POOL_H_
