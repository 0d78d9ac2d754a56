#include "server/postgres_store.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace kiln::server {
namespace {

// Every schema change is a new entry, never an edit of an applied one.
const std::vector<std::vector<const char*>>& Migrations() {
  static const auto* migrations = new std::vector<std::vector<const char*>>{
      // 1: jobs, devices, artifacts with their bytes.
      {"CREATE TABLE jobs (id TEXT PRIMARY KEY, created_ms BIGINT NOT NULL, job BYTEA NOT NULL)",
       "CREATE INDEX jobs_by_created ON jobs (created_ms)",
       "CREATE TABLE devices (key TEXT PRIMARY KEY, device BYTEA NOT NULL)",
       "CREATE TABLE artifacts (digest TEXT PRIMARY KEY, cache_key TEXT NOT NULL, "
       "size BIGINT NOT NULL, last_used_ms BIGINT NOT NULL, bytes BYTEA NOT NULL, module BYTEA)",
       "CREATE INDEX artifacts_by_key ON artifacts (cache_key)"},
      // 2: what an unfinished job needs to run again on the instance that takes over.
      {"CREATE TABLE job_inputs (id TEXT PRIMARY KEY, input BYTEA NOT NULL)"},
      // 3: several active instances: who holds each unfinished job until when, the columns
      // every instance queries, and the agents each instance has.
      {"ALTER TABLE jobs ADD COLUMN state INT NOT NULL DEFAULT 0, "
       "ADD COLUMN kind INT NOT NULL DEFAULT 0, ADD COLUMN device_key TEXT NOT NULL DEFAULT '', "
       "ADD COLUMN client TEXT NOT NULL DEFAULT '', "
       "ADD COLUMN idempotency_key TEXT NOT NULL DEFAULT '', "
       "ADD COLUMN artifact_digest TEXT NOT NULL DEFAULT '', ADD COLUMN owner TEXT, "
       "ADD COLUMN lease_until_ms BIGINT NOT NULL DEFAULT 0, ADD COLUMN cancel_reason TEXT",
       "CREATE INDEX jobs_unfinished ON jobs (created_ms) WHERE state IN (1, 2)",
       "CREATE INDEX jobs_by_owner ON jobs (owner) WHERE state IN (1, 2)",
       "CREATE INDEX jobs_by_client ON jobs (client, created_ms)",
       "CREATE UNIQUE INDEX jobs_by_idempotency_key ON jobs (client, idempotency_key) "
       "WHERE idempotency_key <> ''",
       "CREATE INDEX jobs_by_artifact ON jobs (artifact_digest, client)",
       "CREATE TABLE agent_sessions (id TEXT PRIMARY KEY, instance TEXT NOT NULL, "
       "device_key TEXT NOT NULL, seen_ms BIGINT NOT NULL)"},
      // 4: submissions per client and minute, counted by every instance alike (quotas).
      {"CREATE TABLE client_minutes (client TEXT NOT NULL, minute_ms BIGINT NOT NULL, "
       "submitted INT NOT NULL, PRIMARY KEY (client, minute_ms))"},
  };
  return *migrations;
}

// Held while migrating: instances starting at once take turns.
constexpr int64_t kMigrationLock = 0x6b696c6e;  // "kiln"

// Leases are timed by the database's clock, which every instance shares (theirs may differ).
constexpr const char* kNowMs = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint";
constexpr size_t kReadConnections = 4;

// Unfinished: queued or running.
constexpr const char* kUnfinished = "state IN (1, 2)";

std::string DefaultInstanceName() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::mt19937_64 rng(std::random_device{}());
  return absl::StrCat(host, ":", getpid(), ":", absl::Hex(rng() & 0xffff, absl::kZeroPad4));
}

// A list parameter: one element per line (device keys and ids hold no newline).
std::string Lines(const std::vector<std::string>& items) { return absl::StrJoin(items, "\n"); }

}  // namespace

int PostgresStore::SchemaVersion() { return static_cast<int>(Migrations().size()); }

