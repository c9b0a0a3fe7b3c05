// The one way mmirage starts a child process (internal to util/: Subprocess and PipeProcess are built on it), and
// the group guard that stops a child's whole process group when this process dies. Implementation in
// spawn_posix.cc.
//
// Every child gets: only its standard descriptors (every other descriptor of ours is closed in the child, whatever
// its close-on-exec flag: library sockets and files opened by other threads included), default signal
// dispositions, an empty signal mask, and optionally its own process group and a parent-death signal.
//
// Thread-safety: both functions may be called from any thread at any time (fork + exec; the child only makes
// async-signal-safe calls). Ownership: the caller owns the returned pid (reap it) and the guard's descriptor.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "util/status.h"

namespace mmirage {

struct SpawnSpec {
  std::vector<std::string> argv;                                   // argv[0] is looked up in PATH when it has no '/'
  std::vector<std::pair<std::string, std::string>> env_overrides;  // set on top of this process's environment
  std::string cwd;                                                 // empty: inherit
  // The child's descriptors 0, 1, 2: -1 inherits ours; kDevNull opens /dev/null; any other value is a descriptor
  // of ours (borrowed: still ours after the call) made the child's. kSameAsStdout for stderr_fd only.
  static constexpr int kDevNull = -2;
  static constexpr int kSameAsStdout = -3;
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  bool new_process_group = false;  // the child leads a new group (pgid = its pid)
  int parent_death_signal = 0;     // Linux PR_SET_PDEATHSIG: sent to the child when the spawning thread exits; 0: none
};

// Starts the child. Errors: kInvalidArgument (empty argv), kNotFound (no such program, or not executable, or cwd
// missing), kIOError (fork, pipes). An exec failure is reported here, not as an exit status.
Result<pid_t> SpawnChild(const SpawnSpec& spec);

// A watcher of this process for the process group `pgid`: a small /bin/sh process (double-forked, so never our child
// and never a zombie of ours; exec'd, so it holds no copy of our memory; in a group of its own, ignoring job-control
// signals, so a signal meant for us or for our group does not reach it) that blocks on a socket. When this process ends
// in any way (a SIGKILL included) the pipe reaches EOF and the guard sends SIGTERM to the group, then SIGKILL after
// `grace_seconds` if any member is left. DismissGroupGuard tells it to exit without signalling. Returns the write end
// of the pipe (close-on-exec; children spawned through SpawnChild never hold it). Errors: kIOError.
Result<int> StartGroupGuard(pid_t pgid, double grace_seconds);
// Tells the guard behind `fd` to exit without touching the group, and closes fd. For when the group is known to be
// gone (call it while the group's leader is still unreaped, so its id cannot have been reused).
void DismissGroupGuard(int fd);
// Closes fd without dismissing: the guard stops the group now (SIGTERM, then SIGKILL after its grace period).
void ReleaseGroupGuard(int fd);

// PATH lookup as execvp does it: `name` itself when it has a '/', else the first executable regular file
// <dir>/<name> of $PATH; "" when none.
std::string ResolveProgram(const std::string& name);

}  // namespace mmirage
