// End-to-end: `mmirage check`, `retry` and `stats` over the state directory of model-free runs.
#include <gtest/gtest.h>

#include "data/json.h"
#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

class CheckStatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(dir_.Path("data.jsonl"), MakeRows(50));
    cfg_ = dir_.Path("cfg.yaml");
    WriteFile(cfg_, RestructureConfig(dir_.Path("data.jsonl"), dir_.Path("out"), dir_.Path("state"),
                                      "  num_shards: 3\n", "execution_params:\n  max_retries: 1\n"));
  }
  void RunShard(int s) {
    auto r = RunMmirage("run --config " + cfg_ + " --shard-id " + std::to_string(s));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // The summary JSON printed after the table.
  static Value Summary(const std::string& out) {
    size_t at = out.rfind("\n{");
    EXPECT_NE(at, std::string::npos) << out;
    auto v = ParseJson(out.substr(at + 1));
    EXPECT_TRUE(v.ok()) << out;
    return v.ok() ? *v : Value();
  }
  static Value Json(const std::string& out) {
    auto v = ParseJson(out);
    EXPECT_TRUE(v.ok()) << out;
    return v.ok() ? *v : Value();
  }
  static std::string TableLine(const std::string& out, int shard) {
    std::string prefix = std::to_string(shard) + " ";
    size_t at = out.find("\n" + prefix);
    if (at == std::string::npos) return "";
    return out.substr(at + 1, out.find('\n', at + 1) - at - 1);
  }
  std::string Cmd(const std::string& sub, const std::string& extra = "") {
    return sub + " --config " + cfg_ + (extra.empty() ? "" : " " + extra);
  }

  TempDir dir_;
  std::string cfg_;
};

TEST_F(CheckStatsTest, MissingShardIsRetriedThenStatsCoverEveryRow) {
  RunShard(0);
  RunShard(1);

  auto check = RunMmirage(Cmd("check"));
  EXPECT_EQ(check.exit_code, 1) << check.err;
  EXPECT_EQ(check.out.substr(0, 5), "SHARD") << check.out;
  EXPECT_NE(TableLine(check.out, 2).find("missing"), std::string::npos) << check.out;
  EXPECT_NE(TableLine(check.out, 0).find("success"), std::string::npos) << check.out;
  EXPECT_NE(TableLine(check.out, 0).find("17/17"), std::string::npos) << check.out;  // rows done/total
  Value summary = Summary(check.out);
  EXPECT_EQ(ToJson(summary), "{\"total\":3,\"successful\":2,\"running\":0,\"failed\":1,\"max_retries_exceeded\":0}");
  EXPECT_NE(check.out.find("{\n  \"total\": 3,\n  \"successful\": 2"), std::string::npos);  // 2-space indent

  auto json = RunMmirage(Cmd("check", "--json"));
  EXPECT_EQ(json.exit_code, 1);
  Value v = Json(json.out);
  ASSERT_TRUE(v.is_object());
  EXPECT_EQ(v.Find("summary")->Find("failed")->as_int(), 1);
  ASSERT_EQ(v.Find("shards")->size(), 3u);
  const Value& s2 = v.Find("shards")->as_array()[2];
  EXPECT_EQ(s2.Find("status")->as_string(), "missing");
  EXPECT_EQ(s2.Find("class")->as_string(), "failed");
  EXPECT_EQ(s2.Find("attempts")->as_int(), 0);

  // Without -y and without a terminal, nothing is re-run.
  auto declined = RunMmirage(Cmd("check", "--retry"));
  EXPECT_EQ(declined.exit_code, 1);
  EXPECT_NE(declined.err.find("use --yes"), std::string::npos) << declined.err;
  EXPECT_FALSE(Exists(dir_.Path("state/shard_2/status.json")));

  auto retry = RunMmirage(Cmd("retry", "-y"));
  EXPECT_EQ(retry.exit_code, 0) << retry.err;
  EXPECT_NE(retry.err.find("Retrying failed shards locally: 2"), std::string::npos) << retry.err;
  EXPECT_EQ(Summary(retry.out).Find("successful")->as_int(), 3) << retry.out;

  auto again = RunMmirage(Cmd("check"));
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  auto nothing = RunMmirage(Cmd("retry"));
  EXPECT_EQ(nothing.exit_code, 0);
  EXPECT_NE(nothing.err.find("All shards already succeeded."), std::string::npos) << nothing.err;

  auto stats = RunMmirage(Cmd("stats"));
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  Value report = Json(stats.out);
  ASSERT_TRUE(report.is_object());
  std::vector<std::string> top;
  for (const auto& [k, _] : report.as_object()) top.push_back(k);
  EXPECT_EQ(top, (std::vector<std::string>{"per_shard", "aggregate"}));
  const Value& agg = *report.Find("aggregate");
  for (const char* k : {"total_shards",
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
                        "total_failed_rows"}) {
    EXPECT_NE(agg.Find(k), nullptr) << k;
  }
  EXPECT_EQ(agg.Find("total_shards")->as_int(), 3);
  EXPECT_EQ(agg.Find("completed_shards")->as_int(), 3);
  EXPECT_EQ(agg.Find("total_rows_processed")->as_int(), 50);
  EXPECT_TRUE(agg.Find("wall_clock_runtime_seconds")->is_number());
  EXPECT_TRUE(agg.Find("total_output_tokens")->is_null());  // no model
  ASSERT_EQ(report.Find("per_shard")->size(), 3u);
  const Value& e0 = report.Find("per_shard")->as_array()[0];
  std::vector<std::string> keys;
  for (const auto& [k, _] : e0.as_object()) keys.push_back(k);
  keys.resize(12);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"status", "retry_count", "shard_id", "started_at", "finished_at", "error",
                                      "hostname", "pid", "slurm_job_id", "slurm_array_task_id", "datasets", "stats"}));
  EXPECT_EQ(e0.Find("stats")->Find("rows_processed")->as_int(), 17);
  EXPECT_TRUE(e0.Find("stats")->Find("runtime_human")->is_string());

  auto table = RunMmirage(Cmd("stats", "--format table"));
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("Shards completed"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("3 / 3"), std::string::npos) << table.out;
}

