// The tuning database's tables in PostgreSQL (TuningDatabase::Open of a "postgresql://" URL).
#ifndef KILN_COMPILER_TUNE_DATABASE_POSTGRES_H_
#define KILN_COMPILER_TUNE_DATABASE_POSTGRES_H_

#include "compiler/tune/database.h"

namespace kiln::tune {

absl::StatusOr<std::unique_ptr<TuningDatabase>> OpenPostgresTuningDatabase(const std::string& url);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_DATABASE_POSTGRES_H_
