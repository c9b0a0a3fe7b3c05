// Issue #13, item 10: failed rows reported with FILE:LINE, stage and message; summaries over every shard.
#include "pipeline/failure_report.h"

#include <gtest/gtest.h>

#include "config/config.h"
#include "support/test_util.h"

namespace mmirage::pipeline {
namespace {

std::string Line(const std::string& source, const std::string& stage, const std::string& msg, bool warning = false) {
  return std::string("{\"row_index\":1,\"source\":\"") + source + "\",\"stage\":\"" + stage + "\",\"message\":\"" +
         msg + "\"" + (warning ? ",\"level\":\"warning\"" : "") + "}\n";
}

TEST(FailureReportTest, FirstFailuresSkipWarningsAndCountTheRest) {
  testing::TempDir d;
  testing::WriteFile(d.Path("a/errors.jsonl"), Line("d.jsonl:2", "extract", "missing key") +
                                                   Line("d.jsonl:3", "generate", "truncated", /*warning=*/true) +
                                                   Line("d.jsonl:4", "render_prompt", "'x' is undefined"));
  testing::WriteFile(d.Path("b/errors.jsonl"),
                     Line("d.jsonl:9", "extract", "m9") + Line("d.jsonl:10", "extract", "m10"));
  auto lines = FirstFailures(Env::Default(), {d.Path("a/errors.jsonl"), d.Path("b/errors.jsonl")}, 2);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "d.jsonl:2 [extract] missing key");
  EXPECT_EQ(lines[1], "d.jsonl:4 [render_prompt] 'x' is undefined");  // the warning is not a failed row
  EXPECT_EQ(lines[2], "... and 2 more in " + d.Path("b/errors.jsonl"));
  lines = FirstFailures(Env::Default(), {d.Path("a/errors.jsonl"), d.Path("b/errors.jsonl")}, 1);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "... and 3 more in " + d.Path("a/errors.jsonl") + " and 1 other file(s)");
  EXPECT_TRUE(FirstFailures(Env::Default(), {d.Path("missing/errors.jsonl")}).empty());
}

TEST(FailureReportTest, SummaryCoversEveryShardOfEveryDataset) {
  testing::TempDir d;
  std::string y =
      "processors: []\nloading_params:\n  num_shards: 3\n  datasets:\n"
      "    - {type: JSONL, path: x.jsonl, output_dir: " +
      d.Path("o1") +
      "}\n"
      "    - {type: JSONL, path: y.jsonl, output_dir: " +
      d.Path("o2") +
      "}\n"
      "processing_params:\n  inputs: []\n  outputs: []\n  output_schema: {a: b}\n";
  config::LoadOptions lo;
  lo.vars = [](const std::string&) { return std::optional<std::string>(); };
  auto c = config::LoadConfigFromString(y, d.Path("c.yaml"), lo);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(SummarizeFailures(Env::Default(), *c).rows_failed, 0);
  EXPECT_EQ(SummarizeFailures(Env::Default(), *c).Headline(), "");
  testing::WriteFile(d.Path("o1/shard_2/errors.jsonl"), Line("x.jsonl:5", "extract", "e5"));
  testing::WriteFile(d.Path("o2/shard_0/errors.jsonl"),
                     Line("y.jsonl:1", "render_output", "e1") + Line("y.jsonl:2", "render_output", "e2"));
  testing::WriteFile(d.Path("o2/shard_1/errors.jsonl"), Line("y.jsonl:7", "generate", "w", /*warning=*/true));
  testing::WriteFile(d.Path("o2/shard_7/errors.jsonl"), Line("y.jsonl:70", "extract", "stale shard"));  // beyond
  FailureSummary s = SummarizeFailures(Env::Default(), *c);
  EXPECT_EQ(s.rows_failed, 3);
  EXPECT_EQ(s.files, (std::vector<std::string>{d.Path("o1/shard_2/errors.jsonl"), d.Path("o2/shard_0/errors.jsonl")}));
  EXPECT_EQ(s.Headline(), "3 row(s) failed in 2 shard output(s); see " + d.Path("o1/shard_2/errors.jsonl") + ", " +
                              d.Path("o2/shard_0/errors.jsonl"));
  ASSERT_EQ(s.first.size(), 3u);
  EXPECT_EQ(s.first[0], "x.jsonl:5 [extract] e5");
  EXPECT_EQ(s.first[2], "y.jsonl:2 [render_output] e2");
}

}  // namespace
}  // namespace mmirage::pipeline
