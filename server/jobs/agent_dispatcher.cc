#include "server/jobs/agent_dispatcher.h"

#include <grpcpp/server_context.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <set>

#include "absl/strings/str_cat.h"
#include "server/jobs/measured_time.h"
#include "server/log.h"

namespace kiln::server {

AgentDispatcher::AgentDispatcher(DispatcherOptions options, JobTable* table, Store* store)
    : options_(options), table_(table), store_(store) {}

absl::Status AgentDispatcher::Load() {
  absl::StatusOr<std::vector<v1::Device>> devices = store_->LoadDevices();
  if (!devices.ok()) return devices.status();
  std::lock_guard<std::mutex> lock(mu_);
  for (v1::Device& d : *devices) {
    d.set_agents_connected(0);
    devices_[d.key()] = d;
  }
  return absl::OkStatus();
}

std::shared_ptr<AgentLink> AgentDispatcher::Register(const v1::RegisterAgent& hello,
                                                     const std::string& principal,
                                                     grpc::ServerContextBase* context,
                                                     std::function<void(v1::ServerMessage)> send) {
  auto agent = std::make_shared<AgentLink>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    agent->send = std::move(send);
    agent->id = absl::StrCat("agent-", next_agent_++);
    agent->device_key = hello.device_key();
    agent->principal = principal;
    agent->context = context;
    agent->last_seen_ms = NowUnixMs();
    agents_[agent->id] = agent;
    v1::Device& device = devices_[hello.device_key()];
    device.set_key(hello.device_key());
    *device.mutable_attributes() = hello.attributes();
    device.set_reported_by(principal);
    device.set_agents_connected(device.agents_connected() + 1);
    device.set_last_seen_unix_ms(agent->last_seen_ms);
    if (absl::Status s = store_->PutDevice(device); !s.ok()) {
      LogEvent(LogLevel::kError, "cannot save a device", {{"error", s.ToString()}});
    }
    LogEvent(LogLevel::kInfo, "agent connected",
             {{"agent", agent->id},
              {"device_key", agent->device_key},
              {"triple", hello.attributes().target_triple()},
              {"peer", context->peer()}});
    DispatchLocked();
  }
  if (observer_ != nullptr) observer_->AgentJoined(agent->id, agent->device_key);
  return agent;
}

bool AgentDispatcher::MayFetch(const std::string& agent_id, const std::string& principal,
                               const std::string& task_id, const std::string& digest) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto agent = agents_.find(agent_id);
    if (agent == agents_.end() || agent->second->gone || agent->second->principal != principal ||
        task_id.empty() || agent->second->busy_task != task_id) {
      return false;
    }
  }
  std::optional<v1::Job> job = table_->Get(task_id);
  return job.has_value() && job->artifact_digest() == digest;
}

void AgentDispatcher::Heartbeat(const std::shared_ptr<AgentLink>& agent) {
  std::lock_guard<std::mutex> lock(mu_);
  agent->last_seen_ms = NowUnixMs();
  devices_[agent->device_key].set_last_seen_unix_ms(agent->last_seen_ms);
}

