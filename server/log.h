// kilnd's structured log: one JSON object per line on stderr, with a timestamp, a level, a
// message and the fields that identify what it is about (job, agent, client ...).
#ifndef KILN_SERVER_LOG_H_
#define KILN_SERVER_LOG_H_

#include <string>
#include <utility>
#include <vector>

namespace kiln::server {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

// Lines below `level` are dropped (kInfo by default).
void SetLogLevel(LogLevel level);

void LogEvent(LogLevel level, const std::string& message,
              const std::vector<std::pair<std::string, std::string>>& fields = {});

}  // namespace kiln::server

#endif  // KILN_SERVER_LOG_H_
