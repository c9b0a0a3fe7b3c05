// The Env of s3:// paths (data/arrow/s3_fs.h) over Arrow's S3 file system.
//
// Object stores have no appends, no rename and no fsync. A WritableFile spools to a local temporary file; its first
// upload is one whole object, each later Sync uploads only the bytes appended since the last Sync as the file's next
// part, and Close composes the parts into one whole object again (data/arrow/s3_objects.h: how a file is laid out,
// and why a kill at any moment leaves at least what the last Sync uploaded). So a commit costs the bytes it adds,
// not the file's size. Appending starts from a local copy of the file; truncating rewrites at most one part. A
// directory "rename" copies every file server-side (a file still in parts is composed; `_mmirage.json`, the
// manifest of a published output, last) and then deletes the source; LinkFile is a server-side copy;
// ExchangeFiles is kUnavailable (callers fall back to rename); SyncDir is a no-op (an object is durable once its upload
// returns). LockFile cannot exclude another process: it returns a lock that holds nothing (the executors never run one
// shard twice at once).
#include <arrow/filesystem/filesystem.h>
#include <fnmatch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <set>

#include "data/arrow/arrow_util.h"
#include "data/arrow/s3_fs.h"
#include "data/arrow/s3_objects.h"
#include "util/process/process_info.h"

namespace mmirage::arrow_module {
namespace {

using arrow::fs::FileInfo;
using arrow::fs::FileType;
// The largest ranged read: fewer, bigger requests (a store may cost per request, or per object touched).
constexpr size_t kChunk = 32 << 20;
// The largest object S3's CopyObject copies in one request.
constexpr int64_t kMaxCopyBytes = int64_t{5} << 30;

std::string SpoolDir() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && dir[0] == '/' ? dir : "/tmp";
}

// Spool files are `mmirage-s3-<pid>-<n>` in SpoolDir().
std::string LocalTempPath() {
  static std::atomic<uint64_t> n{0};
  return JoinPath(SpoolDir(), "mmirage-s3-" + std::to_string(Env::Default()->Pid()) + "-" + std::to_string(n++));
}

// Removes the spool files of processes that no longer run (killed before they could remove their own). Best effort.
void RemoveDeadSpools() {
  Env* local = Env::Default();
  Result<std::vector<std::string>> names = local->GetChildren(SpoolDir());
  if (!names.ok()) return;
  for (const std::string& name : *names) {
    if (name.rfind("mmirage-s3-", 0) != 0) continue;
    long pid = std::strtol(name.c_str() + 11, nullptr, 10);
    if (pid > 0 && !ProcessAlive(pid)) { (void)local->RemoveFile(JoinPath(SpoolDir(), name)); }
  }
}

// Every byte appended goes to a local spool file that holds the whole file. The first upload of a new file is one
// whole object (a file written once and closed stays one PUT); each later Sync uploads only the bytes appended
// since the last as the next part (the first such Sync turns the whole object into part 0 with a server-side copy:
// a journaled file's first Sync is the empty one that creates it), and Close composes the parts into one whole
// object again, uploaded from the spool.
class S3WritableFile final : public WritableFile {
 public:
  struct Start {
    uint64_t size = 0;   // bytes of the file in the store (and in the spool)
    uint64_t parts = 0;  // its parts; 0 when whole or absent
    bool exists = false;
  };
  S3WritableFile(std::shared_ptr<arrow::fs::FileSystem> fs, std::string key, std::string path, std::string spool,
                 std::unique_ptr<WritableFile> out, Start start)
      : fs_(std::move(fs)),
        key_(std::move(key)),
        path_(std::move(path)),
        spool_(std::move(spool)),
        out_(std::move(out)),
        size_(start.size),
        synced_(start.size),
        parts_(start.parts),
        uploaded_(start.exists),
        dirty_(!start.exists) {}  // a new file exists once synced or closed, even empty
  ~S3WritableFile() override {
    if (out_ != nullptr) (void)Close();  // what was appended is kept, as a local file's bytes would be
  }
  // A failed Append is sticky: Sync and Close then upload nothing, so that a torn spool never replaces the object
  // (what the last Sync uploaded stays).
  Status Append(std::string_view data) override {
    if (!failed_.ok()) return failed_;
    dirty_ = true;
    size_ += data.size();
    Status st = out_->Append(data);
    if (!st.ok()) failed_ = st;
    return st;
  }
  Status Flush() override { return out_->Flush(); }
  Status Sync() override;
  Status Close() override;

