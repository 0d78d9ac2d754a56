// Hostile load end to end (issue 52): what a client can do to kilnd with connections alone.
// Real kilnd processes on loopback.
//
// Arguments: kilnd, kiln-agent, kiln (the binaries under test).
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "tests/service_test_util.h"

namespace kiln::testing {
namespace {

// Up to `n` TCP connections to `address`'s port that never send a byte (fewer where a connect
// fails: the listener is gone, or this process ran out).
std::vector<int> OpenIdle(const std::string& address, int n) {
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(port));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
      close(fd);
      break;
    }
    fds.push_back(fd);
  }
  return fds;
}

void CloseAll(std::vector<int>& fds) {
  for (int fd : fds) close(fd);
  fds.clear();
}

// This process holds the connections: its own soft limit up to the hard one.
void RaiseOwnDescriptorLimit() {
  rlimit files{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &files), 0);
  files.rlim_cur = files.rlim_max;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &files), 0);
  ASSERT_GE(files.rlim_cur, 2048u) << "the test needs 1,100 descriptors and kilnd as many";
}

using HostileLoadTest = ClusterTest;

// Finding 1: about 1,100 idle connections exhausted the 1,024 descriptors a service gets, and
// gRPC's listener died. kilnd raises its soft limit to the hard one at start: 1,100 idle
// connections held, a compile is answered beside them and after them.
TEST_F(HostileLoadTest, ElevenHundredIdleConnectionsAndACompileBesideThem) {
  RaiseOwnDescriptorLimit();
  StartWithAgents("idle_flood", 0);
  std::vector<int> idle = OpenIdle(cluster_->address(), 1100);
  ASSERT_EQ(idle.size(), 1100u);
  v1::Job beside = CompileOk(*client_, CompileRequest(kMlp));
  CloseAll(idle);
  v1::SubmitCompileRequest other = CompileRequest(kCnn);
  v1::Job after = CompileOk(*client_, other);
  EXPECT_NE(after.artifact_digest(), beside.artifact_digest());
}

// Finding 1, past any limit: when the descriptors run out anyway, gRPC closes its listener for
// good. kilnd does not stay alive serving nobody: it says so, turns NOT_SERVING and exits with
// an error, for its supervisor to start it again (Restart=on-failure).
TEST_F(HostileLoadTest, ADeadListenerStopsKilndForItsSupervisor) {
  RaiseOwnDescriptorLimit();
  StartWithAgents("fd_exhaustion", 0);
  rlimit low{256, 256};  // the descriptors kilnd may have, lowered under it
  ASSERT_EQ(prlimit(cluster_->daemon().pid(), RLIMIT_NOFILE, &low, nullptr), 0);
  std::vector<int> flood = OpenIdle(cluster_->address(), 600);
  EXPECT_TRUE(cluster_->daemon().WaitForLog("the gRPC listener failed", 60000).ok())
      << cluster_->daemon().Log();
  CloseAll(flood);
  EXPECT_EQ(cluster_->daemon().Wait(60000), 1);
}

}  // namespace
}  // namespace kiln::testing
