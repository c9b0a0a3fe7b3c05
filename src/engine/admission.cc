// Token buckets + an AIMD window (contract: admission.h). Buckets may go below zero: a request larger than a
// bucket's capacity is admitted once the bucket is full and leaves it in debt, so no request waits forever.

#include "engine/admission.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/engine.h"
#include "util/env.h"
#include "util/log.h"

namespace mmirage::engine {
namespace {

constexpr uint64_t kMinWaitMicros = 1000;  // a TryAcquire that fails asks again no sooner than this
// Latencies below this are all "fast": growth among them (0.3 ms → 1 ms on a local server) is noise, not load.
constexpr double kLatencyFloorMicros = 20000;

std::string FormatCount(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), v == std::floor(v) && v < 1e15 ? "%.0f" : "%.2f", v);
  return buf;
}

std::optional<double> ParseNumber(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

const std::string* Find(const HeaderList& headers, const char* name) {
  for (const auto& [k, v] : headers)
    if (k == name) return &v;
  return nullptr;
}

std::optional<double> NumberHeader(const HeaderList& headers, const char* name) {
  const std::string* v = Find(headers, name);
  return v != nullptr ? ParseNumber(*v) : std::nullopt;
}

}  // namespace

std::optional<double> ParseDurationSeconds(const std::string& s) {
  if (s.empty()) return std::nullopt;
  double total = 0;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.')) ++j;
    if (j == i) return std::nullopt;
    std::optional<double> n = ParseNumber(s.substr(i, j - i));
    if (!n) return std::nullopt;
    size_t k = j;
    while (k < s.size() && std::isalpha(static_cast<unsigned char>(s[k]))) ++k;
    std::string unit = s.substr(j, k - j);
    double scale = unit == "h" ? 3600 : unit == "m" ? 60 : unit == "s" || unit.empty() ? 1 : unit == "ms" ? 1e-3 : -1;
    if (scale < 0 || (unit.empty() && k != s.size())) return std::nullopt;
    total += *n * scale;
    i = k;
  }
  return total;
}

RateLimitInfo ParseRateLimitHeaders(const HeaderList& headers) {
  RateLimitInfo r;
  r.requests_limit = NumberHeader(headers, "x-ratelimit-limit-requests");
  r.requests_remaining = NumberHeader(headers, "x-ratelimit-remaining-requests");
  r.tokens_limit = NumberHeader(headers, "x-ratelimit-limit-tokens");
  r.tokens_remaining = NumberHeader(headers, "x-ratelimit-remaining-tokens");
  for (const char* name : {"x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"}) {
    const std::string* v = Find(headers, name);
    std::optional<double> s = v != nullptr ? ParseDurationSeconds(*v) : std::nullopt;
    if (s) r.reset_seconds = std::max(r.reset_seconds.value_or(0), *s);
  }
  if (!r.requests_limit) r.requests_limit = NumberHeader(headers, "anthropic-ratelimit-requests-limit");
  if (!r.requests_remaining) r.requests_remaining = NumberHeader(headers, "anthropic-ratelimit-requests-remaining");
  if (!r.tokens_limit) r.tokens_limit = NumberHeader(headers, "anthropic-ratelimit-tokens-limit");
  if (!r.tokens_remaining) r.tokens_remaining = NumberHeader(headers, "anthropic-ratelimit-tokens-remaining");
  if (!r.tokens_limit) r.tokens_limit = NumberHeader(headers, "anthropic-ratelimit-input-tokens-limit");
  if (!r.tokens_remaining) r.tokens_remaining = NumberHeader(headers, "anthropic-ratelimit-input-tokens-remaining");
  return r;
}

int64_t EstimateRequestTokens(const Request& request) {
  constexpr int64_t kTokensPerImage = 85;
  auto prompt_chars = static_cast<int64_t>(request.prompt.size());
  return (prompt_chars + 3) / 4 + kTokensPerImage * static_cast<int64_t>(request.images.size()) +
         std::max(0, request.sampling.max_new_tokens);
}

AdmissionController::AdmissionController(AdmissionOptions options) : o_(std::move(options)) {
  o_.max_concurrency = std::max(1, o_.max_concurrency);
  o_.budget_shares = o_.shared ? 1 : std::max(1, o_.budget_shares);
  window_ = o_.adaptive ? std::clamp(o_.initial_concurrency, 1, o_.max_concurrency) : o_.max_concurrency;
  logged_window_ = static_cast<int>(window_);
  uint64_t now = Now();
  if (o_.requests_per_minute > 0) SetLimit(&requests_, o_.requests_per_minute, now, nullptr);
  if (o_.tokens_per_minute > 0) SetLimit(&tokens_, o_.tokens_per_minute, now, nullptr);
  if (o_.requests_per_minute > 0) LogShare("requests", o_.requests_per_minute);
  if (o_.tokens_per_minute > 0) LogShare("tokens", o_.tokens_per_minute);
}