TEST_F(CheckStatsTest, RunningShardWithADeadPidIsStale) {
  RunShard(0);
  RunShard(1);
  RunShard(2);
  // Shard 1 claims to be running on this host, in a process that has exited.
  auto dead = RunCommand("sh -c 'echo $$'");
  ASSERT_EQ(dead.exit_code, 0);
  int64_t pid = std::stoll(dead.out);
  auto st = ParseJson(ReadFile(dir_.Path("state/shard_1/status.json")));
  ASSERT_TRUE(st.ok());
  Value rec = *st;
  rec.Set("status", "running");
  rec.Set("pid", pid);
  rec.Set("finished_at", Value());
  rec.Set("stats", Value());
  WriteFile(dir_.Path("state/shard_1/status.json"), ToJsonPretty(rec, 2, true) + "\n");

  auto check = RunMmirage(Cmd("check"));
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_NE(TableLine(check.out, 1).find("stale"), std::string::npos) << check.out;
  EXPECT_EQ(Summary(check.out).Find("running")->as_int(), 0);
  EXPECT_EQ(Summary(check.out).Find("failed")->as_int(), 1);
  EXPECT_NE(check.err.find("process " + std::to_string(pid)), std::string::npos) << check.err;
  Value v = Json(RunMmirage(Cmd("check", "--json")).out);
  const Value& s1 = v.Find("shards")->as_array()[1];
  EXPECT_EQ(s1.Find("status")->as_string(), "stale");
  EXPECT_EQ(s1.Find("class")->as_string(), "failed");

  // Re-run it; `stats` counts it once it succeeded.
  auto retry = RunMmirage(Cmd("check", "--retry -y"));
  EXPECT_EQ(retry.exit_code, 0) << retry.err;
  EXPECT_EQ(RunMmirage(Cmd("check")).exit_code, 0);
}

TEST_F(CheckStatsTest, ExhaustedShardsAreReportedAndNotRetried) {
  RunShard(0);
  RunShard(1);
  // max_retries 1 → 2 attempts in total; shard 2 used both.
  WriteFile(dir_.Path("state/shard_2/attempts.log"), "1 2026-01-01T00:00:00 h 1\n2 2026-01-01T00:01:00 h 2\n");
  WriteFile(dir_.Path("state/shard_2/status.json"), "{\"status\": \"failed\", \"retry_count\": 2}\n");
  auto check = RunMmirage(Cmd("check"));
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_EQ(Summary(check.out).Find("max_retries_exceeded")->as_int(), 1);
  EXPECT_NE(check.out.find("Exhausted shards (2 attempts used): 2"), std::string::npos) << check.out;
  EXPECT_NE(check.err.find("Shard 2 exceeded retry budget (attempts=2, max_allowed_attempts=2)"), std::string::npos)
      << check.err;
  auto retry = RunMmirage(Cmd("retry", "-y"));
  EXPECT_EQ(retry.exit_code, 1);
  EXPECT_NE(retry.err.find("No retryable shards remain"), std::string::npos) << retry.err;
  EXPECT_EQ(RunMmirage(Cmd("stats")).exit_code, 0);
}

}  // namespace
}  // namespace mmirage::testing
