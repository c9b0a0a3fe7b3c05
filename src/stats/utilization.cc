#include "stats/utilization.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "util/nvml.h"
#include "util/parse_int.h"
#include "util/process/subprocess.h"
#include "util/process/process_info.h"

namespace mmirage {
namespace {

constexpr double kNvidiaSmiTimeoutSeconds = 5;

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::optional<double> ParseDouble(const std::string& s) {
  std::string t = Trim(s);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return std::nullopt;
  return d;
}

class NvmlGpuSampler final : public GpuUtilSampler {
 public:
  explicit NvmlGpuSampler(std::vector<std::string> devices) : devices_(std::move(devices)) {}

  std::optional<double> Sample() override {
    if (!nvml_tried_) {
      nvml_tried_ = true;
      auto lib = NvmlLibrary::Open();
      if (lib.ok()) nvml_ = std::move(*lib);
    }
    if (nvml_) {
      double sum = 0;
      int n = 0;
      for (const auto& d : devices_) {
        if (auto u = nvml_->GpuUtilization(d)) {
          sum += *u;
          ++n;
        }
      }
      if (n > 0) return sum / n;
    }
    return SampleNvidiaSmi();
  }

 private:
  std::optional<double> SampleNvidiaSmi() {
    if (smi_missing_) return std::nullopt;
    std::string ids;
    for (const auto& d : devices_) ids += (ids.empty() ? "" : ",") + d;
    auto r =
        RunCommandCapture({"nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "--id=" + ids},
                          kNvidiaSmiTimeoutSeconds);
    if (!r.ok()) {
      if (r.status().IsNotFound()) smi_missing_ = true;
      return std::nullopt;
    }
    if (r->exit_code == 127) smi_missing_ = true;
    if (r->exit_code != 0) return std::nullopt;
    return ParseNvidiaSmiUtilization(r->out);
  }

  std::vector<std::string> devices_;
  bool nvml_tried_ = false;
  std::unique_ptr<NvmlLibrary> nvml_;
  bool smi_missing_ = false;
};

class ProcCpuSampler final : public CpuUsageSampler {
 public:
  explicit ProcCpuSampler(Env* env) : env_(env) {}
  CpuCounters Read() override {
    CpuCounters c;
    if (auto self = env_->ReadFileToString("/proc/self/stat"); self.ok()) {
      c.process_cpu_seconds = ParseProcSelfStatCpuSeconds(*self, ClockTicksPerSecond());
    }
    if (auto all = env_->ReadFileToString("/proc/stat"); all.ok()) {
      if (auto t = ParseProcStatCpuTicks(*all)) {
        c.machine_busy_ticks = t->first;
        c.machine_total_ticks = t->second;
      }
    }
    return c;
  }

