// Datasets: resolving `path` (file, glob or split map) into parts, counting rows, contiguous sharding and
// streaming one shard's rows. Three input formats share this shape:
//  * JSONL (`type: JSONL`): a part's rows are the non-blank lines of its files (.gz/.zst decompressed);
//  * HF `save_to_disk` directories (`type: loadable`): a Dataset (its `state.json` lists the Arrow IPC stream files,
//    read in that order) or a DatasetDict (`dataset_dict.json` + one such directory per split: one part each);
//  * Parquet (`type: parquet`): files, a glob or a split map as for JSONL.
// Arrow and Parquet rows are decoded straight to Values (data/arrow_reader.h maps the Arrow types) one record batch
// at a time, never a whole table. A row's location is FILE:LINE for JSONL (1-based line) and FILE:ROW for Arrow and
// Parquet files (0-based row within that file, as HF indexes rows).
//
// A dataset is one or more *parts*: a single table (split "") or one part per split of a split map. Each part is
// an ordered list of files (a glob expands to its matches in sorted order). Each part is sharded separately
// (contiguous row ranges).
// Thread-safety: free functions are thread-safe; a RowStream is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/line_reader.h"
#include "data/value.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage {

enum class DataFormat { kJsonl, kArrowStream, kParquet };

struct DatasetPart {
  std::string split;               // "" for a single table, else the split name
  std::vector<std::string> files;  // in reading order
  DataFormat format = DataFormat::kJsonl;
};

// `path` is a file or a glob; `splits` (split name → file or glob) is used instead when non-empty.
// Errors: kNotFound "no file matches '<pattern>'" (per pattern), kInvalidArgument for an empty path.
Result<std::vector<DatasetPart>> ResolveDatasetParts(Env* env, const std::string& path,
                                                     const std::vector<std::pair<std::string, std::string>>& splits);
// The same for a config's `type`: "JSONL" as above, "parquet" (files/globs of Parquet files), "loadable" (`path` is
// a save_to_disk directory; split maps are not allowed: a DatasetDict directory gives one part per split).
// Errors name the offending file: a directory that is not a dataset, a state.json listing a missing file, ...
Result<std::vector<DatasetPart>> ResolveDatasetParts(Env* env, const std::string& type, const std::string& path,
                                                     const std::vector<std::pair<std::string, std::string>>& splits);

// Number of rows of a part (JSONL: non-blank lines, reading every file; Parquet: from the footers; Arrow streams:
// reading every file's record batches).
Result<uint64_t> CountRows(Env* env, const DatasetPart& part);

// Contiguous shard i of k over n rows: the first n % k shards get one extra row. REQUIRES: 0 <= i < k.
struct RowRange {
  uint64_t begin = 0;
  uint64_t end = 0;  // exclusive
  uint64_t size() const { return end - begin; }
};
RowRange ShardRange(uint64_t n, uint64_t num_shards, uint64_t shard_id);

class ArrowRowSource;

// One raw row: its index in the part, where it came from, and its text (valid until the next Next()).
// Arrow/Parquet rows come decoded: `value` points at the row object (the reader's; the caller may move from it) and
// `text` is empty.
struct RawRow {
  uint64_t index = 0;
  const std::string* file = nullptr;
  uint64_t line = 0;  // JSONL: 1-based line number in *file; Arrow/Parquet: 0-based row within *file
  std::string_view text;
  Value* value = nullptr;
};

// Streams the rows [range.begin, range.end) of a part. Rows before begin are skipped without parsing.
class RowStream {
 public:
  RowStream(Env* env, DatasetPart part, RowRange range);
  ~RowStream();
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
  std::unique_ptr<ArrowRowSource> arrow_;  // Arrow/Parquet parts
  Value arrow_row_;
};

// True if the line has only JSON whitespace.
bool IsBlankLine(std::string_view line);

}  // namespace mmirage
