// Arrow outputs: rows (Values) written as an HF `save_to_disk` Dataset directory or as one Parquet file, with one
// column type per column inferred from every row first (two passes over the rows; memory is one record batch).
// Type inference follows pyarrow/HF on Python values (rules in hf_writer.cc); {"bytes", "path"} structs become an
// HF Image feature; features are also stored in the Arrow schema metadata, so `load_dataset` restores them.
// Errors: two values that cannot share one type (a string and an int, a list and a struct, ...) name the column
// and the two rows (0-based among the rows written); I/O errors from the Env.
// Thread-safety: pure functions; files are written with the Env (the caller syncs the directory).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/value.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage {

enum class OutputFormat { kJsonl, kHf, kParquet };
// "hf" | "jsonl" | "parquet"; kInvalidArgument otherwise.
Result<OutputFormat> ParseOutputFormat(const std::string& name);

// A restartable sequence of row objects: Open() starts a pass from the first row, then Next() fills *row until it
// returns false.
class RowSource {
 public:
  virtual ~RowSource() = default;
  virtual Status Open() = 0;
  virtual Result<bool> Next(Value* row) = 0;
};

// The rows of a JSONL file in journal form (data/tagged_json.h: tagged bytes are restored).
std::unique_ptr<RowSource> JsonlRowSource(Env* env, std::string path);

// The rows of several parts in order (JSONL text rows are parsed, with tagged bytes restored).
std::unique_ptr<RowSource> PartsRowSource(Env* env, std::vector<DatasetPart> parts);

// The HF features JSON (old form) of the rows' inferred type, or the conflict error. For tests and merge.
Result<Value> InferFeatures(RowSource* rows);

// Writes the rows into `dir` (which must exist): kHf → `data-00000-of-00001.arrow`, `state.json`,
// `dataset_info.json`; kParquet → `data.parquet`. Returns the number of rows written. Files are synced.
Result<int64_t> WriteArrowOutput(Env* env, RowSource* rows, const std::string& dir, OutputFormat format);

// Writes `state.json` and `dataset_info.json` of an HF Dataset directory whose data files are `files` (names in
// `dir`) and whose features are `features` (used by merge, which links the shards' Arrow files).
Status WriteHfDatasetFiles(Env* env, const std::string& dir, const std::vector<std::string>& files,
                           const Value& features);

// Rough size in bytes of a value's data (strings and bytes dominate), for byte-bounded batches.
int64_t ApproxBytes(const Value& v);

// The features of an HF Dataset directory (from dataset_info.json), or kNotFound.
Result<Value> ReadHfFeatures(Env* env, const std::string& dir);

}  // namespace mmirage
