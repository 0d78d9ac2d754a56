#include "compiler/tune/measure.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "compiler/backend/toolchain.h"
#include "compiler/tir/flops.h"
#include "runtime/kernel_measure.h"
#include "runtime/support/subprocess.h"

namespace kiln::tune {
namespace {

using Clock = std::chrono::steady_clock;

// The child's answer on its pipe: 'O' + bytes, or 'E' + one status-code byte + message.
std::string Encode(const absl::StatusOr<std::string>& result) {
  if (result.ok()) return "O" + *result;
  return absl::StrCat("E", std::string(1, static_cast<char>(result.status().code())),
                      result.status().message());
}

absl::StatusOr<std::string> Decode(const std::string& bytes) {
  if (!bytes.empty() && bytes[0] == 'O') return bytes.substr(1);
  if (bytes.size() >= 2 && bytes[0] == 'E') {
    return absl::Status(static_cast<absl::StatusCode>(bytes[1]), bytes.substr(2));
  }
  return absl::InternalError("the child exited without an answer");
}

void WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

struct Child {
  size_t index;
  pid_t pid;
  int fd;
  Clock::time_point deadline;
  std::string out;
};

absl::StatusOr<std::string> Reap(Child& c, bool timed_out, double timeout_s) {
  if (timed_out) kill(c.pid, SIGKILL);
  close(c.fd);
  int status = 0;
  while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return absl::DeadlineExceededError(absl::StrCat("killed after ", timeout_s, " s"));
  }
  if (WIFSIGNALED(status)) {
    return absl::InternalError(absl::StrCat("crashed with signal ", WTERMSIG(status), " (",
                                            strsignal(WTERMSIG(status)), ")"));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat("exited with status ", WEXITSTATUS(status)));
  }
  return Decode(c.out);
}

}  // namespace

