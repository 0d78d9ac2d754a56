#include "server/service_edge.h"

#include <malloc.h>

#include <algorithm>
#include <cctype>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "server/log.h"
#include "server/worker_frames.h"

namespace kiln::server {
namespace {}  // namespace

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

grpc::Status Invalid(const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
}

namespace {

// Text that travels as bytes (jobs.proto says why): checked for UTF-8 here.
bool IsTextInBytes(const google::protobuf::FieldDescriptor& f) {
  return f.full_name() == "kiln.v1.ModuleSource.tvmscript" ||
         f.full_name() == "kiln.v1.SubmitCompileRequest.target" ||
         f.full_name() == "kiln.v1.SubmitTuneRequest.target";
}

// Where `text` stops being UTF-8 ("byte 7 (line 1, column 8)"), or "" when it is UTF-8.
std::string NotUtf8At(absl::string_view text) {
  const size_t at = FirstNotUtf8(text);
  if (at == absl::string_view::npos) return "";
  int line = 1, column = 1;
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80) {
      ++column;
    }
  }
  return absl::StrCat("byte ", at, " (line ", line, ", column ", column, ")");
}

}  // namespace

grpc::Status StringsWithin(const google::protobuf::Message& message, int64_t max_bytes,
                           const std::string& prefix) {
  const google::protobuf::Reflection* reflection = message.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const google::protobuf::FieldDescriptor* f : fields) {
    std::string name = prefix + f->name();
    const bool text_in_bytes = IsTextInBytes(*f);
    if (f->type() == google::protobuf::FieldDescriptor::TYPE_STRING || text_in_bytes) {
      int n = f->is_repeated() ? reflection->FieldSize(message, f) : 1;
      for (int k = 0; k < n; ++k) {
        std::string scratch;
        const std::string& value =
            f->is_repeated() ? reflection->GetRepeatedStringReference(message, f, k, &scratch)
                             : reflection->GetStringReference(message, f, &scratch);
        if (text_in_bytes) {
          if (std::string at = NotUtf8At(value); !at.empty()) {
            return Invalid(absl::StrCat(name, ": not UTF-8 text at ", at));
          }
        }
        // The TVMScript text of a module is the payload, bounded by --max-module-mb instead.
        if (f->full_name() != "kiln.v1.ModuleSource.tvmscript" &&
            static_cast<int64_t>(value.size()) > max_bytes) {
          return Invalid(absl::StrCat(name, ": ", value.size(), " bytes, more than the ", max_bytes,
                                      " a string field may have (--max-string-bytes)"));
        }
      }
    } else if (f->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
      int n = f->is_repeated() ? reflection->FieldSize(message, f) : 1;
      for (int k = 0; k < n; ++k) {
        const google::protobuf::Message& inner = f->is_repeated()
                                                     ? reflection->GetRepeatedMessage(message, f, k)
                                                     : reflection->GetMessage(message, f);
        grpc::Status s = StringsWithin(inner, max_bytes, name + ".");
        if (!s.ok()) return s;
      }
    }
  }
  return grpc::Status::OK;
}

grpc::Status UnparsableRequest(absl::string_view method) {
  return Invalid(absl::StrCat(
      "the request to ", method,
      " does not parse as its message: a string field (a name, key or id) holds bytes that "
      "are not UTF-8, or the bytes are not that message"));
}

namespace {

class UnparsableRequestInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit UnparsableRequestInterceptor(grpc::experimental::ServerRpcInfo* info)
      : method_(info->method()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() == nullptr) {
      unparsable_ = true;
    }
    if (unparsable_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS) &&
        methods->GetSendStatus().error_code() == grpc::StatusCode::INTERNAL) {
      methods->ModifySendStatus(UnparsableRequest(method_));
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
  bool unparsable_ = false;
};

class UnparsableRequestFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new UnparsableRequestInterceptor(info);
  }
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
UnparsableRequestInterceptors() {
  return std::make_unique<UnparsableRequestFactory>();
}

namespace {
constexpr int64_t kLargeRequestBytes = 1 << 20;
}  // namespace

