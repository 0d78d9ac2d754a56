#include "compiler/tune/database_postgres.h"

#include <regex>

#include "absl/strings/str_cat.h"
#include "compiler/tir/schedule/trace.h"
#include "compiler/tune/postgres_connection.h"

namespace kiln::tune {
namespace {

// The SQLite tables (database.h) with PostgreSQL's types; created once, under an advisory lock
// so that tune workers starting together do not race.
constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS kiln_tuning_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS workloads(id BIGSERIAL PRIMARY KEY, workload_key TEXT NOT NULL, "
    "target TEXT NOT NULL, device_key TEXT NOT NULL, module TEXT NOT NULL, "
    "default_seconds DOUBLE PRECISION, UNIQUE(workload_key, target, device_key))",
    "CREATE TABLE IF NOT EXISTS records(id BIGSERIAL PRIMARY KEY, "
    "workload_id BIGINT NOT NULL REFERENCES workloads(id), candidate_key TEXT NOT NULL, "
    "trace TEXT NOT NULL, seconds DOUBLE PRECISION, error TEXT NOT NULL, "
    "measured_at TEXT NOT NULL, measured_on TEXT NOT NULL, compiler TEXT NOT NULL, "
    "owner TEXT NOT NULL DEFAULT '')",
    "CREATE INDEX IF NOT EXISTS records_by_workload ON records(workload_id, seconds)",
    "CREATE TABLE IF NOT EXISTS owner_defaults(workload_id BIGINT NOT NULL REFERENCES "
    "workloads(id), owner TEXT NOT NULL, seconds DOUBLE PRECISION NOT NULL, "
    "PRIMARY KEY(workload_id, owner))",
};
// Schema 3: every change to what a compile may apply bumps the generation
// (records_generation.h). Created once, with the schema or on upgrade: DDL takes table locks.
constexpr const char* kGenerationTriggers[] = {
    "CREATE OR REPLACE FUNCTION kiln_tuning_changed() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN INSERT INTO kiln_tuning_meta(key, value) VALUES ('generation', '1') "
    "ON CONFLICT (key) DO UPDATE SET value = (kiln_tuning_meta.value::bigint + 1)::text; "
    "RETURN NULL; END $$",
    "CREATE OR REPLACE TRIGGER records_changed AFTER INSERT OR UPDATE OR DELETE ON records "
    "FOR EACH STATEMENT EXECUTE FUNCTION kiln_tuning_changed()",
    "CREATE OR REPLACE TRIGGER owner_defaults_changed AFTER INSERT OR UPDATE OR DELETE ON "
    "owner_defaults FOR EACH STATEMENT EXECUTE FUNCTION kiln_tuning_changed()",
    "CREATE OR REPLACE TRIGGER workloads_changed AFTER UPDATE ON workloads "
    "FOR EACH STATEMENT EXECUTE FUNCTION kiln_tuning_changed()",
};
constexpr int64_t kSchemaLock = 0x6b696c6e74;  // "kilnt"

// The URL for messages: without its password.
std::string Redacted(const std::string& url) {
  return std::regex_replace(url, std::regex("(://[^:/@]*):[^@/]*@"), "$1@");
}

std::string Double(double v) { return absl::StrCat(v); }

class PostgresTuningDatabase final : public TuningDatabase {
 public:
  PostgresTuningDatabase(std::unique_ptr<PgConnection> db, std::string url)
      : TuningDatabase(Redacted(url)), db_(std::move(db)) {}

  absl::Status Init() {
    const std::string lock = absl::StrCat(kSchemaLock);
    if (absl::StatusOr<PgResult> r = db_->Query("SELECT pg_advisory_lock($1::bigint)", {lock});
        !r.ok()) {
      return Error(r.status());
    }
    absl::Status status = CreateSchema();
    db_->Query("SELECT pg_advisory_unlock($1::bigint)", {lock}).status().IgnoreError();
    return status;
  }

