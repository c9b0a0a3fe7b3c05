// Merging shard outputs: the `shard_<n>` directories of a dataset output dir are concatenated in shard order into
// one output directory in the shards' output format, written through a temporary sibling and published atomically.
// jsonl: rows copied as bytes, never re-parsed. hf: the shards' Arrow files are hard-linked (copied across file
// systems) and listed in one state.json when all shards have the same features, else re-encoded with one inferred
// type. parquet: re-encoded into one data.parquet. Shards of different formats are an error.
// Thread-safety: none needed (one call at a time).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/env.h"
#include "util/status.h"

namespace mmirage::exec {

struct MergeOptions {
  // When set, exactly these shard ids are merged (in order) and every one must exist; shard directories with
  // other ids are ignored. When empty, every `shard_<digits>` directory is a candidate (merge-dir).
  std::optional<std::vector<int64_t>> shard_ids;
  // Without shard_ids: when set, `shard_<n>` folders with n >= num_shards are left out with a warning (stale
  // folders of an earlier run with more shards; `merge --allow-partial`).
  std::optional<int64_t> num_shards;
};

struct MergeReport {
  std::string dataset_name;  // basename of the input dir
  std::string input_dir, output_dir;
  int64_t shards_used = 0;
  int64_t rows = 0;
  int64_t skipped_invalid = 0;                     // shard dirs without data
  int64_t skipped_zero_rows = 0;                   // shard dirs with no rows
  std::vector<int64_t> ignored_beyond_num_shards;  // stale shard_<n> folders left out (MergeOptions::num_shards)
  int64_t error_rows = 0;  // lines of the shards' errors.jsonl, merged into <output>/errors.jsonl
  // "Merged dataset <name>: shards=… rows=… output=… skipped=… (invalid=…, zero_rows=…)"
  std::string Summary() const;
};

// Errors: kNotFound (no input dir / no shard dirs / a required shard missing), kInvalidArgument (unsafe output
// path, mix of split-map and single-table shards), kIOError.
Result<MergeReport> MergeDatasetDir(Env* env, const std::string& input_dir, const std::string& output_dir,
                                    const MergeOptions& options = {});

// True when `dir` directly contains at least one `shard_<digits>` directory (not `.tmp`).
bool HasShardDirs(Env* env, const std::string& dir);

}  // namespace mmirage::exec
