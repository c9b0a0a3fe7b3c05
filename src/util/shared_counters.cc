// A name → number map in a file, updated under flock (contract: shared_counters.h).

#include "util/shared_counters.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "util/env.h"
#include "util/log.h"

namespace mmirage {
namespace {

constexpr uint64_t kRetryMicros = 100;
constexpr int kMaxTries = 50000;  // × 100 µs: 5 s

bool Parse(const std::string& text, SharedCounters::Map* m) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0) return false;
    const char* v = line.c_str() + sp + 1;
    char* end = nullptr;
    double d = std::strtod(v, &end);
    if (end == v || *end != '\0') return false;
    (*m)[line.substr(0, sp)] = d;
  }
  return true;
}

std::string Format(const SharedCounters::Map& m) {
  std::string s;
  char buf[40];
  for (const auto& [k, v] : m) {
    std::snprintf(buf, sizeof(buf), "%.17g", v);
    s += k + " " + buf + "\n";
  }
  return s;
}

class FileSharedCounters : public SharedCounters {
 public:
  FileSharedCounters(Env* env, std::string path) : env_(env), path_(std::move(path)) {}

  Status Update(const std::function<void(Map*)>& update) override {
    std::unique_ptr<Env::FileLock> lock;
    for (int i = 0; !lock; ++i) {
      auto l = env_->LockFile(path_ + ".lock");
      if (l.ok()) {
        lock = std::move(*l);
      } else if (!l.status().IsUnavailable() || i + 1 >= kMaxTries) {
        return l.status();
      } else {
        env_->SleepMicros(kRetryMicros);
      }
    }
    Map m;
    if (env_->FileExists(path_)) {
      MMIRAGE_ASSIGN_OR_RETURN(std::string text, env_->ReadFileToString(path_));
      if (!Parse(text, &m)) {
        if (!warned_) LOG_WARN(path_ << ": unreadable shared counters; starting them afresh");
        warned_ = true;
        m.clear();
      }
    }
    update(&m);
    const std::string tmp = path_ + ".tmp";
    MMIRAGE_ASSIGN_OR_RETURN(auto f, env_->NewWritableFile(tmp));
    MMIRAGE_TRY(f->Append(Format(m)));
    MMIRAGE_TRY(f->Close());
    return env_->RenameFile(tmp, path_);
  }

 private:
  Env* env_;
  std::string path_;
  bool warned_ = false;
};

}  // namespace

std::shared_ptr<SharedCounters> NewFileSharedCounters(Env* env, std::string path) {
  return std::make_shared<FileSharedCounters>(env, std::move(path));
}

double CounterOr(const SharedCounters::Map& m, const std::string& name, double fallback) {
  auto it = m.find(name);
  return it != m.end() ? it->second : fallback;
}

}  // namespace mmirage