 private:
  // Uploads spool bytes [from, size_) as the object `key`.
  Status UploadSpool(uint64_t from, const std::string& key) {
    MMIRAGE_TRY(out_->Flush());
    MMIRAGE_ASSIGN_OR_RETURN(auto in, Env::Default()->NewSequentialFile(spool_));
    MMIRAGE_TRY(in->Skip(from));
    return UploadFrom(fs_.get(), in.get(), key, path_, static_cast<int64_t>(size_ - from));
  }
  // The whole object becomes part 0 (leftover parts of an interrupted close removed first). The whole object
  // still wins until it is deleted, after the next part is uploaded.
  Status WholeToPart0() {
    MMIRAGE_ASSIGN_OR_RETURN(auto stale, ListParts(fs_.get(), key_, path_));
    if (!stale.empty()) MMIRAGE_TRY(DeleteAllParts(fs_.get(), key_, path_));
    arrow::Status st = fs_->CopyFile(key_, PartKey(key_, 0));
    if (!st.ok()) return FromArrow(st, path_);
    parts_ = 1;
    return Status::OK();
  }

  std::shared_ptr<arrow::fs::FileSystem> fs_;
  std::string key_, path_, spool_;
  std::unique_ptr<WritableFile> out_;
  uint64_t size_ = 0;    // bytes in the spool
  uint64_t synced_ = 0;  // of them in the store
  uint64_t parts_ = 0;   // parts in the store; 0: the store holds a whole object (or nothing yet)
  bool uploaded_;        // whether this file exists in the store
  bool dirty_;
  Status failed_;  // of the first failed Append
};

Status S3WritableFile::Sync() {
  if (!failed_.ok()) return failed_;
  if (!dirty_) return Status::OK();
  if (!uploaded_) {
    MMIRAGE_TRY(UploadSpool(0, key_));
  } else if (size_ > synced_) {
    const bool was_whole = parts_ == 0;
    if (was_whole) MMIRAGE_TRY(WholeToPart0());
    MMIRAGE_TRY(UploadSpool(synced_, PartKey(key_, parts_)));
    ++parts_;
    if (was_whole) {
      arrow::Status st = fs_->DeleteFile(key_);
      if (!st.ok()) return FromArrow(st, path_);
    }
  }
  uploaded_ = true;
  synced_ = size_;
  dirty_ = false;
  return Status::OK();
}

Status S3WritableFile::Close() {
  if (out_ == nullptr) return Status::OK();
  Status st = failed_;
  if (st.ok() && parts_ > 0) {
    // One whole object from the spool (it wins over the parts at once), then the parts go.
    st = UploadSpool(0, key_);
    if (st.ok()) st = DeleteAllParts(fs_.get(), key_, path_);
  } else {
    st = Sync();
  }
  Status cs = out_->Close();
  out_.reset();
  (void)Env::Default()->RemoveFile(spool_);
  return st.ok() ? cs : st;
}

class NoLock final : public Env::FileLock {};

class ObjectStoreEnv final : public Env {
 public:
  explicit ObjectStoreEnv(std::shared_ptr<arrow::fs::FileSystem> fs) : fs_(std::move(fs)) {}

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path, bool append) override;
  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(ObjectLayout layout, Layout(path));
    if (layout.type == FileType::NotFound) return Status::NotFound(path + ": no such object");
    if (layout.type != FileType::File) return Status::IOError(path + ": is a directory");
    return NewLayoutReader(fs_, std::move(layout), path, kChunk);
  }
  bool FileExists(const std::string& path) override { return TypeOf(path) != FileType::NotFound; }
  bool IsDirectory(const std::string& path) override {
    Result<std::string> key = S3Key(path);
    return key.ok() && Type(*key) == FileType::Directory;
  }
  bool IsRegularFile(const std::string& path) override { return TypeOf(path) == FileType::File; }
  Result<std::vector<std::string>> GetChildren(const std::string& dir) override;
  // A folder this process created (and has not deleted since) is not created again: each level is one PUT.
  Status CreateDirs(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(path));
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (made_dirs_.count(key) != 0) return Status::OK();
    }
    arrow::Status st = fs_->CreateDir(key, /*recursive=*/true);
    if (!st.ok()) return FromArrow(st, path);
    std::lock_guard<std::mutex> lock(mu_);
    made_dirs_.insert(key);
    return Status::OK();
  }
  Status RemoveFile(const std::string& path) override;
  Status RemoveAll(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(path));
    if (key.find('/') == std::string::npos) return Status::InvalidArgument(path + ": will not delete a bucket");
    if (Type(key) == FileType::Directory) {
      ForgetDirs(key);
      arrow::Status st = fs_->DeleteDir(key);
      return st.ok() ? Status::OK() : FromArrow(st, path);
    }
    Status st = RemoveFile(path);
    return st.IsNotFound() ? Status::OK() : st;
  }
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status ExchangeFiles(const std::string& a, const std::string& b) override {
    return Status::Unavailable(a + " <-> " + b + ": object storage cannot exchange");
  }
  Status SyncDir(const std::string&) override { return Status::OK(); }
  // A server-side copy. kUnavailable for a file still in parts or past the store's single-copy limit.
  Status LinkFile(const std::string& from, const std::string& to) override {
    MMIRAGE_ASSIGN_OR_RETURN(std::string to_key, S3Key(to));
    const std::string what = from + " -> " + to;
    MMIRAGE_ASSIGN_OR_RETURN(ObjectLayout layout, FileLayout(from));
    if (!layout.parts.empty() || layout.size > kMaxCopyBytes)
      return Status::Unavailable(what + ": no single server-side copy of this object");
    arrow::Status st = fs_->CopyFile(layout.whole.path(), to_key);
    return st.ok() ? Status::OK() : FromArrow(st, what);
  }
  Result<uint64_t> GetFileSize(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(ObjectLayout layout, FileLayout(path));
    return static_cast<uint64_t>(std::max<int64_t>(0, layout.size));
  }
  Result<uint64_t> GetFileModificationMicros(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(ObjectLayout layout, FileLayout(path));
    return static_cast<uint64_t>(std::max<int64_t>(0, layout.mtime_us));
  }
  Status TruncateFile(const std::string& path, uint64_t size) override;
  Result<std::string> ReadFileToString(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(auto in, NewSequentialFile(path));
    std::string out, buf(1 << 20, '\0');
    while (true) {
      MMIRAGE_ASSIGN_OR_RETURN(size_t n, in->Read(buf.size(), buf.data()));
      if (n == 0) return out;
      out.append(buf.data(), n);
    }
  }
  Result<std::vector<std::string>> Glob(const std::string& pattern) override;
  std::string AbsolutePath(const std::string& path) override {
    Result<std::string> key = S3Key(path);
    return key.ok() ? "s3://" + *key : path;
  }
  Result<std::string> RealPath(const std::string& path) override {
    if (!FileExists(path)) return Status::NotFound(path + ": no such object");
    return AbsolutePath(path);
  }
  Result<std::unique_ptr<FileLock>> LockFile(const std::string&) override {
    return std::unique_ptr<FileLock>(new NoLock());
  }
  uint64_t NowMicros() override { return Env::Default()->NowMicros(); }
  uint64_t MonotonicMicros() override { return Env::Default()->MonotonicMicros(); }
  void SleepMicros(uint64_t micros) override { Env::Default()->SleepMicros(micros); }
  std::string Hostname() override { return Env::Default()->Hostname(); }
  int Pid() override { return Env::Default()->Pid(); }

 private:
  FileType Type(const std::string& key) {
    auto info = fs_->GetFileInfo(key);
    return info.ok() ? info->type() : FileType::NotFound;
  }
  FileType TypeOf(const std::string& path) {
    Result<ObjectLayout> layout = Layout(path);
    return layout.ok() ? layout->type : FileType::NotFound;
  }
  Result<ObjectLayout> Layout(const std::string& path) {
    MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(path));
    return Resolve(fs_.get(), key, path);
  }
  // The layout of a file that must exist.
  Result<ObjectLayout> FileLayout(const std::string& path) {
    MMIRAGE_ASSIGN_OR_RETURN(ObjectLayout layout, Layout(path));
    if (layout.type == FileType::NotFound) return Status::NotFound(path + ": no such object");
    return layout;
  }
  // Writes the file `layout` (of `path`) as one whole object `to_key`.
  Status Compose(const ObjectLayout& layout, const std::string& to_key, const std::string& path) {
    if (layout.parts.empty()) {
      arrow::Status st = fs_->CopyFile(layout.whole.path(), to_key);
      return st.ok() ? Status::OK() : FromArrow(st, path);
    }
    auto in = NewLayoutReader(fs_, layout, path, kChunk);
    return UploadFrom(fs_.get(), in.get(), to_key, path);
  }
  Status CopyTree(const std::string& from_key, const std::string& to_key, const std::string& path);
  // Deletes the file `key` laid out as `layout` (leftover parts first, so that they never become the file).
  Status RemoveLayout(const std::string& key, ObjectLayout layout, const std::string& path);
  Status TruncateParts(const ObjectLayout& layout, const std::string& key, const std::string& path, uint64_t size);
  // Drops `key` and the folders under it from made_dirs_.
  void ForgetDirs(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = made_dirs_.lower_bound(key); it != made_dirs_.end() && it->rfind(key, 0) == 0;) {
      bool under = it->size() == key.size() || (*it)[key.size()] == '/';
      it = under ? made_dirs_.erase(it) : std::next(it);
    }
  }

  std::shared_ptr<arrow::fs::FileSystem> fs_;
  std::mutex mu_;
  std::set<std::string> made_dirs_;  // guarded by mu_
};

