// What the client and agent services share at the gRPC edge: their context (the store, the
// cache, the job manager, the limits) and the checks and mappings both make. Each handler
// authorizes the caller, checks the request and maps the components' absl::Status errors to gRPC
// codes; nothing is stored for a refused request.
#ifndef KILN_SERVER_SERVICE_EDGE_H_
#define KILN_SERVER_SERVICE_EDGE_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_interceptor.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "compiler/tune/records_generation.h"
#include "google/protobuf/message.h"
#include "proto/kiln/v1/service.grpc.pb.h"
#include "runtime/artifact_signing.h"
#include "server/artifact_cache.h"
#include "server/auth.h"
#include "server/jobs/job_manager.h"
#include "server/store.h"

namespace kiln::server {

class StreamSlots;
class InflightBytes;
class ReceiveSlots;

// What both services share.
struct ServiceContext {
  // Swapped whole when the token files are reloaded (SIGHUP); handlers take a snapshot.
  std::shared_ptr<const AuthConfig> auth = std::make_shared<AuthConfig>();
  std::shared_ptr<const AuthConfig> Auth() const { return std::atomic_load(&auth); }
  Store* store = nullptr;
  ArtifactCache* cache = nullptr;
  JobManager* jobs = nullptr;
  int64_t max_module_bytes = 32 << 20;
  int64_t max_string_bytes = 4096;  // any string field of a request (ServerOptions)
  // The keys whose signatures make a client's artifact kilnd's own (its signing key, and any
  // --trusted-keys); others need Principal::may_upload or allow_unsigned_uploads.
  const runtime::TrustedKeys* own_keys = nullptr;
  bool allow_unsigned_uploads = false;
  // The tuning database's generation: a request's fingerprint names the one it was built under.
  tune::RecordsGeneration* records_generation = nullptr;
  // Downloads (artifacts, outputs) streaming at once, per client or agent.
  StreamSlots* streams = nullptr;
  // The budget of large requests in flight and unfinished jobs' modules.
  InflightBytes* inflight = nullptr;
  // Submit bodies being received at once.
  ReceiveSlots* receiving = nullptr;
};

grpc::Status ToGrpc(const absl::Status& s);
grpc::Status Invalid(const std::string& message);
// INVALID_ARGUMENT naming the first string field of `message` (nested ones included) longer
// than `max_bytes`: a name or key of megabytes would be stored with the job and kept in memory.
// The TVMScript text of a module is the payload, bounded by --max-module-mb instead.
grpc::Status StringsWithin(const google::protobuf::Message& message, int64_t max_bytes,
                           const std::string& prefix = "");
// gRPC answers a request that does not parse — a string field that is not UTF-8, bytes that are
// not the message — with INTERNAL and no message, before any handler runs. The interceptors this
// makes turn that answer into INVALID_ARGUMENT saying so.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
UnparsableRequestInterceptors();
// INVALID_ARGUMENT: the request to `method` ("/kiln.v1.Kiln/SubmitCompile") does not parse.
grpc::Status UnparsableRequest(absl::string_view method);
// INVALID_ARGUMENT for a negative deadline (0 asks for the server's default), naming it.
grpc::Status CheckDeadline(int64_t deadline_ms);
// An artifact none of the caller's jobs made or ran is answered as one that does not exist.
grpc::Status NoArtifact(const std::string& digest);
// The devices `caller` may use (Principal::MayUse): what it is shown and may name.
std::vector<v1::Device> UsableDevices(JobManager& jobs, const Principal& caller);
// A device key: 1 to 64 letters, digits, '-', '_' or '.'.
bool ValidDeviceKey(const std::string& key);
// The most bytes one streamed message carries (artifacts, outputs).
inline constexpr size_t kChunkBytes = 1 << 20;
// An inference job as it goes to a client: its outputs' data inline where it fits one streamed
// message (`inline_bytes` in all), else names, dtypes and shapes with `data_elsewhere` (the
// client asks DownloadOutputs). 0 leaves every output's data out (listings).
void OutputsForTheWire(v1::Job* job, size_t inline_bytes = kChunkBytes);
// Streams a stored artifact, verified before the first byte goes out, one piece at a time
// from its file: a stalled reader holds a piece, not the artifact.
grpc::Status StreamArtifact(ArtifactCache* cache, const std::string& digest,
                            grpc::ServerWriter<v1::ArtifactChunk>* writer);

// The bytes of the large requests kilnd is handling (a submitted module or artifact is copied
// into its job and saved while the handler runs) and of the inputs its unfinished jobs hold: a
// request that would take them past the budget is refused RESOURCE_EXHAUSTED at once, and its
// memory goes with it. After large requests, the allocator's free pages are given back to the
// system (malloc_trim, on a thread of its own, a moment after the last one).
class InflightBytes {
 public:
  explicit InflightBytes(int64_t budget);
  ~InflightBytes();
  // Held for the handler's time; gives its bytes back when it goes.
  class Reservation {
   public:
    Reservation(InflightBytes* owner, int64_t bytes) : owner_(owner), bytes_(bytes) {}
    Reservation(Reservation&& other) noexcept : owner_(other.owner_), bytes_(other.bytes_) {
      other.owner_ = nullptr;
    }
    Reservation& operator=(Reservation&&) = delete;
    ~Reservation();

