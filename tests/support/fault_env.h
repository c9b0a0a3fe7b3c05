// FaultEnv (tests only): an Env over Env::Default() that knows what a power loss would keep of the tree under
// `root`, and can simulate one.
//
// Model (in the spirit of LevelDB's fault-injection test): a file's durable content is its content at its last
// WritableFile::Sync (empty for a file never synced); a directory's durable entries are its entries (name → the
// file or directory behind it) at its last SyncDir. Creations, renames, exchanges, removals and truncations are
// not durable until the parent directory (or the file) is synced. What exists under root when the FaultEnv is made
// is durable.
//
// CrashAtSyncPoint(n) arms a crash: the n-th counted sync point (a file Sync or a SyncDir under root, counted when
// `counts(path)` says so) does not happen and fails, and so does every mutating operation after it (reads still
// work), as if the process had died there. SimulateCrash() then rewrites the tree under root to its durable state
// — unsynced writes dropped, unsynced creations, renames and removals undone — disarms, and takes that state as
// the new durable baseline, so that a "restarted" run can use the same FaultEnv.
//
// Durability is modelled, not delegated: Sync only flushes to the OS and SyncDir does no real fsync.
// Paths are compared after Env::AbsolutePath; operations outside root pass through untracked. Thread-safe (one
// mutex); every WritableFile, SequentialFile and FileLock under root must be gone before SimulateCrash.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "util/env.h"

namespace mmirage::testing {

class FaultEnv final : public Env {
 public:
  explicit FaultEnv(std::string root);

  // n ≥ 1: the n-th counted sync point from now on crashes; 0: never. `counts` null: every sync point counts.
  void CrashAtSyncPoint(int64_t n, std::function<bool(const std::string& path)> counts = nullptr);
  int64_t sync_points() const;  // counted since construction, the last CrashAtSyncPoint or SimulateCrash
  bool crashed() const;
  std::string crash_path() const;  // the path of the sync point that crashed
  // Rewrites the tree to its durable state (see above). Errors: I/O of the rewrite.
  Status SimulateCrash();
  // Makes ExchangeFiles answer kUnavailable (a file system without renameat2 RENAME_EXCHANGE).
  void set_exchange_unavailable(bool v) { exchange_unavailable_ = v; }

  // Env.
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path, bool append = false) override;
  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override;
  bool FileExists(const std::string& path) override;
  bool IsDirectory(const std::string& path) override;
  bool IsRegularFile(const std::string& path) override;
  Result<std::vector<std::string>> GetChildren(const std::string& dir) override;
  Status CreateDirs(const std::string& path) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveAll(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status ExchangeFiles(const std::string& a, const std::string& b) override;
  Status SyncDir(const std::string& dir) override;
  Status LinkFile(const std::string& from, const std::string& to) override;
  Result<uint64_t> GetFileSize(const std::string& path) override;
  Result<uint64_t> GetFileModificationMicros(const std::string& path) override;
  Status TruncateFile(const std::string& path, uint64_t size) override;
  Result<std::string> ReadFileToString(const std::string& path) override;
  Result<std::vector<std::string>> Glob(const std::string& pattern) override;
  std::string AbsolutePath(const std::string& path) override;
  Result<std::string> RealPath(const std::string& path) override;
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;
  uint64_t NowMicros() override;
  uint64_t MonotonicMicros() override;
  void SleepMicros(uint64_t micros) override;
  std::string Hostname() override;
  int Pid() override;

 private:
  class File;
  struct Node {
    bool dir = false;
    std::string durable_data;                        // files
    std::map<std::string, int64_t> durable_entries;  // directories
  };
  std::string Norm(const std::string& path);
  bool Under(const std::string& norm) const;  // root or below
  Status CrashedError(const std::string& path) const;
  // True (and crashes) when this sync point is the armed one.
  bool HitSyncPoint(const std::string& norm);
  int64_t NewNode(bool dir);
  void Scan(const std::string& norm);  // registers what exists at norm (and below) as live and durable
  void MoveSubtree(const std::string& from, const std::string& to);
  void EraseSubtree(const std::string& norm);
  Status SyncFile(const std::string& opened_path);  // records the file's durable content (File::Sync)

  Env* base_;
  std::string root_;
  mutable std::mutex mu_;
  std::map<int64_t, Node> nodes_;
  std::map<std::string, int64_t> live_;  // normalised path → node, root and below
  int64_t next_id_ = 1;
  int64_t crash_at_ = 0;
  int64_t counted_ = 0;
  std::function<bool(const std::string&)> counts_;
  bool crashed_ = false;
  std::string crash_path_;
  bool exchange_unavailable_ = false;
};

}  // namespace mmirage::testing
