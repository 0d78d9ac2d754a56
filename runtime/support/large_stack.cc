#include "runtime/support/large_stack.h"

#include <malloc.h>
#include <pthread.h>

namespace kiln::runtime {
namespace {

struct Job {
  const std::function<int()>* work;
  int result = 0;
};

void* RunJob(void* arg) {
  auto* job = static_cast<Job*>(arg);
  job->result = (*job->work)();
  return nullptr;
}

// The size of the calling thread's stack, or 0 when it cannot be told.
size_t CurrentStackBytes() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return 0;
  size_t bytes = 0;
  void* base = nullptr;
  pthread_attr_getstack(&attr, &base, &bytes);
  pthread_attr_destroy(&attr);
  return bytes;
}

}  // namespace

int RunWithStack(size_t stack_bytes, const std::function<int()>& work) {
  if (CurrentStackBytes() >= stack_bytes) return work();
  Job job{&work};
  pthread_attr_t attr;
  pthread_t thread;
  bool started = pthread_attr_init(&attr) == 0 &&
                 pthread_attr_setstacksize(&attr, stack_bytes) == 0 &&
                 pthread_create(&thread, &attr, RunJob, &job) == 0;
  pthread_attr_destroy(&attr);
  if (!started) return work();
  pthread_join(thread, nullptr);
  return job.result;
}

int RunCompilerProcess(const std::function<int()>& work) {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  return RunWithStack(kCompilerStackBytes, work);
}

}  // namespace kiln::runtime
