// Starts a real kilnd server on a loopback port and talks to it over gRPC.
#include "server/server.h"

#include <grpcpp/grpcpp.h>

#include <map>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "proto/kiln/v1/service.grpc.pb.h"
#include "server/service_edge.h"
#include "server/worker_frames.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

ServerOptions Options(const std::string& address) {
  ServerOptions options;
  options.listen_address = address;
  options.store_dir = absl::StrCat(getenv("TEST_TMPDIR"), "/store");
  options.jobs.worker_path = "server/kiln-worker";
  options.drain_timeout_ms = 0;
  return options;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<KilnServer>> server = KilnServer::Start(Options("127.0.0.1:0"));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                   grpc::InsecureChannelCredentials());
  }

  std::unique_ptr<KilnServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(ServerTest, HealthCheckReportsServing) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::ClientContext context;
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = health->Check(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST_F(ServerTest, HealthCheckOfUnknownServiceIsNotFound) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::ClientContext context;
  grpc::health::v1::HealthCheckRequest request;
  request.set_service("no.such.Service");
  grpc::health::v1::HealthCheckResponse response;
  EXPECT_EQ(health->Check(&context, request, &response).error_code(), grpc::NOT_FOUND);
}

TEST_F(ServerTest, ServerInfoNamesLinkedToolchain) {
  auto kiln = kiln::v1::Kiln::NewStub(channel_);
  grpc::ClientContext context;
  kiln::v1::ServerInfo info;
  grpc::Status status = kiln->GetServerInfo(&context, kiln::v1::GetServerInfoRequest(), &info);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(info.compiler_version().empty());
  EXPECT_FALSE(info.host_target_triple().empty());
  std::map<std::string, std::string> versions;
  for (const auto& component : info.components()) versions[component.name()] = component.version();
  EXPECT_THAT(versions["llvm"], StartsWith("16."));
  EXPECT_THAT(versions["grpc"], StartsWith("1."));
  EXPECT_THAT(versions["protobuf"], StartsWith("3."));
  EXPECT_THAT(versions["abseil"], StartsWith("lts_"));
  EXPECT_EQ(versions["kiln"], info.compiler_version());
}

TEST(ServerStartTest, ReportsAddressThatCannotBeBound) {
  absl::StatusOr<std::unique_ptr<KilnServer>> server = KilnServer::Start(Options("256.1.2.3:1"));
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(server.status().message(), HasSubstr("256.1.2.3:1"));
}

TEST(CandidateCheckerTest, ParsedCheckedOrRefusedByName) {
  std::map<std::string, std::vector<std::string>> checkers;
  ASSERT_TRUE(AddCandidateChecker("aarch64=/bin/sh -c true", &checkers).ok());
  EXPECT_EQ(checkers["aarch64"], (std::vector<std::string>{"/bin/sh", "-c", "true"}));
  ASSERT_TRUE(AddCandidateChecker("riscv64=agent", &checkers).ok());
  EXPECT_TRUE(checkers.at("riscv64").empty());  // the agents' own check, as the operator says
  for (const char* bad : {"aarch64", "=/bin/sh", "aarch64=", "aarch64=/no/such/qemu agent"}) {
    absl::Status s = AddCandidateChecker(bad, &checkers);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr("--candidate-checker")) << bad;
  }
  EXPECT_THAT(AddCandidateChecker("aarch64=/no/such/qemu x", &checkers).message(),
              HasSubstr("/no/such/qemu is no executable file"));
}

// Issue 52, finding 6: a diagnostic quoting a client's bytes is made valid UTF-8 before it goes
// into a message (a proto3 string that is not UTF-8 does not parse).
TEST(ValidUtf8Test, KeepsCharactersAndReplacesWhatIsNone) {
  EXPECT_EQ(ValidUtf8("plain ascii"), "plain ascii");
  EXPECT_EQ(ValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5");
  EXPECT_EQ(ValidUtf8("half \xc3"), "half \xef\xbf\xbd");
  EXPECT_EQ(ValidUtf8("\xa9x"), "\xef\xbf\xbdx");
  EXPECT_EQ(ValidUtf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");                  // overlong '/'
  EXPECT_EQ(ValidUtf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
}

// Issue 52, finding 2: each download holds a server thread while its reader is slow; one client
// (or agent) streams at most so many at once, and a finished one gives its slot back.
TEST(StreamSlotsTest, AtMostSoManyPerClientAndGivenBack) {
  StreamSlots slots(2);
  absl::StatusOr<StreamSlots::Slot> a = slots.Acquire("alice");
  absl::StatusOr<StreamSlots::Slot> b = slots.Acquire("alice");
  ASSERT_TRUE(a.ok() && b.ok());
  absl::StatusOr<StreamSlots::Slot> third = slots.Acquire("alice");
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(third.status().message(), HasSubstr("--max-downloads-per-client"));
  EXPECT_TRUE(slots.Acquire("bob").ok());  // another client's are its own
  { absl::StatusOr<StreamSlots::Slot> gone = std::move(a); }
  EXPECT_TRUE(slots.Acquire("alice").ok());
}

}  // namespace
}  // namespace kiln::server