absl::StatusOr<std::unique_ptr<PostgresStore>> PostgresStore::Open(const std::string& url,
                                                                   const std::string& dir,
                                                                   const OpenOptions& options) {
  if (absl::Status s = CreatePrivateDirectories(dir, {"artifacts"}); !s.ok()) return s;
  std::unique_ptr<PostgresStore> store(new PostgresStore(dir));
  store->local_max_bytes_ = options.local_copies_max_bytes;
  // The local copies a previous run left, least recently modified first.
  std::error_code ec;
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> copies;
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/artifacts", ec)) {
    if (entry.path().extension() == ".kiln")
      copies.push_back({entry.last_write_time(ec), entry.path()});
  }
  std::sort(copies.begin(), copies.end());
  for (const auto& [time, path] : copies) {
    std::error_code size_ec;
    int64_t bytes = static_cast<int64_t>(std::filesystem::file_size(path, size_ec));
    std::filesystem::path module = path;
    module.replace_extension(".module");
    bytes += static_cast<int64_t>(std::filesystem::file_size(module, size_ec));
    if (size_ec) size_ec.clear();
    store->KeptLocally(path.stem().string(), bytes);
  }
  store->instance_ = options.instance.empty() ? DefaultInstanceName() : options.instance;
  store->lease_ms_ = std::max<int64_t>(1000, options.lease_ms);
  absl::StatusOr<std::unique_ptr<tune::PgConnection>> db = tune::PgConnection::Connect(url);
  if (!db.ok()) {
    return absl::Status(db.status().code(), absl::StrCat("store: ", db.status().message()));
  }
  store->db_.push_back(std::move(*db));
  if (absl::Status s = store->Migrate(); !s.ok()) return s;
  // Reads and claims spread over a few connections, so that concurrent calls do not queue
  // behind one.
  while (store->db_.size() < kReadConnections) {
    absl::StatusOr<std::unique_ptr<tune::PgConnection>> more = tune::PgConnection::Connect(url);
    if (!more.ok()) {
      return absl::Status(more.status().code(), absl::StrCat("store: ", more.status().message()));
    }
    store->db_.push_back(std::move(*more));
  }
  absl::StatusOr<std::unique_ptr<tune::PgConnection>> writer = tune::PgConnection::Connect(url);
  if (!writer.ok()) {
    return absl::Status(writer.status().code(), absl::StrCat("store: ", writer.status().message()));
  }
  store->writer_db_ = std::move(*writer);
  PostgresStore* raw = store.get();
  store->writer_ = std::thread([raw] { raw->WriterLoop(); });
  return store;
}

absl::Status PostgresStore::Ping() { return db()->Query("SELECT 1", {}).status(); }

PostgresStore::~PostgresStore() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stopping_ = true;
    queued_.notify_all();
    written_.notify_all();
  }
  if (writer_.joinable()) writer_.join();  // it writes what is still queued first
}

absl::Status PostgresStore::Migrate() {
  const std::string lock = absl::StrCat(kMigrationLock);
  absl::StatusOr<tune::PgResult> locked =
      db_[0]->Query("SELECT pg_advisory_lock($1::bigint)", {lock});
  if (!locked.ok()) return locked.status();
  auto migrate = [&]() -> absl::Status {
    absl::StatusOr<tune::PgResult> table = db_[0]->Query(
        "CREATE TABLE IF NOT EXISTS kiln_schema_migrations (version INT PRIMARY KEY, "
        "applied_unix_ms BIGINT NOT NULL)",
        {});
    if (!table.ok()) return table.status();
    absl::StatusOr<tune::PgResult> current =
        db_[0]->Query("SELECT COALESCE(MAX(version), 0)::bigint FROM kiln_schema_migrations", {});
    if (!current.ok()) return current.status();
    const int64_t version = current->Int(0, 0);
    if (version > SchemaVersion()) {
      return absl::FailedPreconditionError(absl::StrCat("store: the database's schema is version ",
                                                        version,
                                                        ", newer than this "
                                                        "kilnd's (",
                                                        SchemaVersion(), "): upgrade kilnd"));
    }
    for (int v = static_cast<int>(version) + 1; v <= SchemaVersion(); ++v) {
      std::vector<std::string> statements = {"BEGIN"};
      for (const char* sql : Migrations()[v - 1]) statements.push_back(sql);
      for (const std::string& sql : statements) {
        if (absl::StatusOr<tune::PgResult> r = db_[0]->Query(sql, {}); !r.ok()) {
          (void)db_[0]->Query("ROLLBACK", {});
          return r.status();
        }
      }
      absl::StatusOr<tune::PgResult> done = db_[0]->Query(
          "INSERT INTO kiln_schema_migrations (version, applied_unix_ms) VALUES ($1, $2)",
          {absl::StrCat(v), absl::StrCat(NowUnixMs())});
      if (!done.ok()) {
        (void)db_[0]->Query("ROLLBACK", {});
        return done.status();
      }
      if (absl::StatusOr<tune::PgResult> r = db_[0]->Query("COMMIT", {}); !r.ok())
        return r.status();
    }
    return absl::OkStatus();
  };
  absl::Status status = migrate();
  (void)db_[0]->Query("SELECT pg_advisory_unlock($1::bigint)", {lock});
  return status;
}

