// Schedule traces: the JSON form of v1::TraceProto, and replay. Replaying a trace onto the
// function it was recorded on reproduces the scheduled function; each sampling instruction
// replays its recorded decision, so changing a decision (WithDecision) replays a neighbouring
// schedule — what the tuner's mutators do.
#ifndef KILN_COMPILER_TIR_SCHEDULE_TRACE_H_
#define KILN_COMPILER_TIR_SCHEDULE_TRACE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/tir/schedule/schedule.h"
#include "proto/kiln/v1/trace.pb.h"

namespace kiln::tir {

std::string TraceToJson(const v1::TraceProto& trace);
absl::StatusOr<v1::TraceProto> TraceFromJson(const std::string& json);
// The binary protobuf form, checked (version, known instruction kinds).
absl::StatusOr<v1::TraceProto> TraceFromBytes(const std::string& bytes);

// Applies `trace` to the function it names in `mod`. A failing instruction is reported with its
// index and kind.
absl::StatusOr<Schedule> ReplayTrace(const ir::IRModule& mod, const v1::TraceProto& trace);

// `trace` with the decision of instruction `index` replaced (it must be a sampling one).
absl::StatusOr<v1::TraceProto> WithDecision(const v1::TraceProto& trace, int index,
                                            std::vector<int64_t> decision);

}  // namespace kiln::tir

#endif  // KILN_COMPILER_TIR_SCHEDULE_TRACE_H_
