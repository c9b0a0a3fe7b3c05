#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/subprocess.h"

extern char** environ;

namespace mmirage {
namespace {

int DecodeStatus(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st); }

std::vector<std::string> MergedEnv(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    std::string key = kv.substr(0, kv.find('='));
    bool replaced = false;
    for (const auto& o : overrides) replaced = replaced || o.first == key;
    if (!replaced) env.push_back(std::move(kv));
  }
  for (const auto& o : overrides) env.push_back(o.first + "=" + o.second);
  return env;
}

double NowSeconds() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

}  // namespace

Result<std::unique_ptr<Subprocess>> Subprocess::Start(const SubprocessOptions& o) {
  if (o.argv.empty()) return Status::InvalidArgument("empty command");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!o.stdout_path.empty()) {
    posix_spawn_file_actions_addopen(&fa, 1, o.stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  }
  if (o.stderr_path == "=stdout") {
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  } else if (!o.stderr_path.empty()) {
    posix_spawn_file_actions_addopen(&fa, 2, o.stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  }
  if (!o.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, o.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (o.new_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, flags);
  std::vector<char*> argv;
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env = MergedEnv(o.env_overrides);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  int rc = o.argv[0].find('/') == std::string::npos
               ? posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), envp.data())
               : posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    std::string msg = o.argv[0] + ": " + std::strerror(rc);
    return rc == ENOENT ? Status::NotFound(msg) : Status::IOError(msg);
  }
  return std::unique_ptr<Subprocess>(new Subprocess(pid, o.new_process_group));
}

Subprocess::~Subprocess() = default;

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

Result<CommandOutput> RunCommandCapture(const std::vector<std::string>& argv, double timeout_seconds) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)
    return Status::IOError(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    std::string msg = argv[0] + ": " + std::strerror(rc);
    return rc == ENOENT ? Status::NotFound(msg) : Status::IOError(msg);
  }
  CommandOutput out;
  struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  double deadline = timeout_seconds > 0 ? NowSeconds() + timeout_seconds : 0;
  bool timed_out = false;
  char buf[65536];
  while (open_fds > 0) {
    int wait_ms = -1;
    if (deadline > 0) {
      double left = deadline - NowSeconds();
      if (left <= 0) {
        timed_out = true;
        ::kill(pid, SIGKILL);
        break;
      }
      wait_ms = static_cast<int>(left * 1000) + 1;
    }
    int n = ::poll(fds, 2, wait_ms);
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
      if (r > 0) {
        (i == 0 ? out.out : out.err).append(buf, static_cast<size_t>(r));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  out.exit_code = timed_out ? 124 : DecodeStatus(st);
  return out;
}

Result<std::string> SelfExecutablePath() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return Status::IOError(std::string("readlink /proc/self/exe: ") + std::strerror(errno));
  buf[n] = '\0';
  return std::string(buf);
}

bool ProcessAlive(int pid) {
  if (pid <= 0) return false;
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

}  // namespace mmirage
