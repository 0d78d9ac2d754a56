// Tuning records as JSON lines, to move them between databases (a workstation's `kiln tune
// --tuning-db`, a kilnd store's tuning.db): one record a line, carrying its workload (key,
// target, device key, the kernel's TVMScript, the untuned kernel's time) so that a line is
// enough to recreate it anywhere.
#ifndef KILN_COMPILER_TUNE_RECORDS_IO_H_
#define KILN_COMPILER_TUNE_RECORDS_IO_H_

#include <istream>
#include <ostream>

#include "absl/status/statusor.h"
#include "compiler/tune/database.h"

namespace kiln::tune {

// Writes every record of `db`, workload by workload; returns how many.
absl::StatusOr<int64_t> ExportRecords(const TuningDatabase& db, std::ostream& out);

struct ImportCounts {
  int64_t imported = 0;
  int64_t already_there = 0;  // a record of the same candidate of the same workload
};

// Adds each line's record (and its workload, if new) to `db`. A malformed line is
// InvalidArgument naming its number; the lines before it stay imported.
absl::StatusOr<ImportCounts> ImportRecords(TuningDatabase& db, std::istream& in);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_RECORDS_IO_H_
