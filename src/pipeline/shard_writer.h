// ShardWriter: writes one dataset's output for one shard and publishes it atomically (model: LevelDB's
// TableBuilder — sticky status, ends in Finish() or Abandon()).
//
// Layout while writing: `<output_dir>/shard_<id>.tmp.<host>.<pid>.<hex>/` holding `data.jsonl` (or
// `<split>/data.jsonl` per split, plus `dataset_dict.json`) and `errors.jsonl`. Finish() syncs every file and the
// directory, then swaps it into `<output_dir>/shard_<id>` with one atomic exchange (renameat2), so a reader sees
// the old complete shard or the new complete shard, never a partial one; the old content is then removed.
// Readers (merge) ignore `*.tmp.*` directories. Not thread-safe: one writer thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/value.h"
#include "pipeline/row_transform.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::pipeline {

class ShardWriter {
 public:
  // `splits`: the split names of the dataset ("" alone for a single table).
  static Result<std::unique_ptr<ShardWriter>> Open(Env* env, const std::string& output_dir, int64_t shard_id,
                                                   const std::vector<std::string>& splits);
  ~ShardWriter();  // abandons when neither Finish nor Abandon was called
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Appends one output row (compact JSON line) to the split's file. REQUIRES: split was given to Open.
  Status Add(size_t split_index, const Value& row);
  // Appends `rows` already-serialised rows (one JSON object per line, each ending in '\n').
  Status AddSerialized(size_t split_index, std::string_view lines, int64_t rows);
  // Appends one failed row to errors.jsonl: {"row_index", "split", "source", "stage", "message"}.
  Status AddError(size_t split_index, uint64_t row_index, const std::string& source, const RowError& error);

  // Sync, publish atomically. After Finish the writer is closed.
  Status Finish();
  // Removes the temporary directory.
  void Abandon();

  int64_t rows_written() const { return rows_written_; }
  int64_t rows_failed() const { return rows_failed_; }
  const std::string& final_dir() const { return final_dir_; }
  Status status() const { return status_; }

 private:
  ShardWriter(Env* env, std::string final_dir, std::string tmp_dir);

  Env* env_;
  std::string final_dir_;
  std::string tmp_dir_;
  std::vector<std::string> splits_;
  std::vector<std::unique_ptr<WritableFile>> files_;  // one per split
  std::unique_ptr<WritableFile> errors_;
  std::string line_;                                  // reused serialisation buffer
  int64_t rows_written_ = 0;
  int64_t rows_failed_ = 0;
  bool closed_ = false;
  Status status_;
};

}  // namespace mmirage::pipeline
