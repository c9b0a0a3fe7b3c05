#include "pipeline/timeline_recorder.h"

namespace mmirage::pipeline {

TimelineRecorder::TimelineRecorder(Options options)
    : o_(std::move(options)), writer_(o_.env, o_.state_dir, o_.shard_id, o_.attempt) {
  TimelineEntry e;
  e.event = "start";
  e.host = o_.env->Hostname();
  e.pid = o_.env->Pid();
  e.slurm_job_id = o_.slurm_job_id;
  e.slurm_array_task_id = o_.slurm_array_task_id;
  e.interval = o_.interval_seconds;
  (void)writer_.Append(std::move(e));  // informational: a state directory that refuses it fails elsewhere
  last_us_ = o_.env->MonotonicMicros();
}

void TimelineRecorder::Loaded(double load_seconds, int64_t capacity) {
  std::lock_guard<std::mutex> l(mu_);
  if (ended_) return;
  TimelineEntry e;
  e.event = "loaded";
  e.load_seconds = load_seconds;
  e.capacity = capacity;
  (void)writer_.Append(std::move(e));
  last_us_ = o_.env->MonotonicMicros();
}

void TimelineRecorder::SetPoller(UtilizationPoller* poller) {
  std::lock_guard<std::mutex> l(mu_);
  poller_ = poller;
}

void TimelineRecorder::SetEventSource(std::function<std::vector<TimelineEntry>()> source) {
  std::lock_guard<std::mutex> l(mu_);
  event_source_ = std::move(source);
}

void TimelineRecorder::DrainEventsLocked() {
  if (!event_source_) return;
  for (TimelineEntry& e : event_source_()) (void)writer_.Append(std::move(e));
}

void TimelineRecorder::Tick() {
  std::lock_guard<std::mutex> l(mu_);
  if (ended_) return;
  DrainEventsLocked();
  if (static_cast<double>(o_.env->MonotonicMicros() - last_us_) < o_.interval_seconds * 1e6) return;
  SampleLocked();
}

void TimelineRecorder::SampleLocked(bool final_sample) {
  TimelineCounters c = o_.counters ? o_.counters() : TimelineCounters{};
  TimelineEntry e;
  e.rows = c.rows;
  e.failed = c.failed;
  e.resumed = c.resumed;
  e.in_tok = c.in_tok;
  e.out_tok = c.out_tok;
  e.in_flight = c.in_flight;
  e.window = c.window;
  e.rpm_limit = c.rpm_limit;
  e.tpm_limit = c.tpm_limit;
  if (poller_ != nullptr) {
    if (final_sample) poller_->SampleOnce();  // a reading at the very end, so the last interval has one
    UtilizationPoller::Interval iv = poller_->TakeInterval();
    e.gpu = iv.gpu_util;
    e.cpu = iv.cpu_util;
  }
  (void)writer_.Append(std::move(e));
  last_us_ = o_.env->MonotonicMicros();
}

void TimelineRecorder::End(const std::string& outcome, const std::string& error) {
  std::lock_guard<std::mutex> l(mu_);
  if (ended_) return;
  DrainEventsLocked();
  event_source_ = nullptr;
  SampleLocked(/*final_sample=*/true);
  poller_ = nullptr;
  ended_ = true;
  TimelineEntry e;
  e.event = "end";
  e.outcome = outcome;
  if (!error.empty()) e.error = error;
  (void)writer_.Append(std::move(e));
}

}  // namespace mmirage::pipeline
