// A fleet: one Engine over N replica engines (managed servers pinned to GPU slices, or existing endpoints), so the
// caller never learns how many there are. Requests go to the healthy replica with the fewest outstanding requests
// (ties: round robin; a replica whose last answer was a failure, less than quarantine_seconds ago, comes after
// the others: a dead server answers at once and would draw every request), except that a request whose prompt begins
// like an earlier one's (the same first affinity_prefix_chars characters, or the same whole prompt when shorter) goes
// to the replica that prefix was last sent to while that replica has at most affinity_slack more outstanding requests
// than the least loaded one: its server still holds the prefix's KV cache. Re-issues never follow affinity. Each
// replica engine does its own admission and per-attempt retries; the fleet only moves requests between replicas.
//
// Failover: a request failing with a retryable error (any code but kInvalidArgument) is re-issued at once to
// another healthy replica (at most max_attempts replicas per request, then the error is the answer). A replica
// with fail_threshold consecutive retryable failures is taken out (a refused or broken connection counts at once;
// another failure counts once the request is answered elsewhere or fails on that replica again, and a request that
// fails the same way on two replicas is at fault itself: counted against neither): every request in flight on it is
// re-issued to the others at once, and, when it has a restart function, it is restarted after a backoff
// (restart_backoff_seconds doubled per restart, at most max_restarts times); a restarted replica takes requests
// again. An external replica (a server the fleet did not start) is re-admitted when its restart function succeeds
// (it answers again): tried every probe_interval_seconds for as long as the fleet runs. While no replica is healthy
// but one is restarting, requests wait; when none is left, every waiting request fails (kUnavailable).
// Every caller callback fires exactly once (a late answer from a replica the request has left is dropped).
// Health changes are logged (one line each) and kept as events (TakeEvents).
//
// Thread-safety: as engine.h. Callbacks run on the replica engines' threads (or, when none is left, on the thread
// that found it). Restarts run on tasks handed to options.run_async (default: one long-lived worker thread per
// replica, so that a server a restart starts is not tied to a short-lived thread and one replica's restart does
// not wait for another's; joined at Shutdown). Ownership: the fleet owns its replica engines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "util/env.h"

namespace mmirage::engine {

struct FleetReplica {
  std::string name;  // for messages and stats: the URL, or "replica <i>"
  std::unique_ptr<Engine> engine;
  // Makes a fresh engine for this replica (starts its server again). nullptr: never restarted once taken out.
  std::function<Result<std::unique_ptr<Engine>>()> restart;
  // An existing server: `restart` reconnects (an error while it does not answer), tried until it succeeds.
  bool external = false;
};

struct FleetOptions {
  int fail_threshold = 3;  // consecutive retryable failures → the replica is taken out
  int max_attempts = 3;    // replicas one request may be sent to (re-issues included)
  int max_restarts = 3;    // per replica
  double restart_backoff_seconds = 1;
  double probe_interval_seconds = 1;  // external replicas: the wait before each reconnection try
  double quarantine_seconds = 1;
  // Prefix affinity: characters of the prompt that key it (0: off) and the load difference it may cost. At most
  // kMaxAffinityKeys prefixes are remembered (the table is emptied when full).
  int affinity_prefix_chars = 256;
  int affinity_slack = 2;
  // Test hooks. run_async runs a restart task (default: the worker thread); sleep waits a backoff
  // and returns early (false) when Shutdown begins (default: a condition variable wait).
  std::function<void(std::function<void()>)> run_async;
  std::function<void(double seconds)> sleep;
  Env* env = nullptr;  // wall clock of the events; nullptr: Env::Default(). Borrowed.
};

inline constexpr size_t kMaxAffinityKeys = 4096;

struct ReplicaStats {
  std::string name;
  bool healthy = true;
  int64_t requests = 0;  // answers delivered from this replica
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t failures = 0;  // retryable failures seen
  int64_t restarts = 0;
};

// A change of a replica's health.
struct FleetEvent {
  double t = 0;  // epoch seconds
  int replica = 0;
  std::string name;
  std::string change;  // "out" (taken out), "back" (an external replica answers again), "restarted", "gave_up"
};

inline constexpr size_t kMaxFleetEvents = 1024;  // kept until taken; older ones are dropped past this many

class FleetEngine : public Engine {
 public:
  // Per replica, at this moment.
  virtual std::vector<ReplicaStats> Stats() const = 0;
  // The events since the last call, oldest first.
  virtual std::vector<FleetEvent> TakeEvents() = 0;
};

// REQUIRES: replicas non-empty, each with an engine. Errors: kInvalidArgument (no replica, a null engine,
// fail_threshold / max_attempts < 1, max_restarts < 0, negative seconds,
// affinity_prefix_chars / affinity_slack < 0).
Result<std::unique_ptr<FleetEngine>> CreateFleetEngine(std::vector<FleetReplica> replicas, FleetOptions options);

}  // namespace mmirage::engine
