// kiln: the command-line client. Exit status 0 on success, 1 on a user error (one line on
// stderr), 2 on a usage error — the contract of docs/ARCHITECTURE.md and DESIGN §8.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "proto/kiln/v1/service.grpc.pb.h"
#include "server/build_info.h"

namespace {

constexpr int kExitUserError = 1;
constexpr int kExitUsage = 2;

int PrintLocalVersions() {
  for (const auto& [name, version] : kiln::server::ComponentVersions()) {
    std::printf("%-9s %s\n", name.c_str(), version.c_str());
  }
  return 0;
}

int PrintServerInfo(const std::string& address, int timeout_seconds) {
  auto stub =
      kiln::v1::Kiln::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(timeout_seconds));
  kiln::v1::ServerInfo info;
  grpc::Status status = stub->GetServerInfo(&context, kiln::v1::GetServerInfoRequest(), &info);
  if (!status.ok()) {
    std::fprintf(stderr, "kiln: server %s: %s\n", address.c_str(), status.error_message().c_str());
    return kExitUserError;
  }
  std::printf("server    %s\n", address.c_str());
  std::printf("host      %s\n", info.host_target_triple().c_str());
  for (const auto& component : info.components()) {
    std::printf("%-9s %s\n", component.name().c_str(), component.version().c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kiln: compile, run and benchmark ML models with Kiln"};
  app.require_subcommand(1);

  CLI::App* version = app.add_subcommand("version", "print the versions this client links");
  CLI::App* info = app.add_subcommand("info", "print what a kilnd server runs");
  std::string server_address;
  int timeout_seconds = 10;
  info->add_option("--server", server_address, "kilnd address, host:port")->required();
  info->add_option("--timeout", timeout_seconds, "seconds to wait for the server")
      ->check(CLI::PositiveNumber);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the reason and usage
    return kExitUsage;
  }

  if (*version) return PrintLocalVersions();
  if (*info) return PrintServerInfo(server_address, timeout_seconds);
  return kExitUsage;
}