uint64_t AdmissionController::Now() const {
  return o_.now_micros ? o_.now_micros() : Env::Default()->MonotonicMicros();
}

// `per_minute` is the account's limit; the bucket holds this process's share of it. what == nullptr: configured at
// the start (the bucket starts full); else learned (it starts empty: the requests already sent were not counted
// against it).
void AdmissionController::SetLimit(Bucket* b, double per_minute, uint64_t now, const char* what) {
  b->account_per_minute = per_minute;
  b->limit_per_minute = per_minute / o_.budget_shares;
  b->capacity = std::max(1.0, b->limit_per_minute * o_.headroom / 60.0 * o_.burst_seconds);
  b->level = what == nullptr ? b->capacity : std::min(b->level, 0.0);
  b->last_us = now;
  if (what != nullptr) {
    LOG_INFO(o_.name << ": rate limit " << FormatCount(per_minute) << " " << what << "/minute (from headers)");
    LogShare(what, per_minute);
  }
}

void AdmissionController::LogShare(const char* what, double account_per_minute) const {
  if (o_.budget_shares <= 1) return;
  LOG_INFO(o_.name << ": " << o_.budget_shares << " shards run at once and split the " << what
                   << " limit: this one uses " << FormatCount(account_per_minute / o_.budget_shares) << " of "
                   << FormatCount(account_per_minute) << " " << what << "/minute");
}

void AdmissionController::Refill(Bucket* b, uint64_t now) const {
  if (b->limit_per_minute <= 0 || now <= b->last_us) return;
  double rate_per_us = b->limit_per_minute * o_.headroom / 60e6;
  b->level = std::min(b->capacity, b->level + static_cast<double>(now - b->last_us) * rate_per_us);
  b->last_us = now;
}

uint64_t AdmissionController::WaitMicros(const Bucket& b, double cost) const {
  if (b.limit_per_minute <= 0) return 0;
  double need = std::min(cost, b.capacity) - b.level;
  if (need <= 0) return 0;
  double rate_per_us = b.limit_per_minute * o_.headroom / 60e6;
  return std::max(kMinWaitMicros, static_cast<uint64_t>(std::ceil(need / rate_per_us)));
}

AdmissionDecision AdmissionController::TryAcquire(int64_t estimated_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t now = Now();
  if (in_flight_ >= static_cast<int>(window_)) {  // wait for a Release
    window_blocked_ = true;
    last_window_block_us_ = now;
    return {};
  }
  double cost = static_cast<double>(std::max<int64_t>(0, estimated_tokens));
  AdmissionDecision d;
  WithBuckets([&](uint64_t t) { d = Admit(cost, t); });
  return d;
}

AdmissionDecision AdmissionController::Admit(double cost, uint64_t now) {
  AdmissionDecision d;
  Refill(&requests_, now);
  Refill(&tokens_, now);
  d.wait_micros = std::max(WaitMicros(requests_, 1), WaitMicros(tokens_, cost));
  if (d.wait_micros > 0) return d;
  if (requests_.limit_per_minute > 0) requests_.level -= 1;
  if (tokens_.limit_per_minute > 0) tokens_.level -= cost;
  ++in_flight_;
  AdmissionPermit p;
  p.start_us = now;
  p.estimated_tokens = static_cast<int64_t>(cost);
  d.permit = p;
  return d;
}

void AdmissionController::Release(const AdmissionPermit& permit, AdmissionOutcome outcome, int64_t actual_tokens,
                                  const HeaderList& headers) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_ = std::max(0, in_flight_ - 1);
  RateLimitInfo info = ParseRateLimitHeaders(headers);
  WithBuckets([&](uint64_t now) { ReleaseBuckets(permit, outcome, actual_tokens, info, now); });
  uint64_t now = Now();
  if (outcome == AdmissionOutcome::kOverloaded) {
    OnOverload(permit, now);
  } else if (outcome == AdmissionOutcome::kOk) {
    OnSuccess(permit, now);
  }
}

void AdmissionController::ReleaseBuckets(const AdmissionPermit& permit, AdmissionOutcome outcome, int64_t actual_tokens,
                                         const RateLimitInfo& info, uint64_t now) {
  Refill(&requests_, now);
  Refill(&tokens_, now);
  if (o_.requests_per_minute <= 0 && info.requests_limit && *info.requests_limit > 0 &&
      *info.requests_limit != requests_.account_per_minute)
    SetLimit(&requests_, *info.requests_limit, now, "requests");
  if (o_.tokens_per_minute <= 0 && info.tokens_limit && *info.tokens_limit > 0 &&
      *info.tokens_limit != tokens_.account_per_minute)
    SetLimit(&tokens_, *info.tokens_limit, now, "tokens");
  if (actual_tokens >= 0 && tokens_.limit_per_minute > 0)
    tokens_.level = std::min(tokens_.capacity, tokens_.level + permit.estimated_tokens - actual_tokens);
  // Quota shared with other clients shows only in the provider's count: none left means wait for the refill.
  if (info.requests_remaining && *info.requests_remaining < 1) requests_.level = std::min(requests_.level, 0.0);
  if (info.tokens_remaining && *info.tokens_remaining < 1) tokens_.level = std::min(tokens_.level, 0.0);
  if (outcome == AdmissionOutcome::kOverloaded) {
    requests_.level = std::min(requests_.level, 0.0);
    tokens_.level = std::min(tokens_.level, 0.0);
  }
}

