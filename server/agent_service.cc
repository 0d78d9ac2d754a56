#include "server/agent_service.h"

#include <grpcpp/grpcpp.h>

#include <deque>
#include <map>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/log.h"

namespace kiln::server {
namespace {

// An agent's result as kilnd keeps it: an error message past the string limit is cut there (a
// board must not grow the store with its job's reason), and a result with another string over
// the limit is a failure saying so.
v1::TaskResult BoundedResult(const v1::TaskResult& result, int64_t max_bytes) {
  static constexpr char kCut[] = "... (truncated)";
  v1::TaskResult bounded = result;
  if (static_cast<int64_t>(bounded.error().size()) > max_bytes) {
    bounded.set_error(bounded.error().substr(0, static_cast<size_t>(max_bytes)) + kCut);
  }
  if (grpc::Status s = StringsWithin(bounded, max_bytes + sizeof(kCut)); !s.ok()) {
    v1::TaskResult refused;
    refused.set_task_id(result.task_id().substr(0, static_cast<size_t>(max_bytes)));
    refused.set_error(absl::StrCat("the agent's result was refused: ", s.error_message()));
    return refused;
  }
  return bounded;
}

// One agent's Connect stream: reads (registration, heartbeats, results) are handled as they
// complete; messages the job manager sends are queued (under its lock) and written one at a
// time. No thread waits on the stream.
class AgentReactor final : public grpc::ServerBidiReactor<v1::AgentMessage, v1::ServerMessage> {
 public:
  AgentReactor(ServiceContext* ctx, grpc::CallbackServerContext* context, Principal principal)
      : ctx_(ctx), context_(context), principal_(std::move(principal)) {
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the agent closed its side, or the stream broke or was cancelled
      Leave(grpc::Status::OK);
      return;
    }
    if (agent_ == nullptr) {
      if (grpc::Status s = Register(); !s.ok()) {
        Leave(s);
        return;
      }
    } else {
      if (in_.has_heartbeat()) ctx_->jobs->AgentHeartbeat(agent_);
      if (in_.has_result()) {
        ctx_->jobs->AgentResult(agent_, BoundedResult(in_.result(), ctx_->max_string_bytes));
      }
    }
    StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {
      context_->TryCancel();  // the pending read ends too, and with it the session
    } else if (!pending_.empty()) {
      WriteNextLocked();
      return;
    }
    if (finish_.has_value()) FinishLocked();
  }

  void OnDone() override {
    if (agent_ != nullptr) ctx_->jobs->AgentGone(agent_);
    delete this;
  }

 private:
  grpc::Status Register() {
    if (!in_.has_register_()) return Invalid("the first message must register the agent");
    if (grpc::Status s = StringsWithin(in_, ctx_->max_string_bytes); !s.ok()) return s;
    const std::string& key = in_.register_().device_key();
    if (!ValidDeviceKey(key)) {
      return Invalid(absl::StrCat("device key '", key, "': use 1 to 64 of [A-Za-z0-9._-]"));
    }
    if (!principal_.MayServe(key)) {
      return grpc::Status(
          grpc::StatusCode::PERMISSION_DENIED,
          absl::StrCat("agent credential '", principal_.name, "' may not serve device key '", key,
                       "' (it may serve: ", absl::StrJoin(principal_.device_keys, ", "), ")"));
    }
    // The registration reply goes out first: the manager may send a task as it registers.
    v1::ServerMessage registered;
    registered.mutable_registered()->set_heartbeat_interval_ms(ctx_->jobs->heartbeat_interval_ms());
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.push_back(registered);
    }
    agent_ = ctx_->jobs->RegisterAgent(in_.register_(), principal_.name, context_,
                                       [this](v1::ServerMessage m) { Send(std::move(m)); });
    std::lock_guard<std::mutex> lock(mu_);
    pending_.front().mutable_registered()->set_agent_id(agent_->id);
    if (!writing_) WriteNextLocked();
    return grpc::Status::OK;
  }

  void Send(v1::ServerMessage message) {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_.has_value()) return;
    pending_.push_back(std::move(message));
    // Until the registration reply has its agent id, Register starts the first write.
    if (!writing_ && pending_.front().has_registered() &&
        pending_.front().registered().agent_id().empty()) {
      return;
    }
    if (!writing_) WriteNextLocked();
  }

  void WriteNextLocked() {
    current_ = std::move(pending_.front());
    pending_.pop_front();
    writing_ = true;
    StartWrite(&current_);
  }

  // The session ends: the manager forgets the agent (requeueing its task), and the stream is
  // finished once no write is in flight.
  void Leave(const grpc::Status& status) {
    if (agent_ != nullptr) ctx_->jobs->AgentGone(agent_);
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_.has_value()) return;
    finish_ = status;
    pending_.clear();
    if (!writing_) FinishLocked();
  }

  void FinishLocked() {
    if (finished_) return;
    finished_ = true;
    Finish(*finish_);
  }

  ServiceContext* ctx_;
  grpc::CallbackServerContext* context_;
  Principal principal_;
  v1::AgentMessage in_;
  std::shared_ptr<AgentLink> agent_;  // once registered
  std::mutex mu_;
  std::deque<v1::ServerMessage> pending_;
  v1::ServerMessage current_;  // the one being written
  bool writing_ = false, finished_ = false;
  std::optional<grpc::Status> finish_;
};

}  // namespace

grpc::ServerBidiReactor<v1::AgentMessage, v1::ServerMessage>* AgentServiceImpl::Connect(
    grpc::CallbackServerContext* context) {
  Principal agent_principal;
  if (grpc::Status s = Authorize(*ctx_->Auth(), *context, Role::kAgent, &agent_principal);
      !s.ok()) {
    // Refused before reading anything: a reactor that only finishes.
    class Refused final : public grpc::ServerBidiReactor<v1::AgentMessage, v1::ServerMessage> {
     public:
      explicit Refused(const grpc::Status& s) { Finish(s); }
      void OnDone() override { delete this; }
    };
    return new Refused(s);
  }
  return new AgentReactor(ctx_, context, std::move(agent_principal));
}

grpc::Status AgentServiceImpl::FetchArtifact(grpc::ServerContext* context,
                                             const v1::FetchArtifactRequest* request,
                                             grpc::ServerWriter<v1::ArtifactChunk>* writer) {
  Principal agent_principal;
  if (grpc::Status s = Authorize(*ctx_->Auth(), *context, Role::kAgent, &agent_principal);
      !s.ok()) {
    return s;
  }
  // Only the artifact of a task this session runs: a token alone fetches nothing. The answer is
  // the same whether the digest exists or not.
  if (!ctx_->jobs->AgentMayFetch(request->agent_id(), agent_principal.name, request->task_id(),
                                 request->digest())) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat("artifact ", request->digest().substr(0, 64),
                                     " is not the artifact of a task given to agent session '",
                                     request->agent_id().substr(0, 64), "'"));
  }
  absl::StatusOr<StreamSlots::Slot> slot = ctx_->streams->Acquire("agent:" + agent_principal.name);
  if (!slot.ok()) return ToGrpc(slot.status());
  return StreamArtifact(ctx_->cache, request->digest(), writer);
}

}  // namespace kiln::server
