// Admission: the one controller every HTTP engine asks before it sends a request to a rate-limited endpoint.
//
// Three gates, all of which must pass:
//  - a requests/minute and a tokens/minute token bucket (configured, or learned from the provider's
//    x-ratelimit-* / anthropic-ratelimit-* headers when not configured). Each bucket refills at `headroom` × the
//    limit and holds `burst_seconds` of refill, so a run stays under a provider that enforces its per-minute
//    limit over short quanta (OpenAI documents 60,000 RPM as 1,000 per second). A request is charged its
//    estimated tokens at admission and the difference to its actual usage at Release. An overload answer (429)
//    or a provider header saying nothing remains empties the buckets, so 429s are rare and never a storm.
//  - a concurrency window: fixed (`max_concurrency`), or adaptive (AIMD): +1/window per success while the window
//    is what holds requests back, ×1/2 on an overload answer (429/503/529) at most once per round trip, ×0.8 when
//    the smoothed latency passes `latency_growth` × the lowest seen (latencies under 20 ms count as 20 ms). The window
//    in force is logged when it changes.
//  - the budget is shared by the processes that run at once against one account (the shards of one run). On one
//    machine (`shared`: util/shared_counters.h) the buckets and the learned limits live in one locked file that
//    every process draws from, so together they stay under the account's limit and a process that ends leaves
//    its part to the others. Across machines (SLURM arrays, Ray) each of `budget_shares` processes uses
//    limit / budget_shares, configured or learned; the split is logged once.
//
// Usage (non-blocking, for an event loop): TryAcquire(estimated_tokens) → a permit, or how long to wait (0: wait
// for a Release); then exactly one Release(permit, outcome, actual_tokens, headers) per permit.
// Thread-safety: every method may be called from any thread (one mutex). The clock is injectable for tests.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/shared_counters.h"

namespace mmirage::engine {

struct Request;

// Response headers, names lower-cased (HttpResponse::headers).
using HeaderList = std::vector<std::pair<std::string, std::string>>;

// What one response said about the provider's limits. Absent values are nullopt.
struct RateLimitInfo {
  std::optional<double> requests_limit, requests_remaining;  // requests per minute
  std::optional<double> tokens_limit, tokens_remaining;      // tokens per minute
  std::optional<double> reset_seconds;                       // the longer of the reset-requests/-tokens durations
};

// Reads OpenAI's x-ratelimit-{limit,remaining,reset}-{requests,tokens} (resets as "1s", "6m0s", "20ms") and
// Anthropic's anthropic-ratelimit-{requests,tokens}-{limit,remaining} (its input-tokens-* when no tokens-*).
// Unparsable values are left out.
RateLimitInfo ParseRateLimitHeaders(const HeaderList& headers);
// "6m0s" / "1.5s" / "20ms" / "2h" → seconds; nullopt when malformed.
std::optional<double> ParseDurationSeconds(const std::string& s);

// The tokens a request counts against a tokens/minute limit before it runs, the way providers estimate it:
// prompt characters / 4, 85 per image, plus the maximum output tokens.
int64_t EstimateRequestTokens(const Request& request);

struct AdmissionOptions {
  std::string name = "endpoint";           // for log lines
  double requests_per_minute = 0;          // 0 = not configured: learned from headers, unlimited until then
  double tokens_per_minute = 0;            // idem
  int max_concurrency = 64;                // the fixed window; adaptive: its ceiling
  bool adaptive = false;                   // max_concurrency: auto
  int initial_concurrency = 8;             // adaptive: the window to start with (clamped to [1, max_concurrency])
  double headroom = 0.97;                  // buckets refill at this fraction of the limit
  double burst_seconds = 0.5;              // bucket capacity, in seconds of refill
  double latency_growth = 3.0;             // adaptive: smoothed latency over the lowest that shrinks the window
  int budget_shares = 1;                   // processes sharing the limits at once; each uses limit / budget_shares
  std::shared_ptr<SharedCounters> shared;  // set: one budget with the other processes on this machine (the
                                           // buckets live there; budget_shares is ignored); an error is logged
                                           // once and the local buckets go on
  std::function<uint64_t()> now_micros;    // monotonic clock; nullptr = Env::Default()->MonotonicMicros()
};

enum class AdmissionOutcome {
  kOk,          // a usable answer: counts for the window and for latency
  kOverloaded,  // 429 / 503 / 529: the endpoint asks us to slow down
  kFailed,      // anything else (connection broken, 4xx, timeout): no signal about load
};

struct AdmissionPermit {
  uint64_t start_us = 0;
  int64_t estimated_tokens = 0;
};

struct AdmissionDecision {
  std::optional<AdmissionPermit> permit;  // set: admitted, send now
  uint64_t wait_micros = 0;               // not admitted: try again after this long; 0 = after a Release
};

class AdmissionController {
 public:
  explicit AdmissionController(AdmissionOptions options);
  AdmissionController(const AdmissionController&) = delete;
  AdmissionController& operator=(const AdmissionController&) = delete;

