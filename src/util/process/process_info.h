// Facts about processes: whether a pid is alive, this binary's path, whether stdin is a terminal, and the unit of
// /proc CPU times. Starting and capturing child processes is util/process/subprocess.h.
//
// Implemented in process_info_posix.cc. Every function is thread-safe and keeps no state (ClockTicksPerSecond caches
// one sysconf value).
#pragma once

#include <cstdint>
#include <string>

#include "util/status.h"

namespace mmirage {

// True if a process with this pid exists on this machine (kill(pid, 0) succeeds, or fails with EPERM: it exists
// but belongs to someone else). False for pid <= 0 or out of range and when the kernel answers ESRCH.
bool ProcessAlive(int64_t pid);

// Absolute path of the running executable (/proc/self/exe). kIOError when it cannot be read.
Result<std::string> SelfExecutablePath();

// True when standard input is a terminal (isatty(0)).
bool StdinIsTerminal();

// sysconf(_SC_CLK_TCK) (100 when unknown): the unit of the CPU times in /proc/<pid>/stat and /proc/stat.
int64_t ClockTicksPerSecond();

}  // namespace mmirage