Result<std::unique_ptr<WritableFile>> ObjectStoreEnv::NewWritableFile(const std::string& path, bool append) {
  MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(path));
  S3WritableFile::Start start;
  ObjectLayout layout;
  if (append) {
    MMIRAGE_ASSIGN_OR_RETURN(layout, Resolve(fs_.get(), key, path));
    if (layout.type == FileType::Directory) return Status::IOError(path + ": is a directory");
    start.exists = layout.type == FileType::File;
    start.size = static_cast<uint64_t>(layout.size);
    start.parts = layout.parts.size();
  }
  std::string spool = LocalTempPath();
  MMIRAGE_ASSIGN_OR_RETURN(auto out, Env::Default()->NewWritableFile(spool));
  if (start.exists) {  // the spool holds the whole file: the object Close composes
    auto in = NewLayoutReader(fs_, std::move(layout), path, kChunk);
    std::string buf(kChunk, '\0');
    Status st;
    for (uint64_t got = 0; st.ok() && got < start.size;) {
      Result<size_t> n = in->Read(buf.size(), buf.data());
      st = !n.ok()   ? n.status()
           : *n == 0 ? Status::IOError(path + ": object shorter than listed")
                     : out->Append(std::string_view(buf.data(), *n));
      if (n.ok()) got += *n;
    }
    if (!st.ok()) {
      (void)Env::Default()->RemoveFile(spool);
      return st;
    }
  }
  return std::unique_ptr<WritableFile>(new S3WritableFile(fs_, key, path, spool, std::move(out), start));
}

