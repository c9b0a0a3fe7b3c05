#include <sys/time.h>
#include <time.h>

#include <atomic>
#include <ctime>
#include <cstdio>
#include <mutex>
#include <strings.h>

#include "util/log.h"

namespace mmirage {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mu;
FILE* g_file = nullptr;
const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARNING";
    case LogLevel::kError: return "ERROR";
  }
  return "INFO";
}
}  // namespace

bool ParseLogLevel(std::string_view s, LogLevel* out) {
  static const std::pair<const char*, LogLevel> kNames[] = {{"DEBUG", LogLevel::kDebug},
                                                            {"INFO", LogLevel::kInfo},
                                                            {"WARNING", LogLevel::kWarning},
                                                            {"ERROR", LogLevel::kError}};
  for (const auto& [name, level] : kNames) {
    if (s.size() == std::char_traits<char>::length(name) && ::strncasecmp(s.data(), name, s.size()) == 0) {
      *out = level;
      return true;
    }
  }
  return false;
}

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

bool AddLogFile(const std::string& path) {
  std::lock_guard<std::mutex> l(g_mu);
  if (g_file != nullptr) return true;
  g_file = std::fopen(path.c_str(), "ae");  // "e": O_CLOEXEC, children do not inherit the log
  return g_file != nullptr;
}

void LogMessage(LogLevel level, std::string_view msg) {
  struct timeval tv;
  ::gettimeofday(&tv, nullptr);
  struct tm tm;
  ::localtime_r(&tv.tv_sec, &tm);
  char ts[64];
  size_t n = std::strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
  std::snprintf(ts + n, sizeof ts - n, ",%03d", static_cast<int>(tv.tv_usec / 1000));
  std::lock_guard<std::mutex> l(g_mu);
  std::fprintf(stderr, "%s %s mmirage: %.*s\n", ts, LevelName(level), static_cast<int>(msg.size()), msg.data());
  if (g_file != nullptr) {
    std::fprintf(g_file, "%s %s mmirage: %.*s\n", ts, LevelName(level), static_cast<int>(msg.size()), msg.data());
    std::fflush(g_file);
  }
}

}  // namespace mmirage
