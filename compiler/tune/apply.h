// Applying a tuning database at compile time: a pass, run just before DefaultSchedule, that
// replays each kernel's best record (by workload key and target) in place of the default
// schedule and marks it "kiln.tuned", unless the untuned kernel measured faster. A record that no
// longer replays (the compiler changed since) leaves the kernel to the default schedule with a
// warning: never a failed build.
#ifndef KILN_COMPILER_TUNE_APPLY_H_
#define KILN_COMPILER_TUNE_APPLY_H_

#include <functional>
#include <memory>
#include <string>

#include "compiler/pass/pass.h"
#include "compiler/tune/database.h"

namespace kiln::tune {

pass::PassPtr ApplyTuningRecordsPass(std::shared_ptr<const TuningDatabase> db, std::string target,
                                     std::function<void(const std::string&)> warn);

// A digest of the records the pass would apply for `target` (each workload's best record, where
// it beat the untuned kernel), "" when there is none: part of an artifact cache key, so that a
// better record yields a new artifact and an unchanged database still hits.
absl::StatusOr<std::string> AppliedRecordsDigest(const TuningDatabase& db,
                                                 const std::string& target);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_APPLY_H_
