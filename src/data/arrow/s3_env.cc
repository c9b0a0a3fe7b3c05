// The Env of s3:// paths (data/arrow/s3_fs.h) over Arrow's S3 file system.
//
// Object stores have no appends, no rename and no fsync: a WritableFile spools to a local temporary file and
// uploads the whole object on Sync and Close (Arrow's output stream does multipart uploads for big objects), so an
// object holds exactly the bytes of the last Sync or Close; appending starts from a copy of the object. A directory
// "rename" copies every object (`_mmirage.json`, the manifest of a published output, last) and then deletes the
// source; ExchangeFiles and LinkFile are kUnavailable (callers fall back to rename or copy); SyncDir is a no-op
// (an object is durable once its upload returns). LockFile cannot exclude another process: it returns a lock that
// holds nothing (the executors never run one shard twice at once).
#include <arrow/filesystem/filesystem.h>
#include <fnmatch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>

#include "data/arrow/arrow_util.h"
#include "data/arrow/s3_fs.h"
#include "util/process/process_info.h"

namespace mmirage::arrow_module {
namespace {

using arrow::fs::FileType;
constexpr size_t kChunk = 8 << 20;       // bytes per ranged read and per upload write
constexpr uint64_t kChunksInFlight = 4;  // upload chunks written before waiting for their parts

Status FromArrow(const arrow::Status& st, const std::string& path) {
  std::string m = ArrowMessage(st);
  if (m.find("does not exist") != std::string::npos || m.find("NoSuchKey") != std::string::npos) {
    return Status::NotFound(path + ": " + m);
  }
  return Status::IOError(path + ": " + m);
}

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

// Copies `size` bytes (all when size < 0) of the object `key` into the local file `out`.
Status Download(arrow::fs::FileSystem* fs, const std::string& key, const std::string& path, WritableFile* out,
                int64_t size = -1) {
  auto in = fs->OpenInputFile(key);
  if (!in.ok()) return FromArrow(in.status(), path);
  if (size < 0) {
    auto s = (*in)->GetSize();
    if (!s.ok()) return FromArrow(s.status(), path);
    size = *s;
  }
  std::string buf(kChunk, '\0');
  for (int64_t pos = 0; pos < size;) {
    auto n = (*in)->ReadAt(pos, std::min<int64_t>(kChunk, size - pos), buf.data());
    if (!n.ok()) return FromArrow(n.status(), path);
    if (*n == 0) return Status::IOError(path + ": object shorter than expected");
    MMIRAGE_TRY(out->Append(std::string_view(buf.data(), static_cast<size_t>(*n))));
    pos += *n;
  }
  return out->Flush();
}

// Uploads the local file `local` as the object `key`.
Status Upload(arrow::fs::FileSystem* fs, const std::string& local, const std::string& key, const std::string& path) {
  MMIRAGE_ASSIGN_OR_RETURN(auto in, Env::Default()->NewSequentialFile(local));
  auto out = fs->OpenOutputStream(key);
  if (!out.ok()) return FromArrow(out.status(), path);
  std::string buf(kChunk, '\0');
  for (uint64_t chunks = 1;; ++chunks) {
    MMIRAGE_ASSIGN_OR_RETURN(size_t n, in->Read(kChunk, buf.data()));
    if (n == 0) break;
    arrow::Status st = (*out)->Write(buf.data(), static_cast<int64_t>(n));
    // Parts upload in the background; waiting for them every few chunks bounds the memory they hold.
    if (st.ok() && chunks % kChunksInFlight == 0) st = (*out)->Flush();
    if (!st.ok()) return FromArrow(st, path);
  }
  arrow::Status st = (*out)->Close();
  return st.ok() ? Status::OK() : FromArrow(st, path);
}

class S3WritableFile final : public WritableFile {
 public:
  S3WritableFile(std::shared_ptr<arrow::fs::S3FileSystem> fs, std::string key, std::string path, std::string spool,
                 std::unique_ptr<WritableFile> out)
      : fs_(std::move(fs)),
        key_(std::move(key)),
        path_(std::move(path)),
        spool_(std::move(spool)),
        out_(std::move(out)) {}
  ~S3WritableFile() override {
    if (out_ != nullptr) (void)Close();  // what was appended is kept, as a local file's bytes would be
  }
  Status Append(std::string_view data) override {
    dirty_ = true;
    return out_->Append(data);
  }
  Status Flush() override { return out_->Flush(); }
  Status Sync() override {
    if (!dirty_) return Status::OK();
    MMIRAGE_TRY(out_->Flush());
    MMIRAGE_TRY(Upload(fs_.get(), spool_, key_, path_));
    dirty_ = false;
    return Status::OK();
  }
  Status Close() override {
    if (out_ == nullptr) return Status::OK();
    Status st = Sync();
    Status cs = out_->Close();
    out_.reset();
    (void)Env::Default()->RemoveFile(spool_);
    return st.ok() ? cs : st;
  }

