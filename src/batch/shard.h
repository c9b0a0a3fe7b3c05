// The lifecycle of a shard whose outputs go to a provider batch API (batch_api): submit (render, chunk, journal,
// send), collect (download finished batches, answers into rows, next stage), publish (output_schema rendered with
// the real values, written as a normal dataset shard), or export (--export-prompts: requests written, nothing sent,
// no state changed). Deterministic requests answered by the generation cache are never submitted.
// Steps: batch/submit.h, batch/collect.h, batch/publish.h, batch/cache.h; shared state batch/context.h.
// Errors: provider and I/O errors fail the call; provider failures and unparsable answers are row errors.
// A crash anywhere loses nothing and never submits a chunk twice (the journal, batch/journal.h, is written before
// each step acts). Not thread-safe; one call per process and shard.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/config.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::batch {

struct BatchShardOptions {
  Env* env = nullptr;
  const config::Config* config = nullptr;
  int64_t shard_id = 0;
  config::VarLookup vars;        // the API key; default: the process environment
  std::string export_prompts;    // non-empty: dry run into this file stem or directory
  bool resubmit_failed = false;  // submit the requests that failed at the provider again
  bool collect_only = false;     // `collect`: never submit stage 0 (a shard not submitted is an error)
  std::optional<bool> wait;      // override of the processor's `wait`
  std::optional<std::string> slurm_job_id, slurm_array_task_id;
  double retry_base_seconds = 1.0;  // HTTP backoff start
};

enum class BatchOutcome {
  kExported,    // dry run written
  kSubmitted,   // stage 0 submitted by this call
  kInProgress,  // some batch is still running at the provider (exit 75)
  kComplete,    // published, status success
};

struct BatchShardReport {
  BatchOutcome outcome = BatchOutcome::kInProgress;
  int64_t rows_written = 0, rows_failed = 0;
  int64_t batches_total = 0, batches_done = 0, batches_failed = 0;
  int64_t requests_total = 0, requests_done = 0;
  int64_t requests_cached = 0;  // answered by the generation cache (never submitted), at publication
  std::string export_path;
};

// True when some output of `config` goes to batch_api.
bool IsBatchConfig(const config::Config& config);

// Every batch the shards' journals hold as submitted, shard by shard in submission order (for `check`).
struct SubmittedBatch {
  int64_t shard_id = 0;
  std::string name;      // text-chunk-000001
  std::string batch_id;  // the provider's
  int64_t requests = 0;
};
Result<std::vector<SubmittedBatch>> ListSubmittedBatches(Env* env, const config::Config& config);

// Runs the next step of the shard's lifecycle (see above). Errors: a bad config for batch runs, a missing key, a
// provider error (401, a rejected oversized request…), too many failed rows; the status file says failed with the
// same message (except in export mode), and what was journaled stays for the next run.
Result<BatchShardReport> RunBatchShard(const BatchShardOptions& options);

}  // namespace mmirage::batch
