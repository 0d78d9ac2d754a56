#include "compiler/tune/database.h"

#include <sqlite3.h>

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "compiler/tir/schedule/trace.h"
#include "compiler/tune/database_postgres.h"
#include "compiler/tune/postgres_connection.h"

namespace kiln::tune {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS kiln_tuning_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS workloads(
  id INTEGER PRIMARY KEY,
  workload_key TEXT NOT NULL,
  target TEXT NOT NULL,
  device_key TEXT NOT NULL,
  module TEXT NOT NULL,
  default_seconds DOUBLE PRECISION,
  UNIQUE(workload_key, target, device_key));
CREATE TABLE IF NOT EXISTS records(
  id INTEGER PRIMARY KEY,
  workload_id INTEGER NOT NULL REFERENCES workloads(id),
  candidate_key TEXT NOT NULL,
  trace TEXT NOT NULL,
  seconds DOUBLE PRECISION,
  error TEXT NOT NULL,
  measured_at TEXT NOT NULL,
  measured_on TEXT NOT NULL,
  compiler TEXT NOT NULL,
  owner TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS records_by_workload ON records(workload_id, seconds);
CREATE TABLE IF NOT EXISTS owner_defaults(
  workload_id INTEGER NOT NULL REFERENCES workloads(id),
  owner TEXT NOT NULL,
  seconds DOUBLE PRECISION NOT NULL,
  PRIMARY KEY(workload_id, owner));
)sql";

// Every change to what a compile may apply bumps the generation (records_generation.h): a
// trigger per table and change (SQLite's triggers are per row), each the same bump.
std::string GenerationTriggers() {
  struct Change {
    const char* table;
    const char* event;
  };
  std::string sql;
  for (const Change& c : {Change{"records", "INSERT"}, Change{"records", "UPDATE"},
                          Change{"records", "DELETE"}, Change{"owner_defaults", "INSERT"},
                          Change{"owner_defaults", "UPDATE"}, Change{"workloads", "UPDATE"}}) {
    absl::StrAppend(&sql, "CREATE TRIGGER IF NOT EXISTS ", c.table, "_",
                    absl::AsciiStrToLower(c.event), " AFTER ", c.event, " ON ", c.table,
                    " BEGIN INSERT INTO kiln_tuning_meta(key, value) VALUES ('generation', '1') "
                    "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1; END;\n");
  }
  return sql;
}

// One prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return stmt_ != nullptr; }
  void Bind(int i, const std::string& text) {
    sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void Bind(int i, std::optional<double> v) {
    if (v) {
      sqlite3_bind_double(stmt_, i, *v);
    } else {
      sqlite3_bind_null(stmt_, i);
    }
  }
  int Step() { return stmt_ == nullptr ? SQLITE_ERROR : sqlite3_step(stmt_); }
  std::string Text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::optional<double> Real(int col) const {
    if (sqlite3_column_type(stmt_, col) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_double(stmt_, col);
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

// A workload's three key columns, bound as the statement's parameters 1 to 3.
void BindWorkload(Statement& s, const WorkloadId& w) {
  s.Bind(1, w.workload_key);
  s.Bind(2, w.target);
  s.Bind(3, w.device_key);
}

class SqliteTuningDatabase final : public TuningDatabase {
 public:
  static absl::StatusOr<std::unique_ptr<TuningDatabase>> Open(const std::string& path);
  ~SqliteTuningDatabase() override { sqlite3_close(db_); }

  absl::Status AddWorkload(const WorkloadId& workload, const std::string& module_script) override;
  absl::Status AddRecord(const WorkloadId& workload, const TuningRecord& record) override;
  absl::Status SetDefaultSeconds(const WorkloadId& workload, double seconds) override;
  absl::StatusOr<std::optional<double>> DefaultSeconds(const WorkloadId& workload) const override;
  absl::StatusOr<std::string> Module(const WorkloadId& workload) const override;
  absl::StatusOr<std::vector<WorkloadId>> Workloads() const override;
  absl::StatusOr<int64_t> Publish(const std::string& owner) override {
    Statement publish(db_, "UPDATE records SET owner = '' WHERE owner = ?");
    publish.Bind(1, owner);
    if (publish.Step() != SQLITE_DONE) return Error("publishing records");
    return static_cast<int64_t>(sqlite3_changes(db_));
  }

 private:
  SqliteTuningDatabase(sqlite3* db, std::string path) : TuningDatabase(std::move(path)), db_(db) {}
  absl::StatusOr<std::vector<TuningRecord>> Query(const WorkloadId& workload,
                                                  int64_t limit) const override;
  absl::Status Error(const std::string& what) const;
  absl::StatusOr<std::optional<int64_t>> FindWorkload(const WorkloadId& workload) const;

  sqlite3* db_;
};

}  // namespace

absl::Status CheckMeasuredSeconds(double seconds, const char* what) {
  if (std::isfinite(seconds) && seconds > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, " must be a positive number of seconds, not ", seconds));
}

absl::StatusOr<std::unique_ptr<TuningDatabase>> TuningDatabase::Open(const std::string& location) {
  if (PgConnection::IsUrl(location)) return OpenPostgresTuningDatabase(location);
  return SqliteTuningDatabase::Open(location);
}

absl::StatusOr<std::vector<TuningRecord>> TuningDatabase::Records(const WorkloadId& w) const {
  return Query(w, -1);
}

absl::StatusOr<std::optional<TuningRecord>> TuningDatabase::Best(const WorkloadId& w) const {
  // Only the first row: the apply pass asks this for every kernel of every compile.
  absl::StatusOr<std::vector<TuningRecord>> all = Query(w, 1);
  if (!all.ok()) return all.status();
  if (all->empty() || !all->front().seconds) return std::optional<TuningRecord>();
  return std::optional<TuningRecord>(all->front());
}

absl::StatusOr<TuningRecord> TuningDatabase::MakeRecord(
    const WorkloadId& w, std::string candidate_key, const std::string& trace_json,
    std::optional<double> seconds, std::string error, std::string measured_at,
    std::string measured_on, std::string compiler) const {
  TuningRecord r;
  r.candidate_key = std::move(candidate_key);
  absl::StatusOr<v1::TraceProto> trace = tir::TraceFromJson(trace_json);
  if (!trace.ok()) {
    return absl::DataLossError(absl::StrCat("tuning database ", path(), ": a record of workload ",
                                            w.workload_key,
                                            " has a bad trace: ", trace.status().message()));
  }
  r.trace = *std::move(trace);
  r.seconds = seconds;
  r.error = std::move(error);
  r.measured_at = std::move(measured_at);
  r.measured_on = std::move(measured_on);
  r.compiler = std::move(compiler);
  return r;
}

absl::StatusOr<std::unique_ptr<TuningDatabase>> SqliteTuningDatabase::Open(
    const std::string& path) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  std::unique_ptr<SqliteTuningDatabase> db(new SqliteTuningDatabase(raw, path));
  if (rc != SQLITE_OK) return db->Error("cannot open");
  sqlite3_busy_timeout(raw, 5000);
  char* message = nullptr;
  const std::string schema = kSchema + GenerationTriggers();
  rc = sqlite3_exec(raw, schema.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    std::string why = message ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    absl::StatusCode code = rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT
                                ? absl::StatusCode::kDataLoss
                                : absl::StatusCode::kInternal;
    return absl::Status(code, absl::StrCat("tuning database ", path, ": ", why));
  }
  Statement get(raw, "SELECT value FROM kiln_tuning_meta WHERE key = 'schema_version'");
  if (!get.ok()) return db->Error("reading the schema version");
  if (get.Step() == SQLITE_ROW) {
    std::string version = get.Text(0);
    if (version == "1") {  // records gain an owner; the existing ones stay published
      if (sqlite3_exec(raw,
                       "ALTER TABLE records ADD COLUMN owner TEXT NOT NULL DEFAULT '';"
                       "UPDATE kiln_tuning_meta SET value = '2' WHERE key = 'schema_version'",
                       nullptr, nullptr, nullptr) != SQLITE_OK) {
        return db->Error("upgrading the schema to version 2");
      }
      version = "2";
    }
    if (version == "2") {  // the generation's triggers: kSchema above created them
      if (sqlite3_exec(raw, "UPDATE kiln_tuning_meta SET value = '3' WHERE key = 'schema_version'",
                       nullptr, nullptr, nullptr) != SQLITE_OK) {
        return db->Error("upgrading the schema to version 3");
      }
      version = "3";
    }
    if (version != std::to_string(kTuningSchemaVersion)) {
      return absl::FailedPreconditionError(
          absl::StrCat("tuning database ", path, ": schema version ", version,
                       ", this kiln reads version ", kTuningSchemaVersion));
    }
  } else {
    Statement put(raw, "INSERT INTO kiln_tuning_meta(key, value) VALUES ('schema_version', ?)");
    put.Bind(1, std::to_string(kTuningSchemaVersion));
    if (put.Step() != SQLITE_DONE) return db->Error("writing the schema version");
  }
  return std::unique_ptr<TuningDatabase>(std::move(db));
}

absl::Status SqliteTuningDatabase::Error(const std::string& what) const {
  return absl::InternalError(
      absl::StrCat("tuning database ", path(), ": ", what, ": ", sqlite3_errmsg(db_)));
}

absl::StatusOr<std::optional<int64_t>> SqliteTuningDatabase::FindWorkload(
    const WorkloadId& w) const {
  Statement find(db_,
                 "SELECT id FROM workloads WHERE workload_key = ? AND target = ? AND "
                 "device_key = ?");
  if (!find.ok()) return Error("looking up a workload");
  BindWorkload(find, w);
  int rc = find.Step();
  if (rc == SQLITE_ROW) return std::optional<int64_t>(find.Int(0));
  if (rc != SQLITE_DONE) return Error("looking up a workload");
  return std::optional<int64_t>();
}

absl::Status SqliteTuningDatabase::AddWorkload(const WorkloadId& w,
                                               const std::string& module_script) {
  Statement add(db_,
                "INSERT OR IGNORE INTO workloads(workload_key, target, device_key, module) "
                "VALUES (?, ?, ?, ?)");
  BindWorkload(add, w);
  add.Bind(4, module_script);
  if (add.Step() != SQLITE_DONE) return Error("adding a workload");
  return absl::OkStatus();
}

absl::Status SqliteTuningDatabase::AddRecord(const WorkloadId& w, const TuningRecord& r) {
  if (r.seconds) {
    if (absl::Status s = CheckMeasuredSeconds(*r.seconds, "a record's time"); !s.ok()) return s;
  }
  absl::StatusOr<std::optional<int64_t>> id = FindWorkload(w);
  if (!id.ok()) return id.status();
  if (!id->has_value()) {
    return absl::NotFoundError(absl::StrCat("tuning database ", path(), ": no workload ",
                                            w.workload_key, " for target '", w.target, "'"));
  }
  Statement add(db_,
                "INSERT INTO records(workload_id, candidate_key, trace, seconds, error, "
                "measured_at, measured_on, compiler, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  add.Bind(1, **id);
  add.Bind(2, r.candidate_key);
  add.Bind(3, tir::TraceToJson(r.trace));
  add.Bind(4, r.seconds);
  add.Bind(5, r.error);
  add.Bind(6, r.measured_at);
  add.Bind(7, r.measured_on);
  add.Bind(8, r.compiler);
  add.Bind(9, owner());
  if (add.Step() != SQLITE_DONE) return Error("adding a record");
  return absl::OkStatus();
}

absl::Status SqliteTuningDatabase::SetDefaultSeconds(const WorkloadId& w, double seconds) {
  if (absl::Status s = CheckMeasuredSeconds(seconds, "the untuned kernel's time"); !s.ok()) {
    return s;
  }
  if (!owner().empty()) {  // a tenant's measurement of the untuned kernel is its own
    Statement set(db_,
                  "INSERT INTO owner_defaults(workload_id, owner, seconds) SELECT id, ?, ? FROM "
                  "workloads WHERE workload_key = ? AND target = ? AND device_key = ? "
                  "ON CONFLICT(workload_id, owner) DO UPDATE SET seconds = excluded.seconds");
    set.Bind(1, owner());
    set.Bind(2, std::optional<double>(seconds));
    set.Bind(3, w.workload_key);
    set.Bind(4, w.target);
    set.Bind(5, w.device_key);
    if (set.Step() != SQLITE_DONE) return Error("setting a default time");
    return absl::OkStatus();
  }
  Statement set(db_,
                "UPDATE workloads SET default_seconds = ? WHERE workload_key = ? AND target = ? "
                "AND device_key = ?");
  set.Bind(1, std::optional<double>(seconds));
  set.Bind(2, w.workload_key);
  set.Bind(3, w.target);
  set.Bind(4, w.device_key);
  if (set.Step() != SQLITE_DONE) return Error("setting a default time");
  return absl::OkStatus();
}

absl::StatusOr<std::optional<double>> SqliteTuningDatabase::DefaultSeconds(
    const WorkloadId& w) const {
  // The tenant's own measurement where it made one, else the published one.
  Statement get(db_,
                "SELECT COALESCE((SELECT d.seconds FROM owner_defaults d WHERE d.workload_id = "
                "w.id AND d.owner = ?), w.default_seconds) FROM workloads w WHERE "
                "w.workload_key = ? AND w.target = ? AND w.device_key = ?");
  get.Bind(1, owner());
  get.Bind(2, w.workload_key);
  get.Bind(3, w.target);
  get.Bind(4, w.device_key);
  int rc = get.Step();
  if (rc == SQLITE_ROW) return get.Real(0);
  if (rc != SQLITE_DONE) return Error("reading a default time");
  return std::optional<double>();
}

absl::StatusOr<std::string> SqliteTuningDatabase::Module(const WorkloadId& w) const {
  Statement get(db_,
                "SELECT module FROM workloads WHERE workload_key = ? AND target = ? AND "
                "device_key = ?");
  BindWorkload(get, w);
  int rc = get.Step();
  if (rc == SQLITE_ROW) return get.Text(0);
  if (rc != SQLITE_DONE) return Error("reading a workload's module");
  return absl::NotFoundError(absl::StrCat("tuning database ", path(), ": no workload ",
                                          w.workload_key, " for ", w.target));
}

absl::StatusOr<std::vector<TuningRecord>> SqliteTuningDatabase::Query(const WorkloadId& w,
                                                                      int64_t limit) const {
  Statement get(db_,
                "SELECT r.candidate_key, r.trace, r.seconds, r.error, r.measured_at, "
                "r.measured_on, r.compiler FROM records r JOIN workloads w ON r.workload_id = "
                "w.id WHERE w.workload_key = ? AND w.target = ? AND w.device_key = ? "
                "AND (r.seconds IS NULL OR r.seconds > 0) AND (r.owner = '' OR r.owner = ?) "
                "ORDER BY r.seconds IS NULL, r.seconds, r.id LIMIT ?");
  if (!get.ok()) return Error("reading records");
  BindWorkload(get, w);
  get.Bind(4, owner());
  get.Bind(5, limit);
  std::vector<TuningRecord> out;
  int rc;
  while ((rc = get.Step()) == SQLITE_ROW) {
    absl::StatusOr<TuningRecord> r = MakeRecord(w, get.Text(0), get.Text(1), get.Real(2),
                                                get.Text(3), get.Text(4), get.Text(5), get.Text(6));
    if (!r.ok()) return r.status();
    out.push_back(*std::move(r));
  }
  if (rc != SQLITE_DONE) return Error("reading records");
  return out;
}

absl::StatusOr<std::vector<WorkloadId>> SqliteTuningDatabase::Workloads() const {
  Statement get(db_, "SELECT workload_key, target, device_key FROM workloads ORDER BY id");
  if (!get.ok()) return Error("reading workloads");
  std::vector<WorkloadId> out;
  int rc;
  while ((rc = get.Step()) == SQLITE_ROW) out.push_back({get.Text(0), get.Text(1), get.Text(2)});
  if (rc != SQLITE_DONE) return Error("reading workloads");
  return out;
}

}  // namespace kiln::tune
