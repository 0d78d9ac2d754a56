#include "compiler/tune/records_generation.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "compiler/tune/postgres_connection.h"

namespace kiln::tune {
namespace {

constexpr char kQuery[] = "SELECT value FROM kiln_tuning_meta WHERE key = 'generation'";

absl::StatusOr<int64_t> Parse(const std::string& value, const std::string& where) {
  int64_t n = 0;
  if (!absl::SimpleAtoi(value, &n)) {
    return absl::DataLossError(
        absl::StrCat("tuning database ", where, ": generation '", value, "' is no number"));
  }
  return n;
}

}  // namespace

RecordsGeneration::RecordsGeneration(std::string location) : location_(std::move(location)) {}

RecordsGeneration::~RecordsGeneration() {
  if (sqlite_ != nullptr) sqlite3_close(sqlite_);
}

absl::StatusOr<int64_t> RecordsGeneration::Read() {
  std::lock_guard<std::mutex> lock(mu_);
  return PgConnection::IsUrl(location_) ? ReadPostgres() : ReadSqlite();
}

absl::StatusOr<int64_t> RecordsGeneration::ReadSqlite() {
  if (sqlite_ == nullptr) {
    struct stat st;
    if (stat(location_.c_str(), &st) != 0) return 0;  // no tune has created it yet
    if (sqlite3_open_v2(location_.c_str(), &sqlite_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      absl::Status error = absl::UnavailableError(
          absl::StrCat("tuning database ", location_, ": cannot open: ", sqlite3_errmsg(sqlite_)));
      sqlite3_close(sqlite_);
      sqlite_ = nullptr;
      return error;
    }
    sqlite3_busy_timeout(sqlite_, 5000);
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(sqlite_, kQuery, -1, &stmt, nullptr) != SQLITE_OK) {
    // No meta table yet (created but never written): nothing to apply either.
    std::string why = sqlite3_errmsg(sqlite_);
    if (why.find("no such table") != std::string::npos) return 0;
    return absl::UnavailableError(absl::StrCat("tuning database ", location_, ": ", why));
  }
  int rc = sqlite3_step(stmt);
  std::string value;
  if (rc == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(stmt, 0);
    value = text != nullptr ? reinterpret_cast<const char*>(text) : "";
  }
  sqlite3_finalize(stmt);
  if (rc == SQLITE_DONE) return 0;
  if (rc != SQLITE_ROW) {
    return absl::UnavailableError(
        absl::StrCat("tuning database ", location_, ": ", sqlite3_errstr(rc)));
  }
  return Parse(value, location_);
}

absl::StatusOr<int64_t> RecordsGeneration::ReadPostgres() {
  if (postgres_ == nullptr) {
    absl::StatusOr<std::unique_ptr<PgConnection>> connected = PgConnection::Connect(location_);
    if (!connected.ok()) return connected.status();
    postgres_ = *std::move(connected);
  }
  absl::StatusOr<PgResult> r = postgres_->Query(kQuery);
  if (!r.ok()) {
    // No meta table yet: no tune has created the schema, so nothing to apply either.
    if (r.status().message().find("does not exist") != std::string::npos) return 0;
    return r.status();
  }
  if (r->rows() == 0) return 0;
  return Parse(r->Bytes(0, 0), "(PostgreSQL)");
}

}  // namespace kiln::tune