void AgentDispatcher::Result(const std::shared_ptr<AgentLink>& agent,
                             const v1::TaskResult& result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    agent->last_seen_ms = NowUnixMs();
    if (!agent->busy_measurement.empty() && agent->busy_measurement == result.task_id()) {
      agent->busy_measurement.clear();
      auto m = measurements_.find(result.task_id());
      if (m != measurements_.end()) {  // else the tune stopped waiting for it
        // A time the device could not have measured is no record (measured_time.h).
        const absl::Status plausible =
            result.ok() ? CheckReportedSeconds(result.measured_seconds(), m->second.measure.flops(),
                                               devices_[agent->device_key].attributes())
                        : absl::OkStatus();
        m->second.done = true;
        m->second.ok = result.ok() && plausible.ok();
        m->second.seconds = result.measured_seconds();
        m->second.error = !result.ok() ? absl::StrCat("on ", agent->id, ": ", result.error())
                          : !plausible.ok()
                              ? absl::StrCat("on ", agent->id, ": refused: ", plausible.message())
                              : "";
      }
      measured_.notify_all();
      DispatchLocked();
      return;
    }
    if (agent->busy_task == result.task_id()) {  // else not the task it was given
      agent->busy_task.clear();
      const absl::Status bounded =
          result.ok() ? CheckTaskResult(result, options_.max_output_bytes, agent->expected_outputs)
                      : absl::OkStatus();
      if (!bounded.ok()) {
        table_->Transition(
            result.task_id(), v1::JOB_STATE_RUNNING, v1::JOB_STATE_FAILED,
            absl::StrCat("on ", agent->id, ": refused its result: ", bounded.message()));
      } else if (result.ok()) {
        table_->Transition(result.task_id(), v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED,
                           absl::StrCat("done on ", agent->id), [&](v1::Job& job) {
                             if (result.has_profile()) *job.mutable_profile() = result.profile();
                             if (result.has_inference()) {
                               *job.mutable_inference() = result.inference();
                             }
                           });
      } else {
        table_->Transition(result.task_id(), v1::JOB_STATE_RUNNING, v1::JOB_STATE_FAILED,
                           absl::StrCat("on ", agent->id, ": ", result.error()));
      }
      DispatchLocked();
    }
  }
  // Idle now: maybe a task waits for its device elsewhere.
  if (observer_ != nullptr) observer_->AgentIdle();
}

void AgentDispatcher::Gone(const std::shared_ptr<AgentLink>& agent) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (agent->gone) return;
    agent->gone = true;
    agent->send = nullptr;  // its stream is ending
    agents_.erase(agent->id);
    v1::Device& device = devices_[agent->device_key];
    device.set_agents_connected(std::max(0, device.agents_connected() - 1));
    LogEvent(LogLevel::kWarning, "agent disconnected",
             {{"agent", agent->id}, {"device_key", agent->device_key}});
    if (!agent->busy_task.empty()) {
      const std::string why = absl::StrCat(agent->id, " disappeared");
      const std::string& id = agent->busy_task;
      if (draining_) {
        table_->Transition(id, v1::JOB_STATE_RUNNING, v1::JOB_STATE_FAILED,
                           why + " while kilnd was shutting down");
      } else if (table_->Transition(
                     id, v1::JOB_STATE_RUNNING, v1::JOB_STATE_QUEUED,
                     why + "; the task goes to another agent of device '" + agent->device_key + "'",
                     [](v1::Job& job) { job.clear_agent_id(); })) {
        task_queues_[agent->device_key].push_front(id);
        if (std::optional<v1::Job> j = table_->Get(id)) task_clients_[id] = j->client();
      }
      agent->busy_task.clear();
    }
    if (!agent->busy_measurement.empty()) {
      // Measured elsewhere, up to three agents; then a failed candidate and the tune goes on.
      auto m = measurements_.find(agent->busy_measurement);
      if (m != measurements_.end() && !m->second.done) {
        if (m->second.attempts >= 3) {
          m->second.done = true;
          m->second.error =
              absl::StrCat("3 agents disappeared while measuring it, the last ", agent->id);
        } else {
          measure_queues_[m->second.device_key].push_front(m->first);
        }
      }
      agent->busy_measurement.clear();
    }
    measured_.notify_all();
    DispatchLocked();
  }
  if (observer_ != nullptr) observer_->AgentLeft(agent->id);  // or its session expires
}

void AgentDispatcher::Enqueue(const std::string& id, const std::string& device_key,
                              const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  task_queues_[device_key].push_back(id);
  task_clients_[id] = client;
  DispatchLocked();
}

void AgentDispatcher::Withdraw(const std::string& id, const std::string& device_key,
                               bool release_agent) {
  std::lock_guard<std::mutex> lock(mu_);
  WithdrawLocked(id, device_key, release_agent);
}

