// Running untrusted work in a child process: kilnd's compile workers and kiln-agent's task
// children. The child gets a memory limit, dies with its parent, is fed `input` on stdin and
// has its stdout collected; a child past its deadline, or cancelled, is killed with SIGKILL.
// Whatever the child does — crash, hang, allocate without bound — costs only the child.
#ifndef KILN_RUNTIME_SUPPORT_SUBPROCESS_H_
#define KILN_RUNTIME_SUPPORT_SUBPROCESS_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::runtime {

struct ChildOptions {
  int64_t memory_limit_bytes = 0;  // RLIMIT_AS; 0 for none (RunChild only: set at start)
  int64_t timeout_ms = 0;          // 0 for none; counted from when the input is fed
  // Polled while the child runs; when it turns true the child is killed.
  const std::atomic<bool>* cancel = nullptr;
  // Called with the child's pid once it runs (for progress reports).
  std::function<void(pid_t)> on_start;
  // A conversation instead of one input: called whenever the child's stdout grew, it may take
  // complete messages off the front of `output` and returns bytes for the child's stdin (empty
  // for none). While it is set, stdin stays open until the child exits.
  std::function<std::string(std::string* output)> on_output;
};

struct ChildResult {
  enum class Outcome { kExited, kSignaled, kTimedOut, kCancelled };
  Outcome outcome = Outcome::kExited;
  int exit_code = 0;       // kExited
  int signal = 0;          // kSignaled
  std::string output;      // everything written to stdout
  std::string error_tail;  // the last 4 KiB written to stderr
  double seconds = 0;      // wall time

  bool exited_ok() const { return outcome == Outcome::kExited && exit_code == 0; }
  // "exited with status 3", "killed by signal 11 (Segmentation fault)", "timed out after 2000 ms
  // and was killed", "cancelled and killed".
  std::string Describe(int64_t timeout_ms) const;
};

// A started child waiting for its input. Starting one ahead of need takes the process start
// (exec, dynamic loading, static initialization) off the critical path of the work it will do.
class Child {
 public:
  // Starts argv[0] (a path) with `argv` and an address-space limit (0 for none).
  static absl::StatusOr<std::unique_ptr<Child>> Start(const std::vector<std::string>& argv,
                                                      int64_t memory_limit_bytes);
  ~Child();  // kills and reaps a child that is still there
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  // False once it has exited (a spare that died while waiting must not be given work).
  bool Alive();
  // Feeds `input` on stdin and collects stdout until the child exits, under the options'
  // timeout and cancel flag. Call once.
  ChildResult Run(const std::string& input, const ChildOptions& options);

 private:
  Child() = default;
  pid_t pid_ = -1;
  int in_fd_ = -1, out_fd_ = -1, err_fd_ = -1;
  int exit_fd_ = -1;  // a pidfd, when the kernel has them
  bool reaped_ = false;
};

// Child::Start + Child::Run. Fails only when the child cannot be started.
absl::StatusOr<ChildResult> RunChild(const std::vector<std::string>& argv, const std::string& input,
                                     const ChildOptions& options);

// The path of the running executable (/proc/self/exe, resolved).
std::string SelfExecutablePath();

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_SUPPORT_SUBPROCESS_H_
