#include "runtime/support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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

absl::StatusOr<std::unique_ptr<Child>> Child::Start(const std::vector<std::string>& argv,
                                                    int64_t memory_limit_bytes) {
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
  pid_t pid = fork();
  if (pid < 0) return absl::ResourceExhaustedError(absl::StrCat("fork: ", strerror(errno)));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    // Nothing else of the parent's (its connections, its files) reaches the child, whatever
    // flags they were opened with.
    close_range(3, ~0U, 0);
    if (memory_limit_bytes > 0) {
      struct rlimit limit;
      limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(memory_limit_bytes);
      setrlimit(RLIMIT_AS, &limit);
    }
    execv(args[0], args.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  signal(SIGPIPE, SIG_IGN);  // a child that exits early must not take the parent with it
  std::unique_ptr<Child> child(new Child());
  child->pid_ = pid;
  child->in_fd_ = in_pipe[1];
  child->out_fd_ = out_pipe[0];
  child->err_fd_ = err_pipe[0];
  // Readable once the child exits, so waiting for the exit needs no polling interval.
  child->exit_fd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  SetNonBlocking(child->in_fd_);
  SetNonBlocking(child->out_fd_);
  SetNonBlocking(child->err_fd_);
  return child;
}

Child::~Child() {
  if (!reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  for (int fd : {in_fd_, out_fd_, err_fd_, exit_fd_}) {
    if (fd >= 0) close(fd);
  }
}

bool Child::Alive() {
  if (reaped_) return false;
  int status;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return true;
  reaped_ = true;
  return false;
}

ChildResult Child::Run(const std::string& input, const ChildOptions& options) {
  auto start = std::chrono::steady_clock::now();
  if (options.on_start) options.on_start(pid_);
  ChildResult result;
  std::string pending = input;  // bytes still to write to stdin
  size_t written = 0;
  const bool conversation = static_cast<bool>(options.on_output);
  if (input.empty() && !conversation && in_fd_ >= 0) {
    close(in_fd_);
    in_fd_ = -1;
  }
  bool killed = false;
  auto kill_child = [&](ChildResult::Outcome why) {
    if (killed) return;
    kill(pid_, SIGKILL);
    killed = true;
    result.outcome = why;
  };
  int status = 0;
  while (!reaped_) {
    if (out_fd_ < 0 && err_fd_ < 0) {
      // Both pipes closed: wait for the exit, still under the deadline.
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_ || (r < 0 && errno != EINTR)) {
        reaped_ = true;
        break;
      }
    }
    pollfd fds[4];
    int n = 0;
    if (out_fd_ >= 0) fds[n++] = {out_fd_, POLLIN, 0};
    if (err_fd_ >= 0) fds[n++] = {err_fd_, POLLIN, 0};
    if (in_fd_ >= 0 && written < pending.size()) fds[n++] = {in_fd_, POLLOUT, 0};
    if (exit_fd_ >= 0 && out_fd_ < 0 && err_fd_ < 0) fds[n++] = {exit_fd_, POLLIN, 0};
    // Without a pidfd, a short interval once the pipes are closed bounds the wait for the exit.
    int interval_ms = (exit_fd_ < 0 && out_fd_ < 0 && err_fd_ < 0) ? 2 : 20;
    poll(fds, static_cast<nfds_t>(n), interval_ms);
    if (in_fd_ >= 0 && written < pending.size()) {
      ssize_t w = write(in_fd_, pending.data() + written, pending.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if ((w < 0 && errno != EAGAIN && errno != EINTR) ||
          (written == pending.size() && !conversation)) {
        close(in_fd_);
        in_fd_ = -1;
      }
    }
    size_t before = result.output.size();
    if (out_fd_ >= 0 && !Drain(out_fd_, &result.output, 0)) {
      close(out_fd_);
      out_fd_ = -1;
    }
    if (conversation && result.output.size() != before) {
      std::string reply = options.on_output(&result.output);
      if (!reply.empty() && in_fd_ >= 0) {
        pending.erase(0, written);
        written = 0;
        pending += reply;
      }
    }
    if (err_fd_ >= 0 && !Drain(err_fd_, &result.error_tail, kErrorTailBytes)) {
      close(err_fd_);
      err_fd_ = -1;
    }
    auto elapsed = std::chrono::steady_clock::now() - start;
    if (options.timeout_ms > 0 && elapsed > std::chrono::milliseconds(options.timeout_ms)) {
      kill_child(ChildResult::Outcome::kTimedOut);
    }
    if (options.cancel != nullptr && options.cancel->load()) {
      kill_child(ChildResult::Outcome::kCancelled);
    }
  }
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

absl::StatusOr<ChildResult> RunChild(const std::vector<std::string>& argv, const std::string& input,
                                     const ChildOptions& options) {
  absl::StatusOr<std::unique_ptr<Child>> child = Child::Start(argv, options.memory_limit_bytes);
  if (!child.ok()) return child.status();
  return (*child)->Run(input, options);
}

}  // namespace kiln::runtime