  // Admits a request that is expected to use `estimated_tokens` (input + max output), or says when to retry.
  AdmissionDecision TryAcquire(int64_t estimated_tokens);
  // Ends a permit: its outcome, the tokens it used (prompt + completion; < 0 = unknown, the estimate stands) and
  // the response's headers (learned limits, remaining quota).
  void Release(const AdmissionPermit& permit, AdmissionOutcome outcome, int64_t actual_tokens,
               const HeaderList& headers);

  int Window() const;  // the concurrency limit in force
  int InFlight() const;
  double RequestsPerMinute() const;  // the limits in force for this process (its share); 0 = none known
  double TokensPerMinute() const;

 private:
  struct Bucket {
    double limit_per_minute = 0;    // this process's share; 0 = inactive
    double account_per_minute = 0;  // the whole limit the share was taken from
    double capacity = 0, level = 0;
    uint64_t last_us = 0;
  };
  uint64_t Now() const;
  void SetLimit(Bucket* b, double per_minute, uint64_t now, const char* what);
  void LogShare(const char* what, double account_per_minute) const;
  void Refill(Bucket* b, uint64_t now) const;
  uint64_t WaitMicros(const Bucket& b, double cost) const;
  void OnOverload(const AdmissionPermit& p, uint64_t now);
  void OnSuccess(const AdmissionPermit& p, uint64_t now);
  void SetWindow(double w, const char* why);
  AdmissionDecision Admit(double cost, uint64_t now);
  void ReleaseBuckets(const AdmissionPermit& permit, AdmissionOutcome outcome, int64_t actual_tokens,
                      const RateLimitInfo& info, uint64_t now);
  // Runs `fn(now)` on the buckets: under the shared file's lock with its state loaded and stored back, or locally.
  void WithBuckets(const std::function<void(uint64_t)>& fn);
  void LoadBucket(const SharedCounters::Map& m, const std::string& prefix, double configured, Bucket* b, uint64_t now,
                  const char* what);
  static void StoreBucket(const Bucket& b, const std::string& prefix, SharedCounters::Map* m);

  AdmissionOptions o_;
  mutable std::mutex mu_;
  Bucket requests_, tokens_;
  double window_;
  int in_flight_ = 0;
  uint64_t last_decrease_us_ = 0;
  uint64_t last_window_block_us_ = 0;  // the last time the window held a request back
  bool window_blocked_ = false;
  double latency_ewma_us_ = 0, latency_min_us_ = 0;
  int logged_window_;
  bool shared_failed_ = false;  // the shared file failed once (logged); the local buckets go on
};

// An engine paced by an AdmissionController exposes it, so that the shard's timeline can sample the window and the
// limits in force (OutputGenerator::Admission). Thread-safety: as AdmissionController's getters.
class AdmissionSource {
 public:
  virtual ~AdmissionSource() = default;
  virtual std::shared_ptr<const AdmissionController> Admission() const = 0;
};

}  // namespace mmirage::engine