std::vector<absl::StatusOr<std::string>> RunInChildren(
    const std::vector<std::function<absl::StatusOr<std::string>()>>& work, int jobs,
    double timeout_s) {
  std::vector<absl::StatusOr<std::string>> results(work.size(), absl::InternalError("not run"));
  std::vector<Child> running;
  size_t next = 0;
  const auto timeout =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  while (next < work.size() || !running.empty()) {
    while (next < work.size() && static_cast<int>(running.size()) < std::max(1, jobs)) {
      int fds[2];
      if (pipe2(fds, O_CLOEXEC) != 0) {
        results[next++] = absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
        continue;
      }
      pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        WriteAll(fds[1], Encode(work[next]()));
        _exit(0);  // no destructors: the parent owns everything the child inherited
      }
      close(fds[1]);
      if (pid < 0) {
        close(fds[0]);
        results[next++] = absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
        continue;
      }
      running.push_back({next++, pid, fds[0], Clock::now() + timeout, ""});
    }
    if (running.empty()) break;
    std::vector<pollfd> polls;
    Clock::time_point soonest = running.front().deadline;
    for (const Child& c : running) {
      polls.push_back({c.fd, POLLIN, 0});
      soonest = std::min(soonest, c.deadline);
    }
    auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(soonest - Clock::now());
    poll(polls.data(), polls.size(), static_cast<int>(std::max<int64_t>(0, wait_ms.count()) + 1));
    for (size_t k = running.size(); k-- > 0;) {
      Child& c = running[k];
      bool done = false, timed_out = false;
      if (polls[k].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buffer[1 << 16];
        ssize_t n = read(c.fd, buffer, sizeof buffer);
        if (n > 0) {
          c.out.append(buffer, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          done = true;
        }
      }
      if (!done && Clock::now() >= c.deadline) done = timed_out = true;
      if (!done) continue;
      results[c.index] = Reap(c, timed_out, timeout_s);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  return results;
}

namespace {

class LocalBuilder : public Builder {
 public:
  explicit LocalBuilder(LocalBuilderOptions options) : options_(std::move(options)) {
    if (!options_.build) {
      std::string target = options_.target;
      options_.build = [target](const ir::IRModule& mod) {
        return backend::BuildKernelLibrary(mod, target);
      };
    }
  }

  std::vector<BuildResult> Build(const std::vector<ir::IRModule>& modules) override {
    std::vector<std::function<absl::StatusOr<std::string>()>> work;
    for (const ir::IRModule& mod : modules) {
      work.push_back([this, mod] { return options_.build(mod); });
    }
    std::vector<BuildResult> out;
    for (absl::StatusOr<std::string>& r : RunInChildren(work, options_.jobs, options_.timeout_s)) {
      if (r.ok()) {
        out.push_back({*std::move(r), ""});
      } else {
        out.push_back({"", absl::StrCat("build: ", r.status().message())});
      }
    }
    return out;
  }

 private:
  LocalBuilderOptions options_;
};

class LocalRunner : public Runner {
 public:
  explicit LocalRunner(LocalRunnerOptions options) : options_(options) {}

  std::vector<RunResult> Run(const TuneTask& task, const std::string& reference,
                             const std::vector<std::string>& libraries) override {
    std::vector<RunResult> out;
    for (const std::string& library : libraries) {
      // One child at a time: measurements must not share the machine.
      std::vector<absl::StatusOr<std::string>> r =
          RunInChildren({[&] { return Measure(task, reference, library); }}, 1, options_.timeout_s);
      if (r[0].ok() && r[0]->size() == sizeof(double)) {
        double seconds;
        std::memcpy(&seconds, r[0]->data(), sizeof seconds);
        out.push_back({seconds, ""});
      } else {
        out.push_back({std::nullopt, absl::StrCat("run: ", r[0].ok() ? "a malformed answer"
                                                                     : r[0].status().message())});
      }
    }
    return out;
  }

 private:
  absl::StatusOr<std::string> Measure(const TuneTask& task, const std::string& reference,
                                      const std::string& library) const {
    absl::StatusOr<v1::KernelMeasure> measure = MeasureRequest(task, reference, library, options_);
    if (!measure.ok()) return measure.status();
    absl::StatusOr<double> median = runtime::MeasureKernel(*measure);
    if (!median.ok()) return median.status();
    return std::string(reinterpret_cast<const char*>(&*median), sizeof(double));
  }

  LocalRunnerOptions options_;
};

}  // namespace

namespace {

// A check is a measurement timed once: what both checks below run.
absl::StatusOr<v1::KernelMeasure> CheckRequest(const TuneTask& task, const std::string& reference,
                                               const std::string& library,
                                               const LocalRunnerOptions& options) {
  LocalRunnerOptions once = options;
  once.repeat = 1;
  once.min_repeat_ms = 0;
  return MeasureRequest(task, reference, library, once);
}

}  // namespace

absl::Status CheckCandidate(const TuneTask& task, const std::string& reference,
                            const std::string& library, const LocalRunnerOptions& options) {
  absl::StatusOr<v1::KernelMeasure> measure = CheckRequest(task, reference, library, options);
  if (!measure.ok()) return measure.status();
  std::vector<absl::StatusOr<std::string>> checked =
      RunInChildren({[&]() -> absl::StatusOr<std::string> {
                      absl::StatusOr<double> ran = runtime::MeasureKernel(*measure);
                      if (!ran.ok()) return ran.status();
                      return std::string("ok");
                    }},
                    1, options.timeout_s);
  return checked[0].status();
}

absl::Status CheckCandidateIn(const std::vector<std::string>& agent_command,
                              const v1::TaskConfinement& confinement, const TuneTask& task,
                              const std::string& reference, const std::string& library,
                              const LocalRunnerOptions& options) {
  absl::StatusOr<v1::KernelMeasure> measure = CheckRequest(task, reference, library, options);
  if (!measure.ok()) return measure.status();
  v1::LocalTask local;
  local.mutable_task()->set_kind(v1::JOB_KIND_TUNE);
  *local.mutable_task()->mutable_measure() = *std::move(measure);
  local.set_threads(options.threads);
  *local.mutable_confinement() = confinement;
  std::vector<std::string> argv = agent_command;
  argv.push_back("--run-task");
  runtime::ChildOptions child;
  child.timeout_ms = static_cast<int64_t>(options.timeout_s * 1000);
  absl::StatusOr<runtime::ChildResult> ran =
      runtime::RunChild(argv, local.SerializeAsString(), child);
  if (!ran.ok()) return ran.status();
  v1::TaskResult result;
  if (!ran->exited_ok() || !result.ParseFromString(ran->output)) {
    return absl::InternalError(
        absl::StrCat(argv[0], " ", ran->Describe(child.timeout_ms), ": ", ran->error_tail));
  }
  if (!result.ok()) return absl::InvalidArgumentError(result.error());
  return absl::OkStatus();
}

absl::StatusOr<v1::KernelMeasure> MeasureRequest(const TuneTask& task, const std::string& reference,
                                                 const std::string& library,
                                                 const LocalRunnerOptions& options) {
  ir::PrimFunc f = task.mod->Lookup(task.name).as_ref<ir::PrimFuncNode>();
  if (!f) return absl::InvalidArgumentError(absl::StrCat("task ", task.name, " is no PrimFunc"));
  v1::KernelMeasure m;
  m.set_reference(reference);
  m.set_candidate(library);
  m.set_function(task.name);
  m.set_repeat(options.repeat);
  m.set_min_repeat_ms(options.min_repeat_ms);
  m.set_tolerance(options.tolerance);
  m.set_threads(options.threads);
  m.set_flops(tir::EstimateFlops(f));
  // A tensor per buffer parameter, symbolic dimensions at the representative extent; that extent
  // for a scalar parameter.
  for (const ir::Var& param : f->params) {
    v1::KernelArgument* a = m.add_arguments();
    ir::Buffer buffer = f->BufferOf(param);
    if (!buffer) {
      a->set_is_scalar(true);
      a->set_scalar(kRepresentativeExtent);
      continue;
    }
    a->set_dtype(buffer->dtype.ToString());
    for (const ir::PrimExpr& d : buffer->shape) {
      const int64_t* c = ir::AsConstInt(d);
      a->add_shape(c ? *c : kRepresentativeExtent);
    }
  }
  return m;
}

std::unique_ptr<Builder> MakeLocalBuilder(LocalBuilderOptions options) {
  return std::make_unique<LocalBuilder>(std::move(options));
}

std::unique_ptr<Runner> MakeLocalRunner(LocalRunnerOptions options) {
  return std::make_unique<LocalRunner>(options);
}

}  // namespace kiln::tune
