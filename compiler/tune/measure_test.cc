// The local builder and runner on real kernels: correct candidates are timed, and a failing
// build, a crashing or hanging child and a wrong kernel are recorded as errors, not fatal.
#include "compiler/tune/measure.h"

#include <csignal>
#include <thread>

#include "compiler/backend/toolchain.h"
#include "compiler/testing/schedule_workloads.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tune/space.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tune {
namespace {

using ::testing::HasSubstr;

TuneTask MatmulTask() {
  absl::StatusOr<ir::IRModule> mod = tir::testing::Parse(tir::testing::MatmulScript(32, 32, 32));
  EXPECT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<TuneTask> task = TaskFromPrimFunc(*mod, "matmul");
  EXPECT_TRUE(task.ok()) << task.status();
  return *task;
}

TEST(RunInChildrenTest, ResultsErrorsCrashesAndTimeoutsInOrder) {
  std::vector<std::function<absl::StatusOr<std::string>()>> work = {
      [] { return std::string(200000, 'x'); },  // more than a pipe holds
      []() -> absl::StatusOr<std::string> { return absl::InvalidArgumentError("no good"); },
      []() -> absl::StatusOr<std::string> {
        std::raise(SIGSEGV);
        return std::string();
      },
      []() -> absl::StatusOr<std::string> {
        std::this_thread::sleep_for(std::chrono::seconds(30));
        return std::string();
      },
  };
  auto start = std::chrono::steady_clock::now();
  std::vector<absl::StatusOr<std::string>> r = RunInChildren(work, 2, 1.0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_EQ(r.size(), 4u);
  ASSERT_TRUE(r[0].ok());
  EXPECT_EQ(r[0]->size(), 200000u);
  EXPECT_EQ(r[1].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r[1].status().message(), "no good");
  EXPECT_THAT(r[2].status().message(), HasSubstr("signal 11"));
  EXPECT_EQ(r[3].status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(MeasureTest, CandidatesAreBuiltCheckedAndTimed) {
  TuneTask task = MatmulTask();
  std::vector<ir::IRModule> mods = {tir::ApplyDefaultSchedule(task.mod, task.policy)};
  for (uint64_t seed : {1, 2}) mods.push_back(ScheduledModule(*GenerateSchedule(task, seed)));
  std::unique_ptr<Builder> builder = MakeLocalBuilder({});
  std::vector<BuildResult> built = builder->Build(mods);
  ASSERT_EQ(built.size(), 3u);
  std::vector<std::string> libs;
  for (const BuildResult& b : built) {
    ASSERT_EQ(b.error, "");
    libs.push_back(b.library);
  }
  std::unique_ptr<Runner> runner = MakeLocalRunner({.min_repeat_ms = 2});
  std::vector<RunResult> ran = runner->Run(task, libs[0], libs);
  ASSERT_EQ(ran.size(), 3u);
  for (const RunResult& r : ran) {
    ASSERT_TRUE(r.seconds.has_value()) << r.error;
    EXPECT_GT(*r.seconds, 0);
    EXPECT_LT(*r.seconds, 0.1);
  }
}

TEST(MeasureTest, FailingCrashingAndHangingBuildsAreRecorded) {
  TuneTask task = MatmulTask();
  int call = 0;
  LocalBuilderOptions options;
  options.timeout_s = 1;
  options.build = [&call](const ir::IRModule&) -> absl::StatusOr<std::string> {
    // The counter is the parent's, copied into each child at fork: 0, 1, 2 in turn.
    switch (call) {
      case 0:
        return absl::InternalError("the linker failed");
      case 1:
        std::abort();
      default:
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  };
  std::unique_ptr<Builder> builder = MakeLocalBuilder(options);
  std::vector<BuildResult> built;
  for (int k = 0; k < 3; ++k, ++call) {
    std::vector<BuildResult> one = builder->Build({task.mod});
    built.push_back(one[0]);
  }
  EXPECT_THAT(built[0].error, HasSubstr("the linker failed"));
  EXPECT_THAT(built[1].error, HasSubstr("signal 6"));
  EXPECT_THAT(built[2].error, HasSubstr("killed after 1 s"));
}

TEST(MeasureTest, WrongKernelIsAnErrorNotATime) {
  TuneTask task = MatmulTask();
  absl::StatusOr<std::string> reference =
      backend::BuildKernelLibrary(tir::ApplyDefaultSchedule(task.mod, task.policy), "llvm");
  ASSERT_TRUE(reference.ok());
  // A "matmul" that adds instead of multiplying.
  absl::StatusOr<ir::IRModule> wrong = tir::testing::Parse(R"(
@T.prim_func
def matmul(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    for i, j, k in T.grid(32, 32, 32):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + (A[vi, vk] + B[vk, vj])
)");
  ASSERT_TRUE(wrong.ok()) << wrong.status();
  absl::StatusOr<std::string> bad = backend::BuildKernelLibrary(*wrong, "llvm");
  ASSERT_TRUE(bad.ok()) << bad.status();
  std::vector<RunResult> ran = MakeLocalRunner({})->Run(task, *reference, {*bad, "garbage"});
  ASSERT_EQ(ran.size(), 2u);
  EXPECT_FALSE(ran[0].seconds.has_value());
  EXPECT_THAT(ran[0].error, HasSubstr("wrong result"));
  EXPECT_FALSE(ran[1].seconds.has_value());
  EXPECT_THAT(ran[1].error, HasSubstr("run: "));
  // The check alone, as kiln-worker makes it of what an agent reported.
  EXPECT_THAT(CheckCandidate(task, *reference, *bad, {}).message(), HasSubstr("wrong result"));
  EXPECT_TRUE(CheckCandidate(task, *reference, *reference, {}).ok());
  // The same in a kiln-agent's task child (for a board's target: the agent built for it, under
  // an emulator; here the host's), confined as it would be on the board.
  const std::vector<std::string> agent = {"runtime/agent/kiln-agent"};
  v1::TaskConfinement confinement;
  confinement.set_uid(65534);  // nobody, where this runs as root
  confinement.set_gid(65534);
  absl::Status in_agent = CheckCandidateIn(agent, confinement, task, *reference, *bad, {});
  EXPECT_EQ(in_agent.code(), absl::StatusCode::kInvalidArgument) << in_agent;
  EXPECT_THAT(in_agent.message(), HasSubstr("wrong result"));
  in_agent = CheckCandidateIn(agent, confinement, task, *reference, *reference, {});
  EXPECT_TRUE(in_agent.ok()) << in_agent;
  absl::Status no_agent =
      CheckCandidateIn({"/nonexistent/kiln-agent"}, confinement, task, *reference, *bad, {});
  EXPECT_FALSE(no_agent.ok());
}

}  // namespace
}  // namespace kiln::tune
