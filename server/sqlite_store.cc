#include "server/sqlite_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace kiln::server {
namespace {

// One prepared statement, finalized on scope exit; Bind* take 1-based indexes like SQLite.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) stmt_ = nullptr;
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  bool ok() const { return stmt_ != nullptr; }
  void Bind(int i, const std::string& text) {
    sqlite3_bind_blob(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  // SQLITE_ROW, SQLITE_DONE, or an error code.
  int Step() { return stmt_ == nullptr ? SQLITE_ERROR : sqlite3_step(stmt_); }
  // For running the statement again with new bindings.
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::string Blob(int column) {
    const void* data = sqlite3_column_blob(stmt_, column);
    int n = sqlite3_column_bytes(stmt_, column);
    return data == nullptr ? std::string() : std::string(static_cast<const char*>(data), n);
  }
  int64_t Int(int column) { return sqlite3_column_int64(stmt_, column); }
  absl::Status Error(const char* what) const {
    return absl::InternalError(absl::StrCat("store: ", what, ": ", sqlite3_errmsg(db_)));
  }
  absl::Status Done(const char* what) {
    return Step() == SQLITE_DONE ? absl::OkStatus() : Error(what);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& dir) {
  absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(dir);
  if (!store.ok()) return store.status();
  return std::unique_ptr<Store>(std::move(*store));
}

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& dir) {
  if (absl::Status s = CreatePrivateDirectories(dir, {"artifacts", "inputs"}); !s.ok()) return s;
  std::unique_ptr<SqliteStore> store(new SqliteStore(dir));
  std::string path = dir + "/kiln.db";
  if (sqlite3_open(path.c_str(), &store->db_) != SQLITE_OK) {
    return absl::InternalError(
        absl::StrCat("store: cannot open ", path, ": ", sqlite3_errmsg(store->db_)));
  }
  sqlite3_busy_timeout(store->db_, 5000);
  // WAL with synchronous=NORMAL: a commit is durable against a crash of kilnd (not of the
  // machine) without an fsync per job.
  for (const char* sql : {
           "PRAGMA journal_mode=WAL",
           "PRAGMA synchronous=NORMAL",
           "CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY, created_ms INTEGER NOT NULL, "
           "job BLOB NOT NULL)",
           "CREATE INDEX IF NOT EXISTS jobs_by_created ON jobs(created_ms)",
           "CREATE TABLE IF NOT EXISTS devices (key TEXT PRIMARY KEY, device BLOB NOT NULL)",
           "CREATE TABLE IF NOT EXISTS artifacts (digest TEXT PRIMARY KEY, cache_key TEXT NOT "
           "NULL, size INTEGER NOT NULL, last_used_ms INTEGER NOT NULL)",
           "CREATE INDEX IF NOT EXISTS artifacts_by_key ON artifacts(cache_key)",
       }) {
    if (absl::Status s = store->Exec(sql); !s.ok()) return s;
  }
  SqliteStore* raw = store.get();
  store->writer_ = std::thread([raw] { raw->WriterLoop(); });
  return store;
}

SqliteStore::~SqliteStore() {
  if (writer_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      stopping_ = true;
      queued_.notify_one();
    }
    writer_.join();  // it writes what is still queued first
  }
  sqlite3_close(db_);
}

absl::Status SqliteStore::Exec(const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    return absl::InternalError(absl::StrCat("store: ", message, " in: ", sql));
  }
  return absl::OkStatus();
}

uint64_t SqliteStore::SaveJob(const v1::Job& job) {
  std::string row = job.SerializeAsString();
  std::lock_guard<std::mutex> lock(queue_mu_);
  queued_jobs_[job.id()] = {job.created_unix_ms(), std::move(row)};
  queued_.notify_one();
  return ++queued_ticket_;
}

bool SqliteStore::Saved(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  return committed_ticket_ >= ticket;
}

absl::Status SqliteStore::AwaitSaved(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(queue_mu_);
  committed_.wait(lock, [&] { return committed_ticket_ >= ticket; });
  if (ticket >= failed_from_ && ticket <= failed_to_) return failed_status_;
  return absl::OkStatus();
}

void SqliteStore::WriterLoop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      queued_.wait(lock, [&] { return stopping_ || queued_ticket_ > committed_ticket_; });
      if (queued_ticket_ == committed_ticket_ && stopping_) return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    FlushQueueLocked();
  }
}

void SqliteStore::FlushQueueLocked() {
  std::map<std::string, std::pair<int64_t, std::string>> jobs;
  std::map<std::string, int64_t> touches;
  uint64_t first, last;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    jobs.swap(queued_jobs_);
    touches.swap(queued_touches_);
    first = committed_ticket_ + 1;
    last = queued_ticket_;
  }
  absl::Status status = WriteBatchLocked(std::move(jobs), std::move(touches));
  std::lock_guard<std::mutex> lock(queue_mu_);
  if (!status.ok()) {
    failed_from_ = first;
    failed_to_ = last;
    failed_status_ = status;
  }
  committed_ticket_ = std::max(committed_ticket_, last);
  committed_.notify_all();
}