uint64_t PostgresStore::SaveJob(const v1::Job& job) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  QueuedRow& row = queued_jobs_[job.id()];  // replaces an unwritten older row of the job
  row.ticket = ++queued_ticket_;
  row.job = job;
  queued_.notify_one();
  return row.ticket;
}

absl::Status PostgresStore::AwaitSaved(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(queue_mu_);
  written_.wait(lock, [&] { return written_ticket_ >= ticket; });
  auto it = failed_.find(ticket);
  return it == failed_.end() ? absl::OkStatus() : it->second;
}

bool PostgresStore::Saved(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  return written_ticket_ >= ticket;
}

void PostgresStore::Flush() {
  std::unique_lock<std::mutex> lock(queue_mu_);
  const uint64_t until = queued_ticket_;
  written_.wait(lock, [&] { return written_ticket_ >= until || stopping_; });
}

void PostgresStore::WriterLoop() {
  std::unique_lock<std::mutex> lock(queue_mu_);
  int64_t backoff_ms = 0;  // while the database is unreachable
  while (true) {
    queued_.wait(lock, [&] { return stopping_ || !queued_jobs_.empty(); });
    if (queued_jobs_.empty()) return;  // stopping, and nothing left
    std::map<std::string, QueuedRow> batch;
    batch.swap(queued_jobs_);
    uint64_t last = 0;
    for (const auto& [id, row] : batch) {
      last = std::max(last, row.ticket);
      writing_[id] = &row.job;
    }
    lock.unlock();
    // One transaction for the batch; a row the statement refused is that row's answer alone.
    std::map<uint64_t, absl::Status> answers;
    absl::Status batch_status = writer_db_->Query("BEGIN", {}).status();
    for (const auto& [id, row] : batch) {
      if (!batch_status.ok()) break;
      absl::Status written = WriteJob(row.job);
      if (written.code() == absl::StatusCode::kUnavailable ||
          written.code() == absl::StatusCode::kInternal) {
        batch_status = written;
      } else if (!written.ok()) {
        answers[row.ticket] = written;
      }
    }
    if (batch_status.ok()) batch_status = writer_db_->Query("COMMIT", {}).status();
    if (!batch_status.ok()) (void)writer_db_->Query("ROLLBACK", {});
    lock.lock();
    writing_.clear();
    if (!batch_status.ok()) {
      // Nothing of the batch is written: every waiter hears why, and the rows stay queued for
      // when the database is back (a newer row of the same job wins).
      for (auto& [id, row] : batch) {
        answers[row.ticket] = batch_status;
        queued_jobs_.emplace(id, std::move(row));
      }
    }
    for (auto& [ticket, status] : answers) failed_[ticket] = std::move(status);
    while (failed_.size() > 1024) failed_.erase(failed_.begin());  // nobody waits that long
    written_ticket_ = std::max(written_ticket_, last);
    written_.notify_all();
    if (batch_status.ok()) {
      backoff_ms = 0;
    } else if (!stopping_) {
      backoff_ms = std::clamp<int64_t>(backoff_ms * 2, 100, 2000);
      queued_.wait_for(lock, std::chrono::milliseconds(backoff_ms), [&] { return stopping_; });
    } else {
      return;  // stopping with the database away: what is left is lost with this instance
    }
  }
}

absl::Status PostgresStore::WriteJob(const v1::Job& job) {
  // Most rows change a job this instance holds; a new job is inserted as held by it.
  absl::StatusOr<tune::PgResult> updated = writer_db_->Query(
      "UPDATE jobs SET job = $2, created_ms = $3, state = $4, artifact_digest = $5 "
      "WHERE id = $1 AND owner = $6 RETURNING id",
      {job.id(), job.SerializeAsString(), absl::StrCat(job.created_unix_ms()),
       absl::StrCat(static_cast<int>(job.state())), job.artifact_digest(), instance_},
      {false, true});
  if (!updated.ok()) return updated.status();
  if (updated->rows() > 0) return absl::OkStatus();
  const std::vector<std::string> params = {job.id(),
                                           absl::StrCat(job.created_unix_ms()),
                                           job.SerializeAsString(),
                                           absl::StrCat(static_cast<int>(job.state())),
                                           absl::StrCat(static_cast<int>(job.kind())),
                                           job.device_key(),
                                           job.client(),
                                           job.idempotency_key(),
                                           job.artifact_digest(),
                                           instance_,
                                           absl::StrCat(lease_ms_)};
  absl::StatusOr<tune::PgResult> inserted = writer_db_->Query(
      absl::StrCat("INSERT INTO jobs (id, created_ms, job, state, kind, device_key, client, "
                   "idempotency_key, artifact_digest, owner, lease_until_ms) "
                   "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, ",
                   kNowMs, " + $11) ON CONFLICT DO NOTHING RETURNING id"),
      params, {false, false, true});
  if (!inserted.ok()) return inserted.status();
  if (inserted->rows() > 0) return absl::OkStatus();
  absl::StatusOr<tune::PgResult> exists =
      writer_db_->Query("SELECT 1::bigint FROM jobs WHERE id = $1", {job.id()});
  if (!exists.ok()) return exists.status();
  if (exists->rows() > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("store: job ", job.id(), " is held by another instance now"));
  }
  return absl::AlreadyExistsError(absl::StrCat("store: another job of client '", job.client(),
                                               "' has the idempotency key '", job.idempotency_key(),
                                               "'"));
}

