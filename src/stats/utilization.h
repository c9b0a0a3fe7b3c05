// GPU and CPU utilisation of a running shard: a background thread samples every `interval_ms` (1 s by default)
//   * GPU: NVML loaded with dlopen (util/nvml.h), falling back to `nvidia-smi --query-gpu=utilization.gpu
//     --format=csv,noheader,nounits --id=<ids>`; one sample = the mean over the shard's devices; nothing
//     measurable → no sample;
//   * CPU: this process's utime+stime (/proc/self/stat) and the machine's busy/total time (/proc/stat).
// The samplers and the clock are injected (tests call SampleOnce() with fakes, without threads or sleeps).
// Thread-safety: Start/Stop from the owning thread; SampleOnce and Summary may be called from any thread.
// Ownership: the poller owns its samplers; the destructor stops the thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "stats/shard_stats.h"
#include "util/env.h"

namespace mmirage {

// One GPU sample: the mean utilisation in percent over the sampled devices; nullopt when nothing was measured.
class GpuUtilSampler {
 public:
  virtual ~GpuUtilSampler() = default;
  virtual std::optional<double> Sample() = 0;
};

// Cumulative CPU counters; the poller turns two readings into rates.
struct CpuCounters {
  std::optional<double> process_cpu_seconds;   // utime + stime of this process
  std::optional<uint64_t> machine_busy_ticks;  // /proc/stat "cpu" line: total − idle − iowait
  std::optional<uint64_t> machine_total_ticks;
};
class CpuUsageSampler {
 public:
  virtual ~CpuUsageSampler() = default;
  virtual CpuCounters Read() = 0;
};

// NVML for `devices` (indices or UUIDs), nvidia-smi when NVML cannot be loaded (or answers nothing); once
// nvidia-smi proves missing it is not tried again. nullptr when `devices` is empty (no GPU: no samples).
std::unique_ptr<GpuUtilSampler> NewNvmlGpuSampler(std::vector<std::string> devices);
// Reads /proc/self/stat and /proc/stat through env (borrowed; must outlive the sampler).
std::unique_ptr<CpuUsageSampler> NewProcCpuSampler(Env* env);

// The devices a shard samples: the first `tp` entries of CUDA_VISIBLE_DEVICES (split on ',',
// trimmed, empties dropped) unless it is unset, "all" or "nodevfiles" (any case); "0" … "tp-1" otherwise or when
// no entry remains. tp < 1 counts as 1.
std::vector<std::string> GpuDevicesForShard(const std::optional<std::string>& cuda_visible_devices, int tp);

// Pure parsers, exposed for tests. nvidia-smi output: the mean of the lines that parse as numbers (nullopt if
// none). /proc/self/stat: utime + stime in seconds. /proc/stat: {busy, total} ticks of the aggregate "cpu" line.
std::optional<double> ParseNvidiaSmiUtilization(const std::string& out);
std::optional<double> ParseProcSelfStatCpuSeconds(const std::string& text, int64_t ticks_per_second);
std::optional<std::pair<uint64_t, uint64_t>> ParseProcStatCpuTicks(const std::string& text);

struct UtilizationSummary {
  std::optional<double> gpu_util_mean;  // rounded to 1 decimal; null when no sample (a measured 0 is 0)
  std::optional<double> gpu_util_min, gpu_util_max;
  int64_t gpu_util_samples = 0;
  std::optional<double> cpu_util_mean;          // this process, percent of one core, over first → last reading
  std::optional<double> machine_cpu_util_mean;  // the machine, percent of all cores

  // Copies the fields into the shard's stats.
  void ApplyTo(ShardStats* stats) const;
};

struct UtilizationPollerOptions {
  uint64_t interval_ms = 1000;
  std::unique_ptr<GpuUtilSampler> gpu;         // nullptr: no GPU sampling
  std::unique_ptr<CpuUsageSampler> cpu;        // nullptr: no CPU sampling
  std::function<uint64_t()> monotonic_micros;  // clock for CPU rates; default Env::Default()->MonotonicMicros
};
// NVML/nvidia-smi on `gpu_devices` (see GpuDevicesForShard) and /proc through env.
UtilizationPollerOptions DefaultUtilizationOptions(Env* env, std::vector<std::string> gpu_devices);

class UtilizationPoller {
 public:
  explicit UtilizationPoller(UtilizationPollerOptions options);
  UtilizationPoller(const UtilizationPoller&) = delete;
  UtilizationPoller& operator=(const UtilizationPoller&) = delete;
  ~UtilizationPoller();  // Stop()

  // Takes the CPU baseline and starts the sampling thread (first sample one interval later). Idempotent; does
  // nothing after Stop().
  void Start();
  // Stops and joins the thread (waits for a sample in progress: at most nvidia-smi's 5 s timeout). Idempotent;
  // samples taken so far are kept.
  void Stop();
  // Takes one sample now (GPU sample; CPU reading, the first one being the baseline).
  void SampleOnce();
  UtilizationSummary Summary() const;
  // Utilisation since the previous call (since Start for the first): the mean of the GPU samples taken in between
  // and this process's CPU use between the CPU readings; nullopt where nothing new was sampled. For the shard's
  // time series (state/timeline.h).
  struct Interval {
    std::optional<double> gpu_util, cpu_util;
  };
  Interval TakeInterval();

 private:
  void Loop();

  UtilizationPollerOptions options_;
  std::mutex sample_mu_;   // serialises the samplers
  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  bool started_ = false;
  bool stop_ = false;
  std::thread thread_;
  double gpu_sum_ = 0;
  std::optional<double> gpu_min_, gpu_max_;
  int64_t gpu_samples_ = 0;
  std::optional<CpuCounters> cpu_first_, cpu_last_;
  uint64_t cpu_first_us_ = 0, cpu_last_us_ = 0;
  // TakeInterval's cursor.
  double interval_gpu_sum_ = 0;
  int64_t interval_gpu_samples_ = 0;
  std::optional<double> interval_cpu_seconds_;
  uint64_t interval_cpu_us_ = 0;
};

}  // namespace mmirage