Result<std::vector<std::string>> ObjectStoreEnv::GetChildren(const std::string& dir) {
  MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(dir));
  arrow::fs::FileSelector sel;
  sel.base_dir = key;
  auto infos = fs_->GetFileInfo(sel);
  if (!infos.ok()) return FromArrow(infos.status(), dir);
  std::vector<std::string> names;
  const std::string suffix = kPartsSuffix;
  for (const auto& info : *infos) {
    std::string name = info.base_name();
    if (info.type() == FileType::Directory && name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      name.resize(name.size() - suffix.size());  // a file stored as parts
    }
    names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// Leftover parts first, so that deleting a whole object never uncovers them.
Status ObjectStoreEnv::RemoveFile(const std::string& path) {
  MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(path));
  MMIRAGE_ASSIGN_OR_RETURN(ObjectLayout layout, Resolve(fs_.get(), key, path));
  if (layout.type != FileType::File) return Status::NotFound(path + ": no such object");
  return RemoveLayout(key, std::move(layout), path);
}

Status ObjectStoreEnv::RemoveLayout(const std::string& key, ObjectLayout layout, const std::string& path) {
  if (layout.parts.empty()) {
    MMIRAGE_ASSIGN_OR_RETURN(layout.parts, ListParts(fs_.get(), key, path));
    if (!layout.parts.empty()) MMIRAGE_TRY(DeleteAllParts(fs_.get(), key, path));
    arrow::Status st = fs_->DeleteFile(key);
    return st.ok() ? Status::OK() : FromArrow(st, path);
  }
  return DeleteAllParts(fs_.get(), key, path);
}

