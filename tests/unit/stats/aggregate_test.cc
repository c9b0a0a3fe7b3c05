#include "stats/aggregate.h"

#include <gtest/gtest.h>

#include "data/json.h"

namespace mmirage {
namespace {

ShardStatsInput Shard(int64_t id, double start, double finish, double runtime, int64_t rows) {
  ShardStatsInput s;
  s.shard_id = id;
  s.status = ShardStatus::kSuccess;
  s.started_at_seconds = start;
  s.finished_at_seconds = finish;
  ShardStats st;
  st.runtime_seconds = runtime;
  st.rows_processed = rows;
  s.stats = st;
  return s;
}

std::vector<std::string> Keys(const Value& v) {
  std::vector<std::string> k;
  for (const auto& [key, _] : v.as_object()) k.push_back(key);
  return k;
}

TEST(AggregateStatsTest, KeysInSpecOrderThenExtensions) {
  Value a = AggregateStats({}, 2);
  EXPECT_EQ(Keys(a), (std::vector<std::string>{"total_shards",
                                               "completed_shards",
                                               "total_rows_processed",
                                               "wall_clock_runtime_seconds",
                                               "wall_clock_runtime_human",
                                               "sum_shard_runtime_seconds",
                                               "sum_shard_runtime_human",
                                               "min_shard_runtime_seconds",
                                               "min_shard_runtime_human",
                                               "max_shard_runtime_seconds",
                                               "max_shard_runtime_human",
                                               "overall_throughput_rows_per_sec",
                                               "mean_gpu_util_pct",
                                               "num_gpus",
                                               "total_input_tokens",
                                               "total_output_tokens",
                                               "sum_model_load_seconds",
                                               "sum_inference_runtime_seconds",
                                               "tokens_per_sec_per_gpu",
                                               "gpu_days_per_billion_tokens",
                                               "total_tokens_per_sec",
                                               "mean_cpu_util_pct",
                                               "total_failed_rows"}));
  EXPECT_EQ(a.Find("total_shards")->as_int(), 2);
  EXPECT_EQ(a.Find("completed_shards")->as_int(), 0);
  // Nothing measured: nulls, never zeros.
  for (const char* k :
       {"total_rows_processed", "wall_clock_runtime_seconds", "wall_clock_runtime_human", "sum_shard_runtime_seconds",
        "overall_throughput_rows_per_sec", "mean_gpu_util_pct", "num_gpus", "total_input_tokens", "total_output_tokens",
        "sum_model_load_seconds", "sum_inference_runtime_seconds", "tokens_per_sec_per_gpu",
        "gpu_days_per_billion_tokens", "total_tokens_per_sec", "mean_cpu_util_pct"}) {
    EXPECT_TRUE(a.Find(k)->is_null()) << k;
  }
  EXPECT_EQ(a.Find("total_failed_rows")->as_int(), 0);
}

TEST(AggregateStatsTest, WallClockSpansEarliestStartToLatestFinish) {
  // Given out of order; shard 1 starts first, shard 0 finishes last.
  std::vector<ShardStatsInput> in = {Shard(1, 1000, 1050, 50, 30), Shard(0, 1010, 1120.5, 110.5, 70)};
  Value a = AggregateStats(in, 2);
  EXPECT_EQ(a.Find("completed_shards")->as_int(), 2);
  EXPECT_EQ(a.Find("total_rows_processed")->as_int(), 100);
  EXPECT_DOUBLE_EQ(a.Find("wall_clock_runtime_seconds")->as_double(), 120.5);
  EXPECT_EQ(a.Find("wall_clock_runtime_human")->as_string(), "2 minutes and 0.50 seconds");
  EXPECT_DOUBLE_EQ(a.Find("sum_shard_runtime_seconds")->as_double(), 160.5);
  EXPECT_DOUBLE_EQ(a.Find("min_shard_runtime_seconds")->as_double(), 50);
  EXPECT_EQ(a.Find("min_shard_runtime_human")->as_string(), "50 seconds");
  EXPECT_DOUBLE_EQ(a.Find("max_shard_runtime_seconds")->as_double(), 110.5);
  EXPECT_DOUBLE_EQ(a.Find("overall_throughput_rows_per_sec")->as_double(), 0.83);  // 100 / 120.5
  // No tokens: token metrics null.
  EXPECT_TRUE(a.Find("total_output_tokens")->is_null());
  EXPECT_TRUE(a.Find("sum_inference_runtime_seconds")->is_null());
}

TEST(AggregateStatsTest, OnlySuccessfulShardsWithStatsContribute) {
  ShardStatsInput failed = Shard(2, 0, 99999, 5, 1000);
  failed.status = ShardStatus::kFailed;
  failed.failed_rows = 50;
  ShardStatsInput no_stats = Shard(3, 0, 99999, 5, 1000);
  no_stats.stats.reset();
  no_stats.failed_rows = 4;
  ShardStatsInput unparsable_time = Shard(4, 0, 0, 10, 10);
  unparsable_time.started_at_seconds.reset();
  unparsable_time.failed_rows = 1;
  Value a = AggregateStats({Shard(0, 100, 200, 100, 10), failed, no_stats, unparsable_time}, 5);
  EXPECT_EQ(a.Find("completed_shards")->as_int(), 3);  // stats not required
  EXPECT_EQ(a.Find("total_rows_processed")->as_int(), 20);
  EXPECT_DOUBLE_EQ(a.Find("wall_clock_runtime_seconds")->as_double(), 100);
  EXPECT_DOUBLE_EQ(a.Find("sum_shard_runtime_seconds")->as_double(), 110);
  EXPECT_EQ(a.Find("total_failed_rows")->as_int(), 5);  // successful shards only
}

TEST(AggregateStatsTest, GpuDaysPerBillionTokensWorkedExample) {
  // Two shards on 2 GPUs: 110 s each, 10 s of it loading the model, 500k output tokens each.
  // Σ inference = 220 − 20 = 200 s; 1e6 tokens.
  // tokens/s/GPU = 1e6 / (200 × 2) = 2500.
  // GPU-days per 1e9 tokens = (2 × 200 / 86400) / (1e6 / 1e9) = 4.6296 (the original's docs example is 10× off).
  std::vector<ShardStatsInput> in;
  for (int i = 0; i < 2; ++i) {
    ShardStatsInput s = Shard(i, 0, 110, 110, 100);
    s.stats->model_load_seconds = 10;
    s.stats->input_tokens = 2000;
    s.stats->output_tokens = 500000;
    s.stats->num_gpus = 2;
    in.push_back(s);
  }
  Value a = AggregateStats(in, 2);
  EXPECT_EQ(a.Find("num_gpus")->as_int(), 2);
  EXPECT_EQ(a.Find("total_input_tokens")->as_int(), 4000);
  EXPECT_EQ(a.Find("total_output_tokens")->as_int(), 1000000);
  EXPECT_DOUBLE_EQ(a.Find("sum_model_load_seconds")->as_double(), 20);
  EXPECT_DOUBLE_EQ(a.Find("sum_inference_runtime_seconds")->as_double(), 200);
  EXPECT_DOUBLE_EQ(a.Find("tokens_per_sec_per_gpu")->as_double(), 2500);
  EXPECT_DOUBLE_EQ(a.Find("gpu_days_per_billion_tokens")->as_double(), 4.6296);
  EXPECT_DOUBLE_EQ(a.Find("total_tokens_per_sec")->as_double(), 5000);
}

TEST(AggregateStatsTest, TokenNullRules) {
  // Only input tokens: both totals non-null (shared flag), but no output → no rates.
  ShardStatsInput s = Shard(0, 0, 10, 10, 5);
  s.stats->input_tokens = 7;
  s.stats->num_gpus = 1;
  Value a = AggregateStats({s}, 1);
  EXPECT_EQ(a.Find("total_input_tokens")->as_int(), 7);
  EXPECT_EQ(a.Find("total_output_tokens")->as_int(), 0);
  EXPECT_TRUE(a.Find("sum_inference_runtime_seconds")->is_null());
  EXPECT_TRUE(a.Find("tokens_per_sec_per_gpu")->is_null());
  // Output tokens on CPU (num_gpus null): per-GPU metrics null, total token rate still there.
  s.stats->output_tokens = 100;
  s.stats->num_gpus.reset();
  a = AggregateStats({s}, 1);
  EXPECT_TRUE(a.Find("num_gpus")->is_null());
  EXPECT_TRUE(a.Find("sum_inference_runtime_seconds")->is_null());
  EXPECT_TRUE(a.Find("gpu_days_per_billion_tokens")->is_null());
  EXPECT_DOUBLE_EQ(a.Find("total_tokens_per_sec")->as_double(), 10);
  // num_gpus from the lowest contributing shard id that has one.
  ShardStatsInput t = Shard(1, 0, 10, 10, 5);
  t.stats->num_gpus = 4;
  ShardStatsInput u = Shard(3, 0, 10, 10, 5);
  u.stats->num_gpus = 8;
  EXPECT_EQ(AggregateStats({u, s, t}, 4).Find("num_gpus")->as_int(), 4);
}

TEST(AggregateStatsTest, UtilisationIsRowsWeighted) {
  ShardStatsInput a = Shard(0, 0, 10, 10, 100);
  a.stats->gpu_util_mean = 90;
  a.stats->cpu_util_mean = 100;
  ShardStatsInput b = Shard(1, 0, 10, 10, 300);
  b.stats->gpu_util_mean = 50;
  b.stats->cpu_util_mean = 200;
  ShardStatsInput c = Shard(2, 0, 10, 10, 0);  // no rows: ignored
  c.stats->gpu_util_mean = 0;
  ShardStatsInput d = Shard(3, 0, 10, 10, 1000);  // no sample: ignored
  Value v = AggregateStats({a, b, c, d}, 4);
  EXPECT_DOUBLE_EQ(v.Find("mean_gpu_util_pct")->as_double(), 60);   // (90×100 + 50×300) / 400
  EXPECT_DOUBLE_EQ(v.Find("mean_cpu_util_pct")->as_double(), 175);  // (100×100 + 200×300) / 400
  // A measured 0 is 0.
  ShardStatsInput z = Shard(0, 0, 10, 10, 10);
  z.stats->gpu_util_mean = 0;
  EXPECT_EQ(AggregateStats({z}, 1).Find("mean_gpu_util_pct")->as_number(), 0);
}

TEST(AggregateStatsTest, MeasuredZerosStayZero) {
  // One successful shard with no rows: 0 rows (measured), not null; throughput null (no rows).
  Value a = AggregateStats({Shard(0, 0, 10, 10, 0)}, 1);
  EXPECT_EQ(a.Find("total_rows_processed")->as_int(), 0);
  EXPECT_TRUE(a.Find("overall_throughput_rows_per_sec")->is_null());
  EXPECT_TRUE(a.Find("sum_model_load_seconds")->is_null());  // no shard reported a load time
}

TEST(AggregateStatsTest, TableHasOneLinePerMetric) {
  std::string t = FormatAggregateTable(AggregateStats({Shard(0, 0, 10, 10, 5)}, 2));
  EXPECT_NE(t.find("Shards completed"), std::string::npos);
  EXPECT_NE(t.find("1 / 2"), std::string::npos);
  EXPECT_NE(t.find("10 seconds"), std::string::npos);
}

}  // namespace
}  // namespace mmirage
