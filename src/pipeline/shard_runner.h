// RunShard: the shard worker: for shard `shard_id`, every dataset of the config flows read → extract → render →
// write, each into its own output_dir, published atomically per dataset, with the state directory tracking the
// attempt. Row failures are recorded in `<output_dir>/shard_<id>/errors.jsonl` and never written as blank rows;
// the shard fails when their number exceeds execution_params.max_failed_rows. Fatal errors (unreadable dataset,
// I/O error on the output) fail the shard; nothing partial is published. Not thread-safe; one call per process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "pipeline/stream_scheduler.h"
#include "process/output_generator.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::pipeline {

struct ShardRunOptions {
  Env* env = nullptr;
  const config::Config* config = nullptr;
  int64_t shard_id = 0;
  std::optional<std::string> slurm_job_id;  // recorded in status.json
  std::optional<std::string> slurm_array_task_id;
  bool collect_gpu_stats = false;                   // --stats / MMIRAGE_COLLECT_STATS=1
  bool progress_on_terminal = false;                // a live progress line (stderr is a terminal)
  bool quiet = false;                               // no progress display at all (--quiet)
  std::optional<std::string> cuda_visible_devices;  // picks the GPUs the poller watches
  double timeline_interval_seconds = 10;            // timeline.jsonl sample period (MMIRAGE_TIMELINE_INTERVAL_SECONDS)
  // Makes the engines of model outputs; default: process::llm::DefaultEngineFactory() (by backend). Injectable
  // for tests.
  process::EngineFactory engine_factory;
};

struct ShardRunReport {
  int64_t attempt = 0;
  int64_t rows_written = 0;
  int64_t rows_failed = 0;
  std::vector<std::string> output_dirs;  // published shard directories
};

// Checks that the config can run in this build (every output has a processor this build runs, model files
// exist). Called before any state is written, so a config that cannot run consumes no retry budget.
Status CheckRunnable(const config::Config& config);

// The streaming scheduler's options for `config` over engines with `capacity` parallel slots (window, flush size,
// row order): the one place they are chosen, for runs and for `tune`'s trials alike.
StreamOptions StreamOptionsFor(const config::Config& config, int capacity);

// OK iff the shard ended with status success. On error the status file says failed with the same message.
Result<ShardRunReport> RunShard(const ShardRunOptions& options);

}  // namespace mmirage::pipeline
