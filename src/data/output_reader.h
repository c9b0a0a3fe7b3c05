// Reading outputs back: a shard or merged directory in any output format (hf, parquet, jsonl; split maps with
// dataset_dict.json), an HF save_to_disk Dataset/DatasetDict directory, or a single .parquet, .arrow (IPC stream)
// or JSONL file. Used by `mmirage cat`, merge and the redo of failed rows.
// Thread-safety: free functions are thread-safe; an OutputRows is used by one thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage {

// The parts (one per split, split "" for a single table) of `path`. A directory holds `dataset_dict.json` (then one
// sub-directory per split), `state.json` (HF Dataset), `data.parquet` or `data.jsonl`. Errors name the path.
Result<std::vector<DatasetPart>> ResolveOutputParts(Env* env, const std::string& path);

// Rows of one part, each appended to *out as one JSON line ending in '\n'.
class OutputRows {
 public:
  OutputRows(Env* env, DatasetPart part);
  // Plain JSON (bytes as base64 strings). False at the end.
  Result<bool> NextJson(std::string* out);
  // The journal form (data/tagged_json.h): JSONL lines verbatim, decoded rows with bytes tagged.
  Result<bool> NextJournalLine(std::string* out);
  const DatasetPart& part() const { return part_; }

 private:
  Result<bool> Next(std::string* out, bool tagged);
  DatasetPart part_;
  RowStream stream_;
};

// The rows of the single-table output directory `dir` (not a split map). Errors: not an output directory.
Result<std::unique_ptr<OutputRows>> OpenOutputRows(Env* env, const std::string& dir);

}  // namespace mmirage