absl::Status SqliteStore::WriteBatchLocked(
    std::map<std::string, std::pair<int64_t, std::string>> jobs,
    std::map<std::string, int64_t> touches) {
  if (jobs.empty() && touches.empty()) return absl::OkStatus();
  if (absl::Status s = Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  absl::Status status;
  {
    Statement put(db_, "INSERT OR REPLACE INTO jobs (id, created_ms, job) VALUES (?, ?, ?)");
    for (const auto& [id, row] : jobs) {
      put.Bind(1, id);
      put.Bind(2, row.first);
      put.Bind(3, row.second);
      if (status.ok()) status = put.Done("saving a job");
      put.Reset();
    }
    Statement touch(db_, "UPDATE artifacts SET last_used_ms = ? WHERE digest = ?");
    for (const auto& [digest, ms] : touches) {
      touch.Bind(1, ms);
      touch.Bind(2, digest);
      if (status.ok()) status = touch.Done("touching an artifact");
      touch.Reset();
    }
  }
  if (!status.ok()) {
    Exec("ROLLBACK").IgnoreError();
    return status;
  }
  return Exec("COMMIT");
}

absl::StatusOr<std::optional<v1::Job>> SqliteStore::GetJob(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  FlushQueueLocked();
  Statement s(db_, "SELECT job FROM jobs WHERE id = ?");
  s.Bind(1, id);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<v1::Job>();
  if (rc != SQLITE_ROW) return s.Error("reading a job");
  v1::Job job;
  if (!job.ParseFromString(s.Blob(0)))
    return absl::DataLossError("store: job " + id + " is corrupt");
  return std::optional<v1::Job>(std::move(job));
}

absl::StatusOr<std::vector<v1::Job>> SqliteStore::LoadJobs(int limit) {
  std::lock_guard<std::mutex> lock(mu_);
  FlushQueueLocked();
  Statement s(db_, "SELECT job FROM jobs ORDER BY created_ms DESC LIMIT ?");
  s.Bind(1, static_cast<int64_t>(limit));
  std::vector<v1::Job> jobs;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    if (!jobs.emplace_back().ParseFromString(s.Blob(0))) jobs.pop_back();
  }
  if (rc != SQLITE_DONE) return s.Error("loading jobs");
  return jobs;
}

absl::Status SqliteStore::PutDevice(const v1::Device& device) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "INSERT OR REPLACE INTO devices (key, device) VALUES (?, ?)");
  s.Bind(1, device.key());
  s.Bind(2, device.SerializeAsString());
  return s.Done("saving a device");
}

absl::StatusOr<std::vector<v1::Device>> SqliteStore::LoadDevices() {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "SELECT device FROM devices ORDER BY key");
  std::vector<v1::Device> devices;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    if (!devices.emplace_back().ParseFromString(s.Blob(0))) devices.pop_back();
  }
  if (rc != SQLITE_DONE) return s.Error("loading devices");
  return devices;
}

absl::Status SqliteStore::PutArtifact(const std::string& digest, const std::string& cache_key,
                                      const std::string& bytes, const std::string& module) {
  // Files first, then the index: a crash in between leaves an unindexed file, never an index
  // entry without its bytes. An intact file of the digest stays as it is.
  if (!IntactArtifactFile(ArtifactPath(digest), digest)) {
    if (absl::Status s = WriteFileAtomically(ArtifactPath(digest), bytes); !s.ok()) return s;
  }
  if (!module.empty()) {
    if (absl::Status s = WriteFileAtomically(ModulePath(digest), module); !s.ok()) return s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_,
              "INSERT INTO artifacts (digest, cache_key, size, last_used_ms) VALUES (?, ?, ?, ?) "
              "ON CONFLICT(digest) DO UPDATE SET last_used_ms = excluded.last_used_ms, "
              "cache_key = CASE WHEN excluded.cache_key != '' THEN excluded.cache_key "
              "ELSE artifacts.cache_key END");
  s.Bind(1, digest);
  s.Bind(2, cache_key);
  s.Bind(3, static_cast<int64_t>(bytes.size()));
  s.Bind(4, NowUnixMs());
  return s.Done("indexing an artifact");
}

absl::StatusOr<std::optional<ArtifactRecord>> SqliteStore::FindArtifact(const std::string& digest) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "SELECT cache_key, size, last_used_ms FROM artifacts WHERE digest = ?");
  s.Bind(1, digest);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<ArtifactRecord>();
  if (rc != SQLITE_ROW) return s.Error("finding an artifact");
  return std::optional<ArtifactRecord>(ArtifactRecord{digest, s.Blob(0), s.Int(1), s.Int(2)});
}