absl::StatusOr<std::optional<v1::Job>> PostgresStore::GetJob(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    // A row saved but not yet committed is the newest: read it here, not from the database.
    auto it = queued_jobs_.find(id);
    if (it != queued_jobs_.end()) return std::optional<v1::Job>(it->second.job);
    auto written = writing_.find(id);
    if (written != writing_.end()) return std::optional<v1::Job>(*written->second);
  }
  absl::StatusOr<tune::PgResult> r = db()->Query("SELECT job FROM jobs WHERE id = $1", {id});
  if (!r.ok()) return r.status();
  if (r->rows() == 0) return std::optional<v1::Job>();
  v1::Job job;
  if (!job.ParseFromString(r->Bytes(0, 0))) {
    return absl::DataLossError("store: job " + id + " is corrupt");
  }
  return std::optional<v1::Job>(std::move(job));
}

absl::StatusOr<std::vector<v1::Job>> PostgresStore::LoadJobs(int limit) {
  absl::StatusOr<tune::PgResult> r =
      db()->Query("SELECT job FROM jobs ORDER BY created_ms DESC LIMIT $1", {absl::StrCat(limit)});
  if (!r.ok()) return r.status();
  return ParseJobs(*r, 0);
}

std::vector<v1::Job> PostgresStore::ParseJobs(const tune::PgResult& r, int column) const {
  std::vector<v1::Job> jobs;
  for (int i = 0; i < r.rows(); ++i) {
    if (!jobs.emplace_back().ParseFromString(r.Bytes(i, column))) jobs.pop_back();
  }
  return jobs;
}

absl::Status PostgresStore::PutDevice(const v1::Device& device) {
  return db()
      ->Query(
          "INSERT INTO devices (key, device) VALUES ($1, $2) "
          "ON CONFLICT (key) DO UPDATE SET device = excluded.device",
          {device.key(), device.SerializeAsString()}, {false, true})
      .status();
}

absl::StatusOr<std::vector<v1::Device>> PostgresStore::LoadDevices() {
  absl::StatusOr<tune::PgResult> r = db()->Query("SELECT device FROM devices ORDER BY key", {});
  if (!r.ok()) return r.status();
  std::vector<v1::Device> devices;
  for (int i = 0; i < r->rows(); ++i) {
    if (!devices.emplace_back().ParseFromString(r->Bytes(i, 0))) devices.pop_back();
  }
  return devices;
}

absl::Status PostgresStore::PutArtifact(const std::string& digest, const std::string& cache_key,
                                        const std::string& bytes, const std::string& module) {
  // The database first (what every instance reads), then this instance's copy.
  absl::StatusOr<tune::PgResult> r = db()->Query(
      "INSERT INTO artifacts (digest, cache_key, size, last_used_ms, bytes, module) "
      "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (digest) DO UPDATE SET "
      "last_used_ms = excluded.last_used_ms, "
      "cache_key = CASE WHEN excluded.cache_key <> '' THEN excluded.cache_key "
      "ELSE artifacts.cache_key END, "
      "module = COALESCE(excluded.module, artifacts.module)",
      {digest, cache_key, absl::StrCat(bytes.size()), absl::StrCat(NowUnixMs()), bytes, module},
      {false, false, false, false, true, true});
  if (!r.ok()) return r.status();
  // The database keeps the bytes first stored (ON CONFLICT leaves them); so does the local copy.
  if (!IntactArtifactFile(ArtifactPath(digest), digest)) {
    if (absl::Status s = WriteFileAtomically(ArtifactPath(digest), bytes); !s.ok()) return s;
  }
  if (!module.empty()) {
    if (absl::Status s = WriteFileAtomically(ModulePath(digest), module); !s.ok()) return s;
  }
  KeptLocally(digest, static_cast<int64_t>(bytes.size() + module.size()));
  return absl::OkStatus();
}

