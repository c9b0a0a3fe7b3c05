// The background thread:
//   * rewrites `heartbeat` at most every heartbeat_interval_seconds (5 s, or a third of the stale timeout when that
//     is shorter, so that a live worker never looks stale),
//   * rewrites `progress.json` every progress_interval_seconds (5 s), and at once on Committed(),
//   * calls on_tick every tick (1 s) — the pipeline's time series — and shows a live terminal line every tick or a
//     log line every log_interval_seconds.
// Both files are advisory: they are replaced atomically (a reader sees a whole old or new file) but never fsynced,
// so a shard costs no fsync per second on a shared file system; the syncs of a shard are those of its commits and
// of status.json. A crash may lose the last few seconds of them, which the stale timeout (minutes) absorbs.
// Write errors are ignored (a full disk shows up in the commit, which is what matters).

#include "state/progress_writer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "data/json.h"
#include "state/heartbeat.h"
#include "util/log.h"

namespace mmirage {
namespace {

constexpr double kHeartbeatSeconds = 5;

uint64_t Micros(double seconds) { return static_cast<uint64_t>(std::max(0.0, seconds) * 1e6); }

double Round(double x, double scale) { return std::round(x * scale) / scale; }

}  // namespace

double HeartbeatIntervalSeconds(double stale_timeout_seconds) {
  if (!(stale_timeout_seconds > 0)) return kHeartbeatSeconds;  // no stale test: any period will do
  return std::min(kHeartbeatSeconds, stale_timeout_seconds / 3);
}

void ShardProgressCounters::Committed() {
  if (ShardProgressWriter* w = writer.load()) w->WriteProgressNow();
}

ShardProgressWriter::ShardProgressWriter(ShardProgressOptions options)
    : o_(std::move(options)),
      start_us_(o_.env->MonotonicMicros()),
      started_at_us_(o_.env->NowMicros()),
      heartbeat_interval_us_(Micros(HeartbeatIntervalSeconds(o_.stale_timeout_seconds))) {
  o_.tick_seconds = std::min(o_.tick_seconds, HeartbeatIntervalSeconds(o_.stale_timeout_seconds));
  WriteProgressNow();  // not the previous attempt's progress
  (void)TouchHeartbeat(o_.env, o_.state_dir, o_.shard_id);
  last_heartbeat_us_ = last_log_us_ = start_us_;
  o_.counters->writer.store(this);
  thread_ = std::thread([this] { Loop(); });
}

ShardProgressWriter::~ShardProgressWriter() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  o_.counters->writer.store(nullptr);
  WriteProgressNow();
  if (o_.display == ShardProgressOptions::Display::kTerminal) std::fputs("\n", stderr);
}

void ShardProgressWriter::Loop() {
  const auto period = std::chrono::microseconds(std::max<uint64_t>(1000, Micros(o_.tick_seconds)));
  std::unique_lock<std::mutex> l(mu_);
  while (!cv_.wait_for(l, period, [&] { return stop_; })) {
    l.unlock();
    Tick();
    l.lock();
  }
}

void ShardProgressWriter::Tick() {
  uint64_t now = o_.env->MonotonicMicros();
  bool progress_due;
  {
    std::lock_guard<std::mutex> l(write_mu_);
    progress_due = now - last_progress_us_ >= Micros(o_.progress_interval_seconds);
  }
  if (progress_due) WriteProgressNow();
  if (now - last_heartbeat_us_ >= heartbeat_interval_us_) {
    (void)TouchHeartbeat(o_.env, o_.state_dir, o_.shard_id);  // a silent `running` shard is stale, not running
    last_heartbeat_us_ = now;
  }
  if (o_.on_tick) o_.on_tick();
  if (o_.display == ShardProgressOptions::Display::kTerminal) {
    std::fprintf(stderr, "\r\033[K%s", DisplayLine().c_str());
    std::fflush(stderr);
  } else if (o_.display == ShardProgressOptions::Display::kLog &&
             now - last_log_us_ >= Micros(o_.log_interval_seconds)) {
    LOG_INFO(DisplayLine());
    last_log_us_ = now;
  }
}

void ShardProgressWriter::WriteProgressNow() {
  std::lock_guard<std::mutex> l(write_mu_);
  const ShardProgressCounters& c = *o_.counters;
  ShardProgress p;
  p.rows_done = c.rows_done;
  if (int64_t total = c.rows_total; total >= 0) p.rows_total = total;
  p.rows_failed = c.rows_failed;
  double secs = static_cast<double>(o_.env->MonotonicMicros() - start_us_) / 1e6;
  p.rows_per_sec = secs > 0 ? static_cast<double>(p.rows_done) / secs : 0.0;
  p.started_at = Round(static_cast<double>(started_at_us_) / 1e6, 1000);
  p.pid = o_.env->Pid();
  (void)WriteShardProgress(o_.env, o_.state_dir, o_.shard_id, p);
  last_progress_us_ = o_.env->MonotonicMicros();
}

std::string ShardProgressWriter::DisplayLine() const {
  const ShardProgressCounters& c = *o_.counters;
  int64_t done = c.rows_done, total = c.rows_total, failed = c.rows_failed;
  double secs = static_cast<double>(o_.env->MonotonicMicros() - start_us_) / 1e6;
  double rps = secs > 0 ? Round(static_cast<double>(done) / secs, 100) : 0.0;
  std::string line = "shard " + std::to_string(o_.shard_id) + ": " + std::to_string(done);
  if (total >= 0) {
    line += "/" + std::to_string(total) + " rows (" + std::to_string(total > 0 ? done * 100 / total : 100) + "%)";
  } else {
    line += " rows";
  }
  line += ", " + FormatDouble(rps) + " rows/s";
  if (o_.line_extra) line += o_.line_extra(secs);
  line += ", " + std::to_string(failed) + " failed";
  if (total > done && rps > 0) {
    int64_t eta = static_cast<int64_t>(static_cast<double>(total - done) / rps);
    line += ", ETA " + (eta >= 3600 ? std::to_string(eta / 3600) + "h" : "") +
            (eta >= 60 ? std::to_string(eta / 60 % 60) + "m" : "") + std::to_string(eta % 60) + "s";
  }
  return line;
}

}  // namespace mmirage