InflightBytes::InflightBytes(int64_t budget) : budget_(budget), trimmer_([this] { TrimLoop(); }) {}

InflightBytes::~InflightBytes() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  trimmer_.join();
}

absl::StatusOr<InflightBytes::Reservation> InflightBytes::Reserve(int64_t bytes, int64_t held) {
  std::lock_guard<std::mutex> lock(mu_);
  if (budget_ > 0 && held + held_ + bytes > budget_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "kilnd holds ", held >> 20, " MB of modules for unfinished jobs and ", held_ >> 20,
        " MB of requests being handled, and this one is ", bytes >> 20, " MB: more than the ",
        budget_ >> 20, " MB it holds at once (--max-inflight-mb); try again in a moment"));
  }
  held_ += bytes;
  return Reservation(this, bytes);
}

absl::StatusOr<InflightBytes::Reservation> ReserveInflight(const ServiceContext& ctx,
                                                           int64_t bytes) {
  if (ctx.inflight == nullptr || bytes < kLargeRequestBytes) {
    return InflightBytes::Reservation(nullptr, 0);
  }
  return ctx.inflight->Reserve(bytes, ctx.jobs != nullptr ? ctx.jobs->HeldInputBytes() : 0);
}

InflightBytes::Reservation::~Reservation() {
  if (owner_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(owner_->mu_);
    owner_->held_ -= bytes_;
    owner_->released_since_trim_ += bytes_;
  }
  owner_->changed_.notify_all();
}

void InflightBytes::TrimLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    changed_.wait(lock, [&] { return stopping_ || (released_since_trim_ > 0 && held_ == 0); });
    if (stopping_) break;
    // gRPC frees the request after the handler returns: trim once the large requests have
    // stopped for a moment (a new one arriving meanwhile postpones it).
    if (changed_.wait_for(lock, std::chrono::milliseconds(500),
                          [&] { return stopping_ || held_ > 0; })) {
      continue;
    }
    released_since_trim_ = 0;
    lock.unlock();
    malloc_trim(0);
    lock.lock();
  }
}

grpc::Status NoArtifact(const std::string& digest) {
  return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no artifact ", digest));
}

std::vector<v1::Device> UsableDevices(JobManager& jobs, const Principal& caller) {
  std::vector<v1::Device> usable;
  for (v1::Device& d : jobs.Devices()) {
    if (caller.MayUse(d.key())) usable.push_back(std::move(d));
  }
  return usable;
}

