#include "runtime/support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kiln::runtime {
namespace {

constexpr size_t kErrorTailBytes = 4096;

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Reads what is available; returns false at end of file.
bool Drain(int fd, std::string* into, size_t keep_tail) {
  char buffer[65536];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      into->append(buffer, static_cast<size_t>(n));
      if (keep_tail > 0 && into->size() > 2 * keep_tail) into->erase(0, into->size() - keep_tail);
      continue;
    }
    if (n == 0) return false;
    return errno == EAGAIN || errno == EINTR;
  }
}

}  // namespace

std::string ChildResult::Describe(int64_t timeout_ms) const {
  switch (outcome) {
    case Outcome::kExited:
      return absl::StrCat("exited with status ", exit_code);
    case Outcome::kSignaled:
      return absl::StrCat("killed by signal ", signal, " (", strsignal(signal), ")");
    case Outcome::kTimedOut:
      return absl::StrCat("timed out after ", timeout_ms, " ms and was killed");
    case Outcome::kCancelled:
      return "cancelled and killed";
  }
  return "ended";
}

std::string SelfExecutablePath() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "";
  return std::string(path, static_cast<size_t>(n));
}

absl::StatusOr<ChildResult> RunChild(const std::vector<std::string>& argv, const std::string& input,
                                     const ChildOptions& options) {
  if (argv.empty()) return absl::InvalidArgumentError("no program to run");
  // Everything the child needs is prepared before fork: between fork and exec a child of a
  // multithreaded process may only make async-signal-safe calls.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    return absl::InternalError("pipe failed");
  }
  const pid_t parent = getpid();
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) return absl::ResourceExhaustedError(absl::StrCat("fork: ", strerror(errno)));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    if (options.memory_limit_bytes > 0) {
      struct rlimit limit;
      limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(options.memory_limit_bytes);
      setrlimit(RLIMIT_AS, &limit);
    }
    execv(args[0], args.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (options.on_start) options.on_start(pid);
  signal(SIGPIPE, SIG_IGN);  // a child that exits early must not take the parent with it
  int in_fd = in_pipe[1], out_fd = out_pipe[0], err_fd = err_pipe[0];
  SetNonBlocking(in_fd);
  SetNonBlocking(out_fd);
  SetNonBlocking(err_fd);

  ChildResult result;
  size_t written = 0;
  if (input.empty()) {
    close(in_fd);
    in_fd = -1;
  }
  bool killed = false;
  auto kill_child = [&](ChildResult::Outcome why) {
    if (killed) return;
    kill(pid, SIGKILL);
    killed = true;
    result.outcome = why;
  };
  int status = 0;
  bool reaped = false;
  while (!reaped) {
    if (out_fd < 0 && err_fd < 0) {
      // Both pipes closed: wait for the exit, still under the deadline.
      pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid || (r < 0 && errno != EINTR)) {
        reaped = true;
        break;
      }
    }
    pollfd fds[3];
    int n = 0;
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    poll(fds, static_cast<nfds_t>(n), 20);
    if (in_fd >= 0) {
      ssize_t w = write(in_fd, input.data() + written, input.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) {
        close(in_fd);
        in_fd = -1;
      }
    }
    if (out_fd >= 0 && !Drain(out_fd, &result.output, 0)) {
      close(out_fd);
      out_fd = -1;
    }
    if (err_fd >= 0 && !Drain(err_fd, &result.error_tail, kErrorTailBytes)) {
      close(err_fd);
      err_fd = -1;
    }
    auto elapsed = std::chrono::steady_clock::now() - start;
    if (options.timeout_ms > 0 && elapsed > std::chrono::milliseconds(options.timeout_ms)) {
      kill_child(ChildResult::Outcome::kTimedOut);
    }
    if (options.cancel != nullptr && options.cancel->load()) {
      kill_child(ChildResult::Outcome::kCancelled);
    }
  }
  if (in_fd >= 0) close(in_fd);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (result.error_tail.size() > kErrorTailBytes) {
    result.error_tail.erase(0, result.error_tail.size() - kErrorTailBytes);
  }
  if (killed) return result;
  if (WIFSIGNALED(status)) {
    result.outcome = ChildResult::Outcome::kSignaled;
    result.signal = WTERMSIG(status);
  } else {
    result.outcome = ChildResult::Outcome::kExited;
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

}  // namespace kiln::runtime