  absl::Status AddWorkload(const WorkloadId& w, const std::string& module_script) override {
    return Error(db_->Query("INSERT INTO workloads(workload_key, target, device_key, module) "
                            "VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                            {w.workload_key, w.target, w.device_key, module_script})
                     .status());
  }

  absl::Status AddRecord(const WorkloadId& w, const TuningRecord& r) override {
    if (r.seconds) {
      if (absl::Status s = CheckMeasuredSeconds(*r.seconds, "a record's time"); !s.ok()) return s;
    }
    absl::StatusOr<PgResult> added = db_->Query(
        "INSERT INTO records(workload_id, candidate_key, trace, seconds, error, measured_at, "
        "measured_on, compiler, owner) SELECT id, $4, $5, NULLIF($6, '')::double precision, $7, "
        "$8, $9, $10, $11 "
        "FROM workloads WHERE workload_key = $1 AND target = $2 AND device_key = $3",
        {w.workload_key, w.target, w.device_key, r.candidate_key, tir::TraceToJson(r.trace),
         r.seconds ? Double(*r.seconds) : std::string(), r.error, r.measured_at, r.measured_on,
         r.compiler, owner()});
    if (!added.ok()) return Error(added.status());
    if (added->rows() == 0 && !Module(w).ok()) {
      return absl::NotFoundError(absl::StrCat("tuning database ", path(), ": no workload ",
                                              w.workload_key, " for target '", w.target, "'"));
    }
    return absl::OkStatus();
  }

  absl::Status SetDefaultSeconds(const WorkloadId& w, double seconds) override {
    if (absl::Status s = CheckMeasuredSeconds(seconds, "the untuned kernel's time"); !s.ok()) {
      return s;
    }
    if (!owner().empty()) {  // a tenant's measurement of the untuned kernel is its own
      return Error(db_->Query("INSERT INTO owner_defaults(workload_id, owner, seconds) SELECT id, "
                              "$5, $4::double precision FROM workloads WHERE workload_key = $1 "
                              "AND target = $2 AND device_key = $3 ON CONFLICT (workload_id, "
                              "owner) DO UPDATE SET seconds = excluded.seconds",
                              {w.workload_key, w.target, w.device_key, Double(seconds), owner()})
                       .status());
    }
    return Error(db_->Query("UPDATE workloads SET default_seconds = $4::double precision "
                            "WHERE workload_key = $1 AND target = $2 AND device_key = $3",
                            {w.workload_key, w.target, w.device_key, Double(seconds)})
                     .status());
  }

  absl::StatusOr<std::optional<double>> DefaultSeconds(const WorkloadId& w) const override {
    absl::StatusOr<PgResult> r = db_->Query(
        "SELECT COALESCE((SELECT d.seconds FROM owner_defaults d WHERE d.workload_id = w.id "
        "AND d.owner = $4), w.default_seconds) FROM workloads w WHERE w.workload_key = $1 AND "
        "w.target = $2 AND w.device_key = $3",
        {w.workload_key, w.target, w.device_key, owner()});
    if (!r.ok()) return Error(r.status());
    if (r->rows() == 0 || r->null(0, 0)) return std::optional<double>();
    return std::optional<double>(r->Double(0, 0));
  }

  absl::StatusOr<std::string> Module(const WorkloadId& w) const override {
    absl::StatusOr<PgResult> r = db_->Query(
        "SELECT module FROM workloads WHERE workload_key = $1 AND target = $2 AND device_key = $3",
        {w.workload_key, w.target, w.device_key});
    if (!r.ok()) return Error(r.status());
    if (r->rows() == 0) {
      return absl::NotFoundError(absl::StrCat("tuning database ", path(), ": no workload ",
                                              w.workload_key, " for ", w.target));
    }
    return r->Bytes(0, 0);
  }

  absl::StatusOr<int64_t> Publish(const std::string& owner) override {
    absl::StatusOr<PgResult> r =
        db_->Query("UPDATE records SET owner = '' WHERE owner = $1 RETURNING 1::bigint", {owner});
    if (!r.ok()) return Error(r.status());
    return static_cast<int64_t>(r->rows());
  }

  absl::StatusOr<std::vector<WorkloadId>> Workloads() const override {
    absl::StatusOr<PgResult> r =
        db_->Query("SELECT workload_key, target, device_key FROM workloads ORDER BY id");
    if (!r.ok()) return Error(r.status());
    std::vector<WorkloadId> out;
    for (int i = 0; i < r->rows(); ++i)
      out.push_back({r->Bytes(i, 0), r->Bytes(i, 1), r->Bytes(i, 2)});
    return out;
  }

 private:
  absl::StatusOr<std::vector<TuningRecord>> Query(const WorkloadId& w,
                                                  int64_t limit) const override {
    absl::StatusOr<PgResult> r = db_->Query(
        "SELECT r.candidate_key, r.trace, r.seconds, r.error, r.measured_at, r.measured_on, "
        "r.compiler FROM records r JOIN workloads w ON r.workload_id = w.id "
        "WHERE w.workload_key = $1 AND w.target = $2 AND w.device_key = $3 "
        "AND (r.seconds IS NULL OR r.seconds > 0) AND (r.owner = '' OR r.owner = $5) "
        "ORDER BY r.seconds IS NULL, r.seconds, r.id LIMIT NULLIF($4::bigint, -1)",
        {w.workload_key, w.target, w.device_key, absl::StrCat(limit < 0 ? -1 : limit), owner()});
    if (!r.ok()) return Error(r.status());
    std::vector<TuningRecord> out;
    for (int i = 0; i < r->rows(); ++i) {
      absl::StatusOr<TuningRecord> record =
          MakeRecord(w, r->Bytes(i, 0), r->Bytes(i, 1),
                     r->null(i, 2) ? std::nullopt : std::optional<double>(r->Double(i, 2)),
                     r->Bytes(i, 3), r->Bytes(i, 4), r->Bytes(i, 5), r->Bytes(i, 6));
      if (!record.ok()) return record.status();
      out.push_back(*std::move(record));
    }
    return out;
  }

  absl::Status CreateSchema() {
    for (const char* sql : kSchema) {
      if (absl::Status s = db_->Query(sql).status(); !s.ok()) return Error(s);
    }
    absl::StatusOr<PgResult> version =
        db_->Query("SELECT value FROM kiln_tuning_meta WHERE key = 'schema_version'");
    if (!version.ok()) return Error(version.status());
    if (version->rows() == 0) {
      if (absl::Status s = CreateTriggers(); !s.ok()) return s;
      return Error(db_->Query("INSERT INTO kiln_tuning_meta(key, value) VALUES "
                              "('schema_version', $1)",
                              {absl::StrCat(kTuningSchemaVersion)})
                       .status());
    }
    std::string v = version->Bytes(0, 0);
    if (v == "1") {  // records gain an owner; the existing ones stay published
      for (const char* sql :
           {"ALTER TABLE records ADD COLUMN IF NOT EXISTS owner TEXT NOT NULL DEFAULT ''",
            "UPDATE kiln_tuning_meta SET value = '2' WHERE key = 'schema_version'"}) {
        if (absl::Status s = db_->Query(sql).status(); !s.ok()) return Error(s);
      }
      v = "2";
    }
    if (v == "2") {
      if (absl::Status s = CreateTriggers(); !s.ok()) return s;
      if (absl::Status s =
              db_->Query("UPDATE kiln_tuning_meta SET value = '3' WHERE key = 'schema_version'")
                  .status();
          !s.ok()) {
        return Error(s);
      }
      return absl::OkStatus();
    }
    if (v != absl::StrCat(kTuningSchemaVersion)) {
      return absl::FailedPreconditionError(
          absl::StrCat("tuning database ", path(), ": schema version ", version->Bytes(0, 0),
                       ", this kiln reads version ", kTuningSchemaVersion));
    }
    return absl::OkStatus();
  }

  absl::Status CreateTriggers() {
    for (const char* sql : kGenerationTriggers) {
      if (absl::Status s = db_->Query(sql).status(); !s.ok()) return Error(s);
    }
    return absl::OkStatus();
  }

  // `s` with the database named, or OK.
  absl::Status Error(const absl::Status& s) const {
    if (s.ok()) return s;
    return absl::Status(s.code(), absl::StrCat("tuning database ", path(), ": ", s.message()));
  }

  std::unique_ptr<PgConnection> db_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<TuningDatabase>> OpenPostgresTuningDatabase(const std::string& url) {
  absl::StatusOr<std::unique_ptr<PgConnection>> db = PgConnection::Connect(url);
  if (!db.ok()) {
    return absl::Status(db.status().code(), absl::StrCat("tuning database ", Redacted(url), ": ",
                                                         db.status().message()));
  }
  auto tuning = std::make_unique<PostgresTuningDatabase>(std::move(*db), url);
  if (absl::Status s = tuning->Init(); !s.ok()) return s;
  return std::unique_ptr<TuningDatabase>(std::move(tuning));
}

}  // namespace kiln::tune