void AgentDispatcher::WithdrawLocked(const std::string& id, const std::string& device_key,
                                     bool release_agent) {
  std::deque<std::string>& queue = task_queues_[device_key];
  queue.erase(std::remove(queue.begin(), queue.end(), id), queue.end());
  task_clients_.erase(id);
  for (auto& [agent_id, agent] : agents_) {
    if (agent->busy_task != id) continue;
    v1::ServerMessage m;
    m.mutable_cancel()->set_task_id(id);
    SendLocked(*agent, std::move(m));
    if (release_agent) agent->busy_task.clear();
  }
}

std::optional<MeasureResults> AgentDispatcher::Measure(const HeldJob& job,
                                                       const MeasureBatch& batch) {
  std::unique_lock<std::mutex> lock(mu_);
  const std::string& key = job.job.device_key();
  std::vector<std::string> ids;
  for (const v1::KernelMeasure& m : batch.candidates()) {
    std::string id = absl::StrCat(job.job.id(), ".m", next_measurement_++);
    Measurement& measurement = measurements_[id];
    measurement.job_id = job.job.id();
    measurement.device_key = key;
    measurement.measure = m;
    if (options_.sign_measurement) options_.sign_measurement(&measurement.measure);
    measure_queues_[key].push_back(id);
    ids.push_back(id);
  }
  auto device = devices_.find(key);
  if (device == devices_.end() || device->second.agents_connected() == 0) {
    table_->Publish(job.job.id(), absl::StrCat("waiting for an agent of device '", key,
                                               "' to measure ", ids.size(), " candidates"));
  }
  DispatchLocked();
  auto all_done = [&] {
    for (const std::string& id : ids) {
      if (!measurements_.at(id).done) return false;
    }
    return true;
  };
  while (!all_done() && !*job.cancel && !stopping_ && NowUnixMs() < job.deadline_unix_ms) {
    measured_.wait_for(lock, std::chrono::milliseconds(100));
  }
  const bool complete = all_done();
  MeasureResults out;
  std::deque<std::string>& queue = measure_queues_[key];
  for (const std::string& id : ids) {
    const Measurement& m = measurements_.at(id);
    MeasureResult* r = out.add_results();
    r->set_ok(m.ok);
    r->set_seconds(m.seconds);
    r->set_error(m.error);
    // Not measured yet: out of the queue, and off the agent measuring it.
    queue.erase(std::remove(queue.begin(), queue.end(), id), queue.end());
    for (auto& [agent_id, agent] : agents_) {
      if (agent->busy_measurement != id) continue;
      v1::ServerMessage cancel;
      cancel.mutable_cancel()->set_task_id(id);
      SendLocked(*agent, std::move(cancel));
    }
    measurements_.erase(id);
  }
  // A tune stopped (cancelled, past its deadline, kilnd draining) gets no answer: its worker is
  // killed while it waits, and no candidate that was never measured is recorded as failed.
  return complete ? out : std::optional<MeasureResults>();
}

