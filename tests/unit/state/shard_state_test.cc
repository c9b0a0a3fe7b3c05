#include "state/shard_state.h"

#include <gtest/gtest.h>

#include "data/json.h"
#include "stats/shard_stats.h"
#include "support/test_util.h"

namespace mmirage {
namespace {

TEST(ShardStateTest, TransitionsWriteStatusAndOneMarker) {
  testing::TempDir d;
  ShardState st(Env::Default(), d.path(), 3);
  EXPECT_EQ(st.Read().status, "missing");
  auto attempt = st.MarkRunning({});
  ASSERT_TRUE(attempt.ok());
  EXPECT_EQ(*attempt, 1);
  EXPECT_TRUE(testing::Exists(d.Path("shard_3/.RUNNING")));
  ShardRecord r = st.Read();
  EXPECT_EQ(r.status, "running");
  EXPECT_EQ(r.shard_id, 3);
  EXPECT_TRUE(r.stats.is_null());
  ASSERT_TRUE(st.MarkFailed("boom", 2).ok());
  EXPECT_FALSE(testing::Exists(d.Path("shard_3/.RUNNING")));
  EXPECT_TRUE(testing::Exists(d.Path("shard_3/.FAILED")));
  EXPECT_EQ(st.Read().error, std::optional<std::string>("boom"));
  EXPECT_EQ(st.Read().failed_rows, 2);
  EXPECT_EQ(*st.MarkRunning({}), 2);
  ASSERT_TRUE(st.MarkSuccess(ShardStats{}.ToValue(), 0).ok());
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
  EXPECT_EQ(r.status, "unknown");
  EXPECT_EQ(r.retry_count, 2);
  EXPECT_EQ(*st.MarkRunning({}), 3);
}

TEST(ShardStatsTest, DerivedValuesUseTheSpecFormulas) {
  ShardStats s;
  s.runtime_seconds = 110.0;
  s.model_load_seconds = 10.0;
  s.output_tokens = 1000000;
  s.num_gpus = 2;
  s.rows_processed = 10;
  Value v = s.ToValue();
  EXPECT_DOUBLE_EQ(v.Find("inference_runtime_seconds")->as_double(), 100.0);
  EXPECT_DOUBLE_EQ(v.Find("tokens_per_sec_per_gpu")->as_double(), 5000.0);
  // 2 GPUs × 100 s / 86400 / (1e6 / 1e9) = 2.3148 GPU-days per billion tokens.
  EXPECT_DOUBLE_EQ(v.Find("gpu_days_per_billion_tokens")->as_double(), 2.3148);
  EXPECT_EQ(v.Find("runtime_human")->as_string(), "1 minute and 50 seconds");
  EXPECT_EQ(v.Find("gpu_util_samples")->as_int(), 0);
  EXPECT_TRUE(v.Find("gpu_util_mean")->is_null());
  ShardStats back = ShardStats::FromValue(v);
  EXPECT_EQ(back.output_tokens, s.output_tokens);
}

TEST(ShardStatsTest, HumanDurations) {
  EXPECT_EQ(HumanDuration(0), "0 seconds");
  EXPECT_EQ(HumanDuration(1), "1 second");
  EXPECT_EQ(HumanDuration(1.5), "1.50 seconds");
  EXPECT_EQ(HumanDuration(59.999), "1 minute");
  EXPECT_EQ(HumanDuration(65.2), "1 minute and 5.20 seconds");
  EXPECT_EQ(HumanDuration(2 * 86400 + 3600 + 33.12), "2 days, 1 hour and 33.12 seconds");
}

}  // namespace
}  // namespace mmirage
