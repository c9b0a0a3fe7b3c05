// Issue #13, item 10: when rows failed, stderr lists the first few with FILE:LINE, stage and message, and the
// summary names the errors.jsonl files — for a single shard, local workers (with merge) and `retry`.
#include <gtest/gtest.h>

#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

class FailureReportE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string rows;
    for (int i = 0; i < 40; ++i)  // rows 3, 10, 17, … (lines 4, 11, 18, …) lack "t"
      rows += i % 7 == 3 ? "{\"id\": " + std::to_string(i) + "}\n"
                         : "{\"id\": " + std::to_string(i) + ", \"t\": \"row " + std::to_string(i) + "\"}\n";
    WriteFile(dir_.Path("d.jsonl"), rows);
  }
  std::string Config(const std::string& extra_exec) {
    std::string c = dir_.Path("c.yaml");
    WriteFile(c, "processors: []\nloading_params:\n  datasets: [{type: JSONL, path: " + dir_.Path("d.jsonl") +
                     ", output_dir: " + dir_.Path("out") +
                     ", output_format: jsonl}]\n  state_dir: " + dir_.Path("state") +
                     "\n  num_shards: 2\nprocessing_params:\n  inputs: [{name: t, key: t}]\n"
                     "  outputs: []\n  output_schema: {u: '{{ t.upper() }}'}\nexecution_params:\n" +
                     extra_exec);
    return c;
  }
  TempDir dir_;
};

TEST_F(FailureReportE2eTest, SingleShardOverTheLimitListsRowsAndTheFile) {
  auto r = RunMmirage("run --config " + Config("  max_failed_rows: 0\n") + " --shard-id 0");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("failed row: " + dir_.Path("d.jsonl") + ":4 [extract] Input variable 't'"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("failed row: " + dir_.Path("d.jsonl") + ":18 [extract]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("3 row(s) failed (max_failed_rows=0); see " + dir_.Path("out/shard_0/errors.jsonl")),
            std::string::npos)
      << r.err;
}

TEST_F(FailureReportE2eTest, LocalWorkersEndWithASummaryOfEveryShardAndTheMergedFile) {
  auto r = RunMmirage("run --config " + Config("  max_failed_rows: 100\n  merge: true\n  local_workers: 2\n") +
                      " --force-retry");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  size_t summary = r.err.find("6 row(s) failed in 2 shard output(s); see " + dir_.Path("out/shard_0/errors.jsonl") +
                              ", " + dir_.Path("out/shard_1/errors.jsonl"));
  ASSERT_NE(summary, std::string::npos) << r.err;
  std::string tail = r.err.substr(summary);
  EXPECT_NE(tail.find("failed row: " + dir_.Path("d.jsonl") + ":4 [extract]"), std::string::npos) << tail;
  EXPECT_NE(tail.find("failed row: " + dir_.Path("d.jsonl") + ":32 [extract]"), std::string::npos) << tail;  // shard 1
  EXPECT_NE(tail.find("... and 1 more in " + dir_.Path("out/shard_1/errors.jsonl")), std::string::npos) << tail;
  EXPECT_NE(tail.find("failed_rows=6 (see " + dir_.Path("out/merged/errors.jsonl") + ")"), std::string::npos) << tail;
  EXPECT_EQ(ReadLines(dir_.Path("out/merged/errors.jsonl")).size(), 6u);
}

TEST_F(FailureReportE2eTest, RetryOfExhaustedShardsReportsTheRowsAgain) {
  std::string c = Config("  max_failed_rows: 0\n  max_retries: 0\n");
  auto first = RunMmirage("run --config " + c + " --force-retry");
  EXPECT_NE(first.exit_code, 0) << first.err;
  auto r = RunMmirage("retry --config " + c + " --reset -y");
  EXPECT_NE(r.exit_code, 0) << r.err;  // the rows fail again
  size_t summary = r.err.find("6 row(s) failed in 2 shard output(s)");
  ASSERT_NE(summary, std::string::npos) << r.err;
  EXPECT_NE(r.err.find("failed row: " + dir_.Path("d.jsonl") + ":11 [extract]", summary), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mmirage::testing
