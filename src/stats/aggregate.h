// The `aggregate` object of `mmirage stats`: a pure transform of the per-shard records into run-wide totals and
// rates. The wall-clock span takes the earliest start and latest finish by time; `total_rows_processed` and
// `sum_model_load_seconds` are null only when no contributing shard reported a value (a measured zero stays 0);
// extension keys follow MMIRAGE's: `total_tokens_per_sec` (Σ output tokens / Σ inference runtime),
// `mean_cpu_util_pct` (rows-weighted, from the shards' `cpu_util_mean`) and `total_failed_rows` (Σ failed rows of
// the successful shards).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/value.h"
#include "state/shard_status.h"
#include "stats/shard_stats.h"

namespace mmirage {

// What the aggregate needs from one shard's status record.
struct ShardStatsInput {
  int64_t shard_id = 0;
  ShardStatus status = ShardStatus::kMissing;
  std::optional<double> started_at_seconds;  // parsed started_at (epoch seconds); nullopt when absent/unparsable
  std::optional<double> finished_at_seconds;
  std::optional<ShardStats> stats;  // nullopt when status.json has `stats: null`
  int64_t failed_rows = 0;
};

// The aggregate object, keys in MMIRAGE's order followed by the extensions. `shards` may be in any order;
// `num_shards` gives `total_shards`. Contributing shards: status success with stats.
Value AggregateStats(const std::vector<ShardStatsInput>& shards, int64_t num_shards);

// A human-readable multi-line view of an aggregate object (`mmirage stats --format table`).
std::string FormatAggregateTable(const Value& aggregate);

}  // namespace mmirage
