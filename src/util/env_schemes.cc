// Env::Default()'s routing by URL scheme (util/env_schemes.h).
#include "util/env_schemes.h"

#include <cctype>
#include <map>
#include <memory>
#include <mutex>

namespace mmirage {
namespace {

struct SchemeEntry {
  SchemeEnvFactory factory = nullptr;
  std::unique_ptr<Result<Env*>> env;  // set on first use
};

std::mutex& RegistryMutex() {
  static std::mutex* mu = new std::mutex();  // never destroyed: used until process exit
  return *mu;
}

std::map<std::string, SchemeEntry>& Registry() {
  static auto* registry = new std::map<std::string, SchemeEntry>();
  return *registry;
}

bool IsRegistered(const std::string& scheme) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  return Registry().count(scheme) != 0;
}

// Forwards each operation to the Env of its path's scheme.
class RoutingEnv final : public Env {
 public:
  explicit RoutingEnv(Env* local) : local_(local) {}

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path, bool append) override {
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, Pick(path));
    return e->NewWritableFile(path, append);
  }
  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, Pick(path));
    return e->NewSequentialFile(path);
  }
  bool FileExists(const std::string& path) override {
    Result<Env*> e = Pick(path);
    return e.ok() && (*e)->FileExists(path);
  }
  bool IsDirectory(const std::string& path) override {
    Result<Env*> e = Pick(path);
    return e.ok() && (*e)->IsDirectory(path);
  }
  bool IsRegularFile(const std::string& path) override {
    Result<Env*> e = Pick(path);
    return e.ok() && (*e)->IsRegularFile(path);
  }
  Result<std::vector<std::string>> GetChildren(const std::string& dir) override {
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, Pick(dir));
    return e->GetChildren(dir);
  }
  Status CreateDirs(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, Pick(path));
    return e->CreateDirs(path);
  }
  Status RemoveFile(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, Pick(path));
    return e->RemoveFile(path);
  }
  Status RemoveAll(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, Pick(path));
    return e->RemoveAll(path);
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, PickPair(from, to));
    return e->RenameFile(from, to);
  }
  Status ExchangeFiles(const std::string& a, const std::string& b) override {
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, PickPair(a, b));
    return e->ExchangeFiles(a, b);
  }
  Status SyncDir(const std::string& dir) override {
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, Pick(dir));
    return e->SyncDir(dir);
  }
  Status LinkFile(const std::string& from, const std::string& to) override {
    if (PathScheme(from) != PathScheme(to)) return Status::Unavailable(from + " -> " + to + ": other storage");
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, Pick(from));
    return e->LinkFile(from, to);
  }
  Result<uint64_t> GetFileSize(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, Pick(path));
    return e->GetFileSize(path);
  }
  Result<uint64_t> GetFileModificationMicros(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, Pick(path));
    return e->GetFileModificationMicros(path);
  }
  Status TruncateFile(const std::string& path, uint64_t size) override {
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, Pick(path));
    return e->TruncateFile(path, size);
  }
  Result<std::string> ReadFileToString(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, Pick(path));
    return e->ReadFileToString(path);
  }
  Result<std::vector<std::string>> Glob(const std::string& pattern) override {
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, Pick(pattern));
    return e->Glob(pattern);
  }
  std::string AbsolutePath(const std::string& path) override {
    Result<Env*> e = Pick(path);
    return e.ok() ? (*e)->AbsolutePath(path) : path;
  }
  Result<std::string> RealPath(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, Pick(path));
    return e->RealPath(path);
  }
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(Env * e, Pick(path));
    return e->LockFile(path);
  }
  uint64_t NowMicros() override { return local_->NowMicros(); }
  uint64_t MonotonicMicros() override { return local_->MonotonicMicros(); }
  void SleepMicros(uint64_t micros) override { local_->SleepMicros(micros); }
  std::string Hostname() override { return local_->Hostname(); }
  int Pid() override { return local_->Pid(); }

 private:
  Result<Env*> Pick(const std::string& path) {
    std::string scheme = PathScheme(path);
    if (scheme.empty() || !IsRegistered(scheme)) return local_;
    return SchemeEnv(path);
  }
  Result<Env*> PickPair(const std::string& a, const std::string& b) {
    if (PathScheme(a) != PathScheme(b)) return Status::IOError(a + " -> " + b + ": cannot move across storages");
    return Pick(a);
  }

  Env* const local_;
};

}  // namespace

void RegisterSchemeEnv(const std::string& scheme, SchemeEnvFactory factory) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  SchemeEntry& entry = Registry()[scheme];
  entry.factory = factory;
  entry.env.reset();
}

std::string PathScheme(std::string_view path) {
  size_t i = 0;
  while (i < path.size() && (std::isalnum(static_cast<unsigned char>(path[i])) || path[i] == '+' || path[i] == '-'))
    ++i;
  if (i == 0 || path.substr(i, 3) != "://") return "";
  return std::string(path.substr(0, i));
}

Result<Env*> SchemeEnv(std::string_view path) {
  std::string scheme = PathScheme(path);
  if (scheme.empty()) return static_cast<Env*>(nullptr);
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto it = Registry().find(scheme);
  if (it == Registry().end()) {
    return Status::InvalidArgument(std::string(path) + ": no storage for " + scheme + ":// paths in this build");
  }
  SchemeEntry& entry = it->second;
  if (!entry.env) entry.env = std::make_unique<Result<Env*>>(entry.factory());
  if (!entry.env->ok()) return entry.env->status().WithContext(path);
  return **entry.env;
}

Env* NewRoutingEnv(Env* local) { return new RoutingEnv(local); }

}  // namespace mmirage
