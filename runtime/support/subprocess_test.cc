#include "runtime/support/subprocess.h"

#include <signal.h>

#include <atomic>
#include <thread>

#include "gtest/gtest.h"

namespace kiln::runtime {
namespace {

TEST(RunChild, FeedsStdinAndCollectsStdout) {
  std::string input(3 << 20, 'x');  // larger than a pipe buffer both ways
  absl::StatusOr<ChildResult> r = RunChild({"/bin/cat"}, input, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->exited_ok());
  EXPECT_EQ(r->output, input);
}

TEST(Child, AStartedChildWaitsForItsInputAndTheDeadlineCountsFromThere) {
  absl::StatusOr<std::unique_ptr<Child>> child =
      Child::Start({"/bin/sh", "-c", "read line; echo got $line"}, 0);
  ASSERT_TRUE(child.ok()) << child.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE((*child)->Alive());
  ChildOptions options;
  options.timeout_ms = 250;  // shorter than the wait above: only the run counts
  pid_t fed = 0;
  options.on_start = [&](pid_t pid) { fed = pid; };
  ChildResult r = (*child)->Run("42\n", options);
  EXPECT_TRUE(r.exited_ok()) << r.Describe(250);
  EXPECT_EQ(r.output, "got 42\n");
  EXPECT_EQ(fed, (*child)->pid());
  EXPECT_LT(r.seconds, 0.25);
}

TEST(Child, ASpareThatDiedIsNotAlive) {
  absl::StatusOr<std::unique_ptr<Child>> child = Child::Start({"/bin/sleep", "30"}, 0);
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_TRUE((*child)->Alive());
  kill((*child)->pid(), SIGKILL);
  for (int i = 0; i < 200 && (*child)->Alive(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_FALSE((*child)->Alive());
}

TEST(RunChild, ReportsExitStatusAndStderr) {
  absl::StatusOr<ChildResult> r = RunChild({"/bin/sh", "-c", "echo oops >&2; exit 3"}, "", {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome, ChildResult::Outcome::kExited);
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->error_tail, "oops\n");
  EXPECT_EQ(r->Describe(0), "exited with status 3");
}

TEST(RunChild, ReportsTheSignalThatKilledIt) {
  absl::StatusOr<ChildResult> r = RunChild({"/bin/sh", "-c", "kill -SEGV $$"}, "", {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome, ChildResult::Outcome::kSignaled);
  EXPECT_EQ(r->signal, SIGSEGV);
  EXPECT_NE(r->Describe(0).find("signal 11"), std::string::npos);
}

TEST(RunChild, KillsAChildPastItsDeadline) {
  ChildOptions options;
  options.timeout_ms = 200;
  // Closing both pipes first must not let the child escape the deadline.
  absl::StatusOr<ChildResult> r =
      RunChild({"/bin/sh", "-c", "exec >&- 2>&-; sleep 30"}, "", options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome, ChildResult::Outcome::kTimedOut);
  EXPECT_LT(r->seconds, 5);
  EXPECT_EQ(r->Describe(200), "timed out after 200 ms and was killed");
}

TEST(RunChild, CancelKillsTheChild) {
  std::atomic<bool> cancel{false};
  ChildOptions options;
  options.cancel = &cancel;
  pid_t started = 0;
  options.on_start = [&](pid_t pid) { started = pid; };
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  absl::StatusOr<ChildResult> r = RunChild({"/bin/sleep", "30"}, "", options);
  canceller.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(started, 0);
  EXPECT_EQ(r->outcome, ChildResult::Outcome::kCancelled);
}

TEST(RunChild, MemoryLimitStopsARunawayChild) {
  ChildOptions options;
  options.memory_limit_bytes = 64 << 20;
  // head -c of 256 MiB into one shell variable needs more than the limit.
  absl::StatusOr<ChildResult> r = RunChild(
      {"/bin/sh", "-c", "x=$(head -c 268435456 /dev/zero | tr '\\0' a); echo ${#x}"}, "", options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->exited_ok() && r->output == "268435456\n");
}

TEST(RunChild, AMissingProgramExits127) {
  absl::StatusOr<ChildResult> r = RunChild({"/nonexistent/program"}, "", {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 127);
}

}  // namespace
}  // namespace kiln::runtime