absl::StatusOr<std::string> SqliteStore::ReadArtifact(const std::string& digest) {
  absl::StatusOr<std::optional<ArtifactRecord>> record = FindArtifact(digest);
  if (!record.ok()) return record.status();
  if (!record->has_value()) return absl::NotFoundError(absl::StrCat("no artifact ", digest));
  absl::StatusOr<std::string> bytes = ReadFile(ArtifactPath(digest));
  absl::Status verdict = bytes.ok() ? VerifyArtifact(*bytes, digest) : bytes.status();
  if (verdict.ok()) return bytes;
  std::lock_guard<std::mutex> lock(mu_);
  DropArtifactLocked(digest).IgnoreError();
  return absl::DataLossError(absl::StrCat("artifact ", digest, " is corrupt on disk (",
                                          verdict.message(), "); it was removed from the store"));
}

absl::StatusOr<std::string> SqliteStore::ReadModule(const std::string& digest) {
  return ReadFile(ModulePath(digest));
}

absl::StatusOr<std::vector<std::string>> SqliteStore::FindByCacheKey(const std::string& cache_key) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "SELECT digest FROM artifacts WHERE cache_key = ?");
  s.Bind(1, cache_key);
  std::vector<std::string> digests;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) digests.push_back(s.Blob(0));
  if (rc != SQLITE_DONE) return s.Error("looking up the cache");
  return digests;
}

void SqliteStore::TouchArtifact(const std::string& digest) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  queued_touches_[digest] = NowUnixMs();
}

absl::StatusOr<int64_t> SqliteStore::TotalArtifactBytes() {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "SELECT COALESCE(SUM(size), 0) FROM artifacts");
  if (s.Step() != SQLITE_ROW) return s.Error("summing artifact sizes");
  return s.Int(0);
}

int64_t SqliteStore::DatabaseBytes() const {
  int64_t total = 0;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::error_code ec;
    uintmax_t size = std::filesystem::file_size(dir() + "/kiln.db" + suffix, ec);
    if (!ec) total += static_cast<int64_t>(size);
  }
  return total;
}

absl::Status SqliteStore::DeleteJobs(const std::vector<std::string>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  FlushQueueLocked();  // a queued write of one of them must not bring it back
  if (absl::Status s = Exec("BEGIN"); !s.ok()) return s;
  for (const std::string& id : ids) {
    Statement s(db_, "DELETE FROM jobs WHERE id = ?");
    s.Bind(1, id);
    if (absl::Status st = s.Done("deleting a pruned job"); !st.ok()) {
      (void)Exec("ROLLBACK");
      return st;
    }
  }
  if (absl::Status s = Exec("COMMIT"); !s.ok()) return s;
  DeleteJobInputs(ids).IgnoreError();
  return absl::OkStatus();
}

absl::StatusOr<int> SqliteStore::EvictTo(
    int64_t max_bytes, const std::string& keep,
    const std::function<bool(const std::string& digest)>& evictable) {
  std::vector<std::pair<std::string, int64_t>> lru;
  int64_t total = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    FlushQueueLocked();  // the last-used times it orders by
    Statement s(db_, "SELECT digest, size FROM artifacts ORDER BY last_used_ms ASC");
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      lru.emplace_back(s.Blob(0), s.Int(1));
      total += s.Int(1);
    }
    if (rc != SQLITE_DONE) return s.Error("listing artifacts");
  }
  int evicted = 0;
  for (const auto& [digest, size] : lru) {
    if (total <= max_bytes) break;
    if (digest == keep || (evictable && !evictable(digest))) continue;
    if (absl::Status s = DropArtifact(digest); !s.ok()) return s;
    total -= size;
    ++evicted;
  }
  return evicted;
}

absl::Status SqliteStore::DropArtifact(const std::string& digest) {
  std::lock_guard<std::mutex> lock(mu_);
  return DropArtifactLocked(digest);
}

absl::Status SqliteStore::DropArtifactLocked(const std::string& digest) {
  Statement s(db_, "DELETE FROM artifacts WHERE digest = ?");
  s.Bind(1, digest);
  absl::Status status = s.Done("dropping an artifact");
  std::error_code ec;
  std::filesystem::remove(ArtifactPath(digest), ec);
  std::filesystem::remove(ModulePath(digest), ec);
  return status;
}

// Inputs are files beside the database, not rows in it: a module can be large, and a SQLite
// file never shrinks, while an input lives only as long as its job runs.
std::string SqliteStore::InputPath(const std::string& id) const {
  return absl::StrCat(dir(), "/inputs/", id);
}

absl::Status SqliteStore::PutJobInput(const std::string& id, const std::string& input) {
  if (id.find('/') != std::string::npos) return absl::InvalidArgumentError("bad job id " + id);
  return WriteFileAtomically(InputPath(id), input);
}

absl::StatusOr<std::optional<std::string>> SqliteStore::GetJobInput(const std::string& id) {
  if (id.find('/') != std::string::npos) return std::optional<std::string>();
  absl::StatusOr<std::string> input = ReadFile(InputPath(id));
  if (!input.ok()) return std::optional<std::string>();
  return std::optional<std::string>(*std::move(input));
}

absl::Status SqliteStore::DeleteJobInputs(const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    if (id.find('/') != std::string::npos) continue;
    std::error_code ec;
    std::filesystem::remove(InputPath(id), ec);
  }
  return absl::OkStatus();
}

}  // namespace kiln::server
