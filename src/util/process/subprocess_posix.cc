// POSIX implementation of util/process/subprocess.h over the spawn helper (util/process/spawn.h).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/process/spawn.h"
#include "util/process/subprocess.h"

namespace mmirage {
namespace {

int DecodeStatus(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st); }

double NowSeconds() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

void SleepSeconds(double s) {
  struct timespec ts = {static_cast<time_t>(s),
                        static_cast<long>((s - static_cast<double>(static_cast<time_t>(s))) * 1e9)};
  while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

// Closes the descriptors of `fds` that are >= 0.
void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
}

}  // namespace

Result<std::unique_ptr<Subprocess>> Subprocess::Start(const SubprocessOptions& o) {
  if (o.argv.empty()) return Status::InvalidArgument("empty command");
  if (o.stop_group_with_parent && !o.new_process_group)
    return Status::InvalidArgument("stop_group_with_parent requires new_process_group");
  int out_fd = -1, err_fd = -1;
  auto open_log = [](const std::string& path, int* fd) -> Status {
    *fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    return *fd >= 0 ? Status::OK() : Status::IOError("cannot open " + path + ": " + std::strerror(errno));
  };
  if (!o.stdout_path.empty()) MMIRAGE_TRY(open_log(o.stdout_path, &out_fd));
  if (!o.stderr_path.empty() && o.stderr_path != "=stdout") {
    Status s = open_log(o.stderr_path, &err_fd);
    if (!s.ok()) {
      CloseAll({out_fd});
      return s;
    }
  }
  SpawnSpec spec;
  spec.argv = o.argv;
  spec.env_overrides = o.env_overrides;
  spec.cwd = o.cwd;
  spec.stdout_fd = out_fd;
  spec.stderr_fd = o.stderr_path == "=stdout" ? SpawnSpec::kSameAsStdout : err_fd;
  spec.new_process_group = o.new_process_group;
  spec.parent_death_signal = o.terminate_with_parent ? SIGKILL : 0;
  auto pid = SpawnChild(spec);
  CloseAll({out_fd, err_fd});
  if (!pid.ok()) return pid.status();
  int guard_fd = -1;
  if (o.stop_group_with_parent) {
    auto g = StartGroupGuard(*pid, o.group_stop_grace_seconds);
    if (!g.ok()) {  // no unguarded group: stop it now
      ::kill(-*pid, SIGKILL);
      int st;
      while (::waitpid(*pid, &st, 0) < 0 && errno == EINTR) {}
      return g.status().WithContext("cannot start " + o.argv[0]);
    }
    guard_fd = *g;
  }
  return std::unique_ptr<Subprocess>(new Subprocess(*pid, o.new_process_group, guard_fd));
}

Subprocess::~Subprocess() {
  if (guard_fd_ < 0) return;
  // Members left (or the leader still running): the guard stops them; else it just exits.
  if (::kill(-pid_, 0) == 0) ReleaseGroupGuard(guard_fd_);
  else DismissGroupGuard(guard_fd_);
}

std::optional<int> Subprocess::Poll() {
  if (status_) return status_;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) status_ = DecodeStatus(st);
  return status_;
}

int Subprocess::Wait() {
  while (!status_) {
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, 0);
    if (r == pid_) status_ = DecodeStatus(st);
    else if (r < 0 && errno != EINTR) status_ = 255;
  }
  return *status_;
}

Status Subprocess::Signal(int sig) {
  if (status_) return Status::OK();
  int rc = group_ ? ::kill(-pid_, sig) : ::kill(pid_, sig);
  if (rc != 0 && errno != ESRCH) return Status::IOError("kill " + std::to_string(pid_) + ": " + std::strerror(errno));
  return Status::OK();
}

Status Subprocess::SignalGroup(int sig) {
  if (::kill(-pid_, sig) != 0 && errno != ESRCH && errno != EPERM)
    return Status::IOError("kill -" + std::to_string(pid_) + ": " + std::strerror(errno));
  return Status::OK();
}

Result<CommandOutput> RunCommandCapture(const std::vector<std::string>& argv, double timeout_seconds) {
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    int e = errno;
    CloseAll({out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]});  // no leak when only the second pipe fails
    return Status::IOError(std::string("pipe: ") + std::strerror(e));
  }
  SpawnSpec spec;
  spec.argv = argv;
  spec.stdin_fd = SpawnSpec::kDevNull;
  spec.stdout_fd = out_pipe[1];
  spec.stderr_fd = err_pipe[1];
  spec.new_process_group = true;  // the deadline stops what it forked too
  auto spawned = SpawnChild(spec);
  CloseAll({out_pipe[1], err_pipe[1]});
  if (!spawned.ok()) {
    CloseAll({out_pipe[0], err_pipe[0]});
    return spawned.status();
  }
  pid_t pid = *spawned;
  CommandOutput out;
  struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  double deadline = NowSeconds() + (timeout_seconds > 0 ? timeout_seconds : 0);
  bool timed_out = false;
  char buf[65536];
  while (open_fds > 0 && !timed_out) {
    double left = deadline - NowSeconds();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    int n = ::poll(fds, 2, static_cast<int>(left * 1000) + 1);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; n > 0 && i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
      if (r > 0) {
        (i == 0 ? out.out : out.err).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  CloseAll({fds[0].fd, fds[1].fd});
  // Both pipes closed does not mean exited (a child may close them and keep running): the deadline covers the
  // wait too.
  int st = 0;
  while (!timed_out) {
    pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    if (NowSeconds() >= deadline) timed_out = true;
    else SleepSeconds(0.005);
  }
  if (timed_out) {
    ::kill(-pid, SIGKILL);
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  }
  out.exit_code = timed_out ? 124 : DecodeStatus(st);
  return out;
}

}  // namespace mmirage