 private:
  Env* env_;
};

}  // namespace

std::unique_ptr<GpuUtilSampler> NewNvmlGpuSampler(std::vector<std::string> devices) {
  if (devices.empty()) return nullptr;
  return std::make_unique<NvmlGpuSampler>(std::move(devices));
}

std::unique_ptr<CpuUsageSampler> NewProcCpuSampler(Env* env) { return std::make_unique<ProcCpuSampler>(env); }

std::vector<std::string> GpuDevicesForShard(const std::optional<std::string>& cvd, int tp) {
  tp = std::max(tp, 1);
  std::vector<std::string> out;
  if (cvd) {
    std::string low = Lower(Trim(*cvd));
    if (low != "all" && low != "nodevfiles") {
      std::stringstream ss(*cvd);
      std::string item;
      while (std::getline(ss, item, ',') && static_cast<int>(out.size()) < tp) {
        item = Trim(item);
        if (!item.empty()) out.push_back(item);
      }
      if (!out.empty()) return out;
    }
  }
  for (int i = 0; i < tp; ++i) out.push_back(std::to_string(i));
  return out;
}

std::optional<double> ParseNvidiaSmiUtilization(const std::string& out) {
  std::stringstream ss(out);
  std::string line;
  double sum = 0;
  int n = 0;
  while (std::getline(ss, line)) {
    if (auto d = ParseDouble(line)) {
      sum += *d;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

std::optional<double> ParseProcSelfStatCpuSeconds(const std::string& text, int64_t ticks_per_second) {
  // Field 2 (comm) is parenthesised and may contain spaces; fields 14 and 15 (utime, stime) follow the last ')'.
  size_t close = text.rfind(')');
  if (close == std::string::npos || ticks_per_second <= 0) return std::nullopt;
  std::stringstream ss(text.substr(close + 1));
  std::string field;
  // After ')': field 3 (state) is the 1st token, so utime (14) is the 12th and stime (15) the 13th.
  uint64_t utime = 0, stime = 0;
  for (int i = 1; i <= 13; ++i) {
    if (!(ss >> field)) return std::nullopt;
    if (i == 12 || i == 13) {
      std::optional<uint64_t> v = ParseUint64(field);
      if (!v) return std::nullopt;
      (i == 12 ? utime : stime) = *v;
    }
  }
  return static_cast<double>(utime + stime) / static_cast<double>(ticks_per_second);
}

std::optional<std::pair<uint64_t, uint64_t>> ParseProcStatCpuTicks(const std::string& text) {
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    if (line.rfind("cpu ", 0) != 0) continue;
    std::stringstream fs(line.substr(4));
    std::vector<uint64_t> v;
    uint64_t x;
    while (fs >> x) v.push_back(x);
    if (v.size() < 4) return std::nullopt;
    // user nice system idle iowait irq softirq steal (guest time is already included in user/nice).
    uint64_t total = 0;
    for (size_t i = 0; i < v.size() && i < 8; ++i) total += v[i];
    uint64_t idle = v[3] + (v.size() > 4 ? v[4] : 0);
    return std::make_pair(total - idle, total);
  }
  return std::nullopt;
}

void UtilizationSummary::ApplyTo(ShardStats* stats) const {
  stats->gpu_util_mean = gpu_util_mean;
  stats->gpu_util_min = gpu_util_min;
  stats->gpu_util_max = gpu_util_max;
  stats->gpu_util_samples = gpu_util_samples;
  stats->cpu_util_mean = cpu_util_mean;
  stats->machine_cpu_util_mean = machine_cpu_util_mean;
}

UtilizationPollerOptions DefaultUtilizationOptions(Env* env, std::vector<std::string> gpu_devices) {
  UtilizationPollerOptions o;
  o.gpu = NewNvmlGpuSampler(std::move(gpu_devices));
  o.cpu = NewProcCpuSampler(env);
  o.monotonic_micros = [env] { return env->MonotonicMicros(); };
  return o;
}

UtilizationPoller::UtilizationPoller(UtilizationPollerOptions options) : options_(std::move(options)) {
  if (!options_.monotonic_micros) options_.monotonic_micros = [] { return Env::Default()->MonotonicMicros(); };
  if (options_.interval_ms == 0) options_.interval_ms = 1;
}

UtilizationPoller::~UtilizationPoller() { Stop(); }

void UtilizationPoller::Start() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (started_ || stop_) return;
    started_ = true;
  }
  if (options_.cpu) {
    // The baseline, so that the first interval already yields a CPU rate. Lock order: sample_mu_, then mu_.
    std::lock_guard<std::mutex> s(sample_mu_);
    CpuCounters c = options_.cpu->Read();
    uint64_t now_us = options_.monotonic_micros();
    std::lock_guard<std::mutex> l(mu_);
    if (!cpu_first_) {
      cpu_first_ = cpu_last_ = c;
      cpu_first_us_ = cpu_last_us_ = now_us;
    }
  }
  std::lock_guard<std::mutex> l(mu_);
  thread_ = std::thread([this] { Loop(); });
}

void UtilizationPoller::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void UtilizationPoller::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    if (cv_.wait_for(l, std::chrono::milliseconds(options_.interval_ms), [this] { return stop_; })) break;
    l.unlock();
    SampleOnce();
    l.lock();
  }
}

