// Files as whole objects or runs of parts (data/arrow/s3_objects.h).
#include "data/arrow/s3_objects.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "data/arrow/arrow_util.h"

namespace mmirage::arrow_module {
namespace {

using arrow::fs::FileInfo;
using arrow::fs::FileType;
constexpr uint64_t kChunksInFlight = 4;  // upload chunks written before waiting for their parts

bool IsPartName(const std::string& name) {
  return name.size() == 8 && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int64_t MtimeMicros(const FileInfo& info) {
  return std::chrono::duration_cast<std::chrono::microseconds>(info.mtime().time_since_epoch()).count();
}

// Reads a run of objects as one file; each object is opened (with the size already known) when first reached.
class LayoutReader final : public SequentialFile {
 public:
  LayoutReader(std::shared_ptr<arrow::fs::FileSystem> fs, std::vector<FileInfo> segments, std::string path,
               size_t chunk)
      : fs_(std::move(fs)), segments_(std::move(segments)), path_(std::move(path)), chunk_(chunk) {}

  Result<size_t> Read(size_t n, char* scratch) override {
    size_t done = 0;
    while (done < n) {
      if (pos_ >= buf_.size()) {
        MMIRAGE_ASSIGN_OR_RETURN(bool more, Fill());
        if (!more) break;
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
    n -= in_buffer;
    buf_.clear();
    pos_ = 0;
    while (n > 0 && seg_ < segments_.size()) {
      uint64_t left = static_cast<uint64_t>(segments_[seg_].size() - offset_);
      if (n < left) {
        offset_ += static_cast<int64_t>(n);
        break;
      }
      n -= left;
      NextSegment();
    }
    return Status::OK();
  }

 private:
  void NextSegment() {
    ++seg_;
    offset_ = 0;
    in_.reset();
  }
  // Refills the buffer with the next ranged read; false at the end of the file.
  Result<bool> Fill() {
    while (seg_ < segments_.size() && offset_ >= segments_[seg_].size()) NextSegment();
    if (seg_ >= segments_.size()) return false;
    const FileInfo& info = segments_[seg_];
    if (in_ == nullptr) {
      auto in = fs_->OpenInputFile(info);
      if (!in.ok()) return FromArrow(in.status(), path_);
      in_ = *in;
    }
    buf_.resize(next_);
    auto got = in_->ReadAt(offset_, std::min<int64_t>(static_cast<int64_t>(next_), info.size() - offset_), buf_.data());
    next_ = std::min(chunk_, 2 * next_);
    if (!got.ok()) return FromArrow(got.status(), path_);
    if (*got == 0) return Status::IOError(path_ + ": object " + info.path() + " shorter than listed");
    buf_.resize(static_cast<size_t>(*got));
    offset_ += *got;
    pos_ = 0;
    return true;
  }

  std::shared_ptr<arrow::fs::FileSystem> fs_;
  std::vector<FileInfo> segments_;
  std::string path_;
  size_t chunk_;
  // Read-ahead: a reader that wants a few KiB (a file's head, a small JSON) costs one small request; one that
  // streams reaches `chunk_` per request after a few.
  size_t next_ = std::min<size_t>(chunk_, 256 << 10);
  size_t seg_ = 0;      // the object being read
  int64_t offset_ = 0;  // of the next ranged read in it
  std::shared_ptr<arrow::io::RandomAccessFile> in_;
  std::string buf_;
  size_t pos_ = 0;
};

}  // namespace

Status FromArrow(const arrow::Status& st, const std::string& path) {
  std::string m = ArrowMessage(st);
  if (m.find("does not exist") != std::string::npos || m.find("NoSuchKey") != std::string::npos) {
    return Status::NotFound(path + ": " + m);
  }
  return Status::IOError(path + ": " + m);
}

std::string PartKey(const std::string& key, uint64_t n) {
  char num[32];
  std::snprintf(num, sizeof(num), "%08llu", static_cast<unsigned long long>(n));
  return key + kPartsSuffix + "/" + num;
}

Result<std::vector<FileInfo>> ListParts(arrow::fs::FileSystem* fs, const std::string& key, const std::string& path) {
  arrow::fs::FileSelector sel;
  sel.base_dir = key + kPartsSuffix;
  sel.allow_not_found = true;
  auto infos = fs->GetFileInfo(sel);
  if (!infos.ok()) return FromArrow(infos.status(), path);
  std::vector<FileInfo> parts;
  for (auto& info : *infos) {
    if (info.type() == FileType::File && IsPartName(info.base_name())) parts.push_back(std::move(info));
  }
  std::sort(parts.begin(), parts.end(), [](const FileInfo& a, const FileInfo& b) { return a.path() < b.path(); });
  // Parts are uploaded in order and deleted highest first: a gap cannot be written; what follows one is ignored.
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].path() != PartKey(key, i)) {
      parts.resize(i);
      break;
    }
  }
  return parts;
}

Result<ObjectLayout> Resolve(arrow::fs::FileSystem* fs, const std::string& key, const std::string& path) {
  ObjectLayout layout;
  auto info = fs->GetFileInfo(key);
  if (!info.ok()) return FromArrow(info.status(), path);
  layout.type = info->type();
  if (layout.type == FileType::File) {
    layout.size = info->size();
    layout.mtime_us = MtimeMicros(*info);
    layout.whole = std::move(*info);
    return layout;
  }
  if (layout.type != FileType::NotFound) return layout;
  MMIRAGE_ASSIGN_OR_RETURN(layout.parts, ListParts(fs, key, path));
  if (layout.parts.empty()) return layout;
  layout.type = FileType::File;
  for (const auto& p : layout.parts) {
    layout.size += p.size();
    layout.mtime_us = std::max(layout.mtime_us, MtimeMicros(p));
  }
  return layout;
}

Status DeleteParts(arrow::fs::FileSystem* fs, const std::vector<FileInfo>& parts, const std::string& path) {
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    arrow::Status st = fs->DeleteFile(it->path());
    if (!st.ok()) return FromArrow(st, path);
  }
  return Status::OK();
}

