// SharedCounters: a small name → number map in a local file that the processes of one run on one machine update
// together, each update under an exclusive flock on the file (an OS adapter: util/shared_counters_posix.cc). The
// lock dies with its process, so a shard killed with -9 never leaves the map locked. Not for network file systems
// (flock there is not reliable across machines): multi-node executors split their budgets statically instead.
//
// The file holds one "name value" line per entry (values as %.17g, so microsecond clocks round-trip) and an end line
// with their checksum, rewritten in place under the lock (readers hold it too, so none sees half an update). Bytes
// after the end line are ignored; a file without a valid end line (a process killed in the middle of its write)
// reads as empty (logged once).
// Thread-safety: Update may be called from any thread; updates from threads and processes are serialised by the
// file lock (a busy lock is retried every 100 µs for up to 5 s). Errors: kIOError naming the file; kUnavailable
// when the lock stays busy.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "util/status.h"

namespace mmirage {

class SharedCounters {
 public:
  using Map = std::map<std::string, double>;
  virtual ~SharedCounters() = default;
  // Reads the map, runs `update` on it and writes it back, all under the lock.
  virtual Status Update(const std::function<void(Map*)>& update) = 0;
};

// The file `path` (created at the first update; its directory must exist).
std::shared_ptr<SharedCounters> NewFileSharedCounters(std::string path);

// Value of `name` in `m`, or `fallback` when absent.
double CounterOr(const SharedCounters::Map& m, const std::string& name, double fallback);

}  // namespace mmirage
