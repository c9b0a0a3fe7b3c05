// POSIX implementation of util/process/process_info.h: kill(2), /proc/self/exe, isatty(3), sysconf(3).
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>

#include "util/process/process_info.h"

namespace mmirage {

bool ProcessAlive(int64_t pid) {
  if (pid <= 0 || pid > INT_MAX) return false;
  if (::kill(static_cast<pid_t>(pid), 0) == 0) return true;
  return errno == EPERM;
}

Result<std::string> SelfExecutablePath() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return Status::IOError(std::string("readlink /proc/self/exe: ") + std::strerror(errno));
  return std::string(buf, static_cast<size_t>(n));
}

bool StdinIsTerminal() { return ::isatty(0) == 1; }

int64_t ClockTicksPerSecond() {
  static const int64_t ticks = [] {
    long t = ::sysconf(_SC_CLK_TCK);
    return static_cast<int64_t>(t > 0 ? t : 100);
  }();
  return ticks;
}

}  // namespace mmirage
