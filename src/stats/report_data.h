// What the run report (`mmirage stats --format table|html`) is made of: per shard its status record, its stats,
// its time series (state/timeline.h), the token usage of its rows (usage.jsonl of the published shard) and its
// errors (status.json, the attempts' end entries, errors.jsonl), plus the run's aggregate and a few config knobs
// that the advice names. LoadRunReport reads them; everything downstream (advice.h, report_html.h) is pure.
//
// Thread-safety: plain data; LoadRunReport touches only files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/value.h"
#include "state/shard_state.h"
#include "state/timeline.h"
#include "stats/shard_stats.h"
#include "util/env.h"

namespace mmirage {

// Σ over the rows of a shard's usage.jsonl files.
struct UsageSummary {
  int64_t rows = 0;  // lines (rows that called a model)
  int64_t prompt_tokens = 0, completion_tokens = 0;
  double MeanPrompt() const { return rows > 0 ? static_cast<double>(prompt_tokens) / static_cast<double>(rows) : 0; }
  double MeanCompletion() const {
    return rows > 0 ? static_cast<double>(completion_tokens) / static_cast<double>(rows) : 0;
  }
};

// Memory-pressure errors seen in a shard (row errors and attempt errors).
struct ErrorCounts {
  int64_t out_of_memory = 0;  // "out of memory", "OOM", CUDA/HIP allocation failures
  int64_t kv_cache_full = 0;  // "KV cache is full", "no memory slot", context overflow while decoding
  int64_t other = 0;
  std::string example;  // first memory-pressure message seen
};

// One attempt of a shard, from its timeline (or, without one, from status.json for the last attempt).
struct AttemptSpan {
  int64_t attempt = 0;
  double start = 0;              // epoch seconds
  std::optional<double> loaded;  // end of the model load
  double end = 0;                // end entry, else the last entry (killed) or now (running)
  std::string outcome;           // success | failed | interrupted | killed | running
  std::optional<std::string> error, host, slurm_job_id, slurm_array_task_id;
  std::optional<int64_t> pid, capacity;
  std::optional<double> load_seconds;
};

struct ShardReport {
  int64_t shard_id = 0;
  ShardRecord record;
  std::optional<ShardStats> stats;  // successful shards
  std::vector<TimelineEntry> timeline;
  int64_t timeline_bad_lines = 0;
  std::vector<AttemptSpan> attempts;  // in attempt order
  std::optional<UsageSummary> usage;  // when a published shard has usage.jsonl
  ErrorCounts errors;
};

// Config values the advice talks about (filled by the CLI from the config).
struct TuningKnobs {
  int64_t batch_size = 1;
  std::optional<int64_t> max_running_requests;  // extra_engine_args.max_running_requests of the llm processor
  std::optional<int64_t> max_new_tokens;        // default_sampling_params.max_new_tokens
};

struct RunReport {
  std::string config_path;
  int64_t num_shards = 0;
  double generated_at = 0;  // epoch seconds
  std::vector<ShardReport> shards;
  Value per_shard;  // as `mmirage stats` prints it
  Value aggregate;  // stats/aggregate.h
  TuningKnobs knobs;
  std::string tuned_by;                   // the config's `tuned_by` marker (`mmirage tune --write`); "" when not tuned
  double timeline_interval_seconds = 10;  // nominal sample period (gaps are judged against it)
};

// Fills shards[*].timeline/attempts/usage/errors from the state directory and the shards' published outputs
// (record.datasets[*].output_dir). Missing or unreadable files leave the fields empty.
void LoadShardDetails(Env* env, const std::string& state_dir, ShardReport* shard);

// The attempts of a shard (pure; `now` for a running attempt without an end).
std::vector<AttemptSpan> AttemptsFromTimeline(const std::vector<TimelineEntry>& timeline, const ShardRecord& record,
                                              double now);

// Classifies one error message into *counts.
void CountError(const std::string& message, ErrorCounts* counts);

}  // namespace mmirage
