// Env: every file-system and clock operation mmirage performs goes through this interface, so tests can inject
// faults and a fake clock.
//
// Env::Default() is the POSIX implementation (env_posix.cc); it lives for the whole process. Implementations
// must be thread-safe. Every operation returns a Status whose message names the path and the OS error.
// WritableFile/SequentialFile objects are used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace mmirage {

class WritableFile {
 public:
  WritableFile() = default;
  WritableFile(const WritableFile&) = delete;
  WritableFile& operator=(const WritableFile&) = delete;
  virtual ~WritableFile() = default;  // closes without syncing

  virtual Status Append(std::string_view data) = 0;
  virtual Status Flush() = 0;  // buffered bytes to the OS
  virtual Status Sync() = 0;   // Flush + fdatasync: durable once OK
  virtual Status Close() = 0;
};

// Reads a file front to back. Read returns up to n bytes into *scratch; an empty result means end of file.
class SequentialFile {
 public:
  SequentialFile() = default;
  SequentialFile(const SequentialFile&) = delete;
  SequentialFile& operator=(const SequentialFile&) = delete;
  virtual ~SequentialFile() = default;
  virtual Result<size_t> Read(size_t n, char* scratch) = 0;
  // Skips n bytes (past the end: the next Read returns nothing). Default: reads and drops them.
  virtual Status Skip(uint64_t n);
};

class Env {
 public:
  virtual ~Env() = default;
  static Env* Default();

  // Truncates an existing file unless append is true. The parent directory must exist.
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path, bool append = false) = 0;
  virtual Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) = 0;

  virtual bool FileExists(const std::string& path) = 0;  // any kind of entry
  virtual bool IsDirectory(const std::string& path) = 0;
  virtual bool IsRegularFile(const std::string& path) = 0;
  // Names (not paths) of the entries of dir, sorted.
  virtual Result<std::vector<std::string>> GetChildren(const std::string& dir) = 0;
  virtual Status CreateDirs(const std::string& path) = 0;  // mkdir -p; OK if it exists
  virtual Status RemoveFile(const std::string& path) = 0;
  virtual Status RemoveAll(const std::string& path) = 0;                          // rm -rf; OK if absent
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;  // atomic within a file system
  // Atomically swaps two existing entries (Linux renameat2 RENAME_EXCHANGE); kNotFound-free fallback is the
  // caller's business: returns kUnavailable if the file system cannot exchange.
  virtual Status ExchangeFiles(const std::string& a, const std::string& b) = 0;
  virtual Status SyncDir(const std::string& dir) = 0;
  // `to` (which must not exist) gets the bytes of the file `from` without passing them through the process: a hard
  // link, or on object storage a server-side copy (so later changes to one need not show in the other). kUnavailable
  // when the file system cannot (other device, no hard links, too big to copy at once): the caller copies instead.
  virtual Status LinkFile(const std::string& from, const std::string& to) = 0;
  virtual Result<uint64_t> GetFileSize(const std::string& path) = 0;
  // Last modification time, microseconds since the epoch. Default: kUnavailable (an Env without the notion).
  virtual Result<uint64_t> GetFileModificationMicros(const std::string& path);
  virtual Status TruncateFile(const std::string& path, uint64_t size) = 0;
  virtual Result<std::string> ReadFileToString(const std::string& path) = 0;
  // Shell-style pattern (`*`, `?`, `[...]`, `**` not special) → matching paths, sorted. No match → empty.
  virtual Result<std::vector<std::string>> Glob(const std::string& pattern) = 0;
  // Absolute, normalised path (symlinks not resolved); RealPath resolves symlinks (the path must exist).
  virtual std::string AbsolutePath(const std::string& path) = 0;
  virtual Result<std::string> RealPath(const std::string& path) = 0;

  // Exclusive advisory lock on `path` (created if missing), held until UnlockFile or process exit — so a
  // process killed with -9 never leaves a stale lock. kUnavailable if another process holds it.
  class FileLock {
   public:
    virtual ~FileLock() = default;
  };
  virtual Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) = 0;

  virtual uint64_t NowMicros() = 0;  // wall clock, microseconds since the epoch
  virtual uint64_t MonotonicMicros() = 0;
  virtual void SleepMicros(uint64_t micros) = 0;
  virtual std::string Hostname() = 0;
  virtual int Pid() = 0;
};

// Durable replace of a small file (modelled on LevelDB's SetCurrentFile): write a temp file next to it, sync,
// rename over path, sync the directory; removes the temp on failure. Readers see the old or the new content, never
// a mix. The temp name is unique per call (`<path>.tmp.<process nonce>.<n>`), so two processes or threads replacing
// the same file never write into each other's temp: the last rename wins, whole. A crash between create and rename
// may leave such a temp behind; readers never open it. On object storage (a path with a URL scheme) an upload is
// atomic and durable by itself: the file is uploaded in place, no temp.
// durable = false skips both syncs (still atomic, not durable): for advisory files (heartbeat, progress) that are
// rewritten every few seconds and must not cost an fsync each on a shared file system.
Status WriteFileAtomically(Env* env, const std::string& path, std::string_view contents, bool durable = true);
// WriteFileAtomically(durable = true) without its last step: the temp is synced and renamed over path, and the
// replacement is durable once the caller syncs Dirname(path) — one SyncDir for several files of one directory.
Status WriteFileAtomicallyUnsyncedDir(Env* env, const std::string& path, std::string_view contents);

// Removes from `dir` the temps WriteFileAtomically leaves behind when a process dies between create and rename
// (`<name>.tmp.<12 hex digits>.<n>`) that were last modified more than `min_age_us` ago (a live writer's temp exists
// for milliseconds). Best effort: a file that cannot be examined or removed is left; nothing else is touched.
void RemoveStaleTempFiles(Env* env, const std::string& dir, uint64_t min_age_us);

// CreateDirs, then fsyncs the parent of every directory it created (outermost first), so that the new directories
// survive a crash (a new directory's entry is durable only once its parent is synced).
Status CreateDirsDurably(Env* env, const std::string& path);

// Directory of a path ("." when none) and last component.
std::string Dirname(const std::string& path);
std::string Basename(const std::string& path);
std::string JoinPath(const std::string& a, const std::string& b);

}  // namespace mmirage
