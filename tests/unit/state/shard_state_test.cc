#include "state/shard_state.h"

#include <gtest/gtest.h>

#include <sys/time.h>

#include <atomic>
#include <thread>

#include "data/json.h"
#include "support/test_util.h"

namespace mmirage {
namespace {

// A process killed between a temp's creation and its rename leaves `status.json.tmp.<nonce>.<n>` behind: the next
// attempt removes such leftovers once they are a minute old, and nothing else.
TEST(ShardStateTest, NextAttemptRemovesStaleTempsOfAKilledWriterOnly) {
  testing::TempDir d;
  const std::string old_temp = d.Path("shard_0/status.json.tmp.0123456789ab.7");
  const std::string live_temp = d.Path("shard_0/progress.json.tmp.abcdef012345.1");
  const std::string other = d.Path("shard_0/notes.tmp.0123456789ab.x");
  for (const auto& p : {old_temp, live_temp, other}) testing::WriteFile(p, "{");
  struct timeval two_minutes_ago[2];
  gettimeofday(&two_minutes_ago[0], nullptr);
  two_minutes_ago[0].tv_sec -= 120;
  two_minutes_ago[1] = two_minutes_ago[0];
  ASSERT_EQ(utimes(old_temp.c_str(), two_minutes_ago), 0);
  ASSERT_EQ(utimes(other.c_str(), two_minutes_ago), 0);
  ShardState st(Env::Default(), d.path(), 0);
  ASSERT_TRUE(st.MarkRunning({}).ok());
  EXPECT_FALSE(testing::Exists(old_temp));
  EXPECT_TRUE(testing::Exists(live_temp));  // a writer may be about to rename it
  EXPECT_TRUE(testing::Exists(other));      // not a temp of ours
  EXPECT_EQ(st.Read().status, ShardStatus::kRunning);
}

TEST(ShardStateTest, TransitionsWriteStatusAndOneMarker) {
  testing::TempDir d;
  ShardState st(Env::Default(), d.path(), 3);
  EXPECT_EQ(st.Read().status, ShardStatus::kMissing);
  auto attempt = st.MarkRunning({});
  ASSERT_TRUE(attempt.ok());
  EXPECT_EQ(*attempt, 1);
  EXPECT_TRUE(testing::Exists(d.Path("shard_3/.RUNNING")));
  ShardRecord r = st.Read();
  EXPECT_EQ(r.status, ShardStatus::kRunning);
  EXPECT_EQ(r.shard_id, 3);
  EXPECT_TRUE(r.stats.is_null());
  ASSERT_TRUE(st.MarkFailed("boom", 2).ok());
  EXPECT_FALSE(testing::Exists(d.Path("shard_3/.RUNNING")));
  EXPECT_TRUE(testing::Exists(d.Path("shard_3/.FAILED")));
  EXPECT_EQ(st.Read().error, std::optional<std::string>("boom"));
  EXPECT_EQ(st.Read().failed_rows, 2);
  EXPECT_EQ(*st.MarkRunning({}), 2);
  ASSERT_TRUE(st.MarkSuccess(Value::EmptyObject(), 0).ok());
  EXPECT_TRUE(testing::Exists(d.Path("shard_3/.SUCCESS")));
  EXPECT_FALSE(testing::Exists(d.Path("shard_3/.FAILED")));
  // status.json: keys sorted, 2-space indent.
  std::string text = testing::ReadFile(d.Path("shard_3/status.json"));
  EXPECT_LT(text.find("\"datasets\""), text.find("\"error\""));
  EXPECT_LT(text.find("\"retry_count\""), text.find("\"shard_id\""));
  EXPECT_EQ(text.substr(0, 4), "{\n  ");
}

TEST(ShardStateTest, RetryBudgetSurvivesACorruptStatusFile) {
  testing::TempDir d;
  ShardState st(Env::Default(), d.path(), 0);
  ASSERT_TRUE(st.MarkRunning({}).ok());
  ASSERT_TRUE(st.MarkRunning({}).ok());
  testing::WriteFile(d.Path("shard_0/status.json"), "{not json");
  ShardRecord r = st.Read();
  EXPECT_EQ(r.status, ShardStatus::kUnknown);
  EXPECT_EQ(r.retry_count, 2);
  EXPECT_EQ(*st.MarkRunning({}), 3);
}

}  // namespace
}  // namespace mmirage

namespace mmirage {
namespace {

// Issue #13, item 9: two processes recording the same shard at once (say a worker and `mmirage retry` marking it)
// never tear status.json: every read parses as a whole record.
TEST(ShardStateConcurrencyTest, TwoWritersNeverTearStatusJson) {
  testing::TempDir d;
  Env* env = Env::Default();
  ASSERT_TRUE(ShardState(env, d.path(), 0).MarkRunning({}).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, write_errors{0};
  std::thread reader([&] {
    while (!stop) {
      auto text = env->ReadFileToString(d.Path("shard_0/status.json"));
      auto v = text.ok() ? ParseJson(*text) : Result<Value>(Status::NotFound("x"));
      if (!v.ok() || !v->is_object()) ++torn;
    }
  });
  auto writer = [&](bool fail) {
    ShardState st(env, d.path(), 0);
    for (int i = 0; i < 100; ++i) {
      Status s = fail ? st.MarkFailed(std::string(5000, 'x'), i) : st.MarkSuccess(Value(), i);
      if (!s.ok()) ++write_errors;
    }
  };
  std::thread a(writer, true), b(writer, false);
  a.join();
  b.join();
  stop = true;
  reader.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(write_errors.load(), 0);
  ShardRecord r = ShardState(env, d.path(), 0).Read();
  EXPECT_TRUE(r.status == ShardStatus::kFailed || r.status == ShardStatus::kSuccess) << ShardStatusName(r.status);
}

}  // namespace
}  // namespace mmirage
