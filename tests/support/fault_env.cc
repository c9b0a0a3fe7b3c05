#include "support/fault_env.h"

#include <utility>

namespace mmirage::testing {

class FaultEnv::File final : public WritableFile {
 public:
  File(FaultEnv* env, std::string path, std::unique_ptr<WritableFile> base)
      : env_(env), path_(std::move(path)), base_(std::move(base)) {}
  Status Append(std::string_view data) override {
    if (env_->crashed()) return env_->CrashedError(path_);
    return base_->Append(data);
  }
  Status Flush() override {
    if (env_->crashed()) return env_->CrashedError(path_);
    return base_->Flush();
  }
  Status Sync() override {
    {
      std::lock_guard<std::mutex> l(env_->mu_);
      if (env_->crashed_ || env_->HitSyncPoint(path_)) return env_->CrashedError(path_);
    }
    MMIRAGE_TRY(base_->Flush());  // durability is modelled: no real fdatasync (tests stay fast)
    return env_->SyncFile(path_);
  }
  Status Close() override {
    Status s = base_->Close();
    if (env_->crashed()) return env_->CrashedError(path_);
    return s;
  }

 private:
  FaultEnv* env_;
  std::string path_;  // as opened (normalised)
  std::unique_ptr<WritableFile> base_;
};

FaultEnv::FaultEnv(std::string root) : base_(Env::Default()) {
  root_ = Norm(root);
  std::lock_guard<std::mutex> l(mu_);
  Scan(root_);
}

std::string FaultEnv::Norm(const std::string& path) {
  std::string n = base_->AbsolutePath(path);
  while (n.size() > 1 && n.back() == '/') n.pop_back();
  return n;
}

bool FaultEnv::Under(const std::string& norm) const {
  return norm == root_ ||
         (norm.size() > root_.size() && norm.compare(0, root_.size(), root_) == 0 && norm[root_.size()] == '/');
}

Status FaultEnv::CrashedError(const std::string& path) const {
  return Status::IOError(path + ": simulated crash (FaultEnv)");
}

void FaultEnv::CrashAtSyncPoint(int64_t n, std::function<bool(const std::string&)> counts) {
  std::lock_guard<std::mutex> l(mu_);
  crash_at_ = n;
  counted_ = 0;
  counts_ = std::move(counts);
}

int64_t FaultEnv::sync_points() const {
  std::lock_guard<std::mutex> l(mu_);
  return counted_;
}

bool FaultEnv::crashed() const {
  std::lock_guard<std::mutex> l(mu_);
  return crashed_;
}

std::string FaultEnv::crash_path() const {
  std::lock_guard<std::mutex> l(mu_);
  return crash_path_;
}

bool FaultEnv::HitSyncPoint(const std::string& norm) {
  if (!Under(norm) || (counts_ && !counts_(norm))) return false;
  ++counted_;
  if (crash_at_ > 0 && counted_ == crash_at_) {
    crashed_ = true;
    crash_path_ = norm;
    return true;
  }
  return false;
}

int64_t FaultEnv::NewNode(bool dir) {
  int64_t id = next_id_++;
  nodes_[id].dir = dir;
  return id;
}

void FaultEnv::Scan(const std::string& norm) {
  if (base_->IsDirectory(norm)) {
    int64_t id = NewNode(true);
    live_[norm] = id;
    auto children = base_->GetChildren(norm);
    if (!children.ok()) return;
    for (const auto& c : *children) {
      std::string child = norm + "/" + c;
      Scan(child);
      if (live_.count(child)) nodes_[id].durable_entries[c] = live_[child];
    }
  } else if (base_->FileExists(norm)) {
    int64_t id = NewNode(false);
    live_[norm] = id;
    auto text = base_->ReadFileToString(norm);
    if (text.ok()) nodes_[id].durable_data = std::move(*text);
  }
}

void FaultEnv::EraseSubtree(const std::string& norm) {
  for (auto it = live_.lower_bound(norm); it != live_.end();) {
    const std::string& k = it->first;
    if (k == norm || (k.size() > norm.size() && k.compare(0, norm.size(), norm) == 0 && k[norm.size()] == '/')) {
      it = live_.erase(it);
    } else if (k.compare(0, norm.size(), norm) == 0) {
      ++it;  // e.g. "a/b-x" between "a/b" and "a/b/c"
    } else {
      break;
    }
  }
}

void FaultEnv::MoveSubtree(const std::string& from, const std::string& to) {
  std::vector<std::pair<std::string, int64_t>> moved;
  for (const auto& [k, id] : live_) {
    if (k == from || (k.size() > from.size() && k.compare(0, from.size(), from) == 0 && k[from.size()] == '/')) {
      moved.emplace_back(to + k.substr(from.size()), id);
    }
  }
  EraseSubtree(from);
  for (auto& [k, id] : moved) live_[k] = id;
}

Status FaultEnv::SyncFile(const std::string& opened_path) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = live_.find(opened_path);
  if (it == live_.end()) return Status::OK();  // renamed or unlinked while open: not tracked further
  auto text = base_->ReadFileToString(opened_path);
  if (!text.ok()) return text.status();
  nodes_[it->second].durable_data = std::move(*text);
  return Status::OK();
}