Status DeleteAllParts(arrow::fs::FileSystem* fs, const std::string& key, const std::string& path) {
  // One folder delete: deleting its last object one by one would make Arrow keep the folder as a marker object.
  arrow::Status st = fs->DeleteDir(key + kPartsSuffix);
  return st.ok() ? Status::OK() : FromArrow(st, path);
}

std::unique_ptr<SequentialFile> NewLayoutReader(std::shared_ptr<arrow::fs::FileSystem> fs, ObjectLayout layout,
                                                std::string path, size_t chunk) {
  std::vector<FileInfo> segments = std::move(layout.parts);
  if (segments.empty() && layout.type == FileType::File) segments.push_back(std::move(layout.whole));
  return std::make_unique<LayoutReader>(std::move(fs), std::move(segments), std::move(path), chunk);
}

Status UploadFrom(arrow::fs::FileSystem* fs, SequentialFile* in, const std::string& key, const std::string& path,
                  int64_t size) {
  constexpr size_t kChunk = 8 << 20;
  auto out = fs->OpenOutputStream(key);
  if (!out.ok()) return FromArrow(out.status(), path);
  std::string buf(kChunk, '\0');
  uint64_t left = size < 0 ? UINT64_MAX : static_cast<uint64_t>(size);
  for (uint64_t chunks = 1; left > 0; ++chunks) {
    MMIRAGE_ASSIGN_OR_RETURN(size_t n, in->Read(static_cast<size_t>(std::min<uint64_t>(kChunk, left)), buf.data()));
    if (n == 0) break;
    left -= n;
    arrow::Status st = (*out)->Write(buf.data(), static_cast<int64_t>(n));
    // Parts upload in the background; waiting for them every few chunks bounds the memory they hold.
    if (st.ok() && chunks % kChunksInFlight == 0) st = (*out)->Flush();
    if (!st.ok()) return FromArrow(st, path);
  }
  if (size >= 0 && left > 0) return Status::IOError(path + ": shorter than expected while copying");
  arrow::Status st = (*out)->Close();
  return st.ok() ? Status::OK() : FromArrow(st, path);
}

}  // namespace mmirage::arrow_module
