// Ray mode in the CLI: `run` without --shard-id (docs/ray.md). The orchestration itself is exec/ray_run.h.
// One command per process, on the main thread.
#pragma once

#include "config/config.h"

namespace mmirage::cli {

// Submits the unfinished shards as a Ray job, waits, retries within max_retries (execution_params.retry or
// --force-retry), merges when execution_params.merge. Returns the exit code: 0 when every shard succeeded (and
// merged) or when submitted without waiting; 128+signal after a stop signal (the job is stopped); 1 otherwise.
int RunRay(const config::Config& config, bool force_retry, bool stats);

}  // namespace mmirage::cli
