#include "runtime/thread_pool.h"

#include <algorithm>
#include <chrono>

namespace kiln::runtime {
namespace {
thread_local bool in_parallel_task = false;

// How long an idle worker polls for the next launch before blocking.
constexpr std::chrono::microseconds kSpin(200);

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls `waiting` for up to kSpin; the caller blocks afterwards if it still holds.
template <typename Pred>
void SpinWhile(Pred waiting) {
  auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0; waiting(); ++i) {
    CpuRelax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return;
  }
}
}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 1; i < std::max(1, num_threads); ++i)
    workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

int ThreadPool::DefaultThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

void ThreadPool::RunTasks() {
  bool saved = in_parallel_task;
  in_parallel_task = true;
  const std::function<int32_t(int64_t)>& task = *task_;
  int64_t done = 0;
  for (int64_t i = next_.fetch_add(1); i < num_tasks_; i = next_.fetch_add(1)) {
    int32_t rc = task(i);
    if (rc != 0) {
      int32_t zero = 0;
      first_error_.compare_exchange_strong(zero, rc);
    }
    ++done;
  }
  in_parallel_task = saved;
  if (done > 0 && finished_.fetch_add(done) + done == num_tasks_) {
    std::lock_guard<std::mutex> lock(mu_);
    done_.notify_all();
  }
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  while (true) {
    SpinWhile([&] { return generation_.load(std::memory_order_acquire) == seen && !stopping_; });
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      if (task_ == nullptr) continue;  // that launch already completed without us
      ++active_workers_;
    }
    RunTasks();
    {
      std::lock_guard<std::mutex> lock(mu_);
      --active_workers_;
    }
    done_.notify_all();
  }
}

int32_t ThreadPool::ParallelFor(int64_t num_tasks, const std::function<int32_t(int64_t)>& task) {
  if (num_tasks <= 0) return 0;
  if (workers_.empty() || num_tasks == 1 || in_parallel_task) {
    int32_t first = 0;
    for (int64_t i = 0; i < num_tasks; ++i) {
      int32_t rc = task(i);
      if (rc != 0 && first == 0) first = rc;
    }
    return first;
  }
  std::lock_guard<std::mutex> launch(launch_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    task_ = &task;
    num_tasks_ = num_tasks;
    next_ = 0;
    finished_ = 0;
    first_error_ = 0;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  RunTasks();
  // Wait until every task ran and no worker still holds a reference to this launch: polling
  // first, as the workers do (the others' last tasks are usually about to finish, and a
  // futex wake-up of this thread would cost more than a small kernel), then blocking.
  SpinWhile([&] { return finished_.load() != num_tasks || active_workers_.load() != 0; });
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return finished_.load() == num_tasks && active_workers_ == 0; });
  task_ = nullptr;
  return first_error_.load();
}

}  // namespace kiln::runtime
