// The checks every schedule test makes: the IR a primitive produces (against TVMScript written
// by hand), the numbers the scheduled function computes (against the unscheduled one), and a
// refused primitive that left the schedule untouched.
#ifndef KILN_COMPILER_TESTING_EXPECT_SCHEDULE_H_
#define KILN_COMPILER_TESTING_EXPECT_SCHEDULE_H_

#include <string>

#include "absl/status/status.h"
#include "compiler/ir/module.h"
#include "compiler/tir/schedule/schedule.h"

namespace kiln::tir::testing {

// Parses a TVMScript module (EXPECTs success).
ir::IRModule Load(const std::string& script);
// A schedule of PrimFunc `name` (EXPECTs success).
Schedule MakeSchedule(const ir::IRModule& mod, const std::string& name);

// The scheduled function equals `expected` (one PrimFunc, TVMScript) up to variable names.
void ExpectIr(const Schedule& sch, const std::string& expected);
// The scheduled function computes what the original does (compiled and run on seeded inputs).
void ExpectSameNumbers(const ir::IRModule& original, const Schedule& sch);
// The scheduled function, compiled for aarch64 and run under qemu-aarch64, computes what the
// original computes on this host (the test carries //runtime:run_kernel_aarch64 as data).
void ExpectSameNumbersOnAarch64(const ir::IRModule& original, const Schedule& sch);
// A failed primitive: the error names what went wrong, and nothing changed.
void ExpectRefused(const Schedule& sch, const ir::IRModule& before, int trace_size,
                   const absl::Status& status, const std::string& message_part);

}  // namespace kiln::tir::testing

#endif  // KILN_COMPILER_TESTING_EXPECT_SCHEDULE_H_
