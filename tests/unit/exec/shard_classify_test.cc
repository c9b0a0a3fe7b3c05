#include "exec/shard_classify.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "data/json.h"
#include "state/heartbeat.h"
#include "state/progress_writer.h"
#include "state/shard_state.h"
#include "stats/shard_stats.h"
#include "support/counting_env.h"
#include "support/test_util.h"

namespace mmirage::exec {
namespace {

class ShardClassifyTest : public ::testing::Test {
 protected:
  ClassifyOptions Options(int64_t num_shards = 1, int64_t max_retries = 3) {
    ClassifyOptions o;
    o.env = env_;
    o.state_dir = dir_.path();
    o.num_shards = num_shards;
    o.max_retries = max_retries;
    o.heartbeat_timeout_seconds = 300;
    o.hostname = env_->Hostname();
    o.process_alive = [this](int64_t) { return alive_; };
    return o;
  }
  ShardState State(int64_t id) { return ShardState(env_, dir_.path(), id); }
  void FailAttempts(int64_t id, int n) {
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(State(id).MarkRunning({}).ok());
      ASSERT_TRUE(State(id).MarkFailed("boom", 1).ok());
    }
  }
  // A `running` status.json written by hand (host, pid, start time of our choosing).
  void WriteRunning(int64_t id, const std::string& host, int64_t pid, const std::string& started_at) {
    ShardRecord r;
    r.status = ShardStatus::kRunning;
    r.retry_count = 1;
    r.shard_id = id;
    r.hostname = host;
    r.pid = pid;
    r.started_at = started_at;
    testing::WriteFile(dir_.Path("shard_" + std::to_string(id) + "/status.json"), r.ToJson());
  }
  std::string NowIso() { return LocalIsoTime(env_->NowMicros()); }

