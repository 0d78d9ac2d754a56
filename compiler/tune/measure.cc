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
#include "runtime/library.h"
#include "runtime/tensor.h"
#include "runtime/time_evaluator.h"

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

// The kernel's arguments: a tensor per buffer parameter (symbolic dimensions at the
// representative extent), filled from a fixed seed; the representative extent for a scalar one.
absl::StatusOr<std::vector<runtime::Value>> RandomArguments(const ir::PrimFunc& f,
                                                            std::vector<runtime::Tensor>* tensors) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<runtime::Value> args;
  for (const ir::Var& param : f->params) {
    ir::Buffer buffer = f->BufferOf(param);
    if (!buffer) {
      args.emplace_back(int64_t{kRepresentativeExtent});
      continue;
    }
    std::vector<int64_t> shape;
    for (const ir::PrimExpr& d : buffer->shape) {
      const int64_t* c = ir::AsConstInt(d);
      shape.push_back(c ? *c : kRepresentativeExtent);
    }
    absl::StatusOr<DLDataType> dtype = runtime::ParseDataType(buffer->dtype.ToString());
    if (!dtype.ok()) return dtype.status();
    absl::StatusOr<runtime::Tensor> t = runtime::Tensor::Empty(shape, *dtype);
    if (!t.ok()) return t.status();
    const int64_t n = t->NumElements();
    if (dtype->code == kDLFloat && dtype->bits == 32) {
      float* p = static_cast<float*>(t->data());
      for (int64_t i = 0; i < n; ++i) p[i] = dist(rng);
    } else {
      std::memset(t->data(), 0, static_cast<size_t>(n) * runtime::DataTypeBytes(*dtype));
    }
    tensors->push_back(*t);
    args.emplace_back(*t);
  }
  return args;
}

// `from`'s contents in new tensors, as arguments in the same order.
absl::StatusOr<std::vector<runtime::Value>> Copy(const std::vector<runtime::Value>& from,
                                                 std::vector<runtime::Tensor>* tensors) {
  std::vector<runtime::Value> out;
  for (const runtime::Value& v : from) {
    const runtime::Tensor* t = v.as_tensor();
    if (t == nullptr) {
      out.push_back(v);
      continue;
    }
    absl::StatusOr<runtime::Tensor> copy = runtime::Tensor::Empty(t->shape(), t->dtype());
    if (!copy.ok()) return copy.status();
    std::memcpy(copy->data(), t->data(), t->NumBytes());
    tensors->push_back(*copy);
    out.emplace_back(*copy);
  }
  return out;
}

absl::Status Compare(const std::vector<runtime::Tensor>& got,
                     const std::vector<runtime::Tensor>& want, double tolerance) {
  for (size_t b = 0; b < want.size(); ++b) {
    if (want[b].dtype().code != kDLFloat || want[b].dtype().bits != 32) continue;
    const float* g = static_cast<const float*>(got[b].data());
    const float* w = static_cast<const float*>(want[b].data());
    for (int64_t i = 0; i < want[b].NumElements(); ++i) {
      if (!(std::abs(g[i] - w[i]) <= tolerance * (1 + std::abs(w[i])))) {
        return absl::DataLossError(absl::StrCat("wrong result: buffer ", b, " element ", i, " is ",
                                                g[i], ", the untuned kernel gives ", w[i]));
      }
    }
  }
  return absl::OkStatus();
}

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
    ir::PrimFunc f = task.mod->Lookup(task.name).as_ref<ir::PrimFuncNode>();
    auto pool = std::make_shared<runtime::ThreadPool>(options_.threads);
    absl::StatusOr<std::shared_ptr<runtime::KernelLibrary>> ref_lib =
        runtime::KernelLibrary::LoadFromMemory(reference, "reference");
    if (!ref_lib.ok()) return ref_lib.status();
    absl::StatusOr<std::shared_ptr<runtime::KernelLibrary>> lib =
        runtime::KernelLibrary::LoadFromMemory(library, "candidate");
    if (!lib.ok()) return lib.status();
    absl::StatusOr<runtime::Function> ref_fn = (*ref_lib)->GetFunction(task.name, pool);
    if (!ref_fn.ok()) return ref_fn.status();
    absl::StatusOr<runtime::Function> fn = (*lib)->GetFunction(task.name, pool);
    if (!fn.ok()) return fn.status();
    std::vector<runtime::Tensor> want, got;
    absl::StatusOr<std::vector<runtime::Value>> want_args = RandomArguments(f, &want);
    if (!want_args.ok()) return want_args.status();
    absl::StatusOr<std::vector<runtime::Value>> args = Copy(*want_args, &got);
    if (!args.ok()) return args.status();
    if (absl::StatusOr<runtime::Value> r = (*ref_fn)(*want_args); !r.ok()) return r.status();
    if (absl::StatusOr<runtime::Value> r = (*fn)(*args); !r.ok()) return r.status();
    if (absl::Status s = Compare(got, want, options_.tolerance); !s.ok()) return s;
    runtime::TimeEvaluatorOptions timing;
    timing.repeat = options_.repeat;
    timing.min_repeat_ms = options_.min_repeat_ms;
    absl::StatusOr<std::vector<double>> times =
        runtime::TimeFunction([&]() -> absl::Status { return (*fn)(*args).status(); }, timing);
    if (!times.ok()) return times.status();
    std::sort(times->begin(), times->end());
    double median = (*times)[times->size() / 2];
    return std::string(reinterpret_cast<const char*>(&median), sizeof median);
  }

  LocalRunnerOptions options_;
};

}  // namespace

std::unique_ptr<Builder> MakeLocalBuilder(LocalBuilderOptions options) {
  return std::make_unique<LocalBuilder>(std::move(options));
}

std::unique_ptr<Runner> MakeLocalRunner(LocalRunnerOptions options) {
  return std::make_unique<LocalRunner>(options);
}

}  // namespace kiln::tune
