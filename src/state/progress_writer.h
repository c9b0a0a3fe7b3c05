// ShardProgressWriter: the one writer of a running shard's liveness and progress files (state/heartbeat.h,
// format in docs/state_format.md) and of its progress display. While it lives, a background thread rewrites
// `heartbeat` (often enough that a live worker never looks stale) and `progress.json` (every
// progress_interval_seconds, and at once on Committed()), calls on_tick every second and shows a live terminal
// line or periodic log lines. Both files are replaced atomically but never fsynced (advisory); write errors are
// ignored.
// Thread-safety: the counters are atomics written by the pipeline's threads; Committed() may be called from any
// thread. Ownership: borrows env and counters, which must outlive the writer.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "util/env.h"

namespace mmirage {

// The heartbeat period for a stale timeout (execution_params.heartbeat_timeout_seconds): 5 s, or timeout / 3 when
// that is shorter (a checker then sees at least two missed beats before calling a live worker stale).
double HeartbeatIntervalSeconds(double stale_timeout_seconds);

class ShardProgressWriter;

// Live counters of the running shard (rows over all its datasets).
struct ShardProgressCounters {
  std::atomic<int64_t> rows_done{0};     // rows handled (written or failed), resumed rows included
  std::atomic<int64_t> rows_failed{0};   // rows recorded in errors.jsonl so far
  std::atomic<int64_t> rows_total{-1};   // -1: unknown (a single-shard run does not count rows first)
  std::atomic<int64_t> rows_resumed{0};  // of rows_done: kept from an earlier attempt

  // The pipeline calls this after each commit of the output: progress.json shows the committed rows before it
  // returns (so that a kill right after a commit still leaves evidence of progress for the retry budget).
  void Committed();

  std::atomic<ShardProgressWriter*> writer{nullptr};  // attached by the writer while it lives
};

struct ShardProgressOptions {
  Env* env = nullptr;  // borrowed
  std::string state_dir;
  int64_t shard_id = 0;
  ShardProgressCounters* counters = nullptr;  // borrowed; the writer attaches itself for Committed()
  enum class Display { kQuiet, kLog, kTerminal };
  Display display = Display::kQuiet;     // kLog: a LOG_INFO line every log_interval_seconds; kTerminal: live line
  double stale_timeout_seconds = 300;    // sets the heartbeat period (HeartbeatIntervalSeconds)
  double progress_interval_seconds = 5;  // progress.json at least this often (and on every commit)
  double log_interval_seconds = 10;
  double tick_seconds = 1;  // thread period (on_tick, terminal line); lowered to the heartbeat period
  // Appended to the display line after the rate (", 812 tok/s, 3 cached"); argument: seconds since the start.
  std::function<std::string(double)> line_extra;
  std::function<void()> on_tick;  // called on the writer's thread every tick
};

class ShardProgressWriter {
 public:
  // Writes progress.json (not the previous attempt's) and the heartbeat, then starts the thread.
  explicit ShardProgressWriter(ShardProgressOptions options);
  // Stops the thread and writes progress.json a last time: for a failed shard it shows how far the attempt got.
  ~ShardProgressWriter();
  ShardProgressWriter(const ShardProgressWriter&) = delete;
  ShardProgressWriter& operator=(const ShardProgressWriter&) = delete;

  // Rewrites progress.json now (ShardProgressCounters::Committed calls it).
  void WriteProgressNow();

  // "shard 2: 1200/5000 rows (24%), 35.2 rows/s, 812 tok/s, 3 failed, ETA 1m48s"
  std::string DisplayLine() const;

 private:
  void Loop();
  void Tick();  // one period of the thread: the files when due, on_tick, the display

  ShardProgressOptions o_;
  uint64_t start_us_;       // env->MonotonicMicros() at construction
  uint64_t started_at_us_;  // env->NowMicros() at construction (wall clock, for progress.json)
  uint64_t heartbeat_interval_us_;
  uint64_t last_heartbeat_us_ = 0, last_progress_us_ = 0, last_log_us_ = 0;
  std::mutex write_mu_;  // one progress.json write at a time (thread and Committed())
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace mmirage
