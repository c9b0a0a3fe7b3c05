// POSIX implementation of util/process/spawn.h: fork + execve (posix_spawn cannot set a parent-death signal nor close
// the descriptors other threads or libraries opened without close-on-exec), and the double-forked group guard. Between
// fork and exec (or _exit) the child only makes async-signal-safe calls: everything it needs (argv, envp, the resolved
// program path) is prepared before the fork.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <algorithm>
#include <cstring>

#include "util/process/spawn.h"

extern char** environ;

namespace mmirage {
namespace {

// Closes every descriptor >= `from` except `keep` (-1: none). Async-signal-safe.
void CloseDescriptorsFrom(int from, int keep) {
  auto close_span = [](unsigned lo, unsigned hi) {
    if (lo > hi) return;
    if (::close_range(lo, hi, 0) == 0) return;
    struct rlimit rl;  // kernels without close_range: one close per possible descriptor
    unsigned limit = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (1u << 20)
                         ? static_cast<unsigned>(rl.rlim_cur)
                         : (1u << 16);
    for (unsigned fd = lo; fd <= hi && fd < limit; ++fd) ::close(static_cast<int>(fd));
  };
  if (keep >= from) {
    if (keep > from) close_span(static_cast<unsigned>(from), static_cast<unsigned>(keep - 1));
    close_span(static_cast<unsigned>(keep + 1), UINT_MAX);
  } else {
    close_span(static_cast<unsigned>(from), UINT_MAX);
  }
}

// Default dispositions and an empty mask (ours may block or ignore signals the child must see). Async-signal-safe.
void ResetSignals() {
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

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

// What the child reports through the error pipe before _exit(127).
struct ChildFailure {
  int stage;  // 0: chdir, 1: exec
  int err;
};

[[noreturn]] void ChildFail(int fd, int stage) {
  ChildFailure f{stage, errno};
  ssize_t ignored = ::write(fd, &f, sizeof f);
  (void)ignored;
  ::_exit(127);
}

// The guard is a small shell (so that it does not keep a copy-on-write image of this process for as long as the
// server runs): it blocks reading its descriptor 3; "q" → exit; EOF (we ended, or released it) → stop the group.
// $1: the group, $2: grace period in 50 ms ticks. The job-control signals are ignored (inherited as ignored).
constexpr const char* kGuardScript =
    "IFS= read -r cmd <&3; [ \"$cmd\" = q ] && exit 0; exec 3<&-; kill -TERM -$1 2>/dev/null; i=0; "
    "while [ \"$i\" -lt \"$2\" ] && kill -0 -$1 2>/dev/null; do sleep 0.05; i=$((i+1)); done; "
    "kill -KILL -$1 2>/dev/null; exit 0";

}  // namespace

std::string ResolveProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = ::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t b = 0;
  while (b <= dirs.size()) {
    size_t e = dirs.find(':', b);
    if (e == std::string::npos) e = dirs.size();
    std::string cand = (e > b ? dirs.substr(b, e - b) : ".") + "/" + name;
    struct stat st;
    if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(cand.c_str(), X_OK) == 0) return cand;
    b = e + 1;
  }
  return "";
}

Result<pid_t> SpawnChild(const SpawnSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) return Status::InvalidArgument("empty command");
  std::string program = ResolveProgram(spec.argv[0]);
  struct stat st;
  if (program.empty() || ::stat(program.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      ::access(program.c_str(), X_OK) != 0)
    return Status::NotFound(spec.argv[0] + ": no such executable");
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env = MergedEnv(spec.env_overrides);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  int null_fd = -1;
  if (spec.stdin_fd == SpawnSpec::kDevNull || spec.stdout_fd == SpawnSpec::kDevNull ||
      spec.stderr_fd == SpawnSpec::kDevNull) {
    null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0) return Status::IOError(std::string("/dev/null: ") + std::strerror(errno));
  }
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    int e = errno;
    if (null_fd >= 0) ::close(null_fd);
    return Status::IOError(std::string("pipe: ") + std::strerror(e));
  }
  int src[3] = {spec.stdin_fd, spec.stdout_fd, spec.stderr_fd};
  for (int& s : src)
    if (s == SpawnSpec::kDevNull) s = null_fd;
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    if (spec.new_process_group) ::setpgid(0, 0);
    if (spec.parent_death_signal != 0) {
      ::prctl(PR_SET_PDEATHSIG, spec.parent_death_signal);
      if (::getppid() != parent) ::_exit(127);  // the parent is already gone
    }
    ResetSignals();
    // A descriptor of 0..2 that is not its own target (our 0-2 may have been closed) would be overwritten by an
    // earlier dup2: move it above 2 first.
    int err_fd = err_pipe[1] < 3 ? ::fcntl(err_pipe[1], F_DUPFD_CLOEXEC, 3) : err_pipe[1];
    for (int i = 0; i < 3; ++i)
      if (src[i] >= 0 && src[i] < 3 && src[i] != i) src[i] = ::fcntl(src[i], F_DUPFD_CLOEXEC, 3);
    for (int i = 0; i < 3; ++i) {
      if (src[i] == i) ::fcntl(i, F_SETFD, 0);  // keep it across exec
      else if (src[i] >= 0) ::dup2(src[i], i);  // dup2 clears close-on-exec on the copy
    }
    if (spec.stderr_fd == SpawnSpec::kSameAsStdout) ::dup2(1, 2);
    CloseDescriptorsFrom(3, err_fd);
    if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) ChildFail(err_fd, 0);
    ::execve(program.c_str(), argv.data(), envp.data());
    ChildFail(err_fd, 1);
  }
  int fork_errno = errno;
  ::close(err_pipe[1]);
  if (null_fd >= 0) ::close(null_fd);
  if (pid < 0) {
    ::close(err_pipe[0]);
    return Status::IOError(std::string("fork: ") + std::strerror(fork_errno));
  }
  if (spec.new_process_group) ::setpgid(pid, pid);  // also here: no window where the group does not exist yet
  ChildFailure f{};
  ssize_t n;
  do { n = ::read(err_pipe[0], &f, sizeof f); } while (n < 0 && errno == EINTR);
  ::close(err_pipe[0]);
  if (n == sizeof f) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (f.stage == 0) return Status::NotFound("cannot change to directory " + spec.cwd + ": " + std::strerror(f.err));
    std::string msg = spec.argv[0] + ": " + std::strerror(f.err);
    return f.err == ENOENT || f.err == EACCES || f.err == ENOEXEC ? Status::NotFound(msg) : Status::IOError(msg);
  }
  return pid;
}

