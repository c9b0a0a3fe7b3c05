// Child processes: start, poll, wait, signal; run a command and capture its output; the path of this binary.
// The only OS process API of mmirage (implementation in subprocess_posix.cc). Thread-safe: each Subprocess is
// owned by one thread; the free functions have no shared state.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/status.h"

namespace mmirage {

struct SubprocessOptions {
  std::vector<std::string> argv;                                  // argv[0] is looked up in PATH when it has no '/'
  std::vector<std::pair<std::string, std::string>> env_overrides;  // set on top of this process's environment
  std::string cwd;                                                // empty: inherit
  std::string stdout_path;                                        // empty: inherit; else appended to this file
  std::string stderr_path;                                        // empty: inherit; "=stdout": same as stdout
  bool new_process_group = false;                                 // Signal() then reaches the whole group
  // Linux: the child gets SIGKILL when the thread that started it exits (PR_SET_PDEATHSIG), so a server we
  // started does not outlive us even after a SIGKILL. REQUIRES: Start is called from a long-lived thread.
  bool terminate_with_parent = false;
};

class Subprocess {
 public:
  // Errors: kNotFound (no such program), kIOError.
  static Result<std::unique_ptr<Subprocess>> Start(const SubprocessOptions& options);
  ~Subprocess();  // does not kill or wait; call Wait() (or Signal + Wait) first to avoid zombies
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  int pid() const { return pid_; }
  // Exit status once finished: the exit code, or 128 + signal number. nullopt while running.
  std::optional<int> Poll();
  // Blocks until the process ends; same value as Poll.
  int Wait();
  // Sends `sig` (to the process group when new_process_group). OK if already gone.
  Status Signal(int sig);
  // Sends `sig` to the process group even after its leader has exited (members may outlive it). OK if the group
  // is gone. REQUIRES: new_process_group.
  Status SignalGroup(int sig);

 private:
  explicit Subprocess(int pid, bool group) : pid_(pid), group_(group) {}
  int pid_;
  bool group_;
  std::optional<int> status_;
};

struct CommandOutput {
  int exit_code = -1;  // 128 + signal when killed; 124 on timeout
  std::string out;
  std::string err;
};
// Runs argv to completion, capturing stdout and stderr. timeout_seconds <= 0: no timeout.
Result<CommandOutput> RunCommandCapture(const std::vector<std::string>& argv, double timeout_seconds = 0);

// SelfExecutablePath and ProcessAlive: util/process.h.

}  // namespace mmirage
