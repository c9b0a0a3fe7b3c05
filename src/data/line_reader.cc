#include "data/line_reader.h"

#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <vector>

namespace mmirage {

// A stream of (possibly decompressed) bytes.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Appends up to ~n bytes to *out; returns 0 at end of stream.
  virtual Result<size_t> Read(size_t n, std::string* out) = 0;
};

namespace {

constexpr size_t kChunk = 1 << 18;

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class RawSource final : public ByteSource {
 public:
  explicit RawSource(std::unique_ptr<SequentialFile> f) : f_(std::move(f)) {}
  Result<size_t> Read(size_t n, std::string* out) override {
    size_t old = out->size();
    out->resize(old + n);
    auto r = f_->Read(n, out->data() + old);
    if (!r.ok()) {
      out->resize(old);
      return r.status();
    }
    out->resize(old + *r);
    return *r;
  }

 private:
  std::unique_ptr<SequentialFile> f_;
};

class GzipSource final : public ByteSource {
 public:
  GzipSource(std::string path, std::unique_ptr<SequentialFile> f) : path_(std::move(path)), f_(std::move(f)) {
    std::memset(&zs_, 0, sizeof zs_);
    ok_ = inflateInit2(&zs_, 15 + 32) == Z_OK;  // auto-detect gzip/zlib header
  }
  ~GzipSource() override { inflateEnd(&zs_); }
  Result<size_t> Read(size_t n, std::string* out) override {
    if (!ok_) return Status::Corruption(path_ + ": cannot initialise gzip decoder");
    size_t produced = 0;
    while (produced == 0 && !done_) {
      if (zs_.avail_in == 0) {
        in_.resize(kChunk);
        MMIRAGE_ASSIGN_OR_RETURN(size_t got, f_->Read(kChunk, in_.data()));
        if (got == 0) {
          if (!stream_end_) return Status::Corruption(path_ + ": truncated gzip stream");
          done_ = true;
          break;
        }
        zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
        zs_.avail_in = static_cast<uInt>(got);
      }
      if (stream_end_) {  // concatenated gzip members
        inflateReset(&zs_);
        stream_end_ = false;
      }
      size_t old = out->size();
      out->resize(old + n);
      zs_.next_out = reinterpret_cast<Bytef*>(out->data() + old);
      zs_.avail_out = static_cast<uInt>(n);
      int rc = inflate(&zs_, Z_NO_FLUSH);
      size_t got = n - zs_.avail_out;
      out->resize(old + got);
      produced += got;
      if (rc == Z_STREAM_END) {
        stream_end_ = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return Status::Corruption(path_ + ": corrupt gzip stream: " + (zs_.msg ? zs_.msg : "inflate error"));
      }
    }
    return produced;
  }

 private:
  std::string path_;
  std::unique_ptr<SequentialFile> f_;
  z_stream zs_;
  bool ok_ = false;
  bool stream_end_ = false;
  bool done_ = false;
  std::vector<char> in_;
};

class ZstdSource final : public ByteSource {
 public:
  ZstdSource(std::string path, std::unique_ptr<SequentialFile> f)
      : path_(std::move(path)), f_(std::move(f)), ds_(ZSTD_createDStream()) {
    ZSTD_initDStream(ds_);
  }
  ~ZstdSource() override { ZSTD_freeDStream(ds_); }
  Result<size_t> Read(size_t n, std::string* out) override {
    size_t produced = 0;
    while (produced == 0) {
      if (in_.pos == in_.size) {
        buf_.resize(kChunk);
        MMIRAGE_ASSIGN_OR_RETURN(size_t got, f_->Read(kChunk, buf_.data()));
        if (got == 0) {
          if (last_ret_ != 0) return Status::Corruption(path_ + ": truncated zstd stream");
          return size_t{0};
        }
        in_ = ZSTD_inBuffer{buf_.data(), got, 0};
      }
      size_t old = out->size();
      out->resize(old + n);
      ZSTD_outBuffer ob{out->data() + old, n, 0};
      size_t ret = ZSTD_decompressStream(ds_, &ob, &in_);
      out->resize(old + ob.pos);
      if (ZSTD_isError(ret)) return Status::Corruption(path_ + ": corrupt zstd stream: " + ZSTD_getErrorName(ret));
      last_ret_ = ret;
      produced += ob.pos;
    }
    return produced;
  }

 private:
  std::string path_;
  std::unique_ptr<SequentialFile> f_;
  ZSTD_DStream* ds_;
  std::vector<char> buf_;
  ZSTD_inBuffer in_{nullptr, 0, 0};
  size_t last_ret_ = 0;
};

}  // namespace

Result<std::unique_ptr<LineReader>> LineReader::Open(Env* env, const std::string& path) {
  MMIRAGE_ASSIGN_OR_RETURN(auto f, env->NewSequentialFile(path));
  std::unique_ptr<ByteSource> src;
  if (EndsWith(path, ".gz")) {
    src = std::make_unique<GzipSource>(path, std::move(f));
  } else if (EndsWith(path, ".zst") || EndsWith(path, ".zstd")) {
    src = std::make_unique<ZstdSource>(path, std::move(f));
  } else {
    src = std::make_unique<RawSource>(std::move(f));
  }
  return std::unique_ptr<LineReader>(new LineReader(path, std::move(src)));
}

LineReader::LineReader(std::string path, std::unique_ptr<ByteSource> src)
    : path_(std::move(path)), src_(std::move(src)) {}
LineReader::~LineReader() = default;

Status LineReader::Fill() {
  if (pos_ > 0) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  auto r = src_->Read(kChunk, &buf_);
  if (!r.ok()) return r.status().WithContext(path_ + ":" + std::to_string(line_number_ + 1));
  if (*r == 0) eof_ = true;
  return Status::OK();
}

Result<bool> LineReader::Next(std::string_view* line) {
  size_t scan_from = pos_;
  while (true) {
    const char* start = buf_.data() + scan_from;
    const void* nl = std::memchr(start, '\n', buf_.size() - scan_from);
    if (nl != nullptr) {
      size_t end = static_cast<size_t>(static_cast<const char*>(nl) - buf_.data());
      *line = std::string_view(buf_.data() + pos_, end - pos_);
      pos_ = end + 1;
      ++line_number_;
      return true;
    }
    if (eof_) {
      if (pos_ >= buf_.size()) return false;
      *line = std::string_view(buf_.data() + pos_, buf_.size() - pos_);
      pos_ = buf_.size();
      ++line_number_;
      return true;
    }
    size_t consumed = buf_.size() - pos_;
    MMIRAGE_TRY(Fill());
    scan_from = consumed;  // Fill moved the unread bytes to the front
  }
}

}  // namespace mmirage
