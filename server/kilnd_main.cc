// kilnd: the Kiln compilation daemon. Every flag can also come from a config file
// (--config FILE, TOML or INI: `listen = "0.0.0.0:7077"`); flags on the command line win.
#include <malloc.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/debugging/failure_signal_handler.h"
#include "absl/debugging/symbolize.h"
#include "server/log.h"
#include "server/server.h"

namespace {

// Set by the signal handler; a watcher thread turns it into a graceful shutdown, since
// draining is not async-signal-safe.
volatile std::sig_atomic_t g_stop_requested = 0;
volatile std::sig_atomic_t g_reload_requested = 0;  // SIGHUP: read the token files again

void RequestStop(int /*signal*/) { g_stop_requested = 1; }
void RequestReload(int /*signal*/) { g_reload_requested = 1; }

std::string DefaultStoreDir() {
  if (const char* state = std::getenv("XDG_STATE_HOME")) return std::string(state) + "/kiln";
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/tmp") + "/.local/state/kiln";
}

}  // namespace

int main(int argc, char** argv) {
  umask(077);  // what it writes (store, keys, cached artifacts) is its owner's alone
  // A crash leaves its signal and a symbolized stack trace on stderr, after the log lines; the
  // graceful SIGTERM below replaces the handler's own for that signal.
  absl::InitializeSymbolizer(argv[0]);
  absl::InstallFailureSignalHandler(absl::FailureSignalHandlerOptions());
  kiln::server::ServerOptions options;
  options.store_dir = DefaultStoreDir();
  int64_t max_request_mb = options.max_request_bytes >> 20;
  int64_t max_module_mb = options.max_module_bytes >> 20;
  int64_t max_inflight_mb = options.max_inflight_bytes >> 20;
  int64_t cache_max_mb = options.cache_max_bytes >> 20;
  int64_t worker_memory_mb = 8192;
  int64_t max_constant_mb = 64, max_folded_mb = 256;
  int64_t job_retention_s = options.jobs.job_retention_ms / 1000, store_max_mb = 0;
  int64_t default_deadline_s = options.jobs.default_deadline_ms / 1000;
  int64_t max_deadline_s = options.jobs.max_deadline_ms / 1000;
  int64_t drain_timeout_s = options.drain_timeout_ms / 1000;
  std::string log_level = "info";

  CLI::App app{"kilnd: the Kiln compilation daemon"};
  app.set_config("--config", "", "TOML/INI file with any of these options");
  app.add_option("--listen", options.listen_address, "host:port to serve gRPC on")
      ->capture_default_str();
  app.add_option("--store", options.store_dir,
                 "directory of the embedded store (with --postgres: of this instance's local "
                 "artifact copies)")
      ->capture_default_str();
  app.add_option("--postgres", options.postgres_url,
                 "keep jobs, devices and artifacts in this PostgreSQL database (a libpq URL, "
                 "postgresql://USER@HOST:PORT/DB), shared by every kilnd that names it");
  app.add_option(
      "--instance", options.instance,
      "this instance's name in a cluster's leases and metrics (default host:pid:random)");
  app.add_option("--lease-ms", options.lease_ms,
                 "with --postgres: how long a job this instance holds outlives its last lease "
                 "renewal, i.e. how soon another instance takes over after this one dies")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1000}, int64_t{3600} * 1000));
  app.add_option("--metrics-port", options.metrics_port,
                 "Prometheus metrics port (-1: off, 0: any free port)")
      ->capture_default_str();
  app.add_option("--metrics-address", options.metrics_address, "address the metrics port binds")
      ->capture_default_str();
  app.add_option("--http-max-connections", options.http_max_connections,
                 "connections the metrics and dashboard port holds at once; more are closed")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--http-max-connections-per-address", options.http_max_connections_per_address,
                 "of those, from one address (raise it behind a proxy)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--tls-cert", options.tls_cert, "server certificate (PEM)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", options.tls_key, "server private key (PEM)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-client-ca", options.tls_client_ca,
                 "CA (PEM) that signs client certificates: requires mutual TLS")
      ->check(CLI::ExistingFile);
  app.add_option("--client-tokens", options.client_tokens_file,
                 "file of client bearer tokens, one per line (turns auth on)")
      ->check(CLI::ExistingFile);
  app.add_option("--agent-certs", options.agent_certs_file,
                 "under mutual TLS without tokens: agent certificates by CN, one `CN keys=K1,K2` "
                 "per line (the device keys each may serve)")
      ->check(CLI::ExistingFile);
  app.add_flag("--allow-any-certificate-as-agent", options.allow_any_certificate_as_agent,
               "under mutual TLS without tokens or --agent-certs: let every certificate the CA "
               "signed register as an agent for any device key");
  app.add_flag("--allow-shared-token-files", options.allow_shared_token_files,
               "accept token files other users may read (with a warning)");
  app.add_option("--signing-key", options.signing_key_file,
                 "Ed25519 private key (PEM) that signs every artifact kilnd builds (default: "
                 "STORE/signing_key.pem, created on first start; agents trust its .pub)");
  app.add_option("--trusted-keys", options.trusted_keys_file,
                 "more public keys (PEM) whose signed artifacts clients may hand back (a "
                 "rotated-out key)")
      ->check(CLI::ExistingFile);
  app.add_flag("--allow-unsigned-uploads", options.allow_unsigned_uploads,
               "let every client run artifacts kilnd did not build on devices (development "
               "only; with tokens, give `upload=allow` to the clients that may)");
  app.add_option("--max-string-bytes", options.max_string_bytes,
                 "longest string field of a request (names, keys, targets, reasons)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--agent-tokens", options.agent_tokens_file,
                 "file of agent bearer tokens, one per line (turns auth on)")
      ->check(CLI::ExistingFile);
  app.add_option("--workers", options.jobs.workers, "concurrent compile workers")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--worker", options.jobs.worker_path,
                 "kiln-worker binary (default: beside kilnd)");
  app.add_option("--worker-memory-mb", worker_memory_mb,
                 "address-space limit of a worker (0: none)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--worker-cpu-s", options.jobs.worker_cpu_seconds,
                 "CPU-time limit of a worker, in seconds (0: none)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--compile-cpu-s-base", options.jobs.compile_cpu_seconds_base,
                 "CPU seconds any compile may use; with --compile-cpu-s-per-mb, a compile's "
                 "budget grows with its module, so that a small input cannot hold a worker for "
                 "minutes (within --worker-cpu-s)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--compile-cpu-s-per-mb", options.jobs.compile_cpu_seconds_per_mb,
                 "CPU seconds a compile may use per MB of its module, beyond the base")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-constant-mb", max_constant_mb,
                 "largest constant a compile computes (ONNX import, FoldConstant); a larger "
                 "one stays computed at run time, or the import is refused")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-folded-mb", max_folded_mb,
                 "constant data FoldConstant may add to one compile in all")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--default-deadline-s", default_deadline_s, "deadline of a job that names none")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-deadline-s", max_deadline_s, "longest deadline a job may ask for")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-jobs-per-client", options.jobs.max_active_jobs_per_client,
                 "unfinished jobs one client may have")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  int64_t max_output_mb = options.jobs.max_output_bytes >> 20;
  app.add_option("--max-downloads-per-client", options.max_downloads_per_client,
                 "artifact and output downloads one client (or agent) may stream at once")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-output-mb", max_output_mb,
                 "the most an inference's outputs may hold in all (a larger answer fails the job)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-min-repeat-ms", options.jobs.max_min_repeat_ms,
                 "the largest min_repeat_ms a profile may ask for")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-cooldown-ms", options.jobs.max_cooldown_ms,
                 "the largest cooldown_ms a profile may ask for")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-tune-trials", options.jobs.max_tune_trials,
                 "the largest trial budget a tune job may ask for")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  std::vector<std::string> candidate_checkers;
  app.add_option("--candidate-checker", candidate_checkers,
                 "ARCH=\"EMULATOR KILN-AGENT\": a kiln-agent built for ARCH checks tuning "
                 "candidates for it (kilnd's machine cannot run them); ARCH=agent trusts the "
                 "agents' own check. Repeatable");
  app.add_option("--max-jobs-per-minute", options.jobs.max_jobs_per_minute_per_client,
                 "jobs one client may submit per minute, cache hits included (0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-stored-jobs", options.jobs.max_stored_jobs_per_client,
                 "jobs one client may have stored (0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--job-retention-s", job_retention_s,
                 "finished jobs older than this are pruned (0: kept)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-finished-jobs", options.jobs.max_finished_jobs,
                 "finished jobs kept, the newest first (0: no count limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--store-max-mb", store_max_mb,
                 "the store's size (database and artifacts); past it artifacts are evicted, "
                 "then new jobs refused (0: unbounded)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-request-mb", max_request_mb, "largest gRPC message accepted")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-handler-threads", options.max_handler_threads,
                 "threads of synchronous gRPC handlers; past them a call is RESOURCE_EXHAUSTED")
      ->capture_default_str()
      ->check(CLI::Range(8, 65536));
  app.add_option("--max-receiving-requests", options.max_receiving_requests,
                 "submit bodies kilnd reads at once (half of them from one client); others wait "
                 "in gRPC's flow control, then RESOURCE_EXHAUSTED")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--receive-timeout-ms", options.receive_timeout_ms,
                 "a submit body still arriving after this long is cancelled")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-inflight-mb", max_inflight_mb,
                 "MB of large requests (1 MB and more) being handled and of unfinished jobs' "
                 "modules kilnd holds at once; a request past it is refused RESOURCE_EXHAUSTED "
                 "(0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-module-mb", max_module_mb, "largest module or artifact accepted")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--cache-max-mb", cache_max_mb, "artifact store bound (LRU eviction)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--heartbeat-ms", options.jobs.heartbeat_interval_ms,
                 "agent heartbeat interval (an agent is dropped after 5 missed)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--drain-timeout-s", drain_timeout_s, "how long shutdown waits for running jobs")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--log-level", log_level, "debug, info, warning or error")
      ->capture_default_str()
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}));
  CLI11_PARSE(app, argc, argv);

  options.max_request_bytes = max_request_mb << 20;
  options.max_module_bytes = max_module_mb << 20;
  options.max_inflight_bytes = max_inflight_mb << 20;
  options.cache_max_bytes = cache_max_mb << 20;
  options.jobs.worker_memory_bytes = worker_memory_mb << 20;
  options.jobs.max_constant_bytes = max_constant_mb << 20;
  options.jobs.max_output_bytes = max_output_mb << 20;
  options.jobs.job_retention_ms = job_retention_s * 1000;
  options.jobs.store_max_bytes = store_max_mb << 20;
  options.jobs.max_folded_bytes = max_folded_mb << 20;
  options.jobs.default_deadline_ms = default_deadline_s * 1000;
  options.jobs.max_deadline_ms = max_deadline_s * 1000;
  options.drain_timeout_ms = drain_timeout_s * 1000;
  for (const std::string& flag : candidate_checkers) {
    if (absl::Status s = kiln::server::AddCandidateChecker(flag, &options.jobs.candidate_checkers);
        !s.ok()) {
      std::fprintf(stderr, "kilnd: %s\n", std::string(s.message()).c_str());
      return 2;
    }
  }
  kiln::server::SetLogLevel(log_level == "debug"     ? kiln::server::LogLevel::kDebug
                            : log_level == "warning" ? kiln::server::LogLevel::kWarning
                            : log_level == "error"   ? kiln::server::LogLevel::kError
                                                     : kiln::server::LogLevel::kInfo);

  // Every connection, stream and store file is a descriptor: the soft limit (1,024 under
  // systemd) is raised to the hard one, which the unit file sets (LimitNOFILE).
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  // Requests and artifacts of megabytes come and go: glibc would raise its mmap threshold to the
  // largest block freed (up to 32 MB) and keep such blocks in its heaps afterwards. Fixed at
  // 1 MB, each large buffer is a mapping of its own, given back to the system when freed.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  absl::StatusOr<std::unique_ptr<kiln::server::KilnServer>> server =
      kiln::server::KilnServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "kilnd: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  // Scripts and tests wait for these lines.
  std::printf("kilnd: listening on port %d\n", (*server)->port());
  if ((*server)->metrics_port() >= 0) {
    std::printf("kilnd: metrics on port %d\n", (*server)->metrics_port());
  }
  std::fflush(stdout);

  std::signal(SIGINT, RequestStop);
  std::signal(SIGTERM, RequestStop);
  std::signal(SIGHUP, RequestReload);
  int exit_code = 0;
  std::thread watcher([&] {
    while (!g_stop_requested) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if ((*server)->listener_failed()) {
        exit_code = 1;  // for the supervisor (Restart=on-failure)
        break;
      }
      if (g_reload_requested) {
        g_reload_requested = 0;
        (void)(*server)->ReloadTokens();  // logged either way
      }
    }
    (*server)->Shutdown();
  });
  (*server)->Wait();
  watcher.join();
  server->reset();
  std::printf("kilnd: stopped\n");
  return exit_code;
}
