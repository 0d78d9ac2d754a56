// Test harness for the service: real kilnd and kiln-agent processes on loopback, each logging to
// a file under TEST_TMPDIR, and the C++ client library to talk to them.
#ifndef KILN_TESTS_SERVICE_CLUSTER_H_
#define KILN_TESTS_SERVICE_CLUSTER_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/kiln_client.h"

namespace kiln::testing {

// A child process with its stdout and stderr in `log_path`.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::string& log_path);
  ~Process();
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }
  std::string Log() const;
  // Waits up to `timeout_ms` for `needle` in the log; the text after it up to the line's end.
  absl::StatusOr<std::string> WaitForLog(const std::string& needle, int timeout_ms = 30000) const;
  void Signal(int signal);
  // The exit status (or 128 + signal); -1 when it did not end within `timeout_ms`.
  int Wait(int timeout_ms = 60000);

 private:
  pid_t pid_ = -1;
  std::string log_path_;
};

// Paths of the binaries under test, from the test's arguments.
struct Binaries {
  std::string kilnd, agent, kiln;
  std::string worker_with_test_hooks;  // //server:kiln-worker-test-hooks, where a test needs it
};
Binaries& TestBinaries();

// The whole file (binary-safe); empty when it cannot be read.
std::string ReadFileBytes(const std::string& path);

class Cluster {
 public:
  // `name` names the directory of this cluster's store and logs.
  explicit Cluster(const std::string& name) : dir_(TmpPath(name)) {}

  // Starts kilnd on a free port (or, restarting or after set_port, on that port) with a store in
  // the cluster's directory.
  absl::Status StartDaemon(const std::vector<std::string>& extra_flags = {},
                           bool same_port = false);
  // SIGTERM, and the exit status.
  int StopDaemon();
  // Starts an agent and waits until it has registered; returns its agent id.
  absl::StatusOr<std::string> StartAgent(const std::string& device_key,
                                         const std::vector<std::string>& extra_flags = {});
  // The same with the agent started by `command`: {"/usr/bin/qemu-aarch64", "kiln-agent"} for an
  // emulated board.
  absl::StatusOr<std::string> StartAgentCommand(const std::vector<std::string>& command,
                                                const std::string& device_key,
                                                const std::vector<std::string>& extra_flags = {});
  Process& agent(const std::string& agent_id) { return *agents_.at(agent_id); }
  Process& daemon() { return *daemon_; }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // The port the next StartDaemon(..., /*same_port=*/true) listens on, known before it does (so
  // that nginx can name it, and a restarted instance comes back on it).
  void set_port(int port) { port_ = port; }
  int port() const { return port_; }
  static int FreePort();
  int metrics_port() const { return metrics_port_; }
  const std::string& dir() const { return dir_; }
  absl::StatusOr<std::unique_ptr<client::KilnClient>> Client(
      runtime::ChannelOptions options = {}) const;
  // GET /metrics.
  std::string Metrics() const;

  static std::string TmpPath(const std::string& name);
  // The signing key every kilnd of the test is started with (created by the first), and whose
  // public key (+ ".pub") every agent trusts, unless a test's flags say otherwise.
  static std::string SigningKeyPath();

 private:
  std::string dir_;
  std::unique_ptr<Process> daemon_;
  std::map<std::string, std::unique_ptr<Process>> agents_;
  int port_ = 0;
  int metrics_port_ = -1;
  int starts_ = 0;
};

}  // namespace kiln::testing

#endif  // KILN_TESTS_SERVICE_CLUSTER_H_
