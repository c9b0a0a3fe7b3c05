// POSIX Env. The only file (with other *_posix.cc) allowed to touch the OS directly.
#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "util/env.h"
#include "util/env_schemes.h"

namespace mmirage {
namespace {

Status PosixError(const std::string& context, int err) {
  std::string msg = context + ": " + std::strerror(err);
  if (err == ENOENT) return Status::NotFound(msg);
  return Status::IOError(msg);
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) (void)Close();
  }
  Status Append(std::string_view data) override {
    if (!data.empty()) unsynced_ = true;
    if (buf_.size() + data.size() > kBufSize) {
      MMIRAGE_TRY(Flush());
      if (data.size() > kBufSize) return WriteAll(data);
    }
    buf_.append(data);
    return Status::OK();
  }
  Status Flush() override {
    Status s = WriteAll(buf_);
    buf_.clear();
    return s;
  }
  // A file with nothing appended since its last successful sync is durable already: no second fdatasync (each
  // costs a disk cache flush, milliseconds, even when there is nothing to write).
  Status Sync() override {
    if (!unsynced_) return Status::OK();
    MMIRAGE_TRY(Flush());
    if (::fdatasync(fd_) != 0) return PosixError(path_, errno);
    unsynced_ = false;
    return Status::OK();
  }
  Status Close() override {
    Status s = Flush();
    if (fd_ >= 0 && ::close(fd_) != 0 && s.ok()) s = PosixError(path_, errno);
    fd_ = -1;
    return s;
  }

 private:
  static constexpr size_t kBufSize = 1 << 16;
  Status WriteAll(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return PosixError(path_, errno);
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return Status::OK();
  }
  std::string path_;
  int fd_;
  std::string buf_;
  bool unsynced_ = true;  // appended to (or created, truncated) since the last successful Sync
};

class PosixSequentialFile final : public SequentialFile {
 public:
  PosixSequentialFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixSequentialFile() override { ::close(fd_); }
  Result<size_t> Read(size_t n, char* scratch) override {
    while (true) {
      ssize_t r = ::read(fd_, scratch, n);
      if (r < 0) {
        if (errno == EINTR) continue;
        return PosixError(path_, errno);
      }
      return static_cast<size_t>(r);
    }
  }
  Status Skip(uint64_t n) override {
    if (::lseek(fd_, static_cast<off_t>(n), SEEK_CUR) < 0) return PosixError(path_, errno);
    return Status::OK();
  }

 private:
  std::string path_;
  int fd_;
};

class PosixFileLock final : public Env::FileLock {
 public:
  explicit PosixFileLock(int fd) : fd_(fd) {}
  ~PosixFileLock() override {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }

 private:
  int fd_;
};

class PosixEnv final : public Env {
 public:
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return PosixError(path, errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK) return Status::Unavailable(path + ": locked by another process");
      return PosixError(path, err);
    }
    return std::unique_ptr<FileLock>(new PosixFileLock(fd));
  }
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path, bool append) override {
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
    int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return PosixError(path, errno);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }
  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError(path, errno);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return std::unique_ptr<SequentialFile>(new PosixSequentialFile(path, fd));
  }
  bool FileExists(const std::string& path) override {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
  }
  bool IsDirectory(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }
  bool IsRegularFile(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  }
  Result<std::vector<std::string>> GetChildren(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return PosixError(dir, errno);
    std::vector<std::string> out;
    while (struct dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      out.emplace_back(e->d_name);
    }
    ::closedir(d);
    std::sort(out.begin(), out.end());
    return out;
  }
  Status CreateDirs(const std::string& path) override {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec && !IsDirectory(path)) return Status::IOError(path + ": cannot create directory: " + ec.message());
    return Status::OK();
  }
  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return PosixError(path, errno);
    return Status::OK();
  }
  Status RemoveAll(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return Status::IOError(path + ": cannot remove: " + ec.message());
    return Status::OK();
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return PosixError("rename " + from + " -> " + to, errno);
    return Status::OK();
  }
  Status LinkFile(const std::string& from, const std::string& to) override {
    if (::link(from.c_str(), to.c_str()) == 0) return Status::OK();
    int err = errno;
    if (err == EXDEV || err == EPERM || err == ENOTSUP || err == EMLINK)
      return Status::Unavailable("cannot hard-link " + from + " -> " + to);
    return PosixError("link " + from + " -> " + to, err);
  }
  Status ExchangeFiles(const std::string& a, const std::string& b) override {
#ifdef SYS_renameat2
    if (::syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), 2 /* RENAME_EXCHANGE */) == 0) {
      return Status::OK();
    }
    if (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP) {
      return Status::Unavailable("exchange not supported for " + a);
    }
    return PosixError("exchange " + a + " <-> " + b, errno);
#else
    return Status::Unavailable("exchange not supported for " + a);
#endif
  }
  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return PosixError(dir, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0 && err != EINVAL) return PosixError(dir, err);
    return Status::OK();
  }
  Result<uint64_t> GetFileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError(path, errno);
    return static_cast<uint64_t>(st.st_size);
  }
  Result<uint64_t> GetFileModificationMicros(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError(path, errno);
    return static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000 + static_cast<uint64_t>(st.st_mtim.tv_nsec) / 1000;
  }
  Status TruncateFile(const std::string& path, uint64_t size) override {
    if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) return PosixError(path, errno);
    return Status::OK();
  }
  Result<std::string> ReadFileToString(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(auto f, NewSequentialFile(path));
    std::string out;
    char buf[1 << 16];
    while (true) {
      MMIRAGE_ASSIGN_OR_RETURN(size_t n, f->Read(sizeof buf, buf));
      if (n == 0) break;
      out.append(buf, n);
    }
    return out;
  }
  Result<std::vector<std::string>> Glob(const std::string& pattern) override {
    glob_t g;
    std::memset(&g, 0, sizeof g);
    int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
    std::vector<std::string> out;
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
    }
    ::globfree(&g);
    if (rc != 0 && rc != GLOB_NOMATCH) return Status::IOError(pattern + ": glob failed");
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string AbsolutePath(const std::string& path) override {
    std::error_code ec;
    auto p = std::filesystem::absolute(path, ec);
    if (ec) return path;
    return p.lexically_normal().string();
  }
  Result<std::string> RealPath(const std::string& path) override {
    char buf[PATH_MAX];
    if (::realpath(path.c_str(), buf) == nullptr) return PosixError(path, errno);
    return std::string(buf);
  }
  uint64_t NowMicros() override {
    struct timespec ts;
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
  }
  uint64_t MonotonicMicros() override {
    struct timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
  }
  void SleepMicros(uint64_t micros) override { ::usleep(static_cast<useconds_t>(micros)); }
  std::string Hostname() override {
    char buf[256] = {0};
    if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
    return buf;
  }
  int Pid() override { return static_cast<int>(::getpid()); }
};

}  // namespace

// Paths of a registered URL scheme (s3://) go to that scheme's Env (util/env_schemes.h), all others to POSIX.
Env* Env::Default() {
  static Env* env = NewRoutingEnv(new PosixEnv());  // never destroyed: used until process exit
  return env;
}

}  // namespace mmirage
