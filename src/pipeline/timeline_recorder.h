// Feeds a running shard's time series (state/timeline.h): the attempt's start, the end of the model load, a
// sample every `interval_seconds` (from the progress thread's 1 s tick) and a last sample with the end of the
// attempt. Counters come from a callback so that the recorder does not know the runner's types.
//
// Thread-safety: every method may be called from any thread (one mutex); the poller given to SetPoller must stay
// alive until SetPoller(nullptr) or End().
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "state/timeline.h"
#include "stats/utilization.h"
#include "util/env.h"

namespace mmirage::pipeline {

struct TimelineCounters {
  int64_t rows = 0, failed = 0, resumed = 0, in_tok = 0, out_tok = 0;
  std::optional<int64_t> in_flight;
  std::optional<int64_t> window;  // hosted APIs: admission (state/timeline.h)
  std::optional<double> rpm_limit, tpm_limit;
};

class TimelineRecorder {
 public:
  struct Options {
    Env* env = nullptr;
    std::string state_dir;
    int64_t shard_id = 0;
    int64_t attempt = 0;
    double interval_seconds = 10;
    std::function<TimelineCounters()> counters;
    std::optional<std::string> slurm_job_id, slurm_array_task_id;
  };
  // Writes the "start" entry.
  explicit TimelineRecorder(Options options);

  void Loaded(double load_seconds, int64_t capacity);
  void SetPoller(UtilizationPoller* poller);
  // Where events other than the recorder's own come from (fleet replica health): polled at each Tick and at End,
  // each entry written as is (its own t). nullptr stops the polling; End stops it too.
  void SetEventSource(std::function<std::vector<TimelineEntry>()> source);
  // Called about every second; writes a sample when the interval has passed.
  void Tick();
  // A last sample and the "end" entry (outcome: success | failed | interrupted); later calls do nothing.
  void End(const std::string& outcome, const std::string& error = "");

 private:
  void SampleLocked(bool final_sample = false);
  void DrainEventsLocked();
  std::function<std::vector<TimelineEntry>()> event_source_;
  Options o_;
  std::mutex mu_;
  TimelineWriter writer_;
  UtilizationPoller* poller_ = nullptr;
  uint64_t last_us_ = 0;
  bool ended_ = false;
};

}  // namespace mmirage::pipeline
