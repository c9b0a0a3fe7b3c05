// CountingEnv: forwards to Env::Default() and counts what reaches the disk — file syncs, directory syncs and the
// files opened for writing, per base name (a temp `status.json.tmp.<nonce>.<n>` counts as `status.json`) — and
// optionally replaces both clocks by a manual one. For tests that keep fsync and write storms from coming back.
// Thread-safe (counters are atomics or under a mutex).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "util/env.h"

namespace mmirage::testing {

class CountingEnv : public Env {
 public:
  std::atomic<int> file_syncs{0};
  std::atomic<int> dir_syncs{0};
  int syncs() const { return file_syncs + dir_syncs; }

  // Files opened for writing whose base name (temp suffix stripped) is `name`.
  int writes(const std::string& name) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = writes_.find(name);
    return it == writes_.end() ? 0 : it->second;
  }
  // Syncs of files whose base name (temp suffix stripped) is `name`.
  int syncs_of(const std::string& name) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = syncs_by_name_.find(name);
    return it == syncs_by_name_.end() ? 0 : it->second;
  }
  void Reset() {
    std::lock_guard<std::mutex> l(mu_);
    writes_.clear();
    syncs_by_name_.clear();
    file_syncs = 0;
    dir_syncs = 0;
  }

  // Manual clock: from now on NowMicros/MonotonicMicros return the manual time, moved by Advance.
  void UseManualClock() {
    manual_mono_ = base_->MonotonicMicros();
    manual_now_ = base_->NowMicros();
    manual_ = true;
  }
  void AdvanceSeconds(double s) {
    manual_mono_ += static_cast<uint64_t>(s * 1e6);
    manual_now_ += static_cast<uint64_t>(s * 1e6);
  }

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path, bool append) override {
    MMIRAGE_ASSIGN_OR_RETURN(auto f, base_->NewWritableFile(path, append));
    std::string name = Stem(path);
    {
      std::lock_guard<std::mutex> l(mu_);
      ++writes_[name];
    }
    return std::unique_ptr<WritableFile>(new File(std::move(f), this, name));
  }
  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& p) override {
    return base_->NewSequentialFile(p);
  }
  bool FileExists(const std::string& p) override { return base_->FileExists(p); }
  bool IsDirectory(const std::string& p) override { return base_->IsDirectory(p); }
  bool IsRegularFile(const std::string& p) override { return base_->IsRegularFile(p); }
  Result<std::vector<std::string>> GetChildren(const std::string& d) override { return base_->GetChildren(d); }
  Status CreateDirs(const std::string& p) override { return base_->CreateDirs(p); }
  Status RemoveFile(const std::string& p) override { return base_->RemoveFile(p); }
  Status RemoveAll(const std::string& p) override { return base_->RemoveAll(p); }
  Status RenameFile(const std::string& a, const std::string& b) override { return base_->RenameFile(a, b); }
  Status ExchangeFiles(const std::string& a, const std::string& b) override { return base_->ExchangeFiles(a, b); }
  Status SyncDir(const std::string& d) override {
    ++dir_syncs;
    return base_->SyncDir(d);
  }
  Status LinkFile(const std::string& a, const std::string& b) override { return base_->LinkFile(a, b); }
  Result<uint64_t> GetFileSize(const std::string& p) override { return base_->GetFileSize(p); }
  Status TruncateFile(const std::string& p, uint64_t n) override { return base_->TruncateFile(p, n); }
  Result<std::string> ReadFileToString(const std::string& p) override { return base_->ReadFileToString(p); }
  Result<std::vector<std::string>> Glob(const std::string& p) override { return base_->Glob(p); }
  std::string AbsolutePath(const std::string& p) override { return base_->AbsolutePath(p); }
  Result<std::string> RealPath(const std::string& p) override { return base_->RealPath(p); }
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& p) override { return base_->LockFile(p); }
  uint64_t NowMicros() override { return manual_ ? manual_now_.load() : base_->NowMicros(); }
  uint64_t MonotonicMicros() override { return manual_ ? manual_mono_.load() : base_->MonotonicMicros(); }
  void SleepMicros(uint64_t us) override { base_->SleepMicros(us); }
  std::string Hostname() override { return base_->Hostname(); }
  int Pid() override { return base_->Pid(); }

 private:
  // "dir/status.json.tmp.abc.3" -> "status.json"
  static std::string Stem(const std::string& path) {
    std::string b = Basename(path);
    size_t t = b.find(".tmp.");
    return t == std::string::npos ? b : b.substr(0, t);
  }
  void CountSync(const std::string& name) {
    ++file_syncs;
    std::lock_guard<std::mutex> l(mu_);
    ++syncs_by_name_[name];
  }

  class File : public WritableFile {
   public:
    File(std::unique_ptr<WritableFile> f, CountingEnv* env, std::string name)
        : f_(std::move(f)), env_(env), name_(std::move(name)) {}
    Status Append(std::string_view d) override { return f_->Append(d); }
    Status Flush() override { return f_->Flush(); }
    Status Sync() override {
      env_->CountSync(name_);
      return f_->Sync();
    }
    Status Close() override { return f_->Close(); }

   private:
    std::unique_ptr<WritableFile> f_;
    CountingEnv* env_;
    std::string name_;
  };

  Env* base_ = Env::Default();
  std::mutex mu_;
  std::map<std::string, int> writes_, syncs_by_name_;
  std::atomic<bool> manual_{false};
  std::atomic<uint64_t> manual_mono_{0}, manual_now_{0};
};

}  // namespace mmirage::testing
