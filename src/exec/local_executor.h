// Local execution of every shard of a config (`mmirage run` with retry): each shard runs as a child process
// (`<this binary> run --config C --shard-id N`), `local_workers` at a time; shards that fail are retried while
// their attempts (counted durably in the state directory) stay within max_retries + 1; successful shards are
// never re-run. A retried shard resumes at the row from its journal. Thread-safety: one call at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/env.h"

namespace mmirage::exec {

struct LocalRunOptions {
  std::string config_path;  // absolute
  std::string binary;       // this binary's absolute path
  std::string log_level = "INFO";
  bool collect_stats = false;      // --stats for the workers
  std::vector<int64_t> shard_ids;  // only these shards (empty: every shard)
  bool stdout_to_stderr = false;   // workers' stdout to our stderr (keeps our stdout machine-readable)
};

// Returns the exit code: 0 when every shard succeeded, 1 when some exhausted their attempts, 128 + signal when
// stopped by SIGINT/SIGTERM (forwarded to the workers).
int RunAllShardsLocally(Env* env, const config::Config& config, const LocalRunOptions& options);

}  // namespace mmirage::exec
