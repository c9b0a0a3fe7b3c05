// POSIX implementation of util/process/pipe_process.h over the spawn helper (util/process/spawn.h).
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/process/pipe_process.h"
#include "util/process/spawn.h"

namespace mmirage {
namespace {

int DecodeStatus(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st); }

int64_t NowMillis() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace

Result<std::unique_ptr<PipeProcess>> PipeProcess::Start(const PipeProcessOptions& o) {
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1};
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0) {
    int e = errno;
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1]})
      if (fd >= 0) ::close(fd);
    return Status::IOError(std::string("pipe: ") + std::strerror(e));
  }
  SpawnSpec spec;
  spec.argv = o.argv;
  spec.env_overrides = o.env_overrides;
  spec.cwd = o.cwd;
  spec.stdin_fd = in_pipe[0];
  spec.stdout_fd = out_pipe[1];
  spec.new_process_group = true;
  auto pid = SpawnChild(spec);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  if (!pid.ok()) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    return pid.status();
  }
  return std::unique_ptr<PipeProcess>(new PipeProcess(*pid, in_pipe[1], out_pipe[0]));
}

PipeProcess::~PipeProcess() {
  if (!Poll()) Kill();
  if (in_fd_ >= 0) ::close(in_fd_);
  if (out_fd_ >= 0) ::close(out_fd_);
}

Status PipeProcess::Write(std::string_view data) {
  if (in_fd_ < 0) return Status::Unavailable("stdin closed");
  // A child that has exited would raise SIGPIPE in this process: block it on this thread for the write and
  // consume the pending signal, so the write just fails with EPIPE.
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  Status result;
  while (!data.empty()) {
    ssize_t n = ::write(in_fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      if (e == EPIPE) {
        struct timespec zero = {0, 0};
        while (::sigtimedwait(&pipe_set, nullptr, &zero) > 0) {}
        result = Status::Unavailable("the process closed its input");
      } else {
        result = Status::IOError(std::string("write: ") + std::strerror(e));
      }
      break;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return result;
}

Result<std::string> PipeProcess::ReadLine(int timeout_ms, size_t max_line_bytes) {
  int64_t deadline = timeout_ms >= 0 ? NowMillis() + timeout_ms : -1;
  size_t scanned = 0;
  while (true) {
    size_t nl = buf_.find('\n', scanned);
    if (nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      return line;
    }
    scanned = buf_.size();
    if (buf_.size() > max_line_bytes)
      return Status::Corruption("line longer than " + std::to_string(max_line_bytes) + " bytes");
    if (out_fd_ < 0) return Status::IOError("eof");
    int wait = -1;
    if (deadline >= 0) {
      int64_t left = deadline - NowMillis();
      if (left <= 0) return Status::Unavailable("timeout");
      wait = static_cast<int>(left);
    }
    struct pollfd p = {out_fd_, POLLIN, 0};
    int r = ::poll(&p, 1, wait);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(std::string("poll: ") + std::strerror(errno));
    }
    if (r == 0) continue;  // the deadline check above decides
    char chunk[65536];
    ssize_t n = ::read(out_fd_, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::IOError(std::string("read: ") + std::strerror(errno));
    }
    if (n == 0) {
      ::close(out_fd_);
      out_fd_ = -1;
      return Status::IOError("eof");
    }
    buf_.append(chunk, static_cast<size_t>(n));
  }
}

std::optional<int> PipeProcess::Poll() {
  if (status_) return status_;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) status_ = DecodeStatus(st);
  return status_;
}

int PipeProcess::Kill() {
  if (!status_) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int st = 0;
    pid_t r;
    while ((r = ::waitpid(pid_, &st, 0)) < 0 && errno == EINTR) {}
    status_ = r == pid_ ? DecodeStatus(st) : 255;
  } else {
    ::kill(-pid_, SIGKILL);  // members of the group may outlive the leader
  }
  return *status_;
}

int PipeProcess::Close(int grace_ms) {
  if (in_fd_ >= 0) {
    ::close(in_fd_);
    in_fd_ = -1;
  }
  int64_t deadline = NowMillis() + grace_ms;
  while (!Poll() && NowMillis() < deadline) {
    struct timespec ts = {0, 5 * 1000 * 1000};
    ::nanosleep(&ts, nullptr);
  }
  return Kill();
}

}  // namespace mmirage
