// Process-level OS access: liveness of a pid, this binary's path, terminals, and running child programs.
//
// Implemented in process_posix.cc (the only place that forks, waits and reads /proc for these). Every function is
// thread-safe; none keeps state between calls except ClockTicksPerSecond's cached sysconf value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/status.h"

namespace mmirage {

// True if a process with this pid exists on this machine (kill(pid, 0) succeeds or fails with EPERM: it exists
// but belongs to someone else). False for pid <= 0 and when the kernel answers ESRCH.
bool ProcessAlive(int64_t pid);

// Absolute path of the running executable (/proc/self/exe). kIOError when it cannot be read.
Result<std::string> SelfExecutablePath();

// True when standard input is a terminal (isatty(0)).
bool StdinIsTerminal();

struct RunProcessOptions {
  bool stdout_to_stderr = false;  // the child's stdout goes to our stderr (keeps our stdout machine-readable)
};
// Runs argv (argv[0] looked up in PATH when it has no '/'), inheriting the environment, working directory and
// stdio, and waits for it. Returns the exit status, or 128 + signal number when the child was killed by a signal.
// kInvalidArgument for an empty argv; kIOError when the child cannot be started (fork failure); a program that
// cannot be executed yields exit status 127 like a shell.
// REQUIRES: argv non-empty.
Result<int> RunProcess(const std::vector<std::string>& argv, const RunProcessOptions& options = {});

struct CapturedOutput {
  int exit_code = -1;  // as RunProcess; 124 when the timeout killed it
  std::string out;     // everything written to stdout (stderr is discarded)
};
// Runs argv with stdin from /dev/null, capturing stdout; kills it (SIGKILL) once timeout_ms has passed.
// kNotFound when the program cannot be found or executed (so callers can stop retrying), kIOError on pipe/fork
// failures.
Result<CapturedOutput> RunAndCapture(const std::vector<std::string>& argv, uint64_t timeout_ms);

// sysconf(_SC_CLK_TCK): the unit of the CPU times in /proc/<pid>/stat and /proc/stat.
int64_t ClockTicksPerSecond();

}  // namespace mmirage