void PostgresStore::KeptLocally(const std::string& digest, int64_t bytes) {
  std::lock_guard<std::mutex> lock(local_mu_);
  auto [it, added] = local_.try_emplace(digest, LocalCopy{0, 0});
  local_bytes_ += bytes - it->second.bytes;
  it->second = LocalCopy{bytes, ++local_clock_};
  if (local_max_bytes_ <= 0) return;
  // Least recently used first; never the one just kept.
  while (local_bytes_ > local_max_bytes_ && local_.size() > 1) {
    auto oldest = local_.end();
    for (auto c = local_.begin(); c != local_.end(); ++c) {
      if (c->first != digest && (oldest == local_.end() || c->second.used < oldest->second.used)) {
        oldest = c;
      }
    }
    std::error_code ec;
    std::filesystem::remove(ArtifactPath(oldest->first), ec);
    std::filesystem::remove(ModulePath(oldest->first), ec);
    local_bytes_ -= oldest->second.bytes;
    local_.erase(oldest);
  }
}

void PostgresStore::UsedLocally(const std::string& digest) {
  std::lock_guard<std::mutex> lock(local_mu_);
  if (auto it = local_.find(digest); it != local_.end()) it->second.used = ++local_clock_;
}

absl::StatusOr<std::optional<ArtifactRecord>> PostgresStore::FindArtifact(
    const std::string& digest) {
  absl::StatusOr<tune::PgResult> r = db()->Query(
      "SELECT cache_key, size, last_used_ms FROM artifacts WHERE digest = $1", {digest});
  if (!r.ok()) return r.status();
  if (r->rows() == 0) return std::optional<ArtifactRecord>();
  return std::optional<ArtifactRecord>(
      ArtifactRecord{digest, r->Bytes(0, 0), r->Int(0, 1), r->Int(0, 2)});
}

absl::StatusOr<std::string> PostgresStore::ReadArtifact(const std::string& digest) {
  absl::StatusOr<std::optional<ArtifactRecord>> record = FindArtifact(digest);
  if (!record.ok()) return record.status();
  if (!record->has_value()) return absl::NotFoundError(absl::StrCat("no artifact ", digest));
  // This instance's copy when it is intact; otherwise the database's, copied here again.
  if (absl::StatusOr<std::string> local = ReadFile(ArtifactPath(digest));
      local.ok() && VerifyArtifact(*local, digest).ok()) {
    UsedLocally(digest);
    return local;
  }
  absl::StatusOr<tune::PgResult> r =
      db()->Query("SELECT bytes FROM artifacts WHERE digest = $1", {digest});
  if (!r.ok()) return r.status();
  if (r->rows() == 0) return absl::NotFoundError(absl::StrCat("no artifact ", digest));
  std::string bytes = r->Bytes(0, 0);
  if (absl::Status verdict = VerifyArtifact(bytes, digest); !verdict.ok()) {
    DropArtifact(digest).IgnoreError();
    return absl::DataLossError(absl::StrCat("artifact ", digest, " is corrupt in the database (",
                                            verdict.message(), "); it was removed from the store"));
  }
  if (WriteFileAtomically(ArtifactPath(digest), bytes).ok()) {  // a cache: best effort
    KeptLocally(digest, static_cast<int64_t>(bytes.size()));
  }
  return bytes;
}

absl::StatusOr<std::string> PostgresStore::ReadModule(const std::string& digest) {
  if (absl::StatusOr<std::string> local = ReadFile(ModulePath(digest)); local.ok()) return local;
  absl::StatusOr<tune::PgResult> r =
      db()->Query("SELECT module FROM artifacts WHERE digest = $1", {digest});
  if (!r.ok()) return r.status();
  if (r->rows() == 0 || r->null(0, 0)) {
    return absl::NotFoundError(absl::StrCat("store: no module for artifact ", digest));
  }
  std::string module = r->Bytes(0, 0);
  WriteFileAtomically(ModulePath(digest), module).IgnoreError();
  return module;
}

absl::StatusOr<std::vector<std::string>> PostgresStore::FindByCacheKey(
    const std::string& cache_key) {
  absl::StatusOr<tune::PgResult> r =
      db()->Query("SELECT digest FROM artifacts WHERE cache_key = $1", {cache_key});
  if (!r.ok()) return r.status();
  std::vector<std::string> digests;
  for (int i = 0; i < r->rows(); ++i) digests.push_back(r->Bytes(i, 0));
  return digests;
}

void PostgresStore::TouchArtifact(const std::string& digest) {
  db()->Query("UPDATE artifacts SET last_used_ms = $1 WHERE digest = $2",
              {absl::StrCat(NowUnixMs()), digest})
      .status()
      .IgnoreError();  // a last-used time is a hint for eviction
}

