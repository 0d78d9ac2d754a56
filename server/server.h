// Assembles kilnd: the store, the artifact cache, the job manager, the client and agent gRPC
// services (with TLS, tokens and size limits), gRPC health checking and reflection, and the
// metrics endpoint.
#ifndef KILN_SERVER_SERVER_H_
#define KILN_SERVER_SERVER_H_

#include <grpcpp/server.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/jobs/job_manager.h"

namespace kiln::server {

struct ServerOptions {
  // host:port to listen on; port 0 picks a free port (tests use 127.0.0.1:0).
  std::string listen_address = "127.0.0.1:7077";
  // The embedded store's directory (SQLite + artifact files). Required; with postgres_url, it
  // holds only this instance's local copies of artifacts.
  std::string store_dir;
  // A libpq connection string: the state lives in PostgreSQL, shared by every instance that
  // opens the same database (PostgresStore). Empty: the embedded SQLite store.
  std::string postgres_url;
  // With postgres_url: this instance's name in leases and metrics (empty: host:pid:random), and
  // how long a job it holds outlives its last renewal (how soon another instance takes over).
  std::string instance;
  int64_t lease_ms = 10000;
  // Prometheus metrics at http://metrics_address:metrics_port/metrics; -1 turns them off, 0
  // picks a free port.
  std::string metrics_address = "127.0.0.1";
  int metrics_port = -1;
  // Connections the HTTP port holds at once, in all and from one address (HttpOptions).
  int http_max_connections = 1024;
  int http_max_connections_per_address = 64;
  // TLS: certificate and key (PEM) of the server; with a client CA, clients must present a
  // certificate it signed (mutual TLS).
  std::string tls_cert, tls_key, tls_client_ca;
  // Token files (one token per line); either turns authentication on.
  std::string client_tokens_file, agent_tokens_file;
  // A token file other users may read is refused at start and on reload, unless this is set
  // (then kilnd logs a warning).
  bool allow_shared_token_files = false;
  // Agents by certificate under mutual TLS, with the device keys each may serve (auth.h).
  // Mutual TLS without tokens needs it, or allow_any_certificate_as_agent.
  std::string agent_certs_file;
  bool allow_any_certificate_as_agent = false;
  // The Ed25519 key (PEM) kilnd signs every artifact it builds with; empty: signing_key.pem in
  // the store's directory, created on first start with its public key beside it (.pub), which
  // agents are given (--trusted-keys). A cluster's instances share one.
  std::string signing_key_file;
  // More public keys (PEM) whose signatures kilnd accepts on artifacts handed back to it: the
  // old key during a rotation (docs/SECURITY.md).
  std::string trusted_keys_file;
  // Accept artifacts kilnd did not sign from every client (development without tokens); with
  // tokens, `upload=allow` names the clients that may.
  bool allow_unsigned_uploads = false;
  // Downloads (artifacts, inference outputs) one client or agent may stream at once.
  int max_downloads_per_client = 4;
  // Longest string field of any request or agent message (names, keys, targets, reasons); the
  // module's TVMScript text is bounded by max_module_bytes instead.
  int64_t max_string_bytes = 4096;
  int64_t max_request_bytes = 64 << 20;  // any one gRPC message
  // Large requests (1 MB and more) being handled and the inputs of unfinished jobs, their bytes
  // all together (InflightBytes); 0: no limit.
  int64_t max_inflight_bytes = int64_t{256} << 20;
  // Submit bodies received at once (ReceiveSlots), and the longest one may take to arrive.
  int max_receiving_requests = 4;
  int64_t receive_timeout_ms = 60000;
  // Threads of gRPC's synchronous handlers (downloads, submits waiting to be read, the quick
  // reads); past them a new call is RESOURCE_EXHAUSTED. Watches and agent streams hold none.
  int max_handler_threads = 512;
  int64_t max_module_bytes = 32 << 20;  // a submitted module or artifact
  int64_t cache_max_bytes = int64_t{1} << 30;
  int64_t drain_timeout_ms = 30000;
  JobManagerOptions jobs;  // an empty worker_path means kiln-worker next to this executable
};

// One --candidate-checker: "ARCH=COMMAND ..." (a kiln-agent built for ARCH and how to start it
// here, an emulator first: it checks tuning candidates for targets of ARCH, which this machine
// cannot run), or "ARCH=agent" (the agents' own check trusted). Adds it to `checkers`;
// InvalidArgument naming what is wrong (no '=', a command that is no executable file).
absl::Status AddCandidateChecker(const std::string& flag,
                                 std::map<std::string, std::vector<std::string>>* checkers);

class KilnServer {
 public:
  // Starts serving. Unavailable when the address cannot be bound; InvalidArgument for bad
  // options (files that do not exist, a missing store).
  static absl::StatusOr<std::unique_ptr<KilnServer>> Start(const ServerOptions& options);
  ~KilnServer();

  // The port actually bound (the chosen one when the options asked for port 0).
  int port() const { return port_; }
  int metrics_port() const;
  // Blocks until Shutdown() has finished.
  void Wait();
  // Graceful: refuses new jobs, lets running ones finish (up to the drain timeout), then stops.
  void Shutdown();
  // Reads the token files again and swaps them in (kilnd does on SIGHUP); a file that does not
  // read keeps the tokens in use, and the error is returned and logged.
  absl::Status ReloadTokens();
  // True once the gRPC listener has failed for good (gRPC 1.51 closes it when accept4 fails:
  // descriptors ran out). Readiness is NOT_SERVING from then on; kilnd exits with an error so
  // that its supervisor starts it again — a live process with a dead listener serves nobody.
  bool listener_failed() const;

 private:
  KilnServer() = default;
  // Reports the store's reachability through the health service until Shutdown.
  void ReadinessLoop();
  struct Parts;
  std::unique_ptr<Parts> parts_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_SERVER_H_
