// kiln-agent --server ADDR --device-key KEY [--token FILE] [--tls-ca PEM ...]
// Also its own task child: `kiln-agent --run-task` reads a LocalTask on stdin and writes the
// TaskResult to stdout (runtime/agent/task_runner.h).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <string>

#include "CLI/CLI.hpp"
#include "runtime/agent/agent.h"
#include "runtime/agent/task_runner.h"

namespace {

std::atomic<bool> g_stop{false};

void RequestStop(int /*signal*/) { g_stop = true; }

int RunTaskChild() {
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  kiln::v1::LocalTask task;
  if (!task.ParseFromString(input)) {
    std::fprintf(stderr, "kiln-agent --run-task: the task on stdin does not parse\n");
    return 1;
  }
  std::string out = kiln::runtime::RunLocalTask(task).SerializeAsString();
  return std::fwrite(out.data(), 1, out.size(), stdout) == out.size() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--run-task") == 0) return RunTaskChild();

  kiln::runtime::AgentOptions options;
  std::string token_file;
  int64_t task_memory_mb = 4096;
  const char* home = std::getenv("HOME");
  options.cache_dir = std::string(home ? home : "/tmp") + "/.cache/kiln/agent";
  CLI::App app{"kiln-agent: runs Kiln artifacts for kilnd on this device"};
  app.add_option("--server", options.server.address, "kilnd address, host:port")->required();
  app.add_option("--device-key", options.device_key, "the key clients name this device by")
      ->required();
  app.add_option("--token", token_file, "file holding an agent token");
  app.add_option("--tls-ca", options.server.tls_ca, "PEM of the CA that signed kilnd's certificate")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-cert", options.server.tls_cert, "PEM client certificate (mutual TLS)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", options.server.tls_key, "PEM client key (mutual TLS)")
      ->check(CLI::ExistingFile);
  app.add_option("--cache-dir", options.cache_dir, "where verified artifacts are kept")
      ->capture_default_str();
  app.add_option("--task-memory-mb", task_memory_mb, "address-space limit of a task (0: none)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--threads", options.threads, "kernel threads per task (0: one per core)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--task-launcher", options.task_launcher,
                 "path of a program that starts each task child (/usr/bin/qemu-aarch64 for an "
                 "agent emulated by qemu-user where binfmt_misc is not set up)");
  app.add_option("--max-backoff-ms", options.max_backoff_ms, "longest wait between reconnects")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (!token_file.empty()) {
    absl::StatusOr<std::string> token = kiln::runtime::ReadTokenFile(token_file);
    if (!token.ok()) {
      std::fprintf(stderr, "kiln-agent: %s\n", std::string(token.status().message()).c_str());
      return 1;
    }
    options.server.token = *token;
  }
  options.task_memory_limit_bytes = task_memory_mb << 20;
  std::signal(SIGINT, RequestStop);
  std::signal(SIGTERM, RequestStop);
  kiln::runtime::Agent(options).Run(g_stop);
  std::fprintf(stderr, "kiln-agent: stopped\n");
  return 0;
}
