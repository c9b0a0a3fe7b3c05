// Child processes: start, poll, wait, signal; run a command and capture its output. Implementation in
// subprocess_posix.cc, on the one spawn helper of util/process/spawn.h (children inherit no descriptor of ours but
// 0-2). Thread-safe: each Subprocess is owned by one thread; the free functions have no shared state.
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
  std::vector<std::string> argv;                                   // argv[0] is looked up in PATH when it has no '/'
  std::vector<std::pair<std::string, std::string>> env_overrides;  // set on top of this process's environment
  std::string cwd;                                                 // empty: inherit
  std::string stdout_path;                                         // empty: inherit; else appended to this file
  std::string stderr_path;                                         // empty: inherit; "=stdout": same as stdout
  bool new_process_group = false;                                  // Signal() then reaches the whole group
  // Linux: the child gets SIGKILL when the thread that started it exits (PR_SET_PDEATHSIG), so a child we
  // started does not outlive us even after a SIGKILL. Reaches the child only, not what it forked.
  // REQUIRES: Start is called from a long-lived thread.
  bool terminate_with_parent = false;
  // The whole process group is stopped when this process ends in any way (a SIGKILL included) or when the
  // Subprocess is destroyed with members of the group left: a guard process (util/process/spawn.h) sends SIGTERM, then
  // SIGKILL after group_stop_grace_seconds. For servers whose command forks (a shell, a launcher and its
  // workers). REQUIRES: new_process_group.
  bool stop_group_with_parent = false;
  double group_stop_grace_seconds = 10;
};

class Subprocess {
 public:
  // Errors: kNotFound (no such program), kIOError.
  static Result<std::unique_ptr<Subprocess>> Start(const SubprocessOptions& options);
  // Does not kill or wait (call Wait(), or Signal + Wait, first to avoid zombies), except that with
  // stop_group_with_parent what is left of the group is stopped by its guard.
  ~Subprocess();
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
  Subprocess(int pid, bool group, int guard_fd) : pid_(pid), group_(group), guard_fd_(guard_fd) {}
  int pid_;
  bool group_;
  int guard_fd_;  // the group guard's socket, -1 without stop_group_with_parent
  std::optional<int> status_;
};

struct CommandOutput {
  int exit_code = -1;  // 128 + signal when killed; 124 when the deadline passed
  std::string out;
  std::string err;
};
// Runs argv (stdin: /dev/null; in a process group of its own) to completion, capturing stdout and stderr. When
// `timeout_seconds` pass before it has exited (whether or not it still writes), its whole group gets SIGKILL and
// exit_code is 124 (with what was captured so far). REQUIRES: timeout_seconds > 0. Errors: kNotFound (no such
// program), kIOError (pipes, fork); no descriptor is left open on any path.
Result<CommandOutput> RunCommandCapture(const std::vector<std::string>& argv, double timeout_seconds);

// SelfExecutablePath and ProcessAlive: util/process/process_info.h.

}  // namespace mmirage
