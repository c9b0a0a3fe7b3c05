// Issue #13, items 9 and 12: the one heartbeat/progress writer writes by the clock (heartbeat at most every 5 s,
// progress.json every 5 s and on each commit), never fsyncs either, and keeps a live worker from looking stale.
#include "state/progress_writer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "data/json.h"
#include "state/heartbeat.h"
#include "support/counting_env.h"
#include "support/test_util.h"

namespace mmirage {
namespace {

class ProgressWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.UseManualClock();
    ASSERT_TRUE(env_.CreateDirs(dir_.Path("shard_0")).ok());
  }
  ShardProgressOptions Options() {
    ShardProgressOptions o;
    o.env = &env_;
    o.state_dir = dir_.path();
    o.shard_id = 0;
    o.counters = &counters_;
    o.tick_seconds = 0.002;  // the thread wakes every 2 ms of real time; what it writes follows the env's clock
    o.on_tick = [this] { ++ticks_; };
    return o;
  }
  // Waits (real time) until the writer's thread has run `n` more ticks, so that it saw the current clock.
  void WaitTicks(int n) {
    int target = ticks_ + n;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (ticks_ < target && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_GE(ticks_.load(), target) << "the writer's thread stopped ticking";
  }
  int64_t ProgressRowsDone() {
    auto v = ParseJson(testing::ReadFile(dir_.Path("shard_0/progress.json")));
    return v.ok() && v->is_object() && v->Find("rows_done") ? v->Find("rows_done")->as_int() : -1;
  }

  testing::TempDir dir_;
  testing::CountingEnv env_;
  ShardProgressCounters counters_;
  std::atomic<int> ticks_{0};
};

TEST_F(ProgressWriterTest, WritesFollowTheClockAndNeverSync) {
  {
    ShardProgressWriter w(Options());
    EXPECT_EQ(env_.writes("heartbeat"), 1);  // at the start
    EXPECT_EQ(env_.writes("progress.json"), 1);
    WaitTicks(50);  // many ticks, no time passes: nothing is rewritten
    EXPECT_EQ(env_.writes("heartbeat"), 1);
    EXPECT_EQ(env_.writes("progress.json"), 1);
    env_.AdvanceSeconds(4.9);
    WaitTicks(3);
    EXPECT_EQ(env_.writes("heartbeat"), 1);
    EXPECT_EQ(env_.writes("progress.json"), 1);
    env_.AdvanceSeconds(0.2);  // 5.1 s: one heartbeat, one progress.json
    WaitTicks(3);
    EXPECT_EQ(env_.writes("heartbeat"), 2);
    EXPECT_EQ(env_.writes("progress.json"), 2);
    // A simulated hour in 1 s steps: 720 heartbeats and progress files (one per 5 s), not 3600.
    for (int i = 0; i < 3600; ++i) {
      env_.AdvanceSeconds(1);
      if (i % 50 == 0) WaitTicks(1);
    }
    WaitTicks(2);
    EXPECT_LE(env_.writes("heartbeat"), 2 + 720);
    EXPECT_LE(env_.writes("progress.json"), 2 + 720);
    // A commit shows in progress.json before Committed() returns, whatever the clock.
    counters_.rows_done = 256;
    int before = env_.writes("progress.json");
    counters_.Committed();
    EXPECT_EQ(env_.writes("progress.json"), before + 1);
    EXPECT_EQ(ProgressRowsDone(), 256);
  }
  // The last write, at the end of the attempt, shows where it got.
  counters_.Committed();  // detached: a no-op
  EXPECT_EQ(ProgressRowsDone(), 256);
  EXPECT_EQ(env_.syncs_of("heartbeat"), 0);
  EXPECT_EQ(env_.syncs_of("progress.json"), 0);
  EXPECT_EQ(env_.syncs(), 0);  // no file and no directory sync at all: both files are advisory
  auto children = env_.GetChildren(dir_.Path("shard_0"));
  ASSERT_TRUE(children.ok());
  EXPECT_EQ(*children, (std::vector<std::string>{"heartbeat", "progress.json"}));  // no temp left
}

TEST_F(ProgressWriterTest, ProgressJsonHasTheDocumentedFields) {
  counters_.rows_done = 7;
  counters_.rows_total = 10;
  counters_.rows_failed = 1;
  { ShardProgressWriter w(Options()); }
  auto p = ReadShardProgress(&env_, dir_.path(), 0);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->rows_done, 7);
  EXPECT_EQ(p->rows_total, 10);
  EXPECT_EQ(p->rows_failed, 1);
  EXPECT_TRUE(p->rows_per_sec.has_value());
  EXPECT_TRUE(p->started_at.has_value());
  EXPECT_TRUE(p->updated_at.has_value());
  EXPECT_EQ(p->pid, env_.Pid());
}

TEST(HeartbeatIntervalTest, FiveSecondsOrAThirdOfAShortTimeout) {
  EXPECT_EQ(HeartbeatIntervalSeconds(300), 5);
  EXPECT_EQ(HeartbeatIntervalSeconds(15), 5);
  EXPECT_EQ(HeartbeatIntervalSeconds(6), 2);
  EXPECT_EQ(HeartbeatIntervalSeconds(0), 5);  // the stale test is off
}

// Stale detection keeps working with the slower heartbeat: a live writer's heartbeat is never older than the
// period (whatever the timeout), and it ages past the timeout once the writer is gone (a killed worker).
TEST_F(ProgressWriterTest, LiveHeartbeatStaysYoungerThanTheTimeout) {
  for (double timeout : {300.0, 6.0}) {
    ShardProgressOptions o = Options();
    o.stale_timeout_seconds = timeout;
    const double period = HeartbeatIntervalSeconds(timeout);
    double max_age = 0;
    {
      ShardProgressWriter w(o);
      for (int i = 0; i < 200; ++i) {
        env_.AdvanceSeconds(0.25);
        WaitTicks(2);
        auto age = HeartbeatAgeSeconds(&env_, dir_.path(), 0);
        ASSERT_TRUE(age.has_value());
        max_age = std::max(max_age, *age);
      }
    }
    EXPECT_LE(max_age, period + 0.25 + 1e-6) << "timeout " << timeout;
    EXPECT_LT(max_age, timeout) << "a live worker would look stale";
    env_.AdvanceSeconds(timeout + 1);
    EXPECT_GT(*HeartbeatAgeSeconds(&env_, dir_.path(), 0), timeout);
  }
}

}  // namespace
}  // namespace mmirage
