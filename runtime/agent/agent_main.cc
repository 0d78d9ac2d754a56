// kiln-agent --server ADDR --device-key KEY --trusted-keys PEM [--token FILE] [--tls-ca PEM ...]
// Also its own task child: `kiln-agent --run-task` reads a LocalTask on stdin and writes the
// TaskResult to stdout (runtime/agent/task_runner.h).
#include <sys/prctl.h>
#include <sys/stat.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "runtime/agent/agent.h"
#include "runtime/agent/confine.h"
#include "runtime/agent/task_runner.h"

namespace {

std::atomic<bool> g_stop{false};

void RequestStop(int /*signal*/) { g_stop = true; }

#ifdef KILN_AGENT_TEST_HOOKS
// Test-only (//runtime/agent:kiln-agent-test-hooks): a board that lies about what it ran, as
// KILN_AGENT_LIES says — "negative" tuning times, "nan" profile times, outputs of another
// "shape" — for the tests of what kilnd refuses of an agent's answers.
void Lie(const kiln::v1::LocalTask& task, kiln::v1::TaskResult* result) {
  const char* lie = std::getenv("KILN_AGENT_LIES");
  if (lie == nullptr || !result->ok()) return;
  const std::string what = lie;
  if (what == "negative" && task.task().kind() == kiln::v1::JOB_KIND_TUNE) {
    result->set_measured_seconds(-1);
  } else if (what == "nan" && result->has_profile()) {
    result->mutable_profile()->set_median_seconds(std::nan(""));
  } else if (what == "shape" && result->has_inference()) {
    for (kiln::v1::TensorValue& t : *result->mutable_inference()->mutable_outputs()) {
      t.clear_shape();
      t.add_shape(1000000);  // a million elements said, the real bytes carried
    }
  }
}
#endif

// The task child: reads its input while it may, gives up what a task must not have
// (confine.h), and only then loads code.
int RunTaskChild() {
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  kiln::v1::LocalTask task;
  if (!task.ParseFromString(input)) {
    std::fprintf(stderr, "kiln-agent --run-task: the task on stdin does not parse\n");
    return 1;
  }
  std::string artifact;
  if (!task.artifact_path().empty()) {
    absl::StatusOr<std::string> bytes = kiln::runtime::ReadTextFile(task.artifact_path());
    if (!bytes.ok()) {
      std::fprintf(stderr, "kiln-agent --run-task: %s\n", bytes.status().ToString().c_str());
      return 1;
    }
    artifact = *std::move(bytes);
  }
  absl::StatusOr<std::string> confined = kiln::runtime::ConfineTaskChild(task.confinement());
  if (!confined.ok()) {
    std::fprintf(stderr, "kiln-agent --run-task: cannot confine the task: %s\n",
                 std::string(confined.status().message()).c_str());
    return 1;
  }
  kiln::v1::TaskResult result = kiln::runtime::RunLocalTask(task, artifact);
#ifdef KILN_AGENT_TEST_HOOKS
  Lie(task, &result);
#endif
  std::string out = result.SerializeAsString();
  return std::fwrite(out.data(), 1, out.size(), stdout) == out.size() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  umask(077);  // what it writes (store, keys, cached artifacts) is its owner's alone
  if (argc == 2 && std::strcmp(argv[1], "--run-task") == 0) return RunTaskChild();

  // Not dumpable: a task child of the same user cannot read this process's memory (the token)
  // through /proc or ptrace.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  kiln::runtime::AgentOptions options;
  std::string token_file, trusted_keys_file, task_user = "nobody";
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
  app.add_option("--trusted-keys", trusted_keys_file,
                 "PEM public keys whose signed artifacts run here (kilnd's signing_key.pem.pub; "
                 "old and new during a rotation)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--task-user", task_user, "when run as root: the unprivileged user tasks run as")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  auto fail = [](const absl::Status& s) {
    std::fprintf(stderr, "kiln-agent: %s\n", std::string(s.message()).c_str());
    return 1;
  };
  absl::StatusOr<kiln::runtime::TrustedKeys> trusted =
      kiln::runtime::TrustedKeys::Load(trusted_keys_file);
  if (!trusted.ok()) return fail(trusted.status());
  options.trusted_keys = *std::move(trusted);
  if (!token_file.empty()) {
    // A token others may read is anyone's.
    struct stat st {};
    if (stat(token_file.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
      return fail(absl::FailedPreconditionError(
          absl::StrCat(token_file, " may be read by users other than its owner: chmod 600 it")));
    }
    absl::StatusOr<std::string> token = kiln::runtime::ReadTokenFile(token_file);
    if (!token.ok()) return fail(token.status());
    options.server.token = *token;
  }
  absl::StatusOr<kiln::v1::TaskConfinement> confinement = kiln::runtime::PlanConfinement(
      task_user, {token_file, options.server.tls_key}, !options.task_launcher.empty());
  if (!confinement.ok()) return fail(confinement.status());
  options.confinement = *std::move(confinement);
  options.task_memory_limit_bytes = task_memory_mb << 20;
  std::signal(SIGINT, RequestStop);
  std::signal(SIGTERM, RequestStop);
  kiln::runtime::Agent(options).Run(g_stop);
  std::fprintf(stderr, "kiln-agent: stopped\n");
  return 0;
}
