#include "stats/shard_stats.h"

#include <gtest/gtest.h>

namespace mmirage {
namespace {

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