Status FaultEnv::SimulateCrash() {
  std::lock_guard<std::mutex> l(mu_);
  // The durable tree: path → node, parents before children.
  std::map<std::string, int64_t> durable;
  std::vector<std::pair<std::string, int64_t>> todo = {{root_, live_.count(root_) ? live_[root_] : 0}};
  while (!todo.empty()) {
    auto [path, id] = todo.back();
    todo.pop_back();
    if (id == 0 || durable.size() > 100000) continue;
    durable[path] = id;
    const Node& n = nodes_[id];
    if (n.dir)
      for (const auto& [name, child] : n.durable_entries) todo.emplace_back(path + "/" + name, child);
  }
  // Remove what is not durable, rewrite files whose content differs (untouched files keep their mtime).
  std::vector<std::string> walk = {root_};
  while (!walk.empty()) {
    std::string dir = walk.back();
    walk.pop_back();
    MMIRAGE_ASSIGN_OR_RETURN(std::vector<std::string> children, base_->GetChildren(dir));
    for (const auto& c : children) {
      std::string p = dir + "/" + c;
      auto it = durable.find(p);
      bool is_dir = base_->IsDirectory(p);
      if (it == durable.end() || nodes_[it->second].dir != is_dir) {
        MMIRAGE_TRY(base_->RemoveAll(p));
      } else if (is_dir) {
        walk.push_back(p);
      } else {
        auto text = base_->ReadFileToString(p);
        if (!text.ok() || *text != nodes_[it->second].durable_data) MMIRAGE_TRY(base_->RemoveFile(p));
      }
    }
  }
  for (const auto& [path, id] : durable) {
    if (base_->FileExists(path)) continue;
    if (nodes_[id].dir) {
      MMIRAGE_TRY(base_->CreateDirs(path));
    } else {
      MMIRAGE_ASSIGN_OR_RETURN(auto f, base_->NewWritableFile(path));
      MMIRAGE_TRY(f->Append(nodes_[id].durable_data));
      MMIRAGE_TRY(f->Close());
    }
  }
  nodes_.clear();
  live_.clear();
  crashed_ = false;
  crash_at_ = 0;
  counted_ = 0;
  counts_ = nullptr;
  crash_path_.clear();
  Scan(root_);
  return Status::OK();
}

// ---- Env ------------------------------------------------------------------------------------------------------

Result<std::unique_ptr<WritableFile>> FaultEnv::NewWritableFile(const std::string& path, bool append) {
  std::lock_guard<std::mutex> l(mu_);
  std::string n = Norm(path);
  if (!Under(n)) return base_->NewWritableFile(path, append);
  if (crashed_) return CrashedError(n);
  MMIRAGE_ASSIGN_OR_RETURN(auto f, base_->NewWritableFile(path, append));
  if (!live_.count(n)) live_[n] = NewNode(false);
  return std::unique_ptr<WritableFile>(new File(this, n, std::move(f)));
}

Result<std::unique_ptr<SequentialFile>> FaultEnv::NewSequentialFile(const std::string& path) {
  return base_->NewSequentialFile(path);
}
bool FaultEnv::FileExists(const std::string& path) { return base_->FileExists(path); }
bool FaultEnv::IsDirectory(const std::string& path) { return base_->IsDirectory(path); }
bool FaultEnv::IsRegularFile(const std::string& path) { return base_->IsRegularFile(path); }
Result<std::vector<std::string>> FaultEnv::GetChildren(const std::string& dir) { return base_->GetChildren(dir); }

Status FaultEnv::CreateDirs(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  std::string n = Norm(path);
  if (!Under(n)) return base_->CreateDirs(path);
  if (crashed_) return CrashedError(n);
  MMIRAGE_TRY(base_->CreateDirs(path));
  for (size_t pos = root_.size(); pos != std::string::npos;) {
    pos = n.find('/', pos + 1);
    std::string prefix = pos == std::string::npos ? n : n.substr(0, pos);
    if (!live_.count(prefix) && base_->IsDirectory(prefix)) live_[prefix] = NewNode(true);
  }
  return Status::OK();
}

Status FaultEnv::RemoveFile(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  std::string n = Norm(path);
  if (!Under(n)) return base_->RemoveFile(path);
  if (crashed_) return CrashedError(n);
  MMIRAGE_TRY(base_->RemoveFile(path));
  EraseSubtree(n);
  return Status::OK();
}

