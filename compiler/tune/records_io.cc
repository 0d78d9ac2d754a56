#include "compiler/tune/records_io.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/tir/schedule/trace.h"
#include "nlohmann/json.hpp"

namespace kiln::tune {

absl::StatusOr<int64_t> ExportRecords(const TuningDatabase& db, std::ostream& out) {
  absl::StatusOr<std::vector<WorkloadId>> workloads = db.Workloads();
  if (!workloads.ok()) return workloads.status();
  int64_t n = 0;
  for (const WorkloadId& w : *workloads) {
    absl::StatusOr<std::string> module = db.Module(w);
    if (!module.ok()) return module.status();
    absl::StatusOr<std::optional<double>> untuned = db.DefaultSeconds(w);
    if (!untuned.ok()) return untuned.status();
    absl::StatusOr<std::vector<TuningRecord>> records = db.Records(w);
    if (!records.ok()) return records.status();
    for (const TuningRecord& r : *records) {
      nlohmann::json line = {{"workload_key", w.workload_key},
                             {"target", w.target},
                             {"device_key", w.device_key},
                             {"module", *module},
                             {"candidate_key", r.candidate_key},
                             {"trace", nlohmann::json::parse(tir::TraceToJson(r.trace))},
                             {"error", r.error},
                             {"measured_at", r.measured_at},
                             {"measured_on", r.measured_on},
                             {"compiler", r.compiler}};
      if (untuned->has_value()) line["default_seconds"] = **untuned;
      if (r.seconds) line["seconds"] = *r.seconds;
      out << line.dump() << "\n";
      ++n;
    }
  }
  if (!out) return absl::DataLossError("could not write the records");
  return n;
}

namespace {

absl::StatusOr<std::string> Text(const nlohmann::json& line, const char* key, bool required) {
  auto it = line.find(key);
  if (it == line.end()) {
    if (!required) return std::string();
    return absl::InvalidArgumentError(absl::StrCat("no \"", key, "\""));
  }
  if (!it->is_string())
    return absl::InvalidArgumentError(absl::StrCat("\"", key, "\" is no string"));
  return it->get<std::string>();
}

absl::StatusOr<std::optional<double>> Number(const nlohmann::json& line, const char* key) {
  auto it = line.find(key);
  if (it == line.end() || it->is_null()) return std::optional<double>();
  if (!it->is_number())
    return absl::InvalidArgumentError(absl::StrCat("\"", key, "\" is no number"));
  return std::optional<double>(it->get<double>());
}

// One line's record into `db`; true when it was new.
absl::StatusOr<bool> ImportLine(TuningDatabase& db, const std::string& text) {
  nlohmann::json line = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!line.is_object()) return absl::InvalidArgumentError("not a JSON object");
  WorkloadId w;
  TuningRecord r;
  for (auto [field, key, required] :
       {std::tuple<std::string*, const char*, bool>{&w.workload_key, "workload_key", true},
        {&w.target, "target", true},
        {&w.device_key, "device_key", false},
        {&r.candidate_key, "candidate_key", true},
        {&r.error, "error", false},
        {&r.measured_at, "measured_at", false},
        {&r.measured_on, "measured_on", false},
        {&r.compiler, "compiler", false}}) {
    absl::StatusOr<std::string> v = Text(line, key, required);
    if (!v.ok()) return v.status();
    *field = *std::move(v);
  }
  absl::StatusOr<std::string> module = Text(line, "module", true);
  if (!module.ok()) return module.status();
  auto trace = line.find("trace");
  if (trace == line.end()) return absl::InvalidArgumentError("no \"trace\"");
  absl::StatusOr<v1::TraceProto> parsed = tir::TraceFromJson(trace->dump());
  if (!parsed.ok())
    return absl::InvalidArgumentError(absl::StrCat("trace: ", parsed.status().message()));
  r.trace = *std::move(parsed);
  absl::StatusOr<std::optional<double>> seconds = Number(line, "seconds");
  if (!seconds.ok()) return seconds.status();
  r.seconds = *seconds;
  absl::StatusOr<std::optional<double>> untuned = Number(line, "default_seconds");
  if (!untuned.ok()) return untuned.status();

  if (absl::Status s = db.AddWorkload(w, *module); !s.ok()) return s;
  if (untuned->has_value()) {
    absl::StatusOr<std::optional<double>> known = db.DefaultSeconds(w);
    if (!known.ok()) return known.status();
    if (!known->has_value()) {
      if (absl::Status s = db.SetDefaultSeconds(w, **untuned); !s.ok()) return s;
    }
  }
  absl::StatusOr<std::vector<TuningRecord>> existing = db.Records(w);
  if (!existing.ok()) return existing.status();
  for (const TuningRecord& e : *existing) {
    if (e.candidate_key == r.candidate_key) return false;
  }
  if (absl::Status s = db.AddRecord(w, r); !s.ok()) return s;
  return true;
}

}  // namespace

absl::StatusOr<ImportCounts> ImportRecords(TuningDatabase& db, std::istream& in) {
  ImportCounts counts;
  std::string text;
  for (int64_t number = 1; std::getline(in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    absl::StatusOr<bool> added = ImportLine(db, text);
    if (!added.ok()) {
      return absl::Status(added.status().code(),
                          absl::StrCat("line ", number, ": ", added.status().message()));
    }
    ++(*added ? counts.imported : counts.already_there);
  }
  return counts;
}

}  // namespace kiln::tune
