#include "state/heartbeat.h"

#include <gtest/gtest.h>

#include "support/test_util.h"

namespace mmirage {
namespace {

TEST(HeartbeatTest, AgeIsMeasuredFromTheStoredTime) {
  testing::TempDir d;
  Env* env = Env::Default();
  EXPECT_FALSE(HeartbeatAgeSeconds(env, d.path(), 0).has_value());
  ASSERT_TRUE(env->CreateDirs(d.Path("shard_0")).ok());
  ASSERT_TRUE(TouchHeartbeat(env, d.path(), 0).ok());
  auto age = HeartbeatAgeSeconds(env, d.path(), 0);
  ASSERT_TRUE(age.has_value());
  EXPECT_LT(*age, 30);
  EXPECT_GT(*age, -1);
  testing::WriteFile(d.Path("shard_0/heartbeat"), std::to_string(env->NowMicros() / 1000000 - 600) + ".5\n");
  age = HeartbeatAgeSeconds(env, d.path(), 0);
  ASSERT_TRUE(age.has_value());
  EXPECT_NEAR(*age, 600, 30);
  testing::WriteFile(d.Path("shard_0/heartbeat"), "garbage\n");
  EXPECT_FALSE(HeartbeatAgeSeconds(env, d.path(), 0).has_value());
}

TEST(HeartbeatTest, TouchFailsWithoutTheShardDirectory) {
  testing::TempDir d;
  EXPECT_FALSE(TouchHeartbeat(Env::Default(), d.path(), 7).ok());
}

TEST(ShardProgressTest, RoundTripsAndToleratesBadFields) {
  testing::TempDir d;
  Env* env = Env::Default();
  ASSERT_TRUE(env->CreateDirs(d.Path("shard_1")).ok());
  EXPECT_FALSE(ReadShardProgress(env, d.path(), 1).has_value());
  ShardProgress p;
  p.rows_done = 5;
  p.rows_total = 9;
  p.rows_failed = 1;
  p.rows_per_sec = 2.5;
  p.started_at = 1000.0;
  ASSERT_TRUE(WriteShardProgress(env, d.path(), 1, p).ok());
  auto back = ReadShardProgress(env, d.path(), 1);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->rows_done, 5);
  EXPECT_EQ(back->rows_total, 9);
  EXPECT_EQ(back->rows_failed, 1);
  EXPECT_EQ(back->rows_per_sec, 2.5);
  EXPECT_EQ(back->started_at, 1000.0);
  EXPECT_TRUE(back->updated_at.has_value());
  testing::WriteFile(d.Path("shard_1/progress.json"), "{\"rows_done\": \"x\", \"rows_total\": null}");
  back = ReadShardProgress(env, d.path(), 1);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->rows_done, 0);
  EXPECT_FALSE(back->rows_total.has_value());
  testing::WriteFile(d.Path("shard_1/progress.json"), "[1]");
  EXPECT_FALSE(ReadShardProgress(env, d.path(), 1).has_value());
}

}  // namespace
}  // namespace mmirage