 private:
  std::shared_ptr<arrow::fs::S3FileSystem> fs_;
  std::string key_, path_, spool_;
  std::unique_ptr<WritableFile> out_;
  bool dirty_ = true;  // a new object exists once closed, even empty
};

// Front-to-back reads in ranged requests of kChunk bytes.
class S3SequentialFile final : public SequentialFile {
 public:
  S3SequentialFile(std::shared_ptr<arrow::io::RandomAccessFile> in, std::string path, int64_t size)
      : in_(std::move(in)), path_(std::move(path)), size_(size) {}
  Result<size_t> Read(size_t n, char* scratch) override {
    size_t done = 0;
    while (done < n) {
      if (pos_ >= buf_.size()) {
        if (offset_ >= size_) break;
        buf_.resize(kChunk);
        auto got = in_->ReadAt(offset_, std::min<int64_t>(kChunk, size_ - offset_), buf_.data());
        if (!got.ok()) return FromArrow(got.status(), path_);
        if (*got == 0) break;
        buf_.resize(static_cast<size_t>(*got));
        offset_ += *got;
        pos_ = 0;
      }
      size_t take = std::min(n - done, buf_.size() - pos_);
      std::copy_n(buf_.data() + pos_, take, scratch + done);
      pos_ += take;
      done += take;
    }
    return done;
  }
  Status Skip(uint64_t n) override {
    uint64_t in_buffer = buf_.size() - pos_;
    if (n <= in_buffer) {
      pos_ += n;
      return Status::OK();
    }
    offset_ = std::min<int64_t>(size_, offset_ + static_cast<int64_t>(n - in_buffer));
    buf_.clear();
    pos_ = 0;
    return Status::OK();
  }

 private:
  std::shared_ptr<arrow::io::RandomAccessFile> in_;
  std::string path_;
  int64_t size_ = 0;
  int64_t offset_ = 0;  // of the next ranged read
  std::string buf_;
  size_t pos_ = 0;
};

class NoLock final : public Env::FileLock {};

class ObjectStoreEnv final : public Env {
 public:
  explicit ObjectStoreEnv(std::shared_ptr<arrow::fs::S3FileSystem> fs) : fs_(std::move(fs)) {}

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path, bool append) override {
    MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(path));
    std::string spool = LocalTempPath();
    MMIRAGE_ASSIGN_OR_RETURN(auto out, Env::Default()->NewWritableFile(spool));
    if (append && Type(key) == FileType::File) {
      Status st = Download(fs_.get(), key, path, out.get());
      if (!st.ok()) {
        (void)Env::Default()->RemoveFile(spool);
        return st;
      }
    }
    return std::unique_ptr<WritableFile>(new S3WritableFile(fs_, key, path, spool, std::move(out)));
  }
  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(path));
    auto in = fs_->OpenInputFile(key);
    if (!in.ok()) return FromArrow(in.status(), path);
    auto size = (*in)->GetSize();
    if (!size.ok()) return FromArrow(size.status(), path);
    return std::unique_ptr<SequentialFile>(new S3SequentialFile(*in, path, *size));
  }
  bool FileExists(const std::string& path) override { return TypeOf(path) != FileType::NotFound; }
  bool IsDirectory(const std::string& path) override { return TypeOf(path) == FileType::Directory; }
  bool IsRegularFile(const std::string& path) override { return TypeOf(path) == FileType::File; }
  Result<std::vector<std::string>> GetChildren(const std::string& dir) override {
    MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(dir));
    arrow::fs::FileSelector sel;
    sel.base_dir = key;
    auto infos = fs_->GetFileInfo(sel);
    if (!infos.ok()) return FromArrow(infos.status(), dir);
    std::vector<std::string> names;
    for (const auto& info : *infos) names.push_back(info.base_name());
    std::sort(names.begin(), names.end());
    return names;
  }
  Status CreateDirs(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(path));
    arrow::Status st = fs_->CreateDir(key, /*recursive=*/true);
    return st.ok() ? Status::OK() : FromArrow(st, path);
  }
  Status RemoveFile(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(path));
    if (Type(key) != FileType::File) return Status::NotFound(path + ": no such object");
    arrow::Status st = fs_->DeleteFile(key);
    return st.ok() ? Status::OK() : FromArrow(st, path);
  }
  Status RemoveAll(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(path));
    if (key.find('/') == std::string::npos) return Status::InvalidArgument(path + ": will not delete a bucket");
    FileType t = Type(key);
    arrow::Status st;
    if (t == FileType::File) st = fs_->DeleteFile(key);
    if (t == FileType::Directory) st = fs_->DeleteDir(key);
    return st.ok() ? Status::OK() : FromArrow(st, path);
  }
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status ExchangeFiles(const std::string& a, const std::string& b) override {
    return Status::Unavailable(a + " <-> " + b + ": object storage cannot exchange");
  }
  Status SyncDir(const std::string&) override { return Status::OK(); }
  Status LinkFile(const std::string& from, const std::string& to) override {
    return Status::Unavailable(from + " -> " + to + ": object storage has no links");
  }
  Result<uint64_t> GetFileSize(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(arrow::fs::FileInfo info, Info(path));
    return static_cast<uint64_t>(std::max<int64_t>(0, info.size()));
  }
  Result<uint64_t> GetFileModificationMicros(const std::string& path) override {
    MMIRAGE_ASSIGN_OR_RETURN(arrow::fs::FileInfo info, Info(path));
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(info.mtime().time_since_epoch()).count();
    return static_cast<uint64_t>(std::max<int64_t>(0, us));
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
    Result<std::string> key = S3Key(path);
    return key.ok() ? Type(*key) : FileType::NotFound;
  }
  Result<arrow::fs::FileInfo> Info(const std::string& path) {
    MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(path));
    auto info = fs_->GetFileInfo(key);
    if (!info.ok()) return FromArrow(info.status(), path);
    if (info->type() == FileType::NotFound) return Status::NotFound(path + ": no such object");
    return *info;
  }
  Status CopyTree(const std::string& from_key, const std::string& to_key, const std::string& path);

  std::shared_ptr<arrow::fs::S3FileSystem> fs_;
};

