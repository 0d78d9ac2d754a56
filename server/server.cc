#include "server/server.h"

#include <grpc/support/log.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "runtime/agent/channel.h"
#include "runtime/support/subprocess.h"
#include "server/agent_service.h"
#include "server/artifact_cache.h"
#include "server/client_service.h"
#include "server/cluster_store.h"
#include "server/dashboard.h"
#include "server/http_server.h"
#include "server/log.h"
#include "server/postgres_store.h"
#include "server/store.h"

namespace kiln::server {

struct KilnServer::Parts {
  std::unique_ptr<runtime::SigningKey> signing_key;
  runtime::TrustedKeys own_keys;  // the signing key's and --trusted-keys
  std::unique_ptr<tune::RecordsGeneration> records_generation;
  std::unique_ptr<StreamSlots> streams;
  std::unique_ptr<InflightBytes> inflight;
  std::unique_ptr<ReceiveSlots> receiving;
  std::unique_ptr<Store> store;
  std::unique_ptr<ArtifactCache> cache;
  std::unique_ptr<JobManager> jobs;
  ServiceContext context;
  std::unique_ptr<KilnService> kiln;
  std::unique_ptr<AgentServiceImpl> agents;
  std::unique_ptr<HttpServer> metrics;  // /metrics and the dashboard
  int64_t drain_timeout_ms = 0;
  std::once_flag shutdown_once;
  std::string client_tokens_file, agent_tokens_file;
  bool allow_shared_token_files = false;
  std::string agent_certs_file;
  bool mutual_tls = false, any_certificate_is_an_agent = false;
  // Readiness: the health service says SERVING while the store answers (asked every second),
  // NOT_SERVING while it does not and from the start of a drain.
  std::thread readiness;
  std::mutex readiness_mu;
  std::condition_variable readiness_cv;
  bool stopping = false;
  std::atomic<bool> listener_failed{false};  // said and logged by the readiness loop
};

namespace {

// gRPC's log goes to kilnd's (one format for operators), and one message of it is watched:
// gRPC 1.51 closes its listening socket for good when accept4 fails with anything but
// EINTR/EAGAIN/ECONNABORTED, and says so only in its log.
std::atomic<bool> g_listener_failed{false};

void GrpcLog(gpr_log_func_args* args) {
  const std::string message = args->message != nullptr ? args->message : "";
  if (message.find("Failed accept4") != std::string::npos) g_listener_failed = true;
  LogEvent(args->severity == GPR_LOG_SEVERITY_ERROR  ? LogLevel::kError
           : args->severity == GPR_LOG_SEVERITY_INFO ? LogLevel::kInfo
                                                     : LogLevel::kDebug,
           "grpc", {{"message", message}, {"at", absl::StrCat(args->file, ":", args->line)}});
}

std::string HostName() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

std::string RenderMetrics(JobManager& jobs, ArtifactCache& cache, Store& store,
                          const std::string& instance, const std::string& database) {
  JobStats stats = jobs.Stats();
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
  };
  // Metrics are this instance's: the label says which one, in a cluster's aggregate.
  metric("kiln_instance_info", "gauge", "This kilnd instance (host:port) and its store.");
  absl::StrAppend(&out, "kiln_instance_info{instance=\"", instance, "\",database=\"", database,
                  "\"} 1\n");
  metric("kiln_jobs", "gauge", "Jobs known to this server, by state.");
  for (const auto& [state, count] : stats.jobs_by_state) {
    std::string name = v1::JobState_Name(state);
    absl::StrAppend(&out, "kiln_jobs{state=\"", absl::AsciiStrToLower(name.substr(10)), "\"} ",
                    count, "\n");
  }
  metric("kiln_queue_depth", "gauge", "Jobs waiting, by queue.");
  absl::StrAppend(&out, "kiln_queue_depth{queue=\"compile\"} ", stats.compile_queue, "\n");
  absl::StrAppend(&out, "kiln_queue_depth{queue=\"device\"} ", stats.task_queue, "\n");
  metric("kiln_workers_busy", "gauge", "Compile workers running a job.");
  absl::StrAppend(&out, "kiln_workers_busy ", stats.workers_busy, "\n");
  metric("kiln_compile_seconds", "summary", "Wall time of compiles in workers.");
  absl::StrAppend(&out, "kiln_compile_seconds_sum ", stats.compile_seconds, "\n");
  absl::StrAppend(&out, "kiln_compile_seconds_count ", stats.compiles, "\n");
  metric("kiln_cache_hits_total", "counter", "Compiles served from the artifact cache.");
  absl::StrAppend(&out, "kiln_cache_hits_total ", cache.hits(), "\n");
  metric("kiln_cache_misses_total", "counter", "Compiles the cache could not serve.");
  absl::StrAppend(&out, "kiln_cache_misses_total ", cache.misses(), "\n");
  metric("kiln_cache_evictions_total", "counter", "Artifacts evicted to stay in bounds.");
  absl::StrAppend(&out, "kiln_cache_evictions_total ", cache.evictions(), "\n");
  metric("kiln_cache_bytes", "gauge", "Bytes of stored artifacts.");
  absl::StrAppend(&out, "kiln_cache_bytes ", store.TotalArtifactBytes().value_or(-1), "\n");
  metric("kiln_agents_connected", "gauge", "Device agents connected now.");
  absl::StrAppend(&out, "kiln_agents_connected ", stats.agents_connected, "\n");
  metric("kiln_limit_refusals_total", "counter", "Submissions refused by a quota or bound.");
  for (const char* limit : {"active_jobs", "jobs_per_minute", "stored_jobs", "store_bytes"}) {
    auto it = stats.limit_refusals.find(limit);
    absl::StrAppend(&out, "kiln_limit_refusals_total{limit=\"", limit, "\"} ",
                    it == stats.limit_refusals.end() ? 0 : it->second, "\n");
  }
  metric("kiln_jobs_pruned_total", "counter", "Finished jobs pruned by retention.");
  absl::StrAppend(&out, "kiln_jobs_pruned_total ", stats.jobs_pruned, "\n");
  return out;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const ServerOptions& o) {
  if (o.tls_cert.empty() && o.tls_key.empty()) {
    if (!o.tls_client_ca.empty()) {
      return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
    }
    return grpc::InsecureServerCredentials();
  }
  absl::StatusOr<std::string> cert = runtime::ReadTextFile(o.tls_cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = runtime::ReadTextFile(o.tls_key);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions ssl(
      o.tls_client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                              : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  if (!o.tls_client_ca.empty()) {
    absl::StatusOr<std::string> ca = runtime::ReadTextFile(o.tls_client_ca);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
  }
  return grpc::SslServerCredentials(ssl);
}

// The token files as an AuthConfig; an error names the file and line. What is allowed but unwise
// (a file others may read, with --allow-shared-token-files; an agent token trusted for every
// device key) is logged as a warning.
absl::StatusOr<std::shared_ptr<const AuthConfig>> LoadAuth(
    const std::string& client_tokens_file, const std::string& agent_tokens_file, bool allow_shared,
    const std::string& agent_certs_file, bool mutual_tls, bool any_certificate_is_an_agent) {
  auto auth = std::make_shared<AuthConfig>();
  auth->mutual_tls = mutual_tls;
  auth->any_certificate_is_an_agent = any_certificate_is_an_agent;
  auto read = [&](const std::string& file, std::map<std::string, Principal>* into) -> absl::Status {
    if (file.empty()) return absl::OkStatus();
    std::string warning;
    absl::StatusOr<std::map<std::string, Principal>> t = ReadTokens(file, allow_shared, &warning);
    if (!t.ok()) return t.status();
    if (!warning.empty()) LogEvent(LogLevel::kWarning, "token file shared", {{"file", warning}});
    *into = *std::move(t);
    return absl::OkStatus();
  };
  if (absl::Status s = read(client_tokens_file, &auth->client_tokens); !s.ok()) return s;
  if (absl::Status s = read(agent_tokens_file, &auth->agent_tokens); !s.ok()) return s;
  if (!agent_certs_file.empty()) {
    absl::StatusOr<std::map<std::string, Principal>> certs = ReadAgentCerts(agent_certs_file);
    if (!certs.ok()) return certs.status();
    auth->agent_certs = *std::move(certs);
  }
  for (const auto& [digest, principal] : auth->agent_tokens) {
    if (principal.device_keys.empty()) {
      LogEvent(LogLevel::kWarning,
               "an agent token is trusted for every device key (name them with keys=K1,K2)",
               {{"agent", principal.name}});
    }
  }
  for (const auto& [digest, principal] : auth->client_tokens) {
    if (principal.device_keys.empty() && !principal.admin) {
      LogEvent(LogLevel::kWarning,
               "a client token may use every device (name them with keys=K1,K2)",
               {{"client", principal.name}});
    }
  }
  return std::shared_ptr<const AuthConfig>(std::move(auth));
}

}  // namespace

absl::Status KilnServer::ReloadTokens() {
  absl::StatusOr<std::shared_ptr<const AuthConfig>> auth = LoadAuth(
      parts_->client_tokens_file, parts_->agent_tokens_file, parts_->allow_shared_token_files,
      parts_->agent_certs_file, parts_->mutual_tls, parts_->any_certificate_is_an_agent);
  if (!auth.ok()) {
    LogEvent(LogLevel::kError, "token reload refused; the tokens in use stay",
             {{"error", std::string(auth.status().message())}});
    return auth.status();
  }
  std::atomic_store(&parts_->context.auth, *auth);
  LogEvent(LogLevel::kInfo, "tokens reloaded",
           {{"client_tokens", std::to_string((*auth)->client_tokens.size())},
            {"agent_tokens", std::to_string((*auth)->agent_tokens.size())}});
  return absl::OkStatus();
}

absl::Status AddCandidateChecker(const std::string& flag,
                                 std::map<std::string, std::vector<std::string>>* checkers) {
  const size_t eq = flag.find('=');
  const std::string arch = flag.substr(0, eq);
  if (eq == std::string::npos || arch.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--candidate-checker '", flag, "': expected ARCH=COMMAND (or ARCH=agent)"));
  }
  std::vector<std::string> command =
      absl::StrSplit(flag.substr(eq + 1), absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (command.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--candidate-checker '", flag, "': no command after '='"));
  }
  if (command.size() == 1 && command[0] == "agent") {
    command.clear();
  } else if (access(command[0].c_str(), X_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--candidate-checker '", flag, "': ", command[0], " is no executable file"));
  }
  (*checkers)[arch] = std::move(command);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<KilnServer>> KilnServer::Start(const ServerOptions& options) {
  if (options.store_dir.empty()) return absl::InvalidArgumentError("no store directory given");
  // Both are process-wide switches that must be set before the builder runs.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  std::unique_ptr<KilnServer> server(new KilnServer());
  auto parts = std::make_unique<Parts>();
  parts->drain_timeout_ms = options.drain_timeout_ms;
  ServiceContext& ctx = parts->context;
  parts->client_tokens_file = options.client_tokens_file;
  parts->agent_tokens_file = options.agent_tokens_file;
  parts->allow_shared_token_files = options.allow_shared_token_files;
  parts->agent_certs_file = options.agent_certs_file;
  parts->mutual_tls = !options.tls_client_ca.empty();
  parts->any_certificate_is_an_agent = options.allow_any_certificate_as_agent;
  const bool tokens = !options.client_tokens_file.empty() || !options.agent_tokens_file.empty();
  if (parts->mutual_tls && !tokens && options.agent_certs_file.empty() &&
      !options.allow_any_certificate_as_agent) {
    // Else every certificate the CA signed could register any device key and receive its tasks.
    return absl::InvalidArgumentError(
        "mutual TLS without tokens needs --agent-certs FILE, the certificates that are agents and "
        "the device keys each may serve (or --allow-any-certificate-as-agent, which lets every "
        "client certificate serve every device)");
  }
  if (parts->mutual_tls && !tokens && options.allow_any_certificate_as_agent) {
    LogEvent(LogLevel::kWarning,
             "every client certificate may register as an agent for any device key "
             "(--allow-any-certificate-as-agent)");
  }
  absl::StatusOr<std::shared_ptr<const AuthConfig>> auth =
      LoadAuth(parts->client_tokens_file, parts->agent_tokens_file, parts->allow_shared_token_files,
               parts->agent_certs_file, parts->mutual_tls, parts->any_certificate_is_an_agent);
  if (!auth.ok()) return auth.status();
  ctx.auth = *auth;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = Credentials(options);
  if (!credentials.ok()) return credentials.status();

  JobManagerOptions jobs = options.jobs;
  if (jobs.worker_path.empty()) {
    jobs.worker_path =
        (std::filesystem::path(runtime::SelfExecutablePath()).parent_path() / "kiln-worker")
            .string();
  }
  if (access(jobs.worker_path.c_str(), X_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("no kiln-worker executable at ", jobs.worker_path));
  }
  // One tuning database for the service, beside the store's own: every tune job adds to it.
  // With PostgreSQL the records live beside the store, where every instance finds them.
  if (jobs.tuning_db_path.empty() && !options.postgres_url.empty()) {
    jobs.tuning_db_path = options.postgres_url;
  }
  if (jobs.tuning_db_path.empty()) {
    jobs.tuning_db_path = (std::filesystem::path(options.store_dir) / "tuning.db").string();
  }
  absl::StatusOr<std::unique_ptr<Store>> store = absl::InternalError("no store");
  if (options.postgres_url.empty()) {
    store = Store::Open(options.store_dir);
  } else {
    PostgresStore::OpenOptions open;
    open.instance = options.instance;
    open.lease_ms = options.lease_ms;
    open.local_copies_max_bytes = options.cache_max_bytes;
    store = PostgresStore::Open(options.postgres_url, options.store_dir, open);
  }
  if (!store.ok()) return store.status();
  parts->store = std::move(*store);
  // Every artifact kilnd stores is signed; agents run nothing else (runtime/artifact_signing.h).
  const std::string key_path =
      options.signing_key_file.empty()
          ? (std::filesystem::path(options.store_dir) / "signing_key.pem").string()
          : options.signing_key_file;
  absl::StatusOr<runtime::SigningKey> key = runtime::SigningKey::LoadOrCreate(key_path);
  if (!key.ok()) return key.status();
  parts->signing_key = std::make_unique<runtime::SigningKey>(*std::move(key));
  parts->own_keys.Add(*parts->signing_key);
  if (!options.trusted_keys_file.empty()) {
    absl::StatusOr<runtime::TrustedKeys> more =
        runtime::TrustedKeys::Load(options.trusted_keys_file);
    if (!more.ok()) return more.status();
    parts->own_keys.Add(*more);
  }
  LogEvent(LogLevel::kInfo, "signing artifacts",
           {{"key_id", parts->signing_key->key_id()},
            {"key", key_path},
            {"agents_trust", key_path + ".pub"}});
  ctx.own_keys = &parts->own_keys;
  ctx.allow_unsigned_uploads = options.allow_unsigned_uploads;
  parts->cache = std::make_unique<ArtifactCache>(parts->store.get(), options.cache_max_bytes,
                                                 parts->signing_key.get());
  jobs.sign_measurement = [key = parts->signing_key.get()](v1::KernelMeasure* m) {
    runtime::SignMeasurement(*key, m);
  };
  parts->jobs = std::make_unique<JobManager>(jobs, parts->store.get(), parts->cache.get());
  if (absl::Status s = parts->jobs->Start(); !s.ok()) return s;
  parts->records_generation = std::make_unique<tune::RecordsGeneration>(jobs.tuning_db_path);
  ctx.records_generation = parts->records_generation.get();
  parts->streams = std::make_unique<StreamSlots>(options.max_downloads_per_client);
  ctx.streams = parts->streams.get();
  parts->inflight = std::make_unique<InflightBytes>(options.max_inflight_bytes);
  ctx.inflight = parts->inflight.get();
  // A caller waits up to 10 s for a slot: long enough for a few bodies to arrive.
  parts->receiving =
      std::make_unique<ReceiveSlots>(options.max_receiving_requests, absl::Seconds(10),
                                     absl::Milliseconds(options.receive_timeout_ms));
  ctx.receiving = parts->receiving.get();
  ctx.store = parts->store.get();
  ctx.cache = parts->cache.get();
  ctx.jobs = parts->jobs.get();
  ctx.max_module_bytes = options.max_module_bytes;
  ctx.max_string_bytes = options.max_string_bytes;
  parts->kiln = std::make_unique<KilnService>(&ctx);
  parts->agents = std::make_unique<AgentServiceImpl>(&ctx);

  gpr_set_log_function(GrpcLog);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address, *credentials, &server->port_);
  // A connection that never completes its handshake holds a descriptor: 10 s, not gRPC's 120.
  // One idle (no call) for 5 minutes is closed; a client's channel reconnects when it calls.
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 5 * 60 * 1000);
  // Without the bandwidth-delay probe a stream's receive window stays at gRPC's default until its
  // handler reads (a read opens it to the message's size): a submit waiting for a receive slot
  // holds 64 KB of its body here, not megabytes (40 waiting 30 MB submits: peak 1.99 GB with
  // the probe, 0.9 GB without).
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  // A budget of threads for the synchronous handlers, and of streams per connection: calls
  // that wait (a stalled download, a submit waiting to be read) cannot grow kilnd's threads
  // without bound, nor can one connection take them all at once.
  grpc::ResourceQuota threads("kilnd-handlers");
  threads.SetMaxThreads(options.max_handler_threads);
  builder.SetResourceQuota(threads);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 256);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_request_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(options.max_request_bytes));
  builder.RegisterService(parts->kiln.get());
  builder.RegisterService(parts->agents.get());
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(UnparsableRequestInterceptors());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on '", options.listen_address, "'"));
  }
  if (options.metrics_port >= 0) {
    Parts* p = parts.get();
    DashboardContext dashboard;
    dashboard.jobs = p->jobs.get();
    dashboard.cache = p->cache.get();
    dashboard.store = p->store.get();
    dashboard.auth = [&ctx] { return ctx.Auth(); };
    // A cluster's instance is named as in its leases (server/cluster_store.h).
    const std::string instance = p->store->cluster() != nullptr
                                     ? p->store->cluster()->instance()
                                     : absl::StrCat(HostName(), ":", server->port_);
    const std::string database = options.postgres_url.empty() ? "sqlite" : "postgresql";
    dashboard.metrics = [p, instance, database] {
      return RenderMetrics(*p->jobs, *p->cache, *p->store, instance, database);
    };
    HttpOptions http;
    http.address = options.metrics_address;
    http.port = options.metrics_port;
    http.tls_cert = options.tls_cert;  // HTTPS (and mutual TLS) whenever the gRPC side has it
    http.tls_key = options.tls_key;
    http.tls_client_ca = options.tls_client_ca;
    http.max_connections = options.http_max_connections;
    http.max_connections_per_address = options.http_max_connections_per_address;
    absl::StatusOr<std::unique_ptr<HttpServer>> metrics = HttpServer::Start(
        http, [dashboard](const HttpRequest& r) { return ServeHttp(dashboard, r); });
    if (!metrics.ok()) return metrics.status();
    parts->metrics = std::move(*metrics);
  }
  server->parts_ = std::move(parts);
  KilnServer* raw = server.get();
  server->parts_->readiness = std::thread([raw] { raw->ReadinessLoop(); });
  LogEvent(LogLevel::kInfo, "kilnd serving",
           {{"port", std::to_string(server->port_)},
            {"store", options.store_dir},
            {"database", options.postgres_url.empty() ? "sqlite" : "postgresql"},
            {"tls", options.tls_cert.empty()        ? "off"
                    : options.tls_client_ca.empty() ? "on"
                                                    : "mutual"},
            {"auth", ctx.auth->enabled() ? "tokens" : "off"},
            {"workers", std::to_string(jobs.workers)}});
  return server;
}

