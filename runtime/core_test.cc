#include <dirent.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/library.h"
#include "runtime/registry.h"
#include "runtime/thread_pool.h"
#include "runtime/time_evaluator.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

int CountOpenFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

Tensor Vector(std::vector<float> values) {
  Tensor t = *Tensor::Empty({static_cast<int64_t>(values.size())}, *ParseDataType("float32"));
  std::copy(values.begin(), values.end(), static_cast<float*>(t.data()));
  return t;
}

TEST(RegistryTest, RegistersLooksUpAndRejectsDuplicates) {
  FunctionRegistry registry;
  ASSERT_TRUE(registry
                  .Register("test.add",
                            [](absl::Span<const Value> args) -> absl::StatusOr<Value> {
                              return Value(*args[0].as_int() + *args[1].as_int());
                            })
                  .ok());
  absl::StatusOr<Function> fn = registry.Get("test.add");
  ASSERT_TRUE(fn.ok());
  std::vector<Value> args = {Value(int64_t{2}), Value(int64_t{40})};
  EXPECT_EQ(*(*fn)(args)->as_int(), 42);
  EXPECT_EQ(registry.Register("test.add", nullptr).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(registry.Get("test.nope").status().message(), HasSubstr("no function 'test.nope'"));
  EXPECT_EQ(registry.Names(), std::vector<std::string>{"test.add"});
}

TEST(ThreadPoolTest, RunsEveryTaskOnceAndReportsTheFirstError) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      int32_t rc = pool.ParallelFor(n, [&](int64_t i) {
        hits[i].fetch_add(1);
        return 0;
      });
      EXPECT_EQ(rc, 0);
      for (int64_t i = 0; i < n; ++i)
        EXPECT_EQ(hits[i].load(), 1) << threads << " threads, task " << i;
    }
    EXPECT_EQ(pool.ParallelFor(10, [](int64_t i) { return i == 3 ? 5 : 0; }), 5);
    // A launch inside a task runs inline instead of deadlocking.
    std::atomic<int> inner{0};
    pool.ParallelFor(4, [&](int64_t) {
      pool.ParallelFor(3, [&](int64_t) {
        inner.fetch_add(1);
        return 0;
      });
      return 0;
    });
    EXPECT_EQ(inner.load(), 12);
  }
}

TEST(ThreadPoolTest, ManyLaunchesInARow) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int launch = 0; launch < 2000; ++launch) {
    pool.ParallelFor(5, [&](int64_t i) {
      sum.fetch_add(i);
      return 0;
    });
  }
  EXPECT_EQ(sum.load(), 2000 * 10);
}

class LibraryTest : public ::testing::Test {
 protected:
  void SetUp() override { bytes_ = ReadFile("runtime/libtest_kernels.so"); }
  std::string bytes_;
};

TEST_F(LibraryTest, LoadsFromMemoryAndRunsKernelsInParallel) {
  int fds = CountOpenFds();
  absl::StatusOr<std::shared_ptr<KernelLibrary>> lib =
      KernelLibrary::LoadFromMemory(bytes_, "test");
  ASSERT_TRUE(lib.ok()) << lib.status();
  // Nothing was written to disk; the memfd stays open while the library is loaded (dlopen knows
  // a library by its /proc/self/fd path, which must not be reused meanwhile).
  EXPECT_EQ(CountOpenFds(), fds + 1);
  auto pool = std::make_shared<ThreadPool>(2);
  absl::StatusOr<Function> add = (*lib)->GetFunction("add_f32", pool);
  ASSERT_TRUE(add.ok()) << add.status();
  lib->reset();  // the function keeps the library loaded
  std::vector<float> a(1001), b(1001);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i) * 0.5f;
    b[i] = 3.0f - static_cast<float>(i);
  }
  Tensor c = Vector(std::vector<float>(1001, 0));
  std::vector<Value> args = {Value(Vector(a)), Value(Vector(b)), Value(c)};
  ASSERT_TRUE((*add)(args).ok());
  const float* out = static_cast<const float*>(c.data());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(out[i], a[i] + b[i]) << i;
  *add = nullptr;  // the last reference: the library is unloaded and its memfd closed
  EXPECT_EQ(CountOpenFds(), fds);
}

