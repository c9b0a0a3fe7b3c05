// LineReader: streams the lines of a text file, transparently decompressing `.gz` (zlib) and `.zst` (zstd) by
// file extension. Never loads the file whole: memory is one read buffer plus the longest line.
// Lines are returned without their '\n' (a trailing '\r' is kept: JSON parsing treats it as whitespace).
// Not thread-safe; one reader per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "util/env.h"
#include "util/status.h"

namespace mmirage {

class ByteSource;

class LineReader {
 public:
  // Errors: kNotFound / kIOError naming the path.
  static Result<std::unique_ptr<LineReader>> Open(Env* env, const std::string& path);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // On success *line is the next line (valid until the next call) and the result is true; false at end of
  // file. Errors: kIOError / kCorruption (bad compressed stream) naming path and line.
  Result<bool> Next(std::string_view* line);
  // 1-based number of the line last returned by Next.
  uint64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }

 private:
  LineReader(std::string path, std::unique_ptr<ByteSource> src);
  Status Fill();

  std::string path_;
  std::unique_ptr<ByteSource> src_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  uint64_t line_number_ = 0;
};

}  // namespace mmirage
