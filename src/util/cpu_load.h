// How busy this process's CPUs are with other processes, to choose a default thread count that does not fight
// them. llama.cpp's CPU backend synchronises its threads with spinning barriers after every operation: on a
// machine whose cores are taken by other processes, one more thread than there are free cores makes decoding
// several times slower (measured: 2 threads 7x slower than 1 on a 2-core machine at load 10), so a default of
// "all cores" is right only on an idle machine.
#pragma once

#include <cstdint>
#include <vector>

namespace mmirage {

// Busy and total ticks of each CPU this process may run on (its affinity mask), this process's own CPU time and
// a monotonic clock, read together. `ok` is false where the kernel's counters cannot be read (not Linux).
struct CpuSample {
  bool ok = false;
  uint64_t busy_ticks = 0;   // user+nice+system+irq+softirq+steal over this process's CPUs
  uint64_t total_ticks = 0;  // the same plus idle and iowait
  uint64_t self_micros = 0;  // this process's user+system time
  uint64_t wall_micros = 0;  // monotonic
};

// CPUs this process may run on (sched affinity: what SLURM or taskset gave it); at least 1.
int UsableCpus();
CpuSample SampleCpus();

// CPUs kept busy by other processes between two samples (this process's own use taken out), 0..UsableCpus();
// a negative value when it cannot be told (unreadable counters, or under 50 ms or under 5 ticks apart).
double OtherProcessesBusyCpus(const CpuSample& before, const CpuSample& after, int usable_cpus);

// The default thread count for compute: the usable CPUs less those busy with other processes (rounded), at least 1.
int ThreadsForIdleCpus(int usable_cpus, double others_busy);

}  // namespace mmirage