Status FaultEnv::RemoveAll(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  std::string n = Norm(path);
  if (!Under(n)) return base_->RemoveAll(path);
  if (crashed_) return CrashedError(n);
  MMIRAGE_TRY(base_->RemoveAll(path));
  EraseSubtree(n);
  return Status::OK();
}

Status FaultEnv::RenameFile(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> l(mu_);
  std::string f = Norm(from), t = Norm(to);
  if (!Under(f) && !Under(t)) return base_->RenameFile(from, to);
  if (crashed_) return CrashedError(t);
  MMIRAGE_TRY(base_->RenameFile(from, to));
  EraseSubtree(t);
  if (Under(f) && Under(t)) {
    MoveSubtree(f, t);
  } else if (Under(t)) {
    Scan(t);
  } else {
    EraseSubtree(f);
  }
  return Status::OK();
}

Status FaultEnv::ExchangeFiles(const std::string& a, const std::string& b) {
  std::lock_guard<std::mutex> l(mu_);
  std::string na = Norm(a), nb = Norm(b);
  if (!Under(na) && !Under(nb)) return base_->ExchangeFiles(a, b);
  if (crashed_) return CrashedError(na);
  if (!Under(na) || !Under(nb) || exchange_unavailable_) return Status::Unavailable("FaultEnv: no exchange");
  MMIRAGE_TRY(base_->ExchangeFiles(a, b));
  const std::string parked = root_ + "/\x01exchange";
  MoveSubtree(na, parked);
  MoveSubtree(nb, na);
  MoveSubtree(parked, nb);
  return Status::OK();
}

Status FaultEnv::SyncDir(const std::string& dir) {
  std::lock_guard<std::mutex> l(mu_);
  std::string n = Norm(dir);
  if (!Under(n)) return base_->SyncDir(dir);
  if (crashed_ || HitSyncPoint(n)) return CrashedError(n);
  if (!base_->IsDirectory(n)) return Status::NotFound(n + ": no such directory");  // modelled: no real fsync
  auto it = live_.find(n);
  if (it == live_.end()) return Status::OK();
  std::map<std::string, int64_t> entries;
  const std::string prefix = n + "/";
  for (auto c = live_.lower_bound(prefix); c != live_.end() && c->first.compare(0, prefix.size(), prefix) == 0; ++c) {
    std::string name = c->first.substr(prefix.size());
    if (name.find('/') == std::string::npos) entries[name] = c->second;
  }
  nodes_[it->second].durable_entries = std::move(entries);
  return Status::OK();
}

Status FaultEnv::LinkFile(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> l(mu_);
  std::string f = Norm(from), t = Norm(to);
  if (!Under(t)) return base_->LinkFile(from, to);
  if (crashed_) return CrashedError(t);
  MMIRAGE_TRY(base_->LinkFile(from, to));
  if (live_.count(f)) {
    live_[t] = live_[f];
  } else {
    Scan(t);
  }
  return Status::OK();
}

Result<uint64_t> FaultEnv::GetFileSize(const std::string& path) { return base_->GetFileSize(path); }
Result<uint64_t> FaultEnv::GetFileModificationMicros(const std::string& path) {
  return base_->GetFileModificationMicros(path);
}

Status FaultEnv::TruncateFile(const std::string& path, uint64_t size) {
  std::lock_guard<std::mutex> l(mu_);
  std::string n = Norm(path);
  if (Under(n) && crashed_) return CrashedError(n);
  return base_->TruncateFile(path, size);  // not durable until the file is synced
}

Result<std::string> FaultEnv::ReadFileToString(const std::string& path) { return base_->ReadFileToString(path); }
Result<std::vector<std::string>> FaultEnv::Glob(const std::string& pattern) { return base_->Glob(pattern); }
std::string FaultEnv::AbsolutePath(const std::string& path) { return base_->AbsolutePath(path); }
Result<std::string> FaultEnv::RealPath(const std::string& path) { return base_->RealPath(path); }

Result<std::unique_ptr<Env::FileLock>> FaultEnv::LockFile(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  std::string n = Norm(path);
  if (!Under(n)) return base_->LockFile(path);
  if (crashed_) return CrashedError(n);
  MMIRAGE_ASSIGN_OR_RETURN(auto lock, base_->LockFile(path));
  if (!live_.count(n)) live_[n] = NewNode(false);
  return lock;
}

uint64_t FaultEnv::NowMicros() { return base_->NowMicros(); }
uint64_t FaultEnv::MonotonicMicros() { return base_->MonotonicMicros(); }
void FaultEnv::SleepMicros(uint64_t micros) { base_->SleepMicros(micros); }
std::string FaultEnv::Hostname() { return base_->Hostname(); }
int FaultEnv::Pid() { return base_->Pid(); }

}  // namespace mmirage::testing