bool ValidDeviceKey(const std::string& key) {
  if (key.empty() || key.size() > 64) return false;
  for (char c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

grpc::Status CheckDeadline(int64_t deadline_ms) {
  if (deadline_ms >= 0) return grpc::Status::OK;
  return Invalid(
      absl::StrCat("deadline_ms: ", deadline_ms, " is negative (0 asks for the server's default)"));
}

void OutputsForTheWire(v1::Job* job, size_t inline_bytes) {
  // A quantized model is only ever streamed (QuantizeResult.model_size says how big).
  if (job->has_quantize()) job->mutable_quantize()->clear_model();
  if (!job->has_inference()) return;
  v1::InferenceResult* inference = job->mutable_inference();
  size_t total = 0;
  for (const v1::TensorValue& t : inference->outputs()) total += t.data().size();
  if (total == 0 || (inline_bytes > 0 && total <= inline_bytes)) return;
  for (v1::TensorValue& t : *inference->mutable_outputs()) t.clear_data();
  inference->set_data_elsewhere(true);
}

grpc::Status StreamArtifact(ArtifactCache* cache, const std::string& digest,
                            grpc::ServerWriter<v1::ArtifactChunk>* writer) {
  if (digest.empty()) return Invalid("digest: required");
  absl::StatusOr<ArtifactFile> file = cache->OpenVerified(digest);
  if (!file.ok()) {
    if (file.status().code() == absl::StatusCode::kDataLoss) {
      LogEvent(LogLevel::kError, "corrupt artifact refused",
               {{"digest", digest}, {"error", std::string(file.status().message())}});
    }
    return ToGrpc(file.status());
  }
  const int64_t size = file->size();
  for (int64_t offset = 0; offset == 0 || offset < size; offset += kChunkBytes) {
    absl::StatusOr<std::string> piece = file->Read(offset, kChunkBytes);
    if (!piece.ok()) return ToGrpc(piece.status());
    v1::ArtifactChunk chunk;
    chunk.set_digest(digest);
    chunk.set_offset(offset);
    if (offset == 0) chunk.set_total_size(size);
    *chunk.mutable_data() = *std::move(piece);
    if (!writer->Write(chunk)) return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
  }
  return grpc::Status::OK;
}

StreamSlots::Slot::~Slot() {
  if (owner_ == nullptr) return;
  std::lock_guard<std::mutex> lock(owner_->mu_);
  if (--owner_->streaming_[client_] <= 0) owner_->streaming_.erase(client_);
}

absl::StatusOr<StreamSlots::Slot> StreamSlots::Acquire(const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  int& n = streaming_[client];
  if (max_per_client_ > 0 && n >= max_per_client_) {
    if (n == 0) streaming_.erase(client);
    return absl::ResourceExhaustedError(absl::StrCat(
        "at most ", max_per_client_, " downloads at once per client (--max-downloads-per-client)"));
  }
  ++n;
  return Slot(this, client);
}

ReceiveSlots::ReceiveSlots(int max_receiving, absl::Duration wait, absl::Duration max_receive)
    : max_receiving_(std::max(1, max_receiving)),
      max_per_client_(std::max(1, max_receiving_ / 2)),
      wait_(wait),
      max_receive_(max_receive),
      watchdog_([this] { WatchLoop(); }) {}

ReceiveSlots::~ReceiveSlots() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  watchdog_.join();
}

absl::StatusOr<ReceiveSlots::Slot> ReceiveSlots::Acquire(const std::string& client,
                                                         grpc::ServerContext* context) {
  // A second before the caller's deadline at the latest: it hears RESOURCE_EXHAUSTED, not its
  // own deadline passing.
  const absl::Time give_up =
      std::min(absl::Now() + wait_, absl::FromChrono(context->deadline()) - absl::Seconds(1));
  std::unique_lock<std::mutex> lock(mu_);
  auto free = [&] {
    auto it = per_client_.find(client);
    return static_cast<int>(receiving_.size()) < max_receiving_ &&
           (it == per_client_.end() || it->second < max_per_client_);
  };
  // Woken by every release; the client's cancellation is noticed within 100 ms.
  while (!free()) {
    if (stopping_ || context->IsCancelled() || absl::Now() >= give_up) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "kilnd receives at most ", max_receiving_, " requests at once (", max_per_client_,
          " per client; --max-receiving-requests) and none finished within ",
          absl::FormatDuration(wait_), "; try again in a moment"));
    }
    changed_.wait_for(lock, std::chrono::milliseconds(100));
  }
  const int64_t id = next_id_++;
  receiving_[id] = Receiving{client, context, absl::Now()};
  ++per_client_[client];
  changed_.notify_all();  // the watchdog learns of a new deadline
  return Slot(this, id);
}

ReceiveSlots::Slot::~Slot() {
  if (owner_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(owner_->mu_);
    auto it = owner_->receiving_.find(id_);
    if (--owner_->per_client_[it->second.client] <= 0) owner_->per_client_.erase(it->second.client);
    owner_->receiving_.erase(it);
  }
  owner_->changed_.notify_all();
}

void ReceiveSlots::WatchLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const absl::Time now = absl::Now();
    absl::Time next = now + absl::Hours(1);
    for (auto& [id, r] : receiving_) {
      const absl::Time due = r.started + max_receive_;
      if (due <= now) {
        // The handler is still in its Read (the slot goes before it returns): the context lives.
        r.context->TryCancel();
        r.started = absl::InfiniteFuture() - max_receive_;  // cancelled once
      } else {
        next = std::min(next, due);
      }
    }
    changed_.wait_for(lock, absl::ToChronoNanoseconds(next - now));
  }
}

}  // namespace kiln::server