int KilnServer::metrics_port() const {
  return parts_ && parts_->metrics ? parts_->metrics->port() : -1;
}

KilnServer::~KilnServer() { Shutdown(); }

void KilnServer::Wait() { server_->Wait(); }

void KilnServer::ReadinessLoop() {
  bool serving = true;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(parts_->readiness_mu);
      if (parts_->readiness_cv.wait_for(lock, std::chrono::seconds(1),
                                        [&] { return parts_->stopping; })) {
        return;
      }
    }
    if (g_listener_failed) {
      server_->GetHealthCheckService()->SetServingStatus(false);
      rlimit files{};
      getrlimit(RLIMIT_NOFILE, &files);
      LogEvent(LogLevel::kError,
               "the gRPC listener failed (descriptors ran out?): kilnd stops, for its supervisor "
               "to start it again",
               {{"descriptor_limit", std::to_string(files.rlim_cur)}});
      parts_->listener_failed = true;
      return;
    }
    absl::Status store = parts_->store->Ping();
    parts_->jobs->SetStoreHealth(store);
    if (store.ok() != serving) {
      serving = store.ok();
      server_->GetHealthCheckService()->SetServingStatus(serving);
      LogEvent(serving ? LogLevel::kInfo : LogLevel::kError,
               serving ? "store reachable again: serving" : "store unreachable: not serving",
               {{"reason", store.ToString()}});
    }
  }
}

bool KilnServer::listener_failed() const { return parts_ && parts_->listener_failed; }

void KilnServer::Shutdown() {
  if (server_ == nullptr) return;
  std::call_once(parts_->shutdown_once, [this] {
    {
      std::lock_guard<std::mutex> lock(parts_->readiness_mu);
      parts_->stopping = true;
      parts_->readiness_cv.notify_all();
    }
    if (parts_->readiness.joinable()) parts_->readiness.join();
    server_->GetHealthCheckService()->SetServingStatus(false);  // a balancer stops sending here
    LogEvent(LogLevel::kInfo, "draining",
             {{"timeout_ms", std::to_string(parts_->drain_timeout_ms)}});
    // New submissions are refused from here; running jobs get the drain timeout to finish.
    parts_->jobs->Drain(parts_->drain_timeout_ms);
    // Then open streams (watchers, agents) are cut after a short grace.
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    parts_->metrics.reset();
    LogEvent(LogLevel::kInfo, "stopped");
  });
}

}  // namespace kiln::server
