// The parallel launch generated code uses (through KilnContext::parallel_for): a fixed pool of
// worker threads that, with the calling thread, split [0, num_tasks) between them. A launch
// from inside a task runs serially on that thread, so nested parallel loops cannot deadlock.
// Idle workers spin briefly before sleeping: kernels are launched back to back, and a futex
// wake-up costs more than a small kernel (bench/runtime_bench.cc).
#ifndef KILN_RUNTIME_THREAD_POOL_H_
#define KILN_RUNTIME_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::runtime {

class ThreadPool {
 public:
  // `num_threads` counts the caller: 1 means no workers (everything runs inline).
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs task(i) for every i in [0, num_tasks), each exactly once; returns when all finished:
  // 0, or the first nonzero task result (remaining tasks still run).
  int32_t ParallelFor(int64_t num_tasks, const std::function<int32_t(int64_t)>& task);

  // Threads of the machine (hardware_concurrency, at least 1).
  static int DefaultThreads();

 private:
  void WorkerLoop();
  void RunTasks();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::atomic<uint64_t> generation_{0};  // bumped per launch
  std::atomic<bool> stopping_{false};
  // The current launch.
  const std::function<int32_t(int64_t)>* task_ = nullptr;
  int64_t num_tasks_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int64_t> finished_{0};
  std::atomic<int32_t> first_error_{0};
  std::atomic<int> active_workers_{0};  // changed under mu_; read by the launcher's polling
  std::mutex launch_mu_;                // one launch at a time per pool
};

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_THREAD_POOL_H_
