// The C++ client library's deadlines and retries against a real kilnd: a submit made while the
// daemon is still starting is retried until it answers; one to a daemon that never comes fails
// with Unavailable after its bounded retries; a call to a peer that never answers ends at its
// deadline.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/kiln_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/service_cluster.h"

namespace kiln::testing {
namespace {

using Clock = std::chrono::steady_clock;

// A loopback TCP socket bound to a free port; listening when `listen_now`.
int BoundSocket(int* port, bool listen_now) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  if (listen_now) listen(fd, 16);
  return fd;
}

std::unique_ptr<client::KilnClient> ClientFor(int port) {
  runtime::ChannelOptions options;
  options.address = absl::StrCat("127.0.0.1:", port);
  absl::StatusOr<std::unique_ptr<client::KilnClient>> c = client::KilnClient::Connect(options);
  EXPECT_TRUE(c.ok()) << c.status();
  return std::move(*c);
}

v1::SubmitCompileRequest MlpRequest() {
  v1::SubmitCompileRequest request;
  *request.mutable_module() = *client::ModuleSourceFromFile("compiler/script/testdata/tvm_mlp.py");
  request.set_target("llvm");
  return request;
}

TEST(ClientLibraryTest, ASubmitWhileTheDaemonStartsIsRetriedUntilItAnswers) {
  int port = 0;
  close(BoundSocket(&port, false));  // a free port, nobody listening yet
  std::unique_ptr<client::KilnClient> client = ClientFor(port);
  std::unique_ptr<Process> daemon;
  std::thread starter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    daemon = std::make_unique<Process>(
        std::vector<std::string>{TestBinaries().kilnd, "--listen", absl::StrCat("127.0.0.1:", port),
                                 "--store", Cluster::TmpPath("retry") + "/store"},
        Cluster::TmpPath("retry") + "/kilnd.log");
  });
  absl::StatusOr<v1::SubmitResponse> submitted = client->SubmitCompile(MlpRequest());
  starter.join();
  ASSERT_TRUE(submitted.ok()) << submitted.status() << "\n" << daemon->Log();
  absl::StatusOr<v1::Job> job = client->Wait(submitted->job().id());
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED) << job->reason();
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(), 0);
}

TEST(ClientLibraryTest, ADaemonThatNeverComesFailsTheSubmitAfterItsWait) {
  int port = 0;
  close(BoundSocket(&port, false));
  std::unique_ptr<client::KilnClient> client = ClientFor(port);
  Clock::time_point start = Clock::now();
  absl::StatusOr<v1::SubmitResponse> submitted = client->SubmitCompile(MlpRequest());
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(submitted.status().code(), absl::StatusCode::kDeadlineExceeded) << submitted.status();
  // It waited for the daemon as long as a submit waits, and not forever.
  EXPECT_GE(seconds, client::KilnClient::kSubmitWaitSeconds - 0.5);
  EXPECT_LT(seconds, client::KilnClient::kSubmitWaitSeconds + 5);
}

TEST(ClientLibraryTest, ACallToAPeerThatNeverAnswersEndsAtItsDeadline) {
  int port = 0;
  int fd = BoundSocket(&port, true);  // accepts connections, never speaks
  std::unique_ptr<client::KilnClient> client = ClientFor(port);
  Clock::time_point start = Clock::now();
  absl::StatusOr<v1::ServerInfo> info = client->ServerInfo(/*timeout_seconds=*/1);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  close(fd);
  EXPECT_FALSE(info.ok());
  EXPECT_THAT(info.status().code(),
              ::testing::AnyOf(absl::StatusCode::kDeadlineExceeded, absl::StatusCode::kUnavailable))
      << info.status();
  EXPECT_LT(seconds, 5);
}

}  // namespace
}  // namespace kiln::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: client_library_test KILND\n");
    return 2;
  }
  kiln::testing::TestBinaries().kilnd = argv[1];
  return RUN_ALL_TESTS();
}
