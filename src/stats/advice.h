// Tuning advice computed from a run's data, following the original's tuning table (spec seed/, "Tuning for
// throughput"). Each rule fires only on evidence and names it:
//
//   gpu_util_low      mean GPU utilisation of the samples < 60 %; with few requests in flight (mean in-flight
//                     < 80 % of the engine's parallel slots) → raise batch_size (rows read ahead); with the slots
//                     full → raise max_running_requests
//   gpu_not_sampled   the engine ran on GPUs but no utilisation was sampled → run with --stats
//   stall             an attempt's longest stretch without new rows or output tokens ≥ max(3 sample periods, 30 s): before the model
//                     was loaded → model load; after → I/O (reading, committing) or a stuck request
//   cpu_contention    a shard's machine CPU ≥ 90 % while mmirage itself used < 90 % of one core → other processes
//                     compete: dedicated cores (--cpus-per-task, fewer local_workers), n_threads
//   model_load        Σ model load ≥ 20 % of Σ shard runtime (and ≥ 10 s) → fewer, larger shards or a shared server
//   shard_skew        the slowest shard's working time (ShardWorkSeconds) ≥ 1.5 × the median (≥ 2 shards) → skew, explained
//                     by its rows' prompt/output lengths (usage.jsonl) or row count when they differ by ≥ 1.3 ×
//   memory_pressure   out-of-memory or KV-cache-full errors → smaller batch_size / max_running_requests or
//                     max_new_tokens
//   tokens_per_gpu_low  tokens/s/GPU < 1000 (the seed's typical range starts there) → tune extra_engine_args
//   attempts_lost     attempts that failed, were interrupted or killed (the timeline marks them)
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "stats/report_data.h"

namespace mmirage {

struct Advice {
  std::string rule;      // one of the ids above
  std::string level;     // "warn" (costs throughput) or "info"
  std::string message;   // what to change
  std::string evidence;  // the numbers that made the rule fire
};

std::vector<Advice> ComputeAdvice(const RunReport& run);

// "Advice:\n  [warn] message\n         evidence: ...\n" (or a line saying that no rule fired).
std::string FormatAdviceText(const std::vector<Advice>& advice);

// A successful shard's working time: Σ over its attempts of (end − end of model load) from the timeline, else the
// inference runtime of its stats; nullopt for other shards.
std::optional<double> ShardWorkSeconds(const ShardReport& shard);

// Spread of the successful shards' working times (skew check of the report).
struct SkewSummary {
  int shards = 0;                       // successful shards with a working time
  std::optional<double> cv;             // coefficient of variation of the working times (σ / mean)
  std::optional<double> median_seconds;
  int64_t slowest_shard = -1;
  double slowest_seconds = 0;
  std::optional<double> slowest_vs_median;  // slowest / median
  // Slowest shard vs the median of the shards, for the rows' mean prompt and output tokens (usage.jsonl) and the
  // row count; nullopt without data.
  std::optional<double> prompt_ratio, output_ratio, rows_ratio;
  // Pearson correlation over shards between working time and Σ output tokens (≥ 3 shards).
  std::optional<double> corr_time_output_tokens, corr_time_prompt_tokens;
};
SkewSummary ComputeSkew(const RunReport& run);

// Median of a non-empty list (mean of the two middle values for an even count).
double Median(std::vector<double> v);

}  // namespace mmirage