void AdmissionController::WithBuckets(const std::function<void(uint64_t)>& fn) {
  if (!o_.shared || shared_failed_) {
    fn(Now());
    return;
  }
  bool ran = false;
  Status s = o_.shared->Update([&](SharedCounters::Map* m) {
    ran = true;
    uint64_t now = Now();  // read under the lock: the file's times never run ahead of it
    LoadBucket(*m, "requests", o_.requests_per_minute, &requests_, now, "requests");
    LoadBucket(*m, "tokens", o_.tokens_per_minute, &tokens_, now, "tokens");
    fn(now);
    StoreBucket(requests_, "requests", m);
    StoreBucket(tokens_, "tokens", m);
  });
  if (!s.ok()) {
    LOG_WARN(o_.name << ": shared rate-limit budget unusable (" << s.message()
                     << "); this process goes on with its own buckets");
    shared_failed_ = true;
    if (!ran) fn(Now());
  }
}

// The shared state of a bucket: the account's limit (configured here, or learned by any process), its level and
// the time of its last refill (the system-wide monotonic clock).
void AdmissionController::LoadBucket(const SharedCounters::Map& m, const std::string& prefix, double configured,
                                     Bucket* b, uint64_t now, const char* what) {
  double limit = configured > 0 ? configured : CounterOr(m, prefix + ".limit", 0);
  if (limit > 0 && limit != b->account_per_minute) SetLimit(b, limit, now, configured > 0 ? nullptr : what);
  auto at = m.find(prefix + ".last_us");
  if (at == m.end() || b->limit_per_minute <= 0) return;  // the first process here: its own state is the start
  b->level = std::min(b->capacity, CounterOr(m, prefix + ".level", 0));
  b->last_us = std::min(now, static_cast<uint64_t>(at->second));
}

void AdmissionController::StoreBucket(const Bucket& b, const std::string& prefix, SharedCounters::Map* m) {
  if (b.limit_per_minute <= 0) return;
  (*m)[prefix + ".limit"] = b.account_per_minute;
  (*m)[prefix + ".level"] = b.level;
  (*m)[prefix + ".last_us"] = static_cast<double>(b.last_us);
}

void AdmissionController::OnOverload(const AdmissionPermit& p, uint64_t now) {
  // One decrease per round trip: the answers to requests sent before the last decrease say nothing new.
  if (!o_.adaptive || p.start_us < last_decrease_us_) return;
  last_decrease_us_ = now;
  SetWindow(std::max(1.0, window_ / 2), "overloaded");
}

void AdmissionController::OnSuccess(const AdmissionPermit& p, uint64_t now) {
  double latency = static_cast<double>(now - std::min(now, p.start_us));
  latency_ewma_us_ = latency_ewma_us_ == 0 ? latency : 0.8 * latency_ewma_us_ + 0.2 * latency;
  if (latency_min_us_ == 0 || latency_ewma_us_ < latency_min_us_) latency_min_us_ = latency_ewma_us_;
  if (!o_.adaptive) return;
  double baseline = std::max(latency_min_us_, kLatencyFloorMicros);
  if (latency_ewma_us_ > o_.latency_growth * baseline && p.start_us >= last_decrease_us_ && window_ > 1) {
    last_decrease_us_ = now;
    // Raise the baseline so a latency that stays high shrinks the window once, not every round trip.
    latency_min_us_ = std::max(latency_ewma_us_, latency) * 1.5 / o_.latency_growth;
    SetWindow(std::max(1.0, window_ * 0.8), "latency grew");
  } else if (window_blocked_ && last_window_block_us_ >= p.start_us) {
    // The window held a request back while this one was out: it is what limits the rate, so widen it.
    SetWindow(std::min<double>(o_.max_concurrency, window_ + 1.0 / window_), "");
  }
}

void AdmissionController::SetWindow(double w, const char* why) {
  window_ = w;
  int iw = static_cast<int>(w);
  if (iw < logged_window_ || iw >= logged_window_ + std::max(1, logged_window_ / 4) || iw == o_.max_concurrency) {
    if (iw != logged_window_)
      LOG_INFO(o_.name << ": concurrency limit " << iw << (*why != 0 ? std::string(" (") + why + ")" : ""));
    logged_window_ = iw;
  }
}

int AdmissionController::Window() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(window_);
}
int AdmissionController::InFlight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}
double AdmissionController::RequestsPerMinute() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_.limit_per_minute;
}
double AdmissionController::TokensPerMinute() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tokens_.limit_per_minute;
}

}  // namespace mmirage::engine
