// A name → number map in a file, updated under flock (contract: shared_counters.h). The lock and the data are one
// file descriptor: open, flock, read, write at offset 0, truncate to the new length, close — a few system calls
// per update, no rename, and no truncation to zero (which makes ext4 flush the file at close).

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util/fnv.h"
#include "util/hex.h"
#include "util/log.h"
#include "util/shared_counters.h"

namespace mmirage {
namespace {

constexpr useconds_t kRetryMicros = 100;
constexpr int kMaxTries = 50000;  // × 100 µs: 5 s

// The map's lines, then "end <FNV-1a 64 of the lines, hex>". Anything after the end line is ignored: a process
// killed between its write and its truncate leaves the tail of a longer earlier content there. false when no valid
// end line follows well-formed lines (a torn or foreign file).
bool Parse(const std::string& text, SharedCounters::Map* m) {
  if (text.empty()) return true;
  SharedCounters::Map parsed;
  for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) {
    std::string line = text.substr(at, nl - at);
    if (line.rfind("end ", 0) == 0) {
      if (line.substr(4) != Hex64(Fnv1a64(std::string_view(text).substr(0, at)))) return false;
      *m = std::move(parsed);
      return true;
    }
    size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0) return false;
    const char* v = line.c_str() + sp + 1;
    char* end = nullptr;
    double d = std::strtod(v, &end);
    if (end == v || *end != '\0') return false;
    parsed[line.substr(0, sp)] = d;
  }
  return false;
}

std::string Format(const SharedCounters::Map& m) {
  std::string s;
  char buf[40];
  for (const auto& [k, v] : m) {
    std::snprintf(buf, sizeof(buf), "%.17g", v);
    s += k + " " + buf + "\n";
  }
  return s + "end " + Hex64(Fnv1a64(s)) + "\n";
}

Status Errno(const std::string& path, const char* what) {
  return Status::IOError(path + ": " + what + ": " + std::strerror(errno));
}

// Closes the descriptor (and so releases the lock) on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

class FileSharedCounters : public SharedCounters {
 public:
  explicit FileSharedCounters(std::string path) : path_(std::move(path)) {}

  Status Update(const std::function<void(Map*)>& update) override {
    Fd f{::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)};
    if (f.fd < 0) return Errno(path_, "cannot open");
    for (int i = 0; ::flock(f.fd, LOCK_EX | LOCK_NB) != 0; ++i) {
      if (errno != EWOULDBLOCK) return Errno(path_, "cannot lock");
      if (i + 1 >= kMaxTries) return Status::Unavailable(path_ + ": locked by another process for 5 s");
      ::usleep(kRetryMicros);
    }
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::pread(f.fd, buf, sizeof(buf), static_cast<off_t>(text.size()))) != 0;) {
      if (n < 0) return Errno(path_, "cannot read");
      text.append(buf, static_cast<size_t>(n));
    }
    Map m;
    if (!Parse(text, &m)) {
      if (!warned_) LOG_WARN(path_ << ": unreadable shared counters; starting them afresh");
      warned_ = true;
      m.clear();
    }
    update(&m);
    const std::string out = Format(m);
    for (size_t done = 0; done < out.size();) {
      ssize_t n = ::pwrite(f.fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
      if (n < 0) return Errno(path_, "cannot write");
      done += static_cast<size_t>(n);
    }
    if (::ftruncate(f.fd, static_cast<off_t>(out.size())) != 0) return Errno(path_, "cannot truncate");
    return Status::OK();
  }

 private:
  std::string path_;
  bool warned_ = false;
};

}  // namespace

std::shared_ptr<SharedCounters> NewFileSharedCounters(std::string path) {
  return std::make_shared<FileSharedCounters>(std::move(path));
}

double CounterOr(const SharedCounters::Map& m, const std::string& name, double fallback) {
  auto it = m.find(name);
  return it != m.end() ? it->second : fallback;
}

}  // namespace mmirage
