// Early-return helpers for absl::Status / absl::StatusOr, shared by every layer (the runtime is
// the bottom of the dependency graph, so this lives here).
#ifndef KILN_RUNTIME_SUPPORT_STATUS_MACROS_H_
#define KILN_RUNTIME_SUPPORT_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define KILN_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::absl::Status kiln_status_ = (expr);        \
    if (!kiln_status_.ok()) return kiln_status_; \
  } while (false)

#define KILN_STATUS_CONCAT_INNER_(a, b) a##b
#define KILN_STATUS_CONCAT_(a, b) KILN_STATUS_CONCAT_INNER_(a, b)

// `KILN_ASSIGN_OR_RETURN(auto x, MakeX());` declares/assigns x from an absl::StatusOr, or returns
// its error from the enclosing function.
#define KILN_ASSIGN_OR_RETURN(lhs, expr) \
  KILN_ASSIGN_OR_RETURN_IMPL_(KILN_STATUS_CONCAT_(kiln_statusor_, __LINE__), lhs, expr)
#define KILN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

#endif  // KILN_RUNTIME_SUPPORT_STATUS_MACROS_H_
