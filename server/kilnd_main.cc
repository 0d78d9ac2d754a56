// kilnd: the Kiln compilation daemon.
#include <csignal>
#include <cstdio>
#include <thread>

#include "CLI/CLI.hpp"
#include "server/server.h"

namespace {

// Set by the signal handler; a watcher thread turns it into a graceful shutdown, since
// grpc::Server::Shutdown is not async-signal-safe.
volatile std::sig_atomic_t g_stop_requested = 0;

void RequestStop(int /*signal*/) { g_stop_requested = 1; }

}  // namespace

int main(int argc, char** argv) {
  kiln::server::ServerOptions options;
  CLI::App app{"kilnd: the Kiln compilation daemon"};
  app.add_option("--listen", options.listen_address, "host:port to serve gRPC on")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  absl::StatusOr<std::unique_ptr<kiln::server::KilnServer>> server =
      kiln::server::KilnServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "kilnd: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  std::printf("kilnd: listening on port %d\n", (*server)->port());
  std::fflush(stdout);

  std::signal(SIGINT, RequestStop);
  std::signal(SIGTERM, RequestStop);
  std::thread watcher([&] {
    while (!g_stop_requested) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (*server)->Shutdown();
  });
  (*server)->Wait();
  watcher.join();
  std::printf("kilnd: stopped\n");
  return 0;
}
