// POSIX implementation of util/process.h: kill(2), /proc/self/exe, isatty(3), posix_spawnp(3) and waitpid(2).
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "util/process.h"

extern char** environ;

namespace mmirage {
namespace {

int ExitStatusOf(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return -1;
}

Result<int> WaitFor(pid_t pid) {
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0) {
    if (errno != EINTR) return Status::IOError(std::string("waitpid: ") + std::strerror(errno));
  }
  return ExitStatusOf(wstatus);
}

std::vector<char*> ArgvPointers(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

uint64_t MonotonicMs() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

}  // namespace

bool ProcessAlive(int64_t pid) {
  if (pid <= 0 || pid > INT_MAX) return false;
  if (::kill(static_cast<pid_t>(pid), 0) == 0) return true;
  return errno == EPERM;
}

Result<std::string> SelfExecutablePath() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n < 0) return Status::IOError(std::string("/proc/self/exe: ") + std::strerror(errno));
  return std::string(buf, static_cast<size_t>(n));
}

bool StdinIsTerminal() { return ::isatty(0) == 1; }

Result<int> RunProcess(const std::vector<std::string>& argv, const RunProcessOptions& options) {
  if (argv.empty()) return Status::InvalidArgument("RunProcess: empty argv");
  posix_spawn_file_actions_t fa;
  ::posix_spawn_file_actions_init(&fa);
  if (options.stdout_to_stderr) ::posix_spawn_file_actions_adddup2(&fa, 2, 1);
  auto args = ArgvPointers(argv);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  ::posix_spawn_file_actions_destroy(&fa);
  if (rc == ENOENT || rc == EACCES || rc == ENOEXEC) return 127;
  if (rc != 0) return Status::IOError("cannot start " + argv[0] + ": " + std::strerror(rc));
  return WaitFor(pid);
}

Result<CapturedOutput> RunAndCapture(const std::vector<std::string>& argv, uint64_t timeout_ms) {
  if (argv.empty()) return Status::InvalidArgument("RunAndCapture: empty argv");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Status::IOError(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  ::posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  auto args = ArgvPointers(argv);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  ::posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    if (rc == ENOENT || rc == EACCES || rc == ENOEXEC) {
      return Status::NotFound("cannot execute " + argv[0] + ": " + std::strerror(rc));
    }
    return Status::IOError("cannot start " + argv[0] + ": " + std::strerror(rc));
  }
  CapturedOutput out;
  bool timed_out = false;
  const uint64_t deadline = MonotonicMs() + timeout_ms;
  char buf[4096];
  while (true) {
    uint64_t now = MonotonicMs();
    if (now >= deadline) {
      timed_out = true;
      break;
    }
    struct pollfd p = {fds[0], POLLIN, 0};
    int pr = ::poll(&p, 1, static_cast<int>(deadline - now));
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) {
      timed_out = true;
      break;
    }
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF (or an error: the exit status tells the rest)
    out.out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  MMIRAGE_ASSIGN_OR_RETURN(int code, WaitFor(pid));
  out.exit_code = timed_out ? 124 : code;
  return out;
}

int64_t ClockTicksPerSecond() {
  static const int64_t ticks = [] {
    long t = ::sysconf(_SC_CLK_TCK);
    return static_cast<int64_t>(t > 0 ? t : 100);
  }();
  return ticks;
}

}  // namespace mmirage
