// Tuning advice computed from a run's data (the rules and their thresholds are listed in advice.cc). Each rule
// fires only on evidence and names it; no evidence, no advice.
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
  int shards = 0;            // successful shards with a working time
  std::optional<double> cv;  // coefficient of variation of the working times (σ / mean)
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