   private:
    InflightBytes* owner_;
    int64_t bytes_;
  };
  // `bytes` of a large request, with `held` already held by the unfinished jobs' inputs;
  // RESOURCE_EXHAUSTED past the budget.
  absl::StatusOr<Reservation> Reserve(int64_t bytes, int64_t held);

 private:
  void TrimLoop();
  const int64_t budget_;
  std::mutex mu_;
  std::condition_variable changed_;
  int64_t held_ = 0;
  int64_t released_since_trim_ = 0;
  bool stopping_ = false;
  std::thread trimmer_;
};

// `ctx`'s budget reserved for a request of `bytes`: nothing for a request under 1 MB (always
// admitted) or where there is no budget.
absl::StatusOr<InflightBytes::Reservation> ReserveInflight(const ServiceContext& ctx,
                                                           int64_t bytes);

// Downloads streaming at once, per client (its principal, or its address where there are no
// principals): each holds a server thread while its reader is slow. Acquire fails beyond
// `max_per_client`; the slot is given back when the returned object goes.
class StreamSlots {
 public:
  explicit StreamSlots(int max_per_client) : max_per_client_(max_per_client) {}
  class Slot {
   public:
    Slot(StreamSlots* owner, std::string client) : owner_(owner), client_(std::move(client)) {}
    Slot(Slot&& other) noexcept : owner_(other.owner_), client_(std::move(other.client_)) {
      other.owner_ = nullptr;
    }
    Slot& operator=(Slot&&) = delete;
    ~Slot();

   private:
    StreamSlots* owner_;
    std::string client_;
  };
  // RESOURCE_EXHAUSTED naming the limit when `client` already streams `max_per_client`.
  absl::StatusOr<Slot> Acquire(const std::string& client);

 private:
  const int max_per_client_;
  std::mutex mu_;
  std::map<std::string, int> streaming_;
};

// Request bodies being received at once. A synchronous gRPC server reads a unary request whole
// before any handler runs: forty 30 MB submits would all be in memory before one could be
// refused. The submit methods are therefore served as streamed unary (the handler reads the
// body), and a handler reads only while it holds a slot: at most `max_receiving` bodies at once
// and half of them (at least one) from one client. Bodies not being read wait in gRPC's flow
// control, at the client. A caller waits for a slot up to `wait` (or until a second before its
// deadline), then RESOURCE_EXHAUSTED; a body still arriving `max_receive` after it started is
// cancelled, so a client trickling bytes holds a slot no longer than that.
class ReceiveSlots {
 public:
  ReceiveSlots(int max_receiving, absl::Duration wait, absl::Duration max_receive);
  ~ReceiveSlots();
  class Slot {
   public:
    Slot(ReceiveSlots* owner, int64_t id) : owner_(owner), id_(id) {}
    Slot(Slot&& other) noexcept : owner_(other.owner_), id_(other.id_) { other.owner_ = nullptr; }
    Slot& operator=(Slot&&) = delete;
    ~Slot();

   private:
    ReceiveSlots* owner_;
    int64_t id_;
  };
  // A slot for receiving `context`'s body, for `client`.
  absl::StatusOr<Slot> Acquire(const std::string& client, grpc::ServerContext* context);

 private:
  struct Receiving {
    std::string client;
    grpc::ServerContext* context;
    absl::Time started;
  };
  void WatchLoop();
  const int max_receiving_;
  const int max_per_client_;
  const absl::Duration wait_;
  const absl::Duration max_receive_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<int64_t, Receiving> receiving_;
  std::map<std::string, int> per_client_;
  int64_t next_id_ = 0;
  bool stopping_ = false;
  std::thread watchdog_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_SERVICE_EDGE_H_