// Copies every file under from_key to the same place under to_key as one whole object each (a file stored as
// parts is composed), the manifest `_mmirage.json` last.
Status ObjectStoreEnv::CopyTree(const std::string& from_key, const std::string& to_key, const std::string& path) {
  arrow::fs::FileSelector sel;
  sel.base_dir = from_key;
  sel.recursive = true;
  auto infos = fs_->GetFileInfo(sel);
  if (!infos.ok()) return FromArrow(infos.status(), path);
  const std::string suffix = std::string(kPartsSuffix);
  std::vector<std::string> files, dirs;
  std::set<std::string> whole;  // files listed as one object (a faster copy than resolving them again)
  for (const auto& info : *infos) {
    const std::string& p = info.path();
    size_t at = p.find(suffix);
    bool in_parts = at != std::string::npos && (at + suffix.size() == p.size() || p[at + suffix.size()] == '/');
    if (in_parts) {
      if (at + suffix.size() == p.size()) files.push_back(p.substr(0, at));
    } else {
      (info.type() == FileType::Directory ? dirs : files).push_back(p);
      if (info.type() == FileType::File) whole.insert(p);
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  std::stable_partition(files.begin(), files.end(), [](const std::string& f) {
    const std::string manifest = "/_mmirage.json";
    return f.size() < manifest.size() || f.compare(f.size() - manifest.size(), manifest.size(), manifest) != 0;
  });
  arrow::Status st = fs_->CreateDir(to_key, /*recursive=*/true);
  for (const auto& d : dirs) {
    if (st.ok()) st = fs_->CreateDir(to_key + d.substr(from_key.size()), true);
  }
  if (!st.ok()) return FromArrow(st, path);
  for (const auto& f : files) {
    if (whole.count(f) != 0) {
      st = fs_->CopyFile(f, to_key + f.substr(from_key.size()));
      if (!st.ok()) return FromArrow(st, path);
      continue;
    }
    MMIRAGE_ASSIGN_OR_RETURN(ObjectLayout layout, Resolve(fs_.get(), f, path));
    if (layout.type == FileType::File) MMIRAGE_TRY(Compose(layout, to_key + f.substr(from_key.size()), path));
  }
  return Status::OK();
}

Status ObjectStoreEnv::RenameFile(const std::string& from, const std::string& to) {
  MMIRAGE_ASSIGN_OR_RETURN(std::string from_key, S3Key(from));
  MMIRAGE_ASSIGN_OR_RETURN(std::string to_key, S3Key(to));
  const std::string what = from + " -> " + to;
  MMIRAGE_ASSIGN_OR_RETURN(ObjectLayout layout, Resolve(fs_.get(), from_key, what));
  FileType t = layout.type, dest = Type(to_key);
  if (t == FileType::NotFound) return Status::NotFound(what + ": no such object");
  if (t == FileType::File) {
    if (dest == FileType::Directory) return Status::IOError(what + ": the target is a directory");
    MMIRAGE_TRY(Compose(layout, to_key, what));  // a whole object wins over leftover parts of the target
    return RemoveLayout(from_key, std::move(layout), what);
  }
  if (dest == FileType::File) return Status::IOError(what + ": the target is a file");
  if (dest == FileType::Directory) {
    MMIRAGE_ASSIGN_OR_RETURN(auto children, GetChildren(to));
    if (!children.empty()) return Status::IOError(what + ": the target directory is not empty");
  }
  MMIRAGE_TRY(CopyTree(from_key, to_key, what));
  ForgetDirs(from_key);
  arrow::Status st = fs_->DeleteDir(from_key);
  return st.ok() ? Status::OK() : FromArrow(st, what);
}

// Parts past `size` go (highest first); the part that holds byte `size` is rewritten with its bytes before it.
Status ObjectStoreEnv::TruncateParts(const ObjectLayout& layout, const std::string& key, const std::string& path,
                                     uint64_t size) {
  uint64_t start = 0;
  size_t keep = 0;  // parts [0, keep] stay; part `keep` ends at or after `size`
  while (keep + 1 < layout.parts.size() && start + static_cast<uint64_t>(layout.parts[keep].size()) < size) {
    start += static_cast<uint64_t>(layout.parts[keep].size());
    ++keep;
  }
  std::vector<FileInfo> drop(layout.parts.begin() + static_cast<std::ptrdiff_t>(keep) + 1, layout.parts.end());
  MMIRAGE_TRY(DeleteParts(fs_.get(), drop, path));
  if (start + static_cast<uint64_t>(layout.parts[keep].size()) == size) return Status::OK();
  ObjectLayout one;
  one.type = FileType::File;
  one.parts = {layout.parts[keep]};
  std::string spool = LocalTempPath();  // the part's prefix, then the part replaced by it (one PUT)
  MMIRAGE_ASSIGN_OR_RETURN(auto out, Env::Default()->NewWritableFile(spool));
  auto in = NewLayoutReader(fs_, std::move(one), path, kChunk);
  std::string buf(kChunk, '\0');
  Status st;
  for (uint64_t left = size - start; st.ok() && left > 0;) {
    Result<size_t> n = in->Read(static_cast<size_t>(std::min<uint64_t>(left, buf.size())), buf.data());
    st = !n.ok()   ? n.status()
         : *n == 0 ? Status::IOError(path + ": part shorter than listed")
                   : out->Append(std::string_view(buf.data(), *n));
    if (n.ok()) left -= *n;
  }
  if (st.ok()) st = out->Close();
  if (st.ok()) {
    auto spooled = Env::Default()->NewSequentialFile(spool);
    st = spooled.ok() ? UploadFrom(fs_.get(), spooled->get(), PartKey(key, keep), path) : spooled.status();
  }
  (void)Env::Default()->RemoveFile(spool);
  return st;
}

Status ObjectStoreEnv::TruncateFile(const std::string& path, uint64_t size) {
  MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(path));
  MMIRAGE_ASSIGN_OR_RETURN(ObjectLayout layout, FileLayout(path));
  uint64_t have = static_cast<uint64_t>(std::max<int64_t>(0, layout.size));
  if (size > have) return Status::InvalidArgument(path + ": cannot extend an object by truncating");
  if (size == have) return Status::OK();
  if (!layout.parts.empty()) return TruncateParts(layout, key, path, size);
  // A whole object: its prefix uploaded over it.
  auto in = NewLayoutReader(fs_, std::move(layout), path, kChunk);
  return UploadFrom(fs_.get(), in.get(), key, path, static_cast<int64_t>(size));
}

Result<std::vector<std::string>> ObjectStoreEnv::Glob(const std::string& pattern) {
  MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(pattern));
  std::vector<std::string> out;
  size_t wild = key.find_first_of("*?[");
  if (wild == std::string::npos) {
    if (TypeOf(pattern) != FileType::NotFound) out.push_back("s3://" + key);
    return out;
  }
  size_t slash = key.rfind('/', wild);
  if (slash == std::string::npos) return Status::InvalidArgument(pattern + ": no pattern in bucket names");
  arrow::fs::FileSelector sel;
  sel.base_dir = key.substr(0, slash);
  sel.allow_not_found = true;
  sel.recursive = key.find('/', wild) != std::string::npos;
  auto infos = fs_->GetFileInfo(sel);
  if (!infos.ok()) return FromArrow(infos.status(), pattern);
  const std::string suffix = kPartsSuffix;
  for (const auto& info : *infos) {
    std::string p = info.path();
    size_t at = p.find(suffix);
    if (at != std::string::npos) {
      if (at + suffix.size() != p.size()) continue;  // a part
      p.resize(at);                                  // a file stored as parts
    }
    if (::fnmatch(key.c_str(), p.c_str(), FNM_PATHNAME) == 0) out.push_back("s3://" + p);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

Result<Env*> S3Env() {
  static std::once_flag once;
  static Result<Env*>* env = nullptr;  // never destroyed: used until process exit
  std::call_once(once, [] {
    Result<std::shared_ptr<arrow::fs::S3FileSystem>> fs = S3FileSystem();
    RemoveDeadSpools();
    env = fs.ok() ? new Result<Env*>(static_cast<Env*>(new ObjectStoreEnv(*fs))) : new Result<Env*>(fs.status());
  });
  return *env;
}

}  // namespace mmirage::arrow_module
