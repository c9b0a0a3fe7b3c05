// Shard classification and the per-shard details shown by `mmirage check`. For each shard 0 … num_shards-1 the
// state directory's record (state/shard_state.h) is read and put in one class:
//   successful  status `success`
//   running     status `running` and the worker looks alive (heartbeat fresh; pid alive if it ran on this host)
//   failed      anything else, retryable: `failed`, `missing`, `unknown`, or a *stale* `running` record
//   exhausted   not successful, not (live) running, and spent attempts >= max_retries + 1 (an attempt that
//               committed new rows is not spent: ShardRecord::attempts_spent); attempts.log keeps the count
// Thread-safety: pure functions except ClassifyShards, which only reads the state directory.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/value.h"
#include "state/shard_status.h"
#include "util/env.h"

namespace mmirage::exec {

enum class ShardClass { kSuccessful, kRunning, kFailed, kExhausted, kSubmitted };
// "successful", "running", "failed", "exhausted", "submitted" (batch_api: with the provider; no liveness rule).
const char* ShardClassName(ShardClass c);

// The class of a record. `stale`: recorded `running` but the worker is known to be gone.
ShardClass ClassifyShard(ShardStatus status, bool stale, int64_t attempts, int64_t max_retries);

struct ShardDetail {
  int64_t shard_id = 0;
  ShardClass shard_class = ShardClass::kFailed;
  ShardStatus status = ShardStatus::kMissing;  // as recorded
  std::string stale_reason;    // non-empty for a stale `running` record ("process 123 on node1 is gone", …)
  int64_t attempts = 0;        // attempts made so far (status.json retry_count, or attempts.log when larger)
  int64_t attempts_spent = 0;  // attempts that count against max_retries (ShardRecord::attempts_spent)
  std::optional<int64_t> rows_done, rows_total;  // success: rows written; otherwise from progress.json
  int64_t rows_failed = 0;                       // rows recorded in errors.jsonl
  std::optional<std::string> hostname;
  std::optional<double> runtime_seconds;  // success/failed: the attempt's duration; running: so far
  std::optional<double> rows_per_sec;     // running: current rate (progress.json)
  std::optional<double> eta_seconds;      // running, when rows_total and a rate are known
  std::optional<std::string> error;
  Value batch;  // submitted (batch_api): the batches' progress from status.json, else null
  // Shown status: the recorded one, "stale" for a stale running record.
  std::string DisplayStatus() const;
};

struct ClassifyOptions {
  Env* env = nullptr;  // borrowed; default Env::Default()
  std::string state_dir;
  int64_t num_shards = 1;
  int64_t max_retries = 3;
  double heartbeat_timeout_seconds = 300;          // <= 0 disables the heartbeat test
  std::string hostname;                            // this machine; default env->Hostname()
  std::function<bool(int64_t pid)> process_alive;  // default: util/process/process_info.h ProcessAlive (kill(pid, 0))
};
// State directory, shard count, retry budget and heartbeat timeout of a loaded config.
ClassifyOptions ClassifyOptionsFromConfig(Env* env, const config::Config& config);

struct Classification {
  std::vector<ShardDetail> shards;                                         // by shard id
  std::vector<int64_t> successful, running, failed, exhausted, submitted;  // ids per class, ascending
  int64_t max_retries = 0;

  // Exit-0 rule: every shard successful.
  bool AllSucceeded() const { return successful.size() == shards.size(); }
  // {"total", "successful", "running", "failed", "max_retries_exceeded"} in this order, then
  // "submitted" when some shard is.
  Value SummaryValue() const;
  // {"summary": SummaryValue(), "shards": [ShardDetailValue…]} (`check --json`).
  Value ToValue() const;
};

// Never fails: unreadable records are `unknown` (ShardState::Read).
Classification ClassifyShards(const ClassifyOptions& options);

// One shard as JSON: shard_id, status, class, stale_reason (null when not stale), attempts, rows_done, rows_total,
// rows_failed, hostname, runtime_seconds, rows_per_sec, eta_seconds, error.
Value ShardDetailValue(const ShardDetail& d);

// Fixed-width table, one header line and one line per shard:
// SHARD STATUS ATTEMPTS ROWS FAILED HOST RUNTIME ETA. Absent values print as "-".
std::string FormatShardTable(const Classification& c);

// "45s", "12m05s", "3h04m", "2d03h" (compact, for the table).
std::string CompactDuration(double seconds);

}  // namespace mmirage::exec