void UtilizationPoller::SampleOnce() {
  std::lock_guard<std::mutex> s(sample_mu_);
  std::optional<double> gpu;
  if (options_.gpu) gpu = options_.gpu->Sample();
  std::optional<CpuCounters> cpu;
  uint64_t now_us = 0;
  if (options_.cpu) {
    cpu = options_.cpu->Read();
    now_us = options_.monotonic_micros();
  }
  std::lock_guard<std::mutex> l(mu_);
  if (gpu) {
    gpu_sum_ += *gpu;
    gpu_min_ = gpu_min_ ? std::min(*gpu_min_, *gpu) : *gpu;
    gpu_max_ = gpu_max_ ? std::max(*gpu_max_, *gpu) : *gpu;
    ++gpu_samples_;
  }
  if (cpu) {
    if (!cpu_first_) {
      cpu_first_ = cpu;
      cpu_first_us_ = now_us;
    }
    cpu_last_ = cpu;
    cpu_last_us_ = now_us;
  }
}

UtilizationSummary UtilizationPoller::Summary() const {
  std::lock_guard<std::mutex> l(mu_);
  UtilizationSummary s;
  s.gpu_util_samples = gpu_samples_;
  if (gpu_samples_ > 0) {
    s.gpu_util_mean = RoundTo(gpu_sum_ / static_cast<double>(gpu_samples_), 1);
    s.gpu_util_min = gpu_min_;
    s.gpu_util_max = gpu_max_;
  }
  if (cpu_first_ && cpu_last_ && cpu_last_us_ > cpu_first_us_) {
    const CpuCounters& a = *cpu_first_;
    const CpuCounters& b = *cpu_last_;
    double wall_s = static_cast<double>(cpu_last_us_ - cpu_first_us_) / 1e6;
    if (a.process_cpu_seconds && b.process_cpu_seconds) {
      s.cpu_util_mean = RoundTo(std::max(0.0, *b.process_cpu_seconds - *a.process_cpu_seconds) / wall_s * 100, 1);
    }
  }
  if (cpu_first_ && cpu_last_) {
    const CpuCounters& a = *cpu_first_;
    const CpuCounters& b = *cpu_last_;
    if (a.machine_busy_ticks && b.machine_busy_ticks && a.machine_total_ticks && b.machine_total_ticks &&
        *b.machine_total_ticks > *a.machine_total_ticks && *b.machine_busy_ticks >= *a.machine_busy_ticks) {
      double busy = static_cast<double>(*b.machine_busy_ticks - *a.machine_busy_ticks);
      double total = static_cast<double>(*b.machine_total_ticks - *a.machine_total_ticks);
      s.machine_cpu_util_mean = RoundTo(busy / total * 100, 1);
    }
  }
  return s;
}

UtilizationPoller::Interval UtilizationPoller::TakeInterval() {
  std::lock_guard<std::mutex> l(mu_);
  Interval iv;
  if (gpu_samples_ > interval_gpu_samples_) {
    iv.gpu_util = (gpu_sum_ - interval_gpu_sum_) / static_cast<double>(gpu_samples_ - interval_gpu_samples_);
  }
  interval_gpu_sum_ = gpu_sum_;
  interval_gpu_samples_ = gpu_samples_;
  if (cpu_last_ && cpu_last_->process_cpu_seconds) {
    if (!interval_cpu_seconds_ && cpu_first_ && cpu_first_->process_cpu_seconds) {
      interval_cpu_seconds_ = cpu_first_->process_cpu_seconds;
      interval_cpu_us_ = cpu_first_us_;
    }
    if (interval_cpu_seconds_ && cpu_last_us_ > interval_cpu_us_) {
      double wall_s = static_cast<double>(cpu_last_us_ - interval_cpu_us_) / 1e6;
      iv.cpu_util = std::max(0.0, *cpu_last_->process_cpu_seconds - *interval_cpu_seconds_) / wall_s * 100;
    }
    interval_cpu_seconds_ = cpu_last_->process_cpu_seconds;
    interval_cpu_us_ = cpu_last_us_;
  }
  return iv;
}

}  // namespace mmirage