// Copies every object under from_key to the same place under to_key, the manifest `_mmirage.json` last.
Status ObjectStoreEnv::CopyTree(const std::string& from_key, const std::string& to_key, const std::string& path) {
  arrow::fs::FileSelector sel;
  sel.base_dir = from_key;
  sel.recursive = true;
  auto infos = fs_->GetFileInfo(sel);
  if (!infos.ok()) return FromArrow(infos.status(), path);
  std::stable_partition(infos->begin(), infos->end(),
                        [](const arrow::fs::FileInfo& i) { return i.base_name() != "_mmirage.json"; });
  arrow::Status st = fs_->CreateDir(to_key, /*recursive=*/true);
  for (const auto& info : *infos) {
    if (!st.ok()) break;
    std::string dest = to_key + info.path().substr(from_key.size());
    st = info.type() == FileType::Directory ? fs_->CreateDir(dest, true) : fs_->CopyFile(info.path(), dest);
  }
  return st.ok() ? Status::OK() : FromArrow(st, path);
}

Status ObjectStoreEnv::RenameFile(const std::string& from, const std::string& to) {
  MMIRAGE_ASSIGN_OR_RETURN(std::string from_key, S3Key(from));
  MMIRAGE_ASSIGN_OR_RETURN(std::string to_key, S3Key(to));
  const std::string what = from + " -> " + to;
  FileType t = Type(from_key), dest = Type(to_key);
  if (t == FileType::NotFound) return Status::NotFound(what + ": no such object");
  if (t == FileType::File) {
    if (dest == FileType::Directory) return Status::IOError(what + ": the target is a directory");
    arrow::Status st = fs_->Move(from_key, to_key);  // copy, then delete the source
    return st.ok() ? Status::OK() : FromArrow(st, what);
  }
  if (dest == FileType::File) return Status::IOError(what + ": the target is a file");
  if (dest == FileType::Directory) {
    MMIRAGE_ASSIGN_OR_RETURN(auto children, GetChildren(to));
    if (!children.empty()) return Status::IOError(what + ": the target directory is not empty");
  }
  MMIRAGE_TRY(CopyTree(from_key, to_key, what));
  arrow::Status st = fs_->DeleteDir(from_key);
  return st.ok() ? Status::OK() : FromArrow(st, what);
}

Status ObjectStoreEnv::TruncateFile(const std::string& path, uint64_t size) {
  MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(path));
  MMIRAGE_ASSIGN_OR_RETURN(uint64_t have, GetFileSize(path));
  if (size > have) return Status::InvalidArgument(path + ": cannot extend an object by truncating");
  if (size == have) return Status::OK();
  std::string spool = LocalTempPath();
  MMIRAGE_ASSIGN_OR_RETURN(auto out, Env::Default()->NewWritableFile(spool));
  Status st = Download(fs_.get(), key, path, out.get(), static_cast<int64_t>(size));
  if (st.ok()) st = out->Close();
  if (st.ok()) st = Upload(fs_.get(), spool, key, path);
  (void)Env::Default()->RemoveFile(spool);
  return st;
}

Result<std::vector<std::string>> ObjectStoreEnv::Glob(const std::string& pattern) {
  MMIRAGE_ASSIGN_OR_RETURN(std::string key, S3Key(pattern));
  std::vector<std::string> out;
  size_t wild = key.find_first_of("*?[");
  if (wild == std::string::npos) {
    if (Type(key) != FileType::NotFound) out.push_back("s3://" + key);
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
  for (const auto& info : *infos) {
    if (::fnmatch(key.c_str(), info.path().c_str(), FNM_PATHNAME) == 0) out.push_back("s3://" + info.path());
  }
  std::sort(out.begin(), out.end());
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
