// JSONL datasets: resolving `path` (file, glob or split map) into parts, counting rows, contiguous sharding and
// streaming one shard's rows.
//
// A dataset is one or more *parts*: a single table (split "") or one part per split of a split map. Each part is
// an ordered list of files (a glob expands to its matches in sorted order); its rows are the non-blank lines of
// those files in order. Each part is sharded separately (spec pipeline.md §3).
// Thread-safety: free functions are thread-safe; a RowStream is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/line_reader.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage {

struct DatasetPart {
  std::string split;               // "" for a single table, else the split name
  std::vector<std::string> files;  // in reading order
};

// `path` is a file or a glob; `splits` (split name → file or glob) is used instead when non-empty.
// Errors: kNotFound "no file matches '<pattern>'" (per pattern), kInvalidArgument for an empty path.
Result<std::vector<DatasetPart>> ResolveDatasetParts(Env* env, const std::string& path,
                                                     const std::vector<std::pair<std::string, std::string>>& splits);

// Number of rows (non-blank lines) of a part. Reads every file once.
Result<uint64_t> CountRows(Env* env, const DatasetPart& part);

// Contiguous shard i of k over n rows: the first n % k shards get one extra row. REQUIRES: 0 <= i < k.
struct RowRange {
  uint64_t begin = 0;
  uint64_t end = 0;  // exclusive
  uint64_t size() const { return end - begin; }
};
RowRange ShardRange(uint64_t n, uint64_t num_shards, uint64_t shard_id);

// One raw row: its index in the part, where it came from, and its text (valid until the next Next()).
struct RawRow {
  uint64_t index = 0;
  const std::string* file = nullptr;
  uint64_t line = 0;  // 1-based line number in *file
  std::string_view text;
};

// Streams the rows [range.begin, range.end) of a part. Rows before begin are skipped without parsing.
class RowStream {
 public:
  RowStream(Env* env, DatasetPart part, RowRange range);
  // true with *row filled, false when the range is exhausted. Errors: I/O or decompression, naming file:line.
  Result<bool> Next(RawRow* row);
  // Only rows whose index is in `indices` (sorted ascending; must outlive the stream) are returned.
  void SetIndexFilter(const std::vector<uint64_t>* indices) { filter_ = indices; }

 private:
  Env* env_;
  DatasetPart part_;
  RowRange range_;
  size_t file_index_ = 0;
  uint64_t next_index_ = 0;  // index of the next non-blank line
  std::unique_ptr<LineReader> reader_;
  const std::vector<uint64_t>* filter_ = nullptr;
  size_t filter_pos_ = 0;
};

// True if the line has only JSON whitespace.
bool IsBlankLine(std::string_view line);

}  // namespace mmirage
