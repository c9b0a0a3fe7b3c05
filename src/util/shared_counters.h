// SharedCounters: a small name → number map in a local file that the processes of one run on one machine update
// together, each update under an exclusive flock on `<path>.lock` (Env::LockFile). The lock dies with its process,
// so a shard killed with -9 never leaves the map locked. Not for network file systems (flock there is not reliable
// across machines): multi-node executors split their budgets statically instead.
//
// The file holds one "name value" line per entry (values as %.17g, so microsecond clocks round-trip); it is
// written to a temporary file and renamed over, so a reader never sees half an update. A file that cannot be parsed
// reads as empty (logged once).
// Thread-safety: Update may be called from any thread; updates from threads and processes are serialised by the
// file lock (a busy lock is retried every 100 µs for up to 5 s). Errors: the Env's I/O errors; kUnavailable when
// the lock stays busy.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "util/status.h"

namespace mmirage {

class Env;

class SharedCounters {
 public:
  using Map = std::map<std::string, double>;
  virtual ~SharedCounters() = default;
  // Reads the map, runs `update` on it and writes it back, all under the lock.
  virtual Status Update(const std::function<void(Map*)>& update) = 0;
};

// The file `path` (its directory must exist) through `env` (not owned, outlives the result).
std::shared_ptr<SharedCounters> NewFileSharedCounters(Env* env, std::string path);

// Value of `name` in `m`, or `fallback` when absent.
double CounterOr(const SharedCounters::Map& m, const std::string& name, double fallback);

}  // namespace mmirage
