// Merging a batch_api config's results into one file in MMIRAGE's collector format, from the metadata receipts:
// one row per answered request with `source_index`, `custom_id`, `caption` | `conversations` |
// `status`+`error_message`, and token counts, sorted by source index. Every batch named by a receipt must be
// complete at the provider: nothing is written otherwise. The published shard datasets of `collect` are the better
// output; this is for users who depend on that file. Not thread-safe (one call at a time).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::exec {

struct BatchMergeReport {
  int64_t rows = 0;
  int64_t input_tokens = 0, output_tokens = 0;  // the providers' usage, summed over the rows that report it
};

// Reads the receipts (`metadata_paths`, else the batch_api processor's metadata_output_path patterns), downloads
// every batch's results and writes `output_path` atomically. Errors (the message is the one line to show):
// kInvalidArgument (no output path, no receipts, a receipt naming a provider the config lacks), kUnavailable (a
// batch not completed yet), kIOError (download or write).
Result<BatchMergeReport> MergeBatchResults(Env* env, const config::Config& config, const std::string& output_path,
                                           const std::vector<std::string>& metadata_paths);

}  // namespace mmirage::exec
