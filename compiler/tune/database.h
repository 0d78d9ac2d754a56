// The tuning database: what was measured, kept across runs and shared by `kiln tune` (which
// writes it) and `kiln compile --tuning-db` (which applies its best records). A SQLite file, or
// the same tables in PostgreSQL (a "postgresql://" location: a cluster's kilnd keeps its records
// beside its store, so every instance of a cluster has every record):
//
//   kiln_tuning_meta(key, value)     schema_version = kTuningSchemaVersion, and generation:
//             bumped by triggers on every change below (records_generation.h)
//   workloads(id, workload_key, target, device_key, module, default_seconds)
//             one per kernel (structural hash, ir/structural.h) x target x device ("" = local),
//             with the kernel's TVMScript so a record can be read without the model, and the
//             untuned kernel's time (a record slower than it is never applied) as published
//   owner_defaults(workload_id, owner, seconds)
//             a tenant's own measurement of the untuned kernel, which its compiles use
//   records(id, workload_id, candidate_key, trace, seconds, error, measured_at, measured_on,
//           compiler, owner)
//             one per measured candidate: its trace (JSON, schedule/trace.h), seconds per call or
//             NULL with the build or run error, when and where, the compiler identity, and
//             whose tune measured it ("" once published: every tenant's compiles apply it)
//
// Plain SQL tables with no SQLite-only types: database_postgres.cc creates the same ones.
#ifndef KILN_COMPILER_TUNE_DATABASE_H_
#define KILN_COMPILER_TUNE_DATABASE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/kiln/v1/trace.pb.h"

namespace kiln::tune {

// A record replaces the untuned kernel (at compile time, in the tuner's estimates and tables)
// only where it measured faster by more than this fraction: within it, the difference is the
// measurement's noise, and kernels timed alone with warm caches rank differently inside a
// model (MobileNetV2's stride-2 depthwise convolution: a record 0.4 % faster alone ran 47 %
// slower in the model than its untuned kernel).
inline constexpr double kMinTunedGain = 0.03;
inline bool RecordBeatsUntuned(double record_seconds, double untuned_seconds) {
  return record_seconds * (1 + kMinTunedGain) < untuned_seconds;
}

// 2: records have an owner (the tenant whose tune measured them; "" for published ones).
// 3: triggers keep the generation (records_generation.h).
inline constexpr int kTuningSchemaVersion = 3;

// A measured time the database keeps: finite and positive. Anything else (a negative time an
// agent reported, say, which no candidate could ever beat) is refused on the way in and skipped
// on the way out.
absl::Status CheckMeasuredSeconds(double seconds, const char* what);

struct WorkloadId {
  std::string workload_key;  // 16 hex digits
  std::string target;
  std::string device_key;  // "" when measured on this machine
};

struct TuningRecord {
  std::string candidate_key;  // structural hash of the scheduled kernel: never measured twice
  v1::TraceProto trace;
  std::optional<double> seconds;  // absent: the candidate failed
  std::string error;
  std::string measured_at;  // UTC, ISO 8601
  std::string measured_on;  // host or device name
  std::string compiler;     // compiler identity (version.h)
};

class TuningDatabase {
 public:
  // Opens or creates the database at `location`: a SQLite file, or a PostgreSQL database named
  // by a libpq URL ("postgresql://kiln@db:5432/kiln"). A file that is not a database is
  // DataLoss, one of another schema version FailedPrecondition, an unreachable server
  // Unavailable; each names the location (a URL without its password).
  static absl::StatusOr<std::unique_ptr<TuningDatabase>> Open(const std::string& location);
  virtual ~TuningDatabase() = default;
  TuningDatabase(const TuningDatabase&) = delete;
  TuningDatabase& operator=(const TuningDatabase&) = delete;

  const std::string& path() const { return path_; }

  // Whose records this handle writes and reads (kilnd's tenants): records it adds are
  // `owner`'s, and it sees the published ones ("") and `owner`'s only, so that one tenant's tune
  // never decides another's compiles. The default, "", writes and reads the published ones.
  void set_owner(std::string owner) { owner_ = std::move(owner); }
  const std::string& owner() const { return owner_; }

  // Adds the workload if new (the module text is kept from the first time).
  virtual absl::Status AddWorkload(const WorkloadId& workload,
                                   const std::string& module_script) = 0;
  virtual absl::Status AddRecord(const WorkloadId& workload, const TuningRecord& record) = 0;
  // The untuned (default-scheduled) kernel's seconds per call, measured with the records.
  virtual absl::Status SetDefaultSeconds(const WorkloadId& workload, double seconds) = 0;
  virtual absl::StatusOr<std::optional<double>> DefaultSeconds(
      const WorkloadId& workload) const = 0;
  // The kernel's TVMScript, as first added; NotFound for an unknown workload.
  virtual absl::StatusOr<std::string> Module(const WorkloadId& workload) const = 0;
  // Every record of the workload: the measured fastest first, then the failed ones.
  absl::StatusOr<std::vector<TuningRecord>> Records(const WorkloadId& workload) const;
  // The fastest measured record, if any.
  absl::StatusOr<std::optional<TuningRecord>> Best(const WorkloadId& workload) const;
  // Every workload the database holds.
  virtual absl::StatusOr<std::vector<WorkloadId>> Workloads() const = 0;
  // Makes every record of `owner` published (every tenant's compiles apply them from now on):
  // what an operator decides (`kiln tuning-records publish`). How many there were.
  virtual absl::StatusOr<int64_t> Publish(const std::string& owner) = 0;

 protected:
  explicit TuningDatabase(std::string path) : path_(std::move(path)) {}
  // Records, best first (failed ones last), at most `limit` of them (negative: all).
  virtual absl::StatusOr<std::vector<TuningRecord>> Query(const WorkloadId& workload,
                                                          int64_t limit) const = 0;
  // A record read back: its trace parsed (DataLoss naming the workload when it does not parse).
  absl::StatusOr<TuningRecord> MakeRecord(const WorkloadId& workload, std::string candidate_key,
                                          const std::string& trace_json,
                                          std::optional<double> seconds, std::string error,
                                          std::string measured_at, std::string measured_on,
                                          std::string compiler) const;

 private:
  std::string path_;
  std::string owner_;
};

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_DATABASE_H_
