// Admission controllers of several processes on one machine drawing from one budget file
// (AdmissionOptions::shared): together under the account's limits, a finished one's part used by the others,
// learned limits and overload answers seen by all. Fake clock; the file is real (a temporary directory).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/admission.h"
#include "support/test_util.h"
#include "util/env.h"

namespace mmirage::engine {
namespace {

struct FakeClock {
  uint64_t now_us = 5000000;
};

AdmissionOptions SharedOpts(FakeClock* clock, const std::string& path) {
  AdmissionOptions o;
  o.now_micros = [clock] { return clock->now_us; };
  o.headroom = 1.0;
  o.burst_seconds = 1.0;
  o.budget_shares = 2;  // ignored: the shared file replaces the static split
  o.shared = NewFileSharedCounters(path);
  return o;
}

// Every controller in `cs` asks as fast as it is let until `end_us` (one clock, advanced to the shortest wait;
// who asks first rotates, as processes take turns); permits are released at once. Returns the admissions of each.
std::vector<int> DriveAll(const std::vector<AdmissionController*>& cs, FakeClock* clock, uint64_t end_us) {
  std::vector<int> n(cs.size(), 0);
  for (size_t turn = 0; clock->now_us < end_us; ++turn) {
    uint64_t wait = UINT64_MAX;
    for (size_t j = 0; j < cs.size(); ++j) {
      size_t i = (turn + j) % cs.size();
      AdmissionDecision d = cs[i]->TryAcquire(1);
      if (d.permit) {
        ++n[i];
        cs[i]->Release(*d.permit, AdmissionOutcome::kOk, 1, {});
        wait = 0;
      } else {
        wait = std::min(wait, d.wait_micros);
      }
    }
    clock->now_us += wait;
  }
  return n;
}

TEST(SharedAdmissionTest, ProcessesOnOneBudgetTogetherStayUnderTheLimit) {
  testing::TempDir d;
  FakeClock clock;
  AdmissionOptions o = SharedOpts(&clock, d.Path("budget"));
  o.requests_per_minute = 6000;  // the account: 100/s
  AdmissionController a(o), b(o), c(o);
  EXPECT_EQ(a.RequestsPerMinute(), 6000);  // each sees the whole account; the file keeps them under it together
  std::vector<int> n = DriveAll({&a, &b, &c}, &clock, clock.now_us + 10000000);
  int total = n[0] + n[1] + n[2];
  // The account's 100/s for 10 s plus one second of burst: what one process alone would get, not three times it.
  EXPECT_GE(total, 1095);
  EXPECT_LE(total, 1101);
  for (int k : n) EXPECT_GT(k, 250) << "each draws its part";
}

TEST(SharedAdmissionTest, AProcessThatEndsLeavesItsPartToTheOthers) {
  testing::TempDir d;
  FakeClock clock;
  AdmissionOptions o = SharedOpts(&clock, d.Path("budget"));
  o.requests_per_minute = 6000;
  AdmissionController a(o), b(o);
  DriveAll({&a, &b}, &clock, clock.now_us + 5000000);
  // b has finished its rows: a alone gets the account's whole 100/s, not the 50/s of a static split.
  int alone = DriveAll({&a}, &clock, clock.now_us + 5000000)[0];
  EXPECT_GE(alone, 495);
  EXPECT_LE(alone, 501);
}

TEST(SharedAdmissionTest, ALimitLearnedByOneProcessHoldsForAll) {
  testing::TempDir d;
  FakeClock clock;
  AdmissionOptions o = SharedOpts(&clock, d.Path("budget"));
  AdmissionController a(o), b(o);
  auto p = a.TryAcquire(1);
  ASSERT_TRUE(p.permit);
  a.Release(*p.permit, AdmissionOutcome::kOk, 1,
            {{"x-ratelimit-limit-requests", "600"}, {"x-ratelimit-limit-tokens", "40000"}});
  EXPECT_EQ(a.RequestsPerMinute(), 600);
  clock.now_us += 1000000;  // 10/s: 10 requests in the (learned, so empty at first) bucket
  int admitted = 0;
  for (int i = 0; i < 30; ++i) {
    AdmissionDecision d2 = b.TryAcquire(1);
    if (!d2.permit) break;
    ++admitted;
    b.Release(*d2.permit, AdmissionOutcome::kOk, 1, {});
  }
  EXPECT_EQ(b.RequestsPerMinute(), 600);
  EXPECT_EQ(b.TokensPerMinute(), 40000);
  EXPECT_GE(admitted, 9);
  EXPECT_LE(admitted, 11);
}

TEST(SharedAdmissionTest, AnOverloadAnswerToOneSlowsThemAll) {
  testing::TempDir d;
  FakeClock clock;
  AdmissionOptions o = SharedOpts(&clock, d.Path("budget"));
  o.requests_per_minute = 600;  // 10/s, 10 of burst
  AdmissionController a(o), b(o);
  auto p = a.TryAcquire(1);
  ASSERT_TRUE(p.permit);
  a.Release(*p.permit, AdmissionOutcome::kOverloaded, -1, {});
  AdmissionDecision w = b.TryAcquire(1);
  EXPECT_FALSE(w.permit);
  EXPECT_NEAR(static_cast<double>(w.wait_micros), 100000, 1000);
}

TEST(SharedAdmissionTest, AnUnusableFileLeavesEachProcessItsOwnBuckets) {
  testing::TempDir d;
  FakeClock clock;
  AdmissionOptions o = SharedOpts(&clock, d.Path("missing/dir/budget"));
  o.requests_per_minute = 600;
  AdmissionController a(o);
  int n = 0;
  for (int i = 0; i < 20; ++i) {
    AdmissionDecision p = a.TryAcquire(1);
    if (!p.permit) break;
    ++n;
    a.Release(*p.permit, AdmissionOutcome::kOk, 1, {});
  }
  EXPECT_EQ(n, 10);  // its own full bucket of 10, and no more
}

}  // namespace
}  // namespace mmirage::engine
