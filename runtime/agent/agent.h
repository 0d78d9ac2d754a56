// kiln-agent: a device agent. It connects out to kilnd (so a board behind NAT can serve), registers
// its device key and what the machine is, heartbeats, and runs the tasks it is given — each in a
// child process with a timeout and a memory limit, confined (confine.h) — reporting every
// repeat's time or the outputs. Artifacts are fetched by digest, verified — content digest and
// a signature by a trusted key (runtime/artifact_signing.h) — and kept in a local cache. A lost
// connection is retried with exponential backoff.
#ifndef KILN_RUNTIME_AGENT_AGENT_H_
#define KILN_RUNTIME_AGENT_AGENT_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "proto/kiln/v1/agent.pb.h"
#include "proto/kiln/v1/jobs.pb.h"
#include "runtime/agent/channel.h"
#include "runtime/artifact_signing.h"

namespace kiln::runtime {

struct AgentOptions {
  ChannelOptions server;
  std::string device_key;
  std::string cache_dir;                // verified artifacts, by digest
  int64_t task_memory_limit_bytes = 0;  // per task child; 0 for none
  int threads = 0;                      // kernel threads per task; 0 for one per core
  // A program that starts each task child: "qemu-aarch64" for an agent emulated by qemu-user on a
  // host without binfmt_misc, where the agent cannot exec its own (aarch64) binary directly.
  std::string task_launcher;
  int min_backoff_ms = 100;
  int max_backoff_ms = 5000;
  // Only artifacts signed by one of these run (kilnd's public key: its signing_key.pem.pub).
  TrustedKeys trusted_keys;
  // What each task child gives up before it loads the artifact (confine.h).
  v1::TaskConfinement confinement;
};

class Agent {
 public:
  explicit Agent(AgentOptions options) : options_(std::move(options)) {}

  // Serves until `stop` turns true, reconnecting after every lost connection.
  void Run(const std::atomic<bool>& stop);

  // One connection: register, then serve tasks until the stream ends. Returns why it ended.
  absl::Status Session(const std::atomic<bool>& stop);

 private:
  AgentOptions options_;
};

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_AGENT_AGENT_H_
