#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
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

// argv[0] resolved through PATH (as execvp would), or "" when no executable file matches.
std::string ResolveProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = ::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t b = 0;
  while (b <= dirs.size()) {
    size_t e = dirs.find(':', b);
    if (e == std::string::npos) e = dirs.size();
    std::string dir = e > b ? dirs.substr(b, e - b) : ".";
    std::string cand = dir + "/" + name;
    struct stat st;
    if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(cand.c_str(), X_OK) == 0) return cand;
    b = e + 1;
  }
  return "";
}

// fork + exec, for what posix_spawn cannot express (PR_SET_PDEATHSIG). The child only makes async-signal-safe
// calls; an exec failure comes back through a close-on-exec pipe.
Result<pid_t> ForkExec(const SubprocessOptions& o, char** argv, char** envp) {
  std::string program = ResolveProgram(o.argv[0]);
  if (program.empty()) return Status::NotFound(o.argv[0] + ": " + std::strerror(ENOENT));
  int out_fd = -1, err_fd = -1, pipe_fds[2];
  if (!o.stdout_path.empty()) out_fd = ::open(o.stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (!o.stderr_path.empty() && o.stderr_path != "=stdout")
    err_fd = ::open(o.stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if ((!o.stdout_path.empty() && out_fd < 0) || (err_fd < 0 && !o.stderr_path.empty() && o.stderr_path != "=stdout") ||
      ::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    std::string msg = std::string("cannot start ") + o.argv[0] + ": " + std::strerror(errno);
    if (out_fd >= 0) ::close(out_fd);
    if (err_fd >= 0) ::close(err_fd);
    return Status::IOError(msg);
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    if (o.new_process_group) ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // our own death was abrupt: no graceful stop for the child either
    if (::getppid() != parent) ::_exit(127);  // the parent is already gone
    for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (out_fd >= 0) ::dup2(out_fd, 1);
    if (o.stderr_path == "=stdout") ::dup2(1, 2);
    if (err_fd >= 0) ::dup2(err_fd, 2);
    if (!o.cwd.empty() && ::chdir(o.cwd.c_str()) != 0) {
      int e = errno;
      ssize_t ignored = ::write(pipe_fds[1], &e, sizeof e);
      (void)ignored;
      ::_exit(127);
    }
    ::execve(program.c_str(), argv, envp);
    int e = errno;
    ssize_t ignored = ::write(pipe_fds[1], &e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  int fork_errno = errno;
  ::close(pipe_fds[1]);
  if (out_fd >= 0) ::close(out_fd);
  if (err_fd >= 0) ::close(err_fd);
  if (pid < 0) {
    ::close(pipe_fds[0]);
    return Status::IOError(std::string("fork: ") + std::strerror(fork_errno));
  }
  if (o.new_process_group) ::setpgid(pid, pid);  // also here: no window where the group does not exist yet
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(pipe_fds[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  ::close(pipe_fds[0]);
  if (n == sizeof child_errno) {
    int st;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    std::string msg = o.argv[0] + ": " + std::strerror(child_errno);
    return child_errno == ENOENT || child_errno == EACCES ? Status::NotFound(msg) : Status::IOError(msg);
  }
  return pid;
}

}  // namespace

Result<std::unique_ptr<Subprocess>> Subprocess::Start(const SubprocessOptions& o) {
  if (o.argv.empty()) return Status::InvalidArgument("empty command");
  std::vector<char*> argv;
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env = MergedEnv(o.env_overrides);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  if (o.terminate_with_parent) {
    MMIRAGE_ASSIGN_OR_RETURN(pid_t pid, ForkExec(o, argv.data(), envp.data()));
    return std::unique_ptr<Subprocess>(new Subprocess(pid, o.new_process_group));
  }
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

Status Subprocess::SignalGroup(int sig) {
  if (::kill(-pid_, sig) != 0 && errno != ESRCH && errno != EPERM)
    return Status::IOError("kill -" + std::to_string(pid_) + ": " + std::strerror(errno));
  return Status::OK();
}

Result<CommandOutput> RunCommandCapture(const std::vector<std::string>& argv, double timeout_seconds) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return Status::IOError(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    int e = errno;
    ::close(out_pipe[0]);  // no leak when only the second pipe fails
    ::close(out_pipe[1]);
    return Status::IOError(std::string("pipe: ") + std::strerror(e));
  }
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

}  // namespace mmirage
