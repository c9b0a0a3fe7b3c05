#include "engine/admission.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace mmirage::engine {
namespace {

struct FakeClock {
  uint64_t now_us = 1000000;
  std::function<uint64_t()> Fn() {
    return [this] { return now_us; };
  }
};

AdmissionOptions Opts(FakeClock* clock) {
  AdmissionOptions o;
  o.now_micros = clock->Fn();
  o.headroom = 1.0;
  o.burst_seconds = 1.0;
  return o;
}

// Admits everything the controller lets through between now and `end_us`, polling at the waits it asks for;
// every permit is released at once with `actual` tokens. Returns the number admitted.
int Drive(AdmissionController* a, FakeClock* clock, uint64_t end_us, int64_t est, int64_t actual) {
  int n = 0;
  while (clock->now_us < end_us) {
    AdmissionDecision d = a->TryAcquire(est);
    if (d.permit) {
      ++n;
      a->Release(*d.permit, AdmissionOutcome::kOk, actual, {});
      continue;
    }
    EXPECT_GT(d.wait_micros, 0u);
    clock->now_us += d.wait_micros;
  }
  return n;
}

TEST(AdmissionTest, RequestBucketHoldsTheRate) {
  FakeClock clock;
  AdmissionOptions o = Opts(&clock);
  o.requests_per_minute = 6000;  // 100/s, 100 of burst
  AdmissionController a(o);
  int n = Drive(&a, &clock, clock.now_us + 10000000, 1, 1);
  // 10 s at 100/s plus the first second's burst.
  EXPECT_GE(n, 1095);
  EXPECT_LE(n, 1101);
}

TEST(AdmissionTest, TokenBucketChargesTheEstimateAndRefundsUsage) {
  FakeClock clock;
  AdmissionOptions o = Opts(&clock);
  o.tokens_per_minute = 60000;  // 1000 tokens/s
  AdmissionController a(o);
  // Estimated 100, used 100: 10/s.
  int charged = Drive(&a, &clock, clock.now_us + 10000000, 100, 100);
  EXPECT_GE(charged, 105);
  EXPECT_LE(charged, 111);
  // Estimated 100, used 50: the refund doubles the rate.
  int refunded = Drive(&a, &clock, clock.now_us + 10000000, 100, 50);
  EXPECT_GE(refunded, 195);
  EXPECT_LE(refunded, 201);
}

TEST(AdmissionTest, RequestLargerThanTheBucketStillPasses) {
  FakeClock clock;
  AdmissionOptions o = Opts(&clock);
  o.tokens_per_minute = 600;  // capacity 10
  AdmissionController a(o);
  AdmissionDecision d = a.TryAcquire(1000);
  ASSERT_TRUE(d.permit.has_value());
  a.Release(*d.permit, AdmissionOutcome::kOk, -1, {});
  d = a.TryAcquire(1);
  EXPECT_FALSE(d.permit.has_value());
  EXPECT_GT(d.wait_micros, 60000000u);  // the debt of 990 tokens at 10/s
}

TEST(AdmissionTest, FixedWindowWaitsForARelease) {
  FakeClock clock;
  AdmissionOptions o = Opts(&clock);
  o.max_concurrency = 2;
  AdmissionController a(o);
  auto p1 = a.TryAcquire(1), p2 = a.TryAcquire(1), p3 = a.TryAcquire(1);
  ASSERT_TRUE(p1.permit && p2.permit);
  EXPECT_FALSE(p3.permit);
  EXPECT_EQ(p3.wait_micros, 0u);
  EXPECT_EQ(a.InFlight(), 2);
  a.Release(*p1.permit, AdmissionOutcome::kOverloaded, -1, {});
  EXPECT_EQ(a.Window(), 2);  // fixed: overload does not shrink it
  EXPECT_TRUE(a.TryAcquire(1).permit.has_value());
}

TEST(AdmissionTest, LearnsLimitsFromOpenAiHeaders) {
  FakeClock clock;
  AdmissionController a(Opts(&clock));
  EXPECT_EQ(a.RequestsPerMinute(), 0);
  auto d = a.TryAcquire(10);
  ASSERT_TRUE(d.permit);
  a.Release(*d.permit, AdmissionOutcome::kOk, 10,
            {{"x-ratelimit-limit-requests", "600"},
             {"x-ratelimit-limit-tokens", "200000"},
             {"x-ratelimit-remaining-requests", "599"},
             {"x-ratelimit-reset-requests", "100ms"}});
  EXPECT_EQ(a.RequestsPerMinute(), 600);
  EXPECT_EQ(a.TokensPerMinute(), 200000);
  // Learned buckets start empty: the next request waits about one refill (0.1 s at 10/s).
  d = a.TryAcquire(10);
  EXPECT_FALSE(d.permit);
  EXPECT_NEAR(static_cast<double>(d.wait_micros), 100000, 1000);
  int n = Drive(&a, &clock, clock.now_us + 10000000, 10, 10);
  EXPECT_GE(n, 99);
  EXPECT_LE(n, 101);
}

TEST(AdmissionTest, LearnsLimitsFromAnthropicHeaders) {
  FakeClock clock;
  AdmissionController a(Opts(&clock));
  auto d = a.TryAcquire(10);
  a.Release(*d.permit, AdmissionOutcome::kOk, 10,
            {{"anthropic-ratelimit-requests-limit", "50"}, {"anthropic-ratelimit-input-tokens-limit", "40000"}});
  EXPECT_EQ(a.RequestsPerMinute(), 50);
  EXPECT_EQ(a.TokensPerMinute(), 40000);
}

TEST(AdmissionTest, ConfiguredLimitsWinOverHeaders) {
  FakeClock clock;
  AdmissionOptions o = Opts(&clock);
  o.requests_per_minute = 120;
  AdmissionController a(o);
  auto d = a.TryAcquire(1);
  a.Release(*d.permit, AdmissionOutcome::kOk, 1, {{"x-ratelimit-limit-requests", "10000"}});
  EXPECT_EQ(a.RequestsPerMinute(), 120);
}

TEST(AdmissionTest, ShardsThatSplitTheBudgetTogetherStayUnderTheLimit) {
  FakeClock clock;
  AdmissionOptions o = Opts(&clock);
  o.requests_per_minute = 6000;  // the account: 100/s
  o.budget_shares = 2;           // two shards at once: 50/s each, 50 of burst each
  AdmissionController a(o), b(o);
  EXPECT_EQ(a.RequestsPerMinute(), 3000);
  uint64_t start = clock.now_us;
  int n = 0;
  // Both shards ask as fast as they are let; one clock, interleaved at the shorter of their waits.
  while (clock.now_us < start + 10000000) {
    uint64_t wait = UINT64_MAX;
    for (AdmissionController* c : {&a, &b}) {
      AdmissionDecision d = c->TryAcquire(1);
      if (d.permit) {
        ++n;
        c->Release(*d.permit, AdmissionOutcome::kOk, 1, {});
        wait = 0;
      } else {
        wait = std::min(wait, d.wait_micros);
      }
    }
    clock.now_us += wait;
  }
  // Together: the account's 100/s for 10 s plus one second of burst, as one process alone would get.
  EXPECT_GE(n, 1095);
  EXPECT_LE(n, 1101);
}

TEST(AdmissionTest, ALearnedLimitIsSplitToo) {
  FakeClock clock;
  AdmissionOptions o = Opts(&clock);
  o.budget_shares = 4;
  AdmissionController a(o);
  auto d = a.TryAcquire(1);
  a.Release(*d.permit, AdmissionOutcome::kOk, 1,
            {{"x-ratelimit-limit-requests", "600"}, {"x-ratelimit-limit-tokens", "40000"}});
  EXPECT_EQ(a.RequestsPerMinute(), 150);
  EXPECT_EQ(a.TokensPerMinute(), 10000);
  // The same header again is the same limit: the bucket is not reset (it would start empty each time).
  clock.now_us += 2000000;  // 2.5/s: full again (2.5)
  d = a.TryAcquire(1);
  ASSERT_TRUE(d.permit.has_value());
  a.Release(*d.permit, AdmissionOutcome::kOk, 1, {{"x-ratelimit-limit-requests", "600"}});
  EXPECT_TRUE(a.TryAcquire(1).permit.has_value());
}

TEST(AdmissionTest, OverloadAndNoneRemainingEmptyTheBuckets) {
  FakeClock clock;
  AdmissionOptions o = Opts(&clock);
  o.requests_per_minute = 600;  // 10/s, 10 of burst
  AdmissionController a(o);
  auto d = a.TryAcquire(1);
  a.Release(*d.permit, AdmissionOutcome::kOverloaded, -1, {});
  d = a.TryAcquire(1);
  EXPECT_FALSE(d.permit);
  EXPECT_NEAR(static_cast<double>(d.wait_micros), 100000, 1000);
  clock.now_us += 100000;
  d = a.TryAcquire(1);
  ASSERT_TRUE(d.permit);
  clock.now_us += 1000000;  // the bucket is full again
  a.Release(*d.permit, AdmissionOutcome::kOk, -1, {{"x-ratelimit-remaining-requests", "0"}});
  EXPECT_FALSE(a.TryAcquire(1).permit);
}

TEST(AdmissionTest, AdaptiveWindowGrowsAdditivelyAndHalvesOncePerRoundTrip) {
  FakeClock clock;
  AdmissionOptions o = Opts(&clock);
  o.adaptive = true;
  o.initial_concurrency = 4;
  o.max_concurrency = 100;
  AdmissionController a(o);
  EXPECT_EQ(a.Window(), 4);
  // Rounds of full windows, 10 ms each.
  for (int round = 0; round < 6; ++round) {
    std::vector<AdmissionPermit> permits;
    while (auto d = a.TryAcquire(1).permit) permits.push_back(*d);
    clock.now_us += 10000;
    for (const auto& p : permits) a.Release(p, AdmissionOutcome::kOk, 1, {});
  }
  // About +1 per round (+1/window per answer).
  int before = a.Window();
  EXPECT_GE(before, 9);
  EXPECT_LE(before, 10);
  // A burst of 429s to one round's requests: halved once, not once per answer.
  std::vector<AdmissionPermit> permits;
  while (auto d = a.TryAcquire(1).permit) permits.push_back(*d);
  EXPECT_EQ(static_cast<int>(permits.size()), before);
  clock.now_us += 10000;
  for (const auto& p : permits) a.Release(p, AdmissionOutcome::kOverloaded, -1, {});
  EXPECT_EQ(a.Window(), before / 2);
  // The next round's overload halves again.
  auto d = a.TryAcquire(1);
  clock.now_us += 10000;
  a.Release(*d.permit, AdmissionOutcome::kOverloaded, -1, {});
  EXPECT_EQ(a.Window(), before / 4);
}

TEST(AdmissionTest, AdaptiveWindowDoesNotGrowWhenNotFull) {
  FakeClock clock;
  AdmissionOptions o = Opts(&clock);
  o.adaptive = true;
  o.initial_concurrency = 4;
  AdmissionController a(o);
  for (int i = 0; i < 50; ++i) {
    auto d = a.TryAcquire(1);
    clock.now_us += 10000;
    a.Release(*d.permit, AdmissionOutcome::kOk, 1, {});
  }
  EXPECT_EQ(a.Window(), 4);
}

TEST(AdmissionTest, AdaptiveWindowShrinksOnLatencyGrowthOnce) {
  FakeClock clock;
  AdmissionOptions o = Opts(&clock);
  o.adaptive = true;
  o.initial_concurrency = 10;
  AdmissionController a(o);
  auto one = [&](uint64_t latency_us) {
    auto d = a.TryAcquire(1);
    clock.now_us += latency_us;
    a.Release(*d.permit, AdmissionOutcome::kOk, 1, {});
  };
  for (int i = 0; i < 5; ++i) one(5000);
  for (int i = 0; i < 10; ++i) one(50000);  // 10× slower, but under the 20 ms floor × 3: noise
  EXPECT_EQ(a.Window(), 10);
  for (int i = 0; i < 10; ++i) one(200000);
  EXPECT_EQ(a.Window(), 8);
  for (int i = 0; i < 30; ++i) one(200000);  // stays slow: no further decrease
  EXPECT_EQ(a.Window(), 8);
}

TEST(AdmissionTest, ParsesDurations) {
  EXPECT_EQ(ParseDurationSeconds("1s"), 1.0);
  EXPECT_EQ(ParseDurationSeconds("6m0s"), 360.0);
  EXPECT_NEAR(*ParseDurationSeconds("20ms"), 0.02, 1e-12);
  EXPECT_EQ(ParseDurationSeconds("1h2m"), 3720.0);
  EXPECT_EQ(ParseDurationSeconds("2.5"), 2.5);
  EXPECT_FALSE(ParseDurationSeconds(""));
  EXPECT_FALSE(ParseDurationSeconds("5x"));
  EXPECT_FALSE(ParseDurationSeconds("s"));
  RateLimitInfo r = ParseRateLimitHeaders({{"x-ratelimit-limit-requests", "abc"},
                                           {"x-ratelimit-reset-requests", "2s"},
                                           {"x-ratelimit-reset-tokens", "6m0s"}});
  EXPECT_FALSE(r.requests_limit);
  EXPECT_EQ(r.reset_seconds, 360.0);
}

}  // namespace
}  // namespace mmirage::engine
