#include "util/cpu_load.h"

#include <sched.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace mmirage {

int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

CpuSample SampleCpus() {
  CpuSample s;
  cpu_set_t set;
  CPU_ZERO(&set);
  const bool have_mask = sched_getaffinity(0, sizeof(set), &set) == 0;
  std::ifstream in("/proc/stat");
  if (!in) return s;
  std::string line;
  bool any = false;
  while (std::getline(in, line)) {
    // Per-CPU lines: "cpuN user nice system idle iowait irq softirq steal ..."; the aggregate "cpu " is skipped.
    if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream fields(line.substr(3));
    int cpu = -1;
    uint64_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    fields >> cpu;
    for (uint64_t& x : v) fields >> x;
    if (!fields && !fields.eof()) continue;
    if (cpu < 0 || (have_mask && (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set)))) continue;
    const uint64_t busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    s.busy_ticks += busy;
    s.total_ticks += busy + v[3] + v[4];
    any = true;
  }
  if (!any) return s;
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return s;
  s.self_micros = static_cast<uint64_t>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
                  static_cast<uint64_t>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  s.wall_micros = static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
  s.ok = true;
  return s;
}

double OtherProcessesBusyCpus(const CpuSample& before, const CpuSample& after, int usable_cpus) {
  if (!before.ok || !after.ok || after.wall_micros < before.wall_micros + 50000 ||
      after.total_ticks < before.total_ticks + 5 || after.busy_ticks < before.busy_ticks) {
    return -1;
  }
  const double wall = static_cast<double>(after.wall_micros - before.wall_micros);
  const double busy_fraction = static_cast<double>(after.busy_ticks - before.busy_ticks) /
                               static_cast<double>(after.total_ticks - before.total_ticks);
  const double self_cpus =
      after.self_micros >= before.self_micros ? static_cast<double>(after.self_micros - before.self_micros) / wall : 0;
  return std::clamp(busy_fraction * usable_cpus - self_cpus, 0.0, static_cast<double>(usable_cpus));
}

int ThreadsForIdleCpus(int usable_cpus, double others_busy) {
  if (usable_cpus < 1) return 1;
  if (others_busy <= 0) return usable_cpus;
  return std::clamp(usable_cpus - static_cast<int>(std::lround(others_busy)), 1, usable_cpus);
}

}  // namespace mmirage
