// Device agents and the work that waits for them: each device key has a queue of tasks (profile
// and inference jobs) and of tuning candidates; an idle agent of that key takes the next one. A
// task whose agent disappears goes back to the front of the queue for another agent of the same
// key; a candidate is tried on up to three agents. Task deadlines and missed heartbeats are
// checked by Tick.
//
// Lock order: the dispatcher's lock, then the job table's (it starts and finishes jobs in the
// table while holding its own); the table never calls back.
#ifndef KILN_SERVER_JOBS_AGENT_DISPATCHER_H_
#define KILN_SERVER_JOBS_AGENT_DISPATCHER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "proto/kiln/v1/agent.pb.h"
#include "proto/kiln/v1/jobs.pb.h"
#include "server/jobs/job_table.h"
#include "server/store.h"
#include "server/worker.pb.h"

namespace grpc {
class ServerContextBase;
}

namespace kiln::server {

// One connected agent, as the Connect stream and the dispatcher share it.
struct AgentLink {
  std::string id;
  std::string device_key;
  std::string principal;  // the credential that opened the session
  grpc::ServerContextBase* context = nullptr;
  // Queues a message for the agent's stream (called under the dispatcher's lock: it only queues).
  std::function<void(v1::ServerMessage)> send;
  std::string busy_task;  // the job it runs
  // What the task's answer must be (an inference's outputs: JobInput.expected_outputs).
  std::vector<v1::TensorValue> expected_outputs;
  std::string busy_measurement;  // or the tuning candidate it measures; both empty when idle
  int64_t last_seen_ms = 0;
  bool gone = false;
};

// What the cluster is told of this instance's agents (the cluster synchronization implements
// it; one instance ignores it). Called without the dispatcher's lock.
class AgentObserver {
 public:
  virtual ~AgentObserver() = default;
  virtual void AgentJoined(const std::string& agent_id, const std::string& device_key) = 0;
  virtual void AgentLeft(const std::string& agent_id) = 0;
  // An agent finished a task: a task for its device may wait elsewhere.
  virtual void AgentIdle() = 0;
};

struct DispatcherOptions {
  int heartbeat_interval_ms = 1000;              // agents are dropped after 5 missed heartbeats
  int64_t measure_timeout_ms = 20000;            // per candidate, from when an agent starts it
  int64_t max_output_bytes = int64_t{64} << 20;  // an inference's outputs in all
  // Signs a tuning candidate before it goes to an agent (agents run no unsigned library);
  // none: candidates go unsigned, and agents refuse them.
  std::function<void(v1::KernelMeasure*)> sign_measurement;
};

class AgentDispatcher {
 public:
  AgentDispatcher(DispatcherOptions options, JobTable* table, Store* store);
  void SetObserver(AgentObserver* observer) { observer_ = observer; }
  // The devices the store knows (no agent connected yet).
  absl::Status Load();

  // `send` queues a message on the agent's stream; never called after Gone.
  std::shared_ptr<AgentLink> Register(const v1::RegisterAgent& hello, const std::string& principal,
                                      grpc::ServerContextBase* context,
                                      std::function<void(v1::ServerMessage)> send);
  // Whether the session `agent_id`, opened by `principal`, runs task `task_id` and that task
  // runs the artifact `digest`: the only artifacts an agent may fetch.
  bool MayFetch(const std::string& agent_id, const std::string& principal,
                const std::string& task_id, const std::string& digest);
  void Heartbeat(const std::shared_ptr<AgentLink>& agent);
  void Result(const std::shared_ptr<AgentLink>& agent, const v1::TaskResult& result);
  void Gone(const std::shared_ptr<AgentLink>& agent);

  // Queues a task (a job the table holds queued) of `client` for an agent of `device_key`. Each
  // device's queue is shared fairly: an idle agent takes the oldest task of the client its
  // device served least recently, so one client's hundred tasks do not stand before another's
  // one.
  void Enqueue(const std::string& id, const std::string& device_key,
               const std::string& client = "");
  // Takes a task out of its queue and tells the agent running it, if any, to stop; with
  // `release_agent` the agent counts as idle at once (the job is handed over).
  void Withdraw(const std::string& id, const std::string& device_key, bool release_agent = false);
  // Measures `batch` for the tune `job` on agents of its device, one candidate per idle agent,
  // and waits for every result; nullopt when the job was cancelled, passed its deadline or the
  // dispatcher stopped first.
  std::optional<MeasureResults> Measure(const HeldJob& job, const MeasureBatch& batch);

  bool HasAgent(const std::string& device_key);
  // Device keys with an idle agent and no task queued here: what this instance may claim.
  std::vector<std::string> IdleKeys();
  std::vector<v1::Device> Devices();
  int64_t TasksQueued();
  int64_t AgentsConnected();

  // Fails tasks past their deadline; ends the streams of agents that stopped heartbeating.
  void Tick(int64_t now_ms);
  // A task whose agent disappears fails from now on rather than waiting for another.
  void SetDraining();
  // Empties the queues and wakes every Measure.
  void Stop();

 private:
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
  void DispatchLocked();
  void WithdrawLocked(const std::string& id, const std::string& device_key, bool release_agent);
  void SendLocked(AgentLink& agent, v1::ServerMessage message);

  const DispatcherOptions options_;
  JobTable* const table_;
  Store* const store_;
  AgentObserver* observer_ = nullptr;

  std::mutex mu_;
  std::condition_variable measured_;  // a measurement finished, or the dispatcher stops
  std::map<std::string, std::shared_ptr<AgentLink>> agents_;
  std::map<std::string, v1::Device> devices_;
  std::map<std::string, std::deque<std::string>> task_queues_;  // by device key
  std::map<std::string, std::string> task_clients_;             // queued task -> its client
  // By device key, each client's turn: when the device last started one of its tasks.
  std::map<std::string, std::map<std::string, int64_t>> last_served_;
  int64_t dispatches_ = 0;
  std::map<std::string, Measurement> measurements_;                // by id
  std::map<std::string, std::deque<std::string>> measure_queues_;  // by device key
  uint64_t next_measurement_ = 1;
  uint64_t next_agent_ = 1;
  bool draining_ = false;
  bool stopping_ = false;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_JOBS_AGENT_DISPATCHER_H_