void AgentDispatcher::DispatchLocked() {
  for (auto& [id, agent] : agents_) {
    if (agent->gone || !agent->busy_task.empty() || !agent->busy_measurement.empty()) continue;
    std::deque<std::string>& queue = task_queues_[agent->device_key];
    std::map<std::string, int64_t>& turns = last_served_[agent->device_key];
    while (!queue.empty()) {
      // The oldest task of the client served longest ago (never: first).
      auto next = queue.begin();
      int64_t oldest_turn = INT64_MAX;
      for (auto it = queue.begin(); it != queue.end(); ++it) {
        auto turn = turns.find(task_clients_[*it]);
        const int64_t t = turn == turns.end() ? -1 : turn->second;
        if (t < oldest_turn) {
          oldest_turn = t;
          next = it;
        }
      }
      std::string job_id = *next;
      queue.erase(next);
      const std::string client = task_clients_[job_id];
      task_clients_.erase(job_id);
      std::optional<HeldJob> job = table_->StartOnAgent(job_id, agent->id);
      if (!job.has_value()) continue;  // cancelled or handed over meanwhile
      turns[client] = ++dispatches_;
      agent->busy_task = job_id;
      agent->expected_outputs.assign(job->input.expected_outputs().begin(),
                                     job->input.expected_outputs().end());
      v1::ServerMessage m;
      *m.mutable_task() = job->input.task();
      m.mutable_task()->set_timeout_ms(std::max<int64_t>(1, job->deadline_unix_ms - NowUnixMs()));
      SendLocked(*agent, std::move(m));
      break;
    }
    if (!agent->busy_task.empty()) continue;
    // Tuning candidates: one per agent at a time (concurrent measurements on one board would
    // corrupt each other's timings); the timeout runs from when the agent starts it.
    std::deque<std::string>& measures = measure_queues_[agent->device_key];
    while (!measures.empty()) {
      auto m = measurements_.find(measures.front());
      measures.pop_front();
      if (m == measurements_.end() || m->second.done) continue;
      ++m->second.attempts;
      agent->busy_measurement = m->first;
      v1::ServerMessage message;
      v1::Task* task = message.mutable_task();
      task->set_task_id(m->first);
      task->set_kind(v1::JOB_KIND_TUNE);
      *task->mutable_measure() = m->second.measure;
      task->set_timeout_ms(options_.measure_timeout_ms);
      SendLocked(*agent, std::move(message));
      break;
    }
  }
}

void AgentDispatcher::SendLocked(AgentLink& agent, v1::ServerMessage message) {
  if (!agent.gone && agent.send) agent.send(std::move(message));
}

bool AgentDispatcher::HasAgent(const std::string& device_key) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, agent] : agents_) {
    if (!agent->gone && agent->device_key == device_key) return true;
  }
  return false;
}

std::vector<std::string> AgentDispatcher::IdleKeys() {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> idle;
  for (const auto& [id, agent] : agents_) {
    if (agent->gone || !agent->busy_task.empty() || !agent->busy_measurement.empty()) continue;
    if (task_queues_[agent->device_key].empty()) idle.insert(agent->device_key);
  }
  return {idle.begin(), idle.end()};
}

std::vector<v1::Device> AgentDispatcher::Devices() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<v1::Device> out;
  for (const auto& [key, device] : devices_) {
    v1::Device d = device;
    auto q = task_queues_.find(key);
    d.set_tasks_queued(q == task_queues_.end() ? 0 : static_cast<int32_t>(q->second.size()));
    out.push_back(std::move(d));
  }
  return out;
}

int64_t AgentDispatcher::TasksQueued() {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t queued = 0;
  for (const auto& [key, q] : task_queues_) queued += static_cast<int64_t>(q.size());
  return queued;
}

int64_t AgentDispatcher::AgentsConnected() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(agents_.size());
}

void AgentDispatcher::Tick(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  // Tasks past their deadline (compiles are killed by their own supervisor). Every unfinished
  // task is in a device queue or on an agent, so finished jobs are never scanned.
  std::vector<std::pair<std::string, std::string>> open;  // (id, device key)
  for (const auto& [key, queue] : task_queues_) {
    for (const std::string& id : queue) open.push_back({id, key});
  }
  for (const auto& [agent_id, agent] : agents_) {
    if (!agent->busy_task.empty()) open.push_back({agent->busy_task, agent->device_key});
  }
  for (const auto& [id, key] : open) {
    if (table_->ExpireTask(id, now_ms)) WithdrawLocked(id, key, false);
  }
  // Agents that stopped heartbeating: end their streams; Gone requeues their tasks.
  for (auto& [id, agent] : agents_) {
    if (now_ms - agent->last_seen_ms > 5 * int64_t{options_.heartbeat_interval_ms}) {
      agent->context->TryCancel();
    }
  }
}

void AgentDispatcher::SetDraining() {
  std::lock_guard<std::mutex> lock(mu_);
  draining_ = true;
}

void AgentDispatcher::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  task_queues_.clear();
  task_clients_.clear();
  measure_queues_.clear();
  measured_.notify_all();
}

}  // namespace kiln::server
