// Liveness and progress files of a running shard, next to its status.json (format in docs/state_format.md):
//   <state_dir>/shard_<id>/heartbeat      "<epoch seconds>\n", rewritten every 5 s by the running worker
//   <state_dir>/shard_<id>/progress.json  {"rows_done", "rows_total", "rows_failed", "rows_per_sec",
//                                          "started_at", "updated_at", "pid"}, on every commit and every 5 s
// (state/progress_writer.h is the one writer of both while a shard runs). The heartbeat's time is its content,
// not its mtime. Both files are advisory: replaced atomically (a reader sees a whole old or new file), never
// fsynced (a crash may lose the last write).
// Thread-safety: stateless functions; one writer per shard.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "util/env.h"
#include "util/status.h"

namespace mmirage {

// Path of the shard's directory inside the state directory: <state_dir>/shard_<id>.
std::string ShardStateDir(const std::string& state_dir, int64_t shard_id);

// Writes env->NowMicros() as epoch seconds (3 decimals). Errors: those of WriteFileAtomically (kIOError, or
// kNotFound when the shard's directory does not exist; ShardState::MarkRunning creates it).
Status TouchHeartbeat(Env* env, const std::string& state_dir, int64_t shard_id);

// Seconds since the last TouchHeartbeat (env->NowMicros() − the stored time; may be negative across hosts with
// skewed clocks). nullopt when the file is missing or does not hold a number.
std::optional<double> HeartbeatAgeSeconds(Env* env, const std::string& state_dir, int64_t shard_id);

// Live progress of the current attempt of a shard. Rows count over all datasets of the shard.
struct ShardProgress {
  int64_t rows_done = 0;               // rows committed to the output so far (resumed rows included)
  std::optional<int64_t> rows_total;   // rows of the shard, when known
  int64_t rows_failed = 0;             // rows recorded in errors.jsonl so far
  std::optional<double> rows_per_sec;  // current rate of this attempt
  std::optional<double> started_at;    // epoch seconds: start of this attempt
  std::optional<double> updated_at;    // epoch seconds: when this file was written
  std::optional<int64_t> pid;          // the worker's process id
};

// Replaces progress.json (updated_at is set from env->NowMicros() when unset). Errors as TouchHeartbeat.
Status WriteShardProgress(Env* env, const std::string& state_dir, int64_t shard_id, const ShardProgress& progress);

// nullopt when the file is missing or is not a JSON object; fields of the wrong type are left at their defaults.
// `started_at`/`updated_at` may also be local ISO strings (as in status.json).
std::optional<ShardProgress> ReadShardProgress(Env* env, const std::string& state_dir, int64_t shard_id);

}  // namespace mmirage
