#include "runtime/agent/agent.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "proto/kiln/v1/agent.grpc.pb.h"
#include "runtime/artifact.h"
#include "runtime/device_info.h"
#include "runtime/support/status_macros.h"
#include "runtime/support/subprocess.h"

namespace kiln::runtime {
namespace {

absl::Status FromGrpc(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

void Log(const std::string& line) {
  std::fprintf(stderr, "kiln-agent: %s\n", line.c_str());
  std::fflush(stderr);
}

// The artifact `digest` in the local cache, fetched from kilnd when absent or corrupted; always
// verified against its digest before it is used.
absl::StatusOr<std::string> EnsureArtifact(const AgentOptions& options,
                                           v1::AgentService::Stub* stub,
                                           const std::string& agent_id, const v1::Task& task) {
  const std::string& digest = task.artifact_digest();
  if (digest.size() != 64 || digest.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("bad artifact digest '", digest, "'"));
  }
  std::string path = absl::StrCat(options.cache_dir, "/", digest, ".kiln");
  if (absl::StatusOr<std::string> cached = ReadTextFile(path); cached.ok()) {
    absl::StatusOr<v1::ArtifactProto> parsed = ParseArtifact(*cached, /*check_host=*/true);
    if (parsed.ok() && parsed->manifest().digest() == digest &&
        CheckArtifactSignature(*parsed, options.trusted_keys).ok()) {
      return path;
    }
    Log(absl::StrCat("cached artifact ", digest.substr(0, 12), " is corrupt; fetching again"));
  }
  grpc::ClientContext context;
  AddToken(options.server, &context);
  v1::FetchArtifactRequest request;
  request.set_digest(digest);
  request.set_agent_id(agent_id);
  request.set_task_id(task.task_id());
  std::unique_ptr<grpc::ClientReader<v1::ArtifactChunk>> reader =
      stub->FetchArtifact(&context, request);
  std::string bytes;
  v1::ArtifactChunk chunk;
  while (reader->Read(&chunk)) {
    if (chunk.offset() != static_cast<int64_t>(bytes.size())) {
      return absl::DataLossError("artifact chunks arrived out of order");
    }
    bytes += chunk.data();
  }
  KILN_RETURN_IF_ERROR(FromGrpc(reader->Finish()));
  KILN_ASSIGN_OR_RETURN(v1::ArtifactProto parsed, ParseArtifact(bytes, /*check_host=*/true));
  if (parsed.manifest().digest() != digest) {
    return absl::DataLossError(absl::StrCat("fetched artifact has digest ",
                                            parsed.manifest().digest(), ", asked for ", digest));
  }
  // Refused before it is written anywhere a task could load it from.
  if (absl::Status s = CheckArtifactSignature(parsed, options.trusted_keys); !s.ok()) {
    return absl::PermissionDeniedError(absl::StrCat("refused: ", s.message()));
  }
  std::string temp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", temp));
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot write ", path, ": ", ec.message()));
  return path;
}

// Runs `task` in a child process and turns whatever happened into a result.
v1::TaskResult RunTask(const AgentOptions& options, v1::AgentService::Stub* stub,
                       const std::string& agent_id, const v1::Task& task,
                       const std::atomic<bool>& cancel) {
  v1::TaskResult result;
  result.set_task_id(task.task_id());
  v1::LocalTask local;
  if (task.kind() == v1::JOB_KIND_TUNE) {
    // A measurement carries its libraries: checked here, before the child gets them (on its
    // stdin, so what it loads is what was checked).
    if (absl::Status s = CheckMeasurementSignature(task.measure(), options.trusted_keys); !s.ok()) {
      result.set_error(absl::StrCat("tuning candidate: ", s.message()));
      return result;
    }
  } else {
    absl::StatusOr<std::string> path = EnsureArtifact(options, stub, agent_id, task);
    if (!path.ok()) {
      result.set_error(absl::StrCat("artifact ", task.artifact_digest().substr(0, 12), ": ",
                                    path.status().message()));
      return result;
    }
    local.set_artifact_path(*path);
  }
  *local.mutable_task() = task;
  local.set_threads(options.threads);
  local.set_trusted_keys_pem(options.trusted_keys.Pem());
  *local.mutable_confinement() = options.confinement;
  ChildOptions child;
  child.memory_limit_bytes = options.task_memory_limit_bytes;
  child.timeout_ms = task.timeout_ms();
  child.cancel = &cancel;
  std::vector<std::string> argv = {SelfExecutablePath(), "--run-task"};
  if (!options.task_launcher.empty()) argv.insert(argv.begin(), options.task_launcher);
  absl::StatusOr<ChildResult> ran = RunChild(argv, local.SerializeAsString(), child);
  if (!ran.ok()) {
    result.set_error(absl::StrCat("cannot start the task's process: ", ran.status().message()));
    return result;
  }
  if (ran->exited_ok() && result.ParseFromString(ran->output)) return result;
  result.Clear();
  result.set_task_id(task.task_id());
  std::string tail(absl::StripAsciiWhitespace(ran->error_tail));
  tail = tail.substr(tail.rfind('\n') == std::string::npos ? 0 : tail.rfind('\n') + 1);
  result.set_error(absl::StrCat("the task's process ", ran->Describe(task.timeout_ms()),
                                tail.empty() ? "" : ": ", tail));
  return result;
}

}  // namespace

absl::Status Agent::Session(const std::atomic<bool>& stop) {
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, MakeChannel(options_.server));
  std::unique_ptr<v1::AgentService::Stub> stub = v1::AgentService::NewStub(channel);
  grpc::ClientContext context;
  AddToken(options_.server, &context);
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::ServerMessage>> stream =
      stub->Connect(&context);
  std::mutex write_mu;  // one Write at a time; Read runs beside it
  auto write = [&](const v1::AgentMessage& m) {
    std::lock_guard<std::mutex> lock(write_mu);
    return stream->Write(m);
  };
  v1::AgentMessage hello;
  hello.mutable_register_()->set_device_key(options_.device_key);
  *hello.mutable_register_()->mutable_attributes() = LocalDeviceAttributes();
  v1::ServerMessage message;
  if (!write(hello) || !stream->Read(&message) || !message.has_registered()) {
    // kilnd refused (or never answered): its status says why.
    grpc::Status s = stream->Finish();
    return s.ok() ? absl::UnavailableError("kilnd closed the stream before registering")
                  : FromGrpc(s);
  }
  std::string agent_id = message.registered().agent_id();
  int heartbeat_ms = std::max(50, message.registered().heartbeat_interval_ms());
  Log(absl::StrCat("registered as ", agent_id, " with key '", options_.device_key, "' at ",
                   options_.server.address));

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  // Heartbeats, and the watch on `stop`: both end when the session does.
  std::thread heartbeats([&] {
    std::unique_lock<std::mutex> lock(mu);
    while (!done) {
      cv.wait_for(lock, std::chrono::milliseconds(heartbeat_ms));
      if (done) break;
      if (stop) {
        context.TryCancel();
        break;
      }
      lock.unlock();
      v1::AgentMessage beat;
      beat.mutable_heartbeat()->set_unix_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                std::chrono::system_clock::now().time_since_epoch())
                                                .count());
      write(beat);
      lock.lock();
    }
  });
  std::atomic<bool> cancel_task{false};
  std::string running_task;
  std::thread task_thread;
  while (stream->Read(&message)) {
    if (message.has_cancel()) {
      if (message.cancel().task_id() == running_task) cancel_task = true;
      continue;
    }
    if (!message.has_task()) continue;
    if (task_thread.joinable()) task_thread.join();  // kilnd sends one task at a time
    cancel_task = false;
    running_task = message.task().task_id();
    v1::Task task = message.task();
    Log(absl::StrCat("task ", task.task_id(), " (", v1::JobKind_Name(task.kind()), ")"));
    task_thread = std::thread([&, task] {
      v1::AgentMessage reply;
      *reply.mutable_result() = RunTask(options_, stub.get(), agent_id, task, cancel_task);
      Log(absl::StrCat("task ", task.task_id(),
                       reply.result().ok() ? " done" : " failed: ", reply.result().error()));
      write(reply);
    });
  }
  cancel_task = true;  // the connection is gone: kilnd gives the task to another agent
  if (task_thread.joinable()) task_thread.join();
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  heartbeats.join();
  grpc::Status s = stream->Finish();
  if (s.ok()) return absl::UnavailableError("kilnd ended the stream");
  return FromGrpc(s);
}

void Agent::Run(const std::atomic<bool>& stop) {
  std::error_code ec;
  std::filesystem::create_directories(options_.cache_dir, ec);
  int backoff_ms = options_.min_backoff_ms;
  while (!stop) {
    auto start = std::chrono::steady_clock::now();
    absl::Status ended = Session(stop);
    if (stop) break;
    // A session that lasted a while was healthy: start the backoff over.
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(10)) {
      backoff_ms = options_.min_backoff_ms;
    }
    Log(absl::StrCat("disconnected (", ended.ToString(), "); retrying in ", backoff_ms, " ms"));
    for (int waited = 0; waited < backoff_ms && !stop; waited += 50) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    backoff_ms = std::min(options_.max_backoff_ms, backoff_ms * 2);
  }
}

}  // namespace kiln::runtime
