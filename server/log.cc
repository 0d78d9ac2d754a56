#include "server/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "nlohmann/json.hpp"

namespace kiln::server {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

// RFC 3339 in UTC with milliseconds.
std::string Timestamp() {
  auto now = std::chrono::system_clock::now();
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm utc;
  gmtime_r(&seconds, &utc);
  char text[96];
  std::snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, ms);
  return text;
}

}  // namespace

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }

void LogEvent(LogLevel level, const std::string& message,
              const std::vector<std::pair<std::string, std::string>>& fields) {
  if (static_cast<int>(level) < g_level) return;
  nlohmann::json line;
  line["ts"] = Timestamp();
  line["level"] = LevelName(level);
  line["msg"] = message;
  for (const auto& [key, value] : fields) line[key] = value;
  // Client-supplied text may hold invalid UTF-8: replace rather than throw.
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "%s\n", text.c_str());
}

}  // namespace kiln::server
