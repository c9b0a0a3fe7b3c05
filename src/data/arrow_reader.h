// Arrow inputs: HF `save_to_disk` directories (Arrow IPC stream files) and Parquet files, decoded to row Values one
// record batch at a time (never a whole table in memory). Arrow itself stays behind this header (pimpl).
//
// Arrow type → Value: null → null; bool → bool; int8..int64, uint8..uint32 → int; uint64 → int (double above
// INT64_MAX); float16/32/64 → double; string, large_string, string_view → string; binary, large_binary,
// fixed_size_binary, binary_view → bytes; list, large_list, fixed_size_list, list_view → array; struct → object
// (fields in schema order; HF Image columns arrive as {"bytes", "path"}); map → object when every key is a string,
// else an array of [key, value] pairs; dictionary → its decoded values; timestamp → ISO 8601 string
// ("2024-01-02T03:04:05.123456", "+00:00" appended when the type has a time zone; the instant is shown in UTC);
// date32/date64 → "YYYY-MM-DD"; time32/time64 → "HH:MM:SS[.fff…]"; decimal128/256 → its exact decimal string;
// duration → int (count of its unit); extension types → their storage. Anything else (unions, intervals,
// run-end-encoded) is a clear error naming the column and the type.
// Thread-safety: an ArrowRowSource is used by one thread; free functions are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/value.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage {

struct DatasetPart;
struct RowRange;

// The parts of a save_to_disk directory: a Dataset (one part, split "", the files state.json lists) or a
// DatasetDict (dataset_dict.json: one part per split, in its order). Errors (one line, naming the file):
// kInvalidArgument when `dir` is not such a directory, kNotFound when state.json lists a file that is absent,
// kCorruption for unreadable JSON.
Result<std::vector<DatasetPart>> ResolveHfDataset(Env* env, const std::string& dir);

// Rows of an Arrow-stream or Parquet part (Parquet: footers only; Arrow streams: reads the record batches).
Result<uint64_t> CountArrowRows(const DatasetPart& part);

class ArrowRowSource {
 public:
  // Rows [range.begin, range.end) of `part` (kArrowStream or kParquet). Whole record batches (Parquet: row
  // groups) before begin are skipped without decoding.
  ArrowRowSource(const DatasetPart& part, const RowRange& range);
  ~ArrowRowSource();
  ArrowRowSource(const ArrowRowSource&) = delete;
  ArrowRowSource& operator=(const ArrowRowSource&) = delete;

  // Fills *row with the next row object, *file_index with the index of its file in the part, *row_in_file with its
  // 0-based row within that file and *index with its index in the part. False at the end of the range.
  // Errors: kCorruption naming the file (truncated or corrupt file, unsupported column type).
  Result<bool> Next(Value* row, size_t* file_index, uint64_t* row_in_file, uint64_t* index);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mmirage