absl::StatusOr<int64_t> PostgresStore::TotalArtifactBytes() {
  absl::StatusOr<tune::PgResult> r =
      db()->Query("SELECT COALESCE(SUM(size), 0)::bigint FROM artifacts", {});
  if (!r.ok()) return r.status();
  return r->Int(0, 0);
}

int64_t PostgresStore::DatabaseBytes() const {
  absl::StatusOr<tune::PgResult> r = db()->Query("SELECT pg_database_size(current_database())", {});
  return r.ok() ? r->Int(0, 0) : 0;
}

absl::Status PostgresStore::DeleteJobs(const std::vector<std::string>& ids) {
  Flush();
  for (const std::string& id : ids) {
    for (const char* sql :
         {"DELETE FROM jobs WHERE id = $1", "DELETE FROM job_inputs WHERE id = $1"}) {
      if (absl::Status s = db()->Query(sql, {id}).status(); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int> PostgresStore::EvictTo(
    int64_t max_bytes, const std::string& keep,
    const std::function<bool(const std::string& digest)>& evictable) {
  absl::StatusOr<tune::PgResult> r =
      db()->Query("SELECT digest, size FROM artifacts ORDER BY last_used_ms ASC", {});
  if (!r.ok()) return r.status();
  int64_t total = 0;
  for (int i = 0; i < r->rows(); ++i) total += r->Int(i, 1);
  int evicted = 0;
  for (int i = 0; i < r->rows() && total > max_bytes; ++i) {
    std::string digest = r->Bytes(i, 0);
    if (digest == keep || (evictable && !evictable(digest))) continue;
    if (absl::Status s = DropArtifact(digest); !s.ok()) return s;
    total -= r->Int(i, 1);
    ++evicted;
  }
  return evicted;
}

absl::Status PostgresStore::DropArtifact(const std::string& digest) {
  absl::StatusOr<tune::PgResult> r =
      db()->Query("DELETE FROM artifacts WHERE digest = $1", {digest});
  std::error_code ec;
  std::filesystem::remove(ArtifactPath(digest), ec);
  std::filesystem::remove(ModulePath(digest), ec);
  {
    std::lock_guard<std::mutex> lock(local_mu_);
    if (auto it = local_.find(digest); it != local_.end()) {
      local_bytes_ -= it->second.bytes;
      local_.erase(it);
    }
  }
  return r.status();
}

absl::Status PostgresStore::PutJobInput(const std::string& id, const std::string& input) {
  return db()
      ->Query(
          "INSERT INTO job_inputs (id, input) VALUES ($1, $2) "
          "ON CONFLICT (id) DO UPDATE SET input = excluded.input",
          {id, input}, {false, true})
      .status();
}

absl::StatusOr<std::optional<std::string>> PostgresStore::GetJobInput(const std::string& id) {
  absl::StatusOr<tune::PgResult> r =
      db()->Query("SELECT input FROM job_inputs WHERE id = $1", {id});
  if (!r.ok()) return r.status();
  if (r->rows() == 0) return std::optional<std::string>();
  return std::optional<std::string>(r->Bytes(0, 0));
}

absl::Status PostgresStore::DeleteJobInputs(const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    if (absl::Status s = db()->Query("DELETE FROM job_inputs WHERE id = $1", {id}).status();
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

// --- work shared between instances --------------------------------------------------------

absl::StatusOr<std::vector<ClaimedJob>> PostgresStore::ClaimJobs(
    bool compiles, const std::vector<std::string>& device_keys, int limit) {
  absl::StatusOr<tune::PgResult> r =
      db()->Query(absl::StrCat("WITH free AS (SELECT id, owner FROM jobs WHERE ", kUnfinished,
                               " AND (owner IS NULL OR lease_until_ms < ", kNowMs,
                               ") AND ((kind = 1 AND $1 = 1) OR "
                               "(kind <> 1 AND device_key = ANY(string_to_array($2, E'\\n')))) "
                               "ORDER BY created_ms LIMIT $3 FOR UPDATE SKIP LOCKED) "
                               "UPDATE jobs SET owner = $4, lease_until_ms = ",
                               kNowMs,
                               " + $5 FROM free WHERE jobs.id = free.id "
                               "RETURNING jobs.job, (free.owner IS NOT NULL)::int::bigint"),
                  {compiles ? "1" : "0", Lines(device_keys), absl::StrCat(limit), instance_,
                   absl::StrCat(lease_ms_)});
  if (!r.ok()) return r.status();
  std::vector<ClaimedJob> claimed;
  for (int i = 0; i < r->rows(); ++i) {
    ClaimedJob c;
    if (!c.job.ParseFromString(r->Bytes(i, 0))) continue;
    c.interrupted = r->Int(i, 1) == 1;
    claimed.push_back(std::move(c));
  }
  return claimed;
}

absl::StatusOr<std::optional<v1::Job>> PostgresStore::ClaimJob(const std::string& id) {
  absl::StatusOr<tune::PgResult> r = db()->Query(
      absl::StrCat("UPDATE jobs SET owner = $2, lease_until_ms = ", kNowMs,
                   " + $3 WHERE id = $1 AND ", kUnfinished, " AND (owner IS NULL OR owner = $2 OR ",
                   "lease_until_ms < ", kNowMs, ") RETURNING job"),
      {id, instance_, absl::StrCat(lease_ms_)});
  if (!r.ok()) return r.status();
  std::vector<v1::Job> jobs = ParseJobs(*r, 0);
  if (jobs.empty()) return std::optional<v1::Job>();
  return std::optional<v1::Job>(std::move(jobs[0]));
}

absl::StatusOr<LeaseRenewal> PostgresStore::RenewLeases() {
  // Rows queued or being written now are held here all the same (taken before the query: a
  // row committed after this is one the query sees).
  std::vector<std::string> unwritten;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    for (const auto& [id, row] : queued_jobs_) unwritten.push_back(id);
    for (const auto& [id, job] : writing_) unwritten.push_back(id);
  }
  absl::StatusOr<tune::PgResult> r = db()->Query(
      absl::StrCat("UPDATE jobs SET lease_until_ms = ", kNowMs, " + $2 WHERE owner = $1 AND ",
                   kUnfinished, " RETURNING id, cancel_reason"),
      {instance_, absl::StrCat(lease_ms_)});
  if (!r.ok()) return r.status();
  LeaseRenewal renewal;
  for (int i = 0; i < r->rows(); ++i) {
    renewal.held.push_back(r->Bytes(i, 0));
    if (!r->null(i, 1)) renewal.cancel_requests[r->Bytes(i, 0)] = r->Bytes(i, 1);
  }
  renewal.held.insert(renewal.held.end(), unwritten.begin(), unwritten.end());
  // This instance's agents are alive; sessions of instances long gone are forgotten.
  if (absl::Status s = db()->Query(absl::StrCat("UPDATE agent_sessions SET seen_ms = ", kNowMs,
                                                " WHERE instance = $1"),
                                   {instance_})
                           .status();
      !s.ok()) {
    return s;
  }
  if (absl::Status s = db()->Query(absl::StrCat("DELETE FROM agent_sessions WHERE seen_ms < ",
                                                kNowMs, " - 10 * $1::bigint"),
                                   {absl::StrCat(lease_ms_)})
                           .status();
      !s.ok()) {
    return s;
  }
  return renewal;
}

absl::Status PostgresStore::ReleaseJobs(const std::vector<std::string>& ids) {
  if (ids.empty()) return absl::OkStatus();
  Flush();  // their rows first: a release must not be overwritten by a later insert
  return db()
      ->Query(
          "UPDATE jobs SET owner = NULL WHERE id = ANY(string_to_array($1, E'\\n')) AND "
          "owner = $2",
          {Lines(ids), instance_})
      .status();
}

absl::Status PostgresStore::RequestCancel(const std::string& id, const std::string& reason) {
  return db()
      ->Query(absl::StrCat("UPDATE jobs SET cancel_reason = $2 WHERE id = $1 AND ", kUnfinished),
              {id, reason})
      .status();
}

absl::StatusOr<std::vector<v1::Job>> PostgresStore::ListJobs(v1::JobState state,
                                                             const std::string& client, int limit) {
  absl::StatusOr<tune::PgResult> r = db()->Query(
      "SELECT job FROM jobs WHERE ($1 = 0 OR state = $1) AND ($2 = '' OR client = $2) "
      "ORDER BY created_ms DESC, id DESC LIMIT $3",
      {absl::StrCat(static_cast<int>(state)), client, absl::StrCat(limit)});
  if (!r.ok()) return r.status();
  return ParseJobs(*r, 0);
}

absl::StatusOr<std::optional<v1::Job>> PostgresStore::FindIdempotent(const std::string& client,
                                                                     const std::string& key) {
  absl::StatusOr<tune::PgResult> r =
      db()->Query("SELECT job FROM jobs WHERE client = $1 AND idempotency_key = $2", {client, key});
  if (!r.ok()) return r.status();
  std::vector<v1::Job> jobs = ParseJobs(*r, 0);
  if (jobs.empty()) return std::optional<v1::Job>();
  return std::optional<v1::Job>(std::move(jobs[0]));
}

absl::StatusOr<bool> PostgresStore::ClientHasArtifact(const std::string& client,
                                                      const std::string& digest) {
  absl::StatusOr<tune::PgResult> r =
      db()->Query("SELECT 1::bigint FROM jobs WHERE artifact_digest = $1 AND client = $2 LIMIT 1",
                  {digest, client});
  if (!r.ok()) return r.status();
  return r->rows() > 0;
}

absl::StatusOr<std::pair<int, int>> PostgresStore::ClientJobCounts(const std::string& client) {
  absl::StatusOr<tune::PgResult> r =
      db()->Query(absl::StrCat("SELECT (count(*) FILTER (WHERE ", kUnfinished,
                               "))::bigint, count(*)::bigint FROM jobs WHERE client = $1"),
                  {client});
  if (!r.ok()) return r.status();
  return std::make_pair(static_cast<int>(r->Int(0, 0)), static_cast<int>(r->Int(0, 1)));
}

absl::StatusOr<std::pair<std::optional<int>, int64_t>> PostgresStore::CountSubmission(
    const std::string& client, int limit) {
  // The minute by the database's clock, which every instance shares; one statement, so two
  // instances counting at once cannot both take the last one.
  const std::string minute = absl::StrCat("(", kNowMs, " / 60000 * 60000)");
  absl::StatusOr<tune::PgResult> r = db()->Query(
      absl::StrCat("INSERT INTO client_minutes AS c (client, minute_ms, submitted) VALUES ($1, ",
                   minute,
                   ", 1) ON CONFLICT (client, minute_ms) DO UPDATE SET submitted = "
                   "c.submitted + 1 WHERE c.submitted < $2::int RETURNING c.submitted::bigint, (",
                   minute, " + 60000 - ", kNowMs, ")::bigint"),
      {client, absl::StrCat(limit)});
  if (!r.ok()) return r.status();
  if (r->rows() == 0) {
    absl::StatusOr<tune::PgResult> left =
        db()->Query(absl::StrCat("SELECT (", minute, " + 60000 - ", kNowMs, ")::bigint"), {});
    return std::make_pair(std::optional<int>(), left.ok() ? left->Int(0, 0) : int64_t{60000});
  }
  // Earlier minutes are of no use: gone with this client's next count.
  db()->Query(absl::StrCat("DELETE FROM client_minutes WHERE client = $1 AND minute_ms < ", minute),
              {client})
      .IgnoreError();
  return std::make_pair(std::optional<int>(static_cast<int>(r->Int(0, 0))), r->Int(0, 1));
}

absl::Status PostgresStore::PutAgentSession(const std::string& agent_id,
                                            const std::string& device_key) {
  return db()
      ->Query(absl::StrCat("INSERT INTO agent_sessions (id, instance, device_key, seen_ms) "
                           "VALUES ($1, $2, $3, ",
                           kNowMs, ") ON CONFLICT (id) DO UPDATE SET seen_ms = excluded.seen_ms"),
              {absl::StrCat(instance_, "/", agent_id), instance_, device_key})
      .status();
}

absl::Status PostgresStore::DropAgentSession(const std::string& agent_id) {
  return db()
      ->Query("DELETE FROM agent_sessions WHERE id = $1", {absl::StrCat(instance_, "/", agent_id)})
      .status();
}

absl::StatusOr<std::map<std::string, int>> PostgresStore::AgentsByDevice() {
  absl::StatusOr<tune::PgResult> r =
      db()->Query(absl::StrCat("SELECT device_key, COUNT(*)::bigint FROM agent_sessions "
                               "WHERE seen_ms >= ",
                               kNowMs, " - $1::bigint GROUP BY device_key"),
                  {absl::StrCat(lease_ms_)});
  if (!r.ok()) return r.status();
  std::map<std::string, int> agents;
  for (int i = 0; i < r->rows(); ++i) agents[r->Bytes(i, 0)] = static_cast<int>(r->Int(i, 1));
  return agents;
}

absl::StatusOr<std::map<std::string, int>> PostgresStore::TasksQueuedByDevice() {
  absl::StatusOr<tune::PgResult> r = db()->Query(
      "SELECT device_key, COUNT(*)::bigint FROM jobs WHERE state = 1 AND "
      "kind IN (2, 3) GROUP BY device_key",
      {});
  if (!r.ok()) return r.status();
  std::map<std::string, int> queued;
  for (int i = 0; i < r->rows(); ++i) queued[r->Bytes(i, 0)] = static_cast<int>(r->Int(i, 1));
  return queued;
}

}  // namespace kiln::server
