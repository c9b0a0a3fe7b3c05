// The state directory (format in docs/state_format.md): per shard `<state_dir>/shard_<id>/status.json` (2-space
// indent, keys sorted, replaced atomically), one marker `.RUNNING` / `.SUBMITTED` / `.SUCCESS` / `.FAILED`, and
// `attempts.log`, an append-only line per attempt so that the retry budget survives a corrupted or deleted
// status.json.
// Thread-safety: a ShardState touches only its shard's directory; one writer process per shard at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "data/value.h"
#include "state/shard_status.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage {

struct ShardRecord {
  ShardStatus status = ShardStatus::kMissing;
  int64_t retry_count = 0;  // attempt number of the current/last attempt
  int64_t shard_id = 0;
  std::optional<std::string> started_at, finished_at, error;
  std::optional<std::string> hostname;
  std::optional<int64_t> pid;
  std::optional<std::string> slurm_job_id, slurm_array_task_id;
  Value datasets = Value::EmptyArray();  // [{"image_base_path": str|null, "output_dir": str}]
  Value stats;                           // object or null
  int64_t failed_rows = 0;               // extension: rows recorded in errors.jsonl
  Value batch;                           // extension, batch_api shards: progress of the provider batches or null
  int64_t attempts_logged = 0;           // attempt lines of attempts.log (not serialised)
  // The last attempt was ended by a stop signal (MarkInterrupted; its "interrupted" line in attempts.log). Not
  // serialised in status.json.
  bool last_attempt_interrupted = false;
  // Attempts that count against max_retries (not serialised): the consecutive attempts, since the last budget
  // reset and since the last attempt that made progress, that committed no new row. An attempt made progress
  // when its successor (or the shard's progress.json now) shows more rows committed than at its start; such an
  // attempt, and one stopped by a signal, refunds the budget. So interruptions never exhaust a shard that keeps
  // moving, while a poison shard (no progress) still stops. Attempt lines without a row count (older state) count.
  int64_t attempts_spent = 0;

  // status.json content (keys sorted, 2-space indent, trailing newline).
  std::string ToJson() const;
  // The record as a Value, keys in MMIRAGE's order (for `mmirage stats`).
  Value ToValue() const;
};

// Local ISO time "YYYY-MM-DDTHH:MM:SS[.ffffff]" (no zone), as Python's datetime.isoformat() writes it.
std::string LocalIsoTime(uint64_t micros_since_epoch);
// Parses that form back; nullopt if malformed.
std::optional<double> ParseLocalIsoTime(const std::string& s);

class ShardState {
 public:
  ShardState(Env* env, std::string state_dir, int64_t shard_id);

  // Never fails: a missing file gives status "missing", an unreadable one "unknown" (with retry_count taken from
  // attempts.log when present).
  ShardRecord Read() const;

  struct RunInfo {
    Value datasets = Value::EmptyArray();
    std::optional<std::string> slurm_job_id, slurm_array_task_id;
  };
  // Starts an attempt: appends to attempts.log, writes a fresh running record, sets .RUNNING.
  // Returns the attempt number (1 for the first).
  Result<int64_t> MarkRunning(const RunInfo& info);
  Status MarkSuccess(Value stats, int64_t failed_rows);
  // Gives the shard a fresh retry budget: appends "reset <local ISO time>" to attempts.log (fsynced), after which
  // attempts_spent counts from zero again (retry_count, the attempt number, keeps growing).
  Status ResetBudget();
  // Ends the attempt as failed with `error`; it spends the retry budget unless it made progress.
  Status MarkFailed(const std::string& error, int64_t failed_rows);
  // Ends an attempt that a stop signal (Ctrl-C, SIGTERM, a preemption) cut short: status.json as MarkFailed
  // writes it, and "interrupted <attempt>" appended to attempts.log (fsynced), so that the attempt does not spend
  // the retry budget and readers see ShardRecord::last_attempt_interrupted.
  Status MarkInterrupted(const std::string& error, int64_t failed_rows);
  // batch_api: the shard's requests are with the provider (neither success nor failure; marker .SUBMITTED).
  // `batch` describes them ({"batches_total", "batches_completed", "batches_in_progress", "batches_failed",
  // "requests_total", "requests_done"}); it is kept by the later MarkSuccess/MarkFailed.
  Status MarkSubmitted(Value batch);

  const std::string& dir() const { return dir_; }

 private:
  Status WriteRecord(const ShardRecord& r, const char* marker);
  Status MarkEnded(const std::string& error, int64_t failed_rows, bool interrupted);
  Env* env_;
  std::string dir_;
  int64_t shard_id_;
};

}  // namespace mmirage
