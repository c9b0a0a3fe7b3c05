// A child process spoken to over pipes: we write lines to its stdin and read lines from its stdout (stderr is
// inherited, so what the child prints there reaches our log). For line protocols such as the `custom` worker
// pool's (docs/custom_worker_protocol.md). Implementation in pipe_process_posix.cc.
//
// Thread-safety: one PipeProcess is used by one thread at a time (the pool gives each worker its own thread).
// Ownership: the PipeProcess owns both pipe ends; the destructor kills (SIGKILL to its process group) and reaps
// the child if it is still running, so no child outlives its owner.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace mmirage {

struct PipeProcessOptions {
  std::vector<std::string> argv;                                   // argv[0] looked up in PATH when it has no '/'
  std::vector<std::pair<std::string, std::string>> env_overrides;  // set on top of this process's environment
  std::string cwd;                                                 // empty: inherit
};

class PipeProcess {
 public:
  // Starts the child in its own process group with stdin and stdout connected to us (it inherits no other
  // descriptor of ours but stderr). Errors: kNotFound (no such
  // program, or not executable), kIOError.
  static Result<std::unique_ptr<PipeProcess>> Start(const PipeProcessOptions& options);
  ~PipeProcess();
  PipeProcess(const PipeProcess&) = delete;
  PipeProcess& operator=(const PipeProcess&) = delete;

  int pid() const { return pid_; }

  // Writes all of `data` to the child's stdin (blocking). kUnavailable when the child closed its stdin (exited).
  Status Write(std::string_view data);

  // The next line of the child's stdout, without its '\n'. Waits at most `timeout_ms` (< 0: no limit).
  //   OK + line             a complete line arrived
  //   kUnavailable "timeout" no complete line within timeout_ms (the partial line is kept for the next call)
  //   kIOError "eof"         the child closed its stdout (usually: it exited) before ending a line
  // Lines longer than `max_line_bytes` are an error (kCorruption) rather than unbounded memory.
  Result<std::string> ReadLine(int timeout_ms, size_t max_line_bytes = size_t{1} << 30);

  // SIGKILL to the child's process group, then reaps it. Returns the exit status (128 + 9 normally).
  int Kill();
  // Closes stdin (the child sees EOF) and waits up to `grace_ms` for it to exit; then kills it. Exit status.
  int Close(int grace_ms);
  // Exit status once finished (exit code, or 128 + signal), nullopt while running. Does not block.
  std::optional<int> Poll();

 private:
  PipeProcess(int pid, int in_fd, int out_fd) : pid_(pid), in_fd_(in_fd), out_fd_(out_fd) {}
  int pid_;
  int in_fd_;
  int out_fd_;
  std::string buf_;  // bytes read past the last returned line
  std::optional<int> status_;
};

}  // namespace mmirage
