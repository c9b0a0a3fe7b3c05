// Logging: one line per message, `<YYYY-MM-DD HH:MM:SS,mmm> <LEVEL> mmirage: <message>` on stderr (the
// original's format), optionally also appended to a file. Thread-safe (one mutex around each line).
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace mmirage {

enum class LogLevel { kDebug = 0, kInfo, kWarning, kError };

// Parses DEBUG/INFO/WARNING/ERROR (case-insensitive). false if unknown.
bool ParseLogLevel(std::string_view s, LogLevel* out);
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Also append every line to path (created if missing). Returns false if the file cannot be opened.
bool AddLogFile(const std::string& path);
void LogMessage(LogLevel level, std::string_view msg);

}  // namespace mmirage

#define MMIRAGE_LOG(level, expr)                                    \
  do {                                                              \
    if (::mmirage::LogLevel::level >= ::mmirage::GetLogLevel()) {   \
      std::ostringstream _os;                                       \
      _os << expr;                                                  \
      ::mmirage::LogMessage(::mmirage::LogLevel::level, _os.str()); \
    }                                                               \
  } while (0)
#define LOG_DEBUG(expr) MMIRAGE_LOG(kDebug, expr)
#define LOG_INFO(expr) MMIRAGE_LOG(kInfo, expr)
#define LOG_WARN(expr) MMIRAGE_LOG(kWarning, expr)
#define LOG_ERROR(expr) MMIRAGE_LOG(kError, expr)