Result<int> StartGroupGuard(pid_t pgid, double grace_seconds) {
  // Everything the guard needs, before any fork.
  std::string pgid_s = std::to_string(pgid);
  std::string ticks_s = std::to_string(static_cast<int64_t>(std::max(0.0, grace_seconds) * 20 + 0.5));
  const char* argv[] = {"/bin/sh", "-c", kGuardScript, "mmirage-group-guard", pgid_s.c_str(), ticks_s.c_str(), nullptr};
  const char* envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", nullptr};
  // A socket pair rather than a pipe: DismissGroupGuard can send without risking SIGPIPE when the guard is gone.
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return Status::IOError(std::string("socketpair: ") + std::strerror(errno));
  int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0) {
    int e = errno;
    ::close(sv[0]);
    ::close(sv[1]);
    return Status::IOError(std::string("/dev/null: ") + std::strerror(e));
  }
  pid_t mid = ::fork();
  if (mid == 0) {
    // The intermediate: forks the guard, learns whether its exec worked, exits (the guard is re-parented away
    // from us: never our zombie).
    int err_pipe[2];
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) ::_exit(1);
    pid_t guard = ::fork();
    if (guard < 0) ::_exit(1);
    if (guard == 0) {
      ::setpgid(0, 0);  // a signal meant for our group does not reach it
      ResetSignals();
      for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2})
        ::signal(sig, SIG_IGN);
      // 0-2: /dev/null (whoever reads our stdout must see EOF when we end); 3: the socket; nothing else. The
      // sources move above 3 first, so that no dup2 overwrites another.
      int sock = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 4), err_fd = ::fcntl(err_pipe[1], F_DUPFD_CLOEXEC, 4);
      int null_src = ::fcntl(null_fd, F_DUPFD_CLOEXEC, 4);
      if (sock < 0 || err_fd < 0 || null_src < 0) ::_exit(1);
      for (int fd = 0; fd < 3; ++fd) ::dup2(null_src, fd);
      ::dup2(sock, 3);
      CloseDescriptorsFrom(4, err_fd);
      err_pipe[1] = err_fd;
      ::execve(argv[0], const_cast<char* const*>(argv), const_cast<char* const*>(envp));
      ChildFail(err_pipe[1], 1);
    }
    ::close(err_pipe[1]);
    ChildFailure f{};
    ssize_t n;
    do { n = ::read(err_pipe[0], &f, sizeof f); } while (n < 0 && errno == EINTR);
    ::_exit(n == 0 ? 0 : 1);  // EOF: the exec worked
  }
  int fork_errno = errno;
  ::close(sv[1]);
  ::close(null_fd);
  if (mid < 0) {
    ::close(sv[0]);
    return Status::IOError(std::string("fork: ") + std::strerror(fork_errno));
  }
  int status = 0;
  while (::waitpid(mid, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ::close(sv[0]);
    return Status::IOError("cannot start the process-group guard (/bin/sh)");
  }
  return sv[0];
}

void DismissGroupGuard(int fd) {
  if (fd < 0) return;
  ssize_t ignored = ::send(fd, "q\n", 2, MSG_NOSIGNAL);
  (void)ignored;
  ::close(fd);
}

void ReleaseGroupGuard(int fd) {
  if (fd >= 0) ::close(fd);
}

}  // namespace mmirage
