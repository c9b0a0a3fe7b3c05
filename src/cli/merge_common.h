// Merging every dataset of a config (used by `merge` and by `run` with merge: true). Errors are reported on stderr;
// MergeAllDatasets returns the exit code. One call at a time.
#pragma once

#include <string>

#include "config/config.h"
#include "util/env.h"

namespace mmirage::cli {

struct MergeTarget {
  std::string output_root;  // empty: <output_dir>/merged for each dataset; else <root>/<name>
};

// Refuses (exit 1, naming them) when a shard of 0..num_shards-1 is missing or not successful in the state
// directory, unless allow_partial. Logs one line per dataset. Returns the exit code.
int MergeAllDatasets(Env* env, const config::Config& config, const MergeTarget& target, bool allow_partial);

}  // namespace mmirage::cli
