// SLURM mode in the CLI: `run` without --shard-id, `submit`, and the submission
// that `check --retry` / `retry` use. The orchestration itself is exec/slurm_run.h. Errors: an exit code (RunSlurm)
// or a Status (SubmitSlurmShards). One command per process, on the main thread.
#pragma once

#include <cstdint>
#include <vector>

#include "cli/common.h"
#include "config/config.h"
#include "util/status.h"

namespace mmirage::cli {

// `run` in slurm mode: submit, wait, retry within max_retries (when execution_params.retry or --force-retry),
// merge when execution_params.merge. Returns the exit code: 0 when every shard succeeded (and merged), or when
// submitted without waiting; 1 otherwise, after a report of the failed shards on stderr.
int RunSlurm(const config::Config& config, bool force_retry, bool stats);

// Submits exactly `ids` as one SLURM array job (`--array=1,5,9`), without waiting. Logs the job id.
// Errors: an invalid SLURM configuration (kInvalidArgument), sbatch missing or failing.
Status SubmitSlurmShards(const config::Config& config, const std::vector<int64_t>& ids, bool stats);

// `mmirage submit --config C [--shard-ids LIST] [--wait] [--stats]`; --wait judges only the submitted shards.
Runner RegisterSubmit(CLI::App* app);

}  // namespace mmirage::cli