  Env* env_ = Env::Default();
  testing::TempDir dir_;
  bool alive_ = true;
};

TEST_F(ShardClassifyTest, MissingShardIsRetryableFailed) {
  Classification c = ClassifyShards(Options(2));
  ASSERT_EQ(c.shards.size(), 2u);
  EXPECT_EQ(c.shards[1].status, ShardStatus::kMissing);
  EXPECT_EQ(c.shards[1].shard_class, ShardClass::kFailed);
  EXPECT_EQ(c.shards[1].attempts, 0);
  EXPECT_EQ(c.failed, (std::vector<int64_t>{0, 1}));
  EXPECT_FALSE(c.AllSucceeded());
}

TEST_F(ShardClassifyTest, SuccessReportsRowsAndRuntimeFromStats) {
  ASSERT_TRUE(State(0).MarkRunning({}).ok());
  ShardStats st;
  st.rows_processed = 40;
  st.runtime_seconds = 12.5;
  ASSERT_TRUE(State(0).MarkSuccess(st.ToValue(), 2).ok());
  Classification c = ClassifyShards(Options());
  EXPECT_TRUE(c.AllSucceeded());
  const ShardDetail& d = c.shards[0];
  EXPECT_EQ(d.shard_class, ShardClass::kSuccessful);
  EXPECT_EQ(d.rows_done, 40);
  EXPECT_EQ(d.rows_total, 42);
  EXPECT_EQ(d.rows_failed, 2);
  EXPECT_EQ(d.runtime_seconds, 12.5);
  EXPECT_EQ(d.hostname, env_->Hostname());
  EXPECT_EQ(d.attempts, 1);
}

TEST_F(ShardClassifyTest, FailedWithAttemptsLeftIsRetryable) {
  FailAttempts(0, 2);
  Classification c = ClassifyShards(Options(1, /*max_retries=*/2));
  EXPECT_EQ(c.shards[0].shard_class, ShardClass::kFailed);
  EXPECT_EQ(c.shards[0].attempts, 2);
  EXPECT_EQ(c.shards[0].error, std::optional<std::string>("boom"));
  EXPECT_EQ(c.failed, std::vector<int64_t>{0});
}

TEST_F(ShardClassifyTest, ExhaustedAtExactlyMaxRetriesPlusOneAttempts) {
  FailAttempts(0, 3);  // max_retries 2 → 3 attempts in total, all spent
  Classification c = ClassifyShards(Options(1, /*max_retries=*/2));
  EXPECT_EQ(c.shards[0].shard_class, ShardClass::kExhausted);
  EXPECT_EQ(c.exhausted, std::vector<int64_t>{0});
  EXPECT_TRUE(c.failed.empty());
  EXPECT_EQ(ToJson(c.SummaryValue()),
            "{\"total\":1,\"successful\":0,\"running\":0,\"failed\":0,\"max_retries_exceeded\":1}");
  // With a larger budget the same shard is retryable.
  EXPECT_EQ(ClassifyShards(Options(1, 3)).shards[0].shard_class, ShardClass::kFailed);
}

TEST_F(ShardClassifyTest, PureClassification) {
  EXPECT_EQ(ClassifyShard(ShardStatus::kSuccess, false, 99, 0), ShardClass::kSuccessful);
  EXPECT_EQ(ClassifyShard(ShardStatus::kRunning, false, 99, 0), ShardClass::kRunning);
  EXPECT_EQ(ClassifyShard(ShardStatus::kRunning, true, 0, 0), ShardClass::kFailed);
  EXPECT_EQ(ClassifyShard(ShardStatus::kRunning, true, 1, 0), ShardClass::kExhausted);
  EXPECT_EQ(ClassifyShard(ShardStatus::kMissing, false, 0, 0), ShardClass::kFailed);
  EXPECT_EQ(ClassifyShard(ShardStatus::kUnknown, false, 3, 3), ShardClass::kFailed);
  EXPECT_EQ(ClassifyShard(ShardStatus::kUnknown, false, 4, 3), ShardClass::kExhausted);
}

TEST_F(ShardClassifyTest, LiveRunningShardShowsProgressAndEta) {
  ASSERT_TRUE(State(0).MarkRunning({}).ok());
  ASSERT_TRUE(TouchHeartbeat(env_, dir_.path(), 0).ok());
  ShardProgress p;
  p.rows_done = 100;
  p.rows_total = 300;
  p.rows_failed = 3;
  p.rows_per_sec = 10;
  ASSERT_TRUE(WriteShardProgress(env_, dir_.path(), 0, p).ok());
  Classification c = ClassifyShards(Options());
  const ShardDetail& d = c.shards[0];
  EXPECT_EQ(d.shard_class, ShardClass::kRunning);
  EXPECT_TRUE(d.stale_reason.empty());
  EXPECT_EQ(d.rows_done, 100);
  EXPECT_EQ(d.rows_total, 300);
  EXPECT_EQ(d.rows_failed, 3);
  ASSERT_TRUE(d.eta_seconds.has_value());
  EXPECT_NEAR(*d.eta_seconds, 20.0, 1.0);
  ASSERT_TRUE(d.runtime_seconds.has_value());
  EXPECT_LT(*d.runtime_seconds, 60);
  EXPECT_EQ(c.running, std::vector<int64_t>{0});
  EXPECT_FALSE(c.AllSucceeded());
}

TEST_F(ShardClassifyTest, RunningWithDeadPidOnThisHostIsStale) {
  WriteRunning(0, env_->Hostname(), 4242, NowIso());
  alive_ = false;
  Classification c = ClassifyShards(Options());
  const ShardDetail& d = c.shards[0];
  EXPECT_EQ(d.shard_class, ShardClass::kFailed);
  EXPECT_EQ(d.DisplayStatus(), "stale");
  EXPECT_NE(d.stale_reason.find("process 4242"), std::string::npos) << d.stale_reason;
  EXPECT_FALSE(d.eta_seconds.has_value());
  EXPECT_EQ(c.failed, std::vector<int64_t>{0});
}

TEST_F(ShardClassifyTest, DeadPidOnAnotherHostIsJudgedByHeartbeatOnly) {
  WriteRunning(0, "some-other-node", 4242, NowIso());
  alive_ = false;
  ASSERT_TRUE(TouchHeartbeat(env_, dir_.path(), 0).ok());
  EXPECT_EQ(ClassifyShards(Options()).shards[0].shard_class, ShardClass::kRunning);
}

TEST_F(ShardClassifyTest, RunningWithOldHeartbeatIsStale) {
  WriteRunning(0, "some-other-node", 4242, NowIso());
  testing::WriteFile(dir_.Path("shard_0/heartbeat"), std::to_string(env_->NowMicros() / 1000000 - 1000) + ".000\n");
  Classification c = ClassifyShards(Options());
  EXPECT_EQ(c.shards[0].shard_class, ShardClass::kFailed);
  EXPECT_NE(c.shards[0].stale_reason.find("no heartbeat"), std::string::npos) << c.shards[0].stale_reason;
  // A timeout of 0 disables the test.
  ClassifyOptions o = Options();
  o.heartbeat_timeout_seconds = 0;
  EXPECT_EQ(ClassifyShards(o).shards[0].shard_class, ShardClass::kRunning);
}

// Issue #13, item 9: with the heartbeat written every 5 s (not every second), a live worker on another node is never
// judged stale — even with a short timeout — and a dead one is, once the timeout has passed. Clock: the env's.
TEST(ShardClassifyHeartbeatTest, TheSlowerHeartbeatKeepsStaleDetectionWorking) {
  testing::TempDir dir;
  testing::CountingEnv env;
  env.UseManualClock();
  for (double timeout : {15.0, 300.0}) {
    ShardRecord r;
    r.status = ShardStatus::kRunning;
    r.retry_count = 1;
    r.hostname = "some-other-node";  // no pid test: only the heartbeat tells
    r.pid = 4242;
    r.started_at = LocalIsoTime(env.NowMicros());
    testing::WriteFile(dir.Path("shard_0/status.json"), r.ToJson());
    ClassifyOptions o;
    o.env = &env;
    o.state_dir = dir.path();
    o.heartbeat_timeout_seconds = timeout;
    o.hostname = "this-node";
    o.process_alive = [](int64_t) { return false; };
    ShardProgressCounters counters;
    std::atomic<int> ticks{0};
    auto wait_ticks = [&](int n) {
      int target = ticks + n;
      for (int i = 0; i < 20000 && ticks < target; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ASSERT_GE(ticks.load(), target);
    };
    {
      ShardProgressOptions po;
      po.env = &env;
      po.state_dir = dir.path();
      po.counters = &counters;
      po.stale_timeout_seconds = timeout;
      po.tick_seconds = 0.002;
      po.on_tick = [&] { ++ticks; };
      ShardProgressWriter w(po);
      for (int sec = 0; sec < 3 * timeout; ++sec) {  // a live worker, simulated second by second
        env.AdvanceSeconds(1);
        wait_ticks(2);
        ASSERT_EQ(ClassifyShards(o).shards[0].shard_class, ShardClass::kRunning) << "t=" << sec << " s";
      }
    }
    // The worker dies (its writer stops): stale once the timeout has passed, not before.
    env.AdvanceSeconds(timeout - 6);
    EXPECT_EQ(ClassifyShards(o).shards[0].shard_class, ShardClass::kRunning);
    env.AdvanceSeconds(7);
    Classification c = ClassifyShards(o);
    EXPECT_EQ(c.shards[0].shard_class, ShardClass::kFailed);
    EXPECT_NE(c.shards[0].stale_reason.find("no heartbeat"), std::string::npos) << c.shards[0].stale_reason;
  }
}

TEST_F(ShardClassifyTest, RunningWithoutHeartbeatIsJudgedByItsStart) {
  WriteRunning(0, "some-other-node", 4242, LocalIsoTime(env_->NowMicros() - 1000ull * 1000000));
  EXPECT_EQ(ClassifyShards(Options()).shards[0].shard_class, ShardClass::kFailed);
  WriteRunning(0, "some-other-node", 4242, NowIso());
  EXPECT_EQ(ClassifyShards(Options()).shards[0].shard_class, ShardClass::kRunning);
}

TEST_F(ShardClassifyTest, StaleShardWithSpentBudgetIsExhausted) {
  FailAttempts(0, 1);
  ASSERT_TRUE(State(0).MarkRunning({}).ok());  // attempt 2, then killed
  alive_ = false;
  Classification c = ClassifyShards(Options(1, /*max_retries=*/1));
  EXPECT_EQ(c.shards[0].shard_class, ShardClass::kExhausted);
  EXPECT_EQ(c.shards[0].attempts, 2);
}

TEST_F(ShardClassifyTest, CorruptedStatusFileKeepsTheAttemptCount) {
  FailAttempts(0, 3);
  testing::WriteFile(dir_.Path("shard_0/status.json"), "{not json");
  Classification c = ClassifyShards(Options(1, /*max_retries=*/2));
  EXPECT_EQ(c.shards[0].status, ShardStatus::kUnknown);
  EXPECT_EQ(c.shards[0].attempts, 3);
  EXPECT_EQ(c.shards[0].shard_class, ShardClass::kExhausted);
  // Deleted instead of corrupted: still counted.
  testing::RunCommand("rm '" + dir_.Path("shard_0/status.json") + "'");
  c = ClassifyShards(Options(1, 2));
  EXPECT_EQ(c.shards[0].status, ShardStatus::kMissing);
  EXPECT_EQ(c.shards[0].shard_class, ShardClass::kExhausted);
}

TEST_F(ShardClassifyTest, TableAndJson) {
  ASSERT_TRUE(State(0).MarkRunning({}).ok());
  ASSERT_TRUE(State(0).MarkSuccess(ShardStats{}.ToValue(), 0).ok());
  FailAttempts(1, 4);
  Classification c = ClassifyShards(Options(3, 3));
  std::string table = FormatShardTable(c);
  EXPECT_EQ(table.substr(0, 5), "SHARD");
  EXPECT_NE(table.find("success"), std::string::npos);
  EXPECT_NE(table.find("failed (exhausted)"), std::string::npos);
  EXPECT_NE(table.find("4/4"), std::string::npos);
  EXPECT_NE(table.find("missing"), std::string::npos);
  Value v = c.ToValue();
  ASSERT_TRUE(v.Find("shards")->is_array());
  const Value& s1 = v.Find("shards")->as_array()[1];
  EXPECT_EQ(s1.Find("class")->as_string(), "exhausted");
  EXPECT_EQ(s1.Find("attempts")->as_int(), 4);
  EXPECT_EQ(ToJson(*v.Find("summary")),
            "{\"total\":3,\"successful\":1,\"running\":0,\"failed\":1,\"max_retries_exceeded\":1}");
}

TEST(CompactDurationTest, Forms) {
  EXPECT_EQ(CompactDuration(0), "0s");
  EXPECT_EQ(CompactDuration(45.4), "45s");
  EXPECT_EQ(CompactDuration(725), "12m05s");
  EXPECT_EQ(CompactDuration(3 * 3600 + 4 * 60 + 10), "3h04m");
  EXPECT_EQ(CompactDuration(2 * 86400 + 3 * 3600), "2d03h");
}

}  // namespace
}  // namespace mmirage::exec