TEST_F(LibraryTest, KernelErrorsAndBadArgumentsAreStatuses) {
  std::shared_ptr<KernelLibrary> lib = *KernelLibrary::LoadFromMemory(bytes_, "test");
  Function add = *lib->GetFunction("add_f32", nullptr);
  std::vector<Value> short_args = {Value(Vector({1})), Value(Vector({1, 2})), Value(Vector({0}))};
  EXPECT_THAT(add(short_args).status().message(),
              HasSubstr("test:add_f32: add_f32: the tensors differ in length"));
  std::vector<Value> wrong_kind = {Value(int64_t{1}), Value(Vector({1})), Value(Vector({0}))};
  EXPECT_THAT(add(wrong_kind).status().message(), HasSubstr("argument 0 must be a tensor"));
  std::vector<Value> string_arg = {Value(std::string("x"))};
  EXPECT_THAT(add(string_arg).status().message(), HasSubstr("argument 0 is a string"));
  Function fails = *lib->GetFunction("always_fails", nullptr);
  EXPECT_THAT(fails({}).status().message(), HasSubstr("this kernel always fails"));
  EXPECT_EQ(lib->Lookup("missing").status().code(), absl::StatusCode::kNotFound);
  // Parallel task failures come back as the first nonzero code.
  Tensor counts = *Tensor::Empty({20}, *ParseDataType("int64"));
  std::fill_n(static_cast<int64_t*>(counts.data()), 20, 0);
  auto pool = std::make_shared<ThreadPool>(2);
  Function count = *lib->GetFunction("count_tasks", pool);
  std::vector<Value> count_args = {Value(counts), Value(int64_t{20})};
  EXPECT_THAT(count(count_args).status().message(), HasSubstr("failed with code 7"));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(static_cast<int64_t*>(counts.data())[i], 1);
}

TEST_F(LibraryTest, GarbageIsRejected) {
  EXPECT_THAT(KernelLibrary::LoadFromMemory("not an elf", "junk").status().message(),
              HasSubstr("'junk': not an ELF file"));
  for (size_t keep : {bytes_.size() / 3, bytes_.size() / 2, bytes_.size() - 100}) {
    absl::StatusOr<std::shared_ptr<KernelLibrary>> cut =
        KernelLibrary::LoadFromMemory(bytes_.substr(0, keep), "cut");
    EXPECT_FALSE(cut.ok()) << keep;
    EXPECT_THAT(cut.status().message(), HasSubstr("past the end of the file")) << keep;
  }
  std::string other_machine = bytes_;
  other_machine[18] = static_cast<char>(183);  // e_machine = EM_AARCH64 (or x86-64 on an ARM host)
  other_machine[19] = 0;
  if (other_machine != bytes_) {
    EXPECT_THAT(KernelLibrary::LoadFromMemory(other_machine, "arm").status().message(),
                HasSubstr("machine type"));
  }
}

TEST(TimeEvaluatorTest, RepeatsGrowNumberAndPropagateErrors) {
  int calls = 0;
  TimeEvaluatorOptions options;
  options.warmup = 2;
  options.number = 1;
  options.repeat = 4;
  options.min_repeat_ms = 5;
  absl::StatusOr<std::vector<double>> times = TimeFunction(
      [&] {
        ++calls;
        volatile double x = 0;
        for (int i = 0; i < 1000; ++i) x = x + i;
        return x >= 0 ? absl::OkStatus() : absl::InternalError("negative sum");
      },
      options);
  ASSERT_TRUE(times.ok());
  ASSERT_EQ(times->size(), 4u);
  for (double t : *times) EXPECT_GT(t, 0);
  EXPECT_GT(calls, 2 + 4);  // number grew to reach 5 ms per repeat
  int failing_calls = 0;
  absl::StatusOr<std::vector<double>> failed = TimeFunction(
      [&] { return ++failing_calls == 3 ? absl::InternalError("boom") : absl::OkStatus(); },
      options);
  EXPECT_THAT(failed.status().message(), HasSubstr("boom"));
  options.repeat = 0;
  EXPECT_EQ(TimeFunction([] { return absl::OkStatus(); }, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::runtime
