// Ray mode in the CLI: `run` without --shard-id (docs/ray.md). The orchestration itself is exec/ray_run.h.
// One command per process, on the main thread.
#pragma once

#include <cstdint>
#include <vector>

#include "config/config.h"
#include "util/status.h"

namespace mmirage::cli {

// Submits the unfinished shards as a Ray job, waits, retries within max_retries (execution_params.retry or
// --force-retry), merges when execution_params.merge. Returns the exit code: 0 when every shard succeeded (and
// merged) or when submitted without waiting; 128+signal after a stop signal (the job is stopped); 1 otherwise.
int RunRay(const config::Config& config, bool force_retry, bool stats);

// `check --retry` / `retry` in ray mode: one Ray job of exactly `ids`, waited for, without resubmission.
// Errors: the Jobs API unreachable or refusing the job, bad paths, a stop signal.
Status RunRayShards(const config::Config& config, const std::vector<int64_t>& ids, bool stats);

}  // namespace mmirage::cli
