#include "tests/service_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tests/free_port.h"

namespace kiln::testing {

Binaries& TestBinaries() {
  static Binaries binaries;
  return binaries;
}

Process::Process(const std::vector<std::string>& argv, const std::string& log_path)
    : log_path_(log_path) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Truncated here, not in the child: a reader must never see an earlier run's log.
  std::ofstream(log_path, std::ios::trunc).close();
  pid_ = fork();
  if (pid_ == 0) {
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(args[0], args.data());
    _exit(127);
  }
}

Process::~Process() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Process::Log() const { return ReadFileBytes(log_path_); }

absl::StatusOr<std::string> Process::WaitForLog(const std::string& needle, int timeout_ms) const {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    std::string log = Log();
    size_t at = log.find(needle);
    if (at != std::string::npos) {
      size_t from = at + needle.size();
      size_t eol = log.find('\n', from);
      if (eol != std::string::npos) return log.substr(from, eol - from);
    }
    // Exited without writing it (checked without reaping: Wait still gets the status).
    siginfo_t info{};
    if (pid_ > 0 &&
        waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid_ && Log().find(needle) == std::string::npos) {
      return absl::FailedPreconditionError(
          absl::StrCat("the process exited without '", needle, "' in ", log_path_, ":\n", Log()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("no '", needle, "' in ", log_path_, " after ", timeout_ms, " ms:\n", Log()));
}

void Process::Signal(int signal) {
  if (pid_ > 0) kill(pid_, signal);
}

int Process::Wait(int timeout_ms) {
  if (pid_ <= 0) return -1;
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

int Cluster::FreePort() { return FreeLoopbackPort(); }

std::string Cluster::SigningKeyPath() { return TmpPath("keys") + "/signing_key.pem"; }

std::string Cluster::TmpPath(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(tmp ? tmp : "/tmp", "/", name);
  std::filesystem::create_directories(dir);
  return dir;
}

absl::Status Cluster::StartDaemon(const std::vector<std::string>& extra_flags, bool same_port) {
  std::string listen = same_port ? address() : "127.0.0.1:0";
  std::vector<std::string> argv = {TestBinaries().kilnd, "--listen",       listen, "--store",
                                   dir_ + "/store",      "--metrics-port", "0"};
  // Defaults a test may replace (kilnd refuses an option given twice).
  if (std::find(extra_flags.begin(), extra_flags.end(), "--heartbeat-ms") == extra_flags.end()) {
    argv.insert(argv.end(), {"--heartbeat-ms", "200"});
  }
  if (std::find(extra_flags.begin(), extra_flags.end(), "--drain-timeout-s") == extra_flags.end()) {
    argv.insert(argv.end(), {"--drain-timeout-s", "30"});
  }
  // One signing key for every instance of the test (a cluster's instances share one).
  if (std::find(extra_flags.begin(), extra_flags.end(), "--signing-key") == extra_flags.end()) {
    argv.insert(argv.end(), {"--signing-key", SigningKeyPath()});
  }
  argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
  daemon_ = std::make_unique<Process>(argv, absl::StrCat(dir_, "/kilnd.", starts_++, ".log"));
  absl::StatusOr<std::string> port = daemon_->WaitForLog("kilnd: listening on port ");
  if (!port.ok()) return port.status();
  if (!absl::SimpleAtoi(*port, &port_)) return absl::InternalError("bad port " + *port);
  absl::StatusOr<std::string> metrics = daemon_->WaitForLog("kilnd: metrics on port ");
  if (!metrics.ok()) return metrics.status();
  if (!absl::SimpleAtoi(*metrics, &metrics_port_)) return absl::InternalError("bad metrics port");
  return absl::OkStatus();
}

int Cluster::StopDaemon() {
  daemon_->Signal(SIGTERM);
  return daemon_->Wait();
}

absl::StatusOr<std::string> Cluster::StartAgent(const std::string& device_key,
                                                const std::vector<std::string>& extra_flags) {
  return StartAgentCommand({TestBinaries().agent}, device_key, extra_flags);
}

absl::StatusOr<std::string> Cluster::StartAgentCommand(
    const std::vector<std::string>& command, const std::string& device_key,
    const std::vector<std::string>& extra_flags) {
  std::string n = std::to_string(agents_.size() + starts_ * 100);
  std::vector<std::string> argv = command;
  argv.insert(argv.end(), {"--server", address(), "--device-key", device_key, "--cache-dir",
                           dir_ + "/agent" + n, "--max-backoff-ms", "500"});
  if (std::find(extra_flags.begin(), extra_flags.end(), "--trusted-keys") == extra_flags.end()) {
    argv.insert(argv.end(), {"--trusted-keys", SigningKeyPath() + ".pub"});
  }
  argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
  auto agent = std::make_unique<Process>(argv, absl::StrCat(dir_, "/agent", n, ".log"));
  absl::StatusOr<std::string> id = agent->WaitForLog("kiln-agent: registered as ");
  if (!id.ok()) return id.status();
  std::string agent_id = id->substr(0, id->find(' '));
  agents_[agent_id] = std::move(agent);
  return agent_id;
}

absl::StatusOr<std::unique_ptr<client::KilnClient>> Cluster::Client(
    runtime::ChannelOptions options) const {
  options.address = address();
  return client::KilnClient::Connect(options);
}

std::string Cluster::Metrics() const {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(metrics_port_));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    std::string request = "GET /metrics HTTP/1.0\r\n\r\n";
    (void)!write(fd, request.data(), request.size());
    char buffer[4096];
    ssize_t n;
    while ((n = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
  }
  close(fd);
  return response;
}

}  // namespace kiln::testing
