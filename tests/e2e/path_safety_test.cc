// End-to-end, issue #13 items 8 and 11: names that become folders cannot lead out of their output folder (split
// names of a config and of a dataset_dict.json; shard folder names), with a clear error and nothing written; and
// `merge --allow-partial` leaves out stale shard folders beyond num_shards.
#include <gtest/gtest.h>

#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

TEST(PathSafetyE2eTest, AnEscapingSplitNameFailsAtLoadWithTheLineAndWritesNothing) {
  TempDir d;
  WriteFile(d.Path("data.jsonl"), MakeRows(3));
  WriteFile(d.Path("cfg.yaml"),
            "processors: []\n"
            "loading_params:\n"
            "  datasets:\n"
            "    - type: JSONL\n"
            "      path:\n"
            "        train: " +
                d.Path("data.jsonl") +
                "\n"
                "        ../../escaped: " +
                d.Path("data.jsonl") +
                "\n"
                "      output_dir: " +
                d.Path("out") +
                "\n"
                "  state_dir: " +
                d.Path("state") +
                "\n"
                "processing_params:\n"
                "  inputs: [{name: text, key: text}]\n"
                "  outputs: []\n"
                "  output_schema: {text: \"{{ text }}\"}\n");
  auto r = RunMmirage("run --config " + d.Path("cfg.yaml"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(d.Path("cfg.yaml") + ":7:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("split name '../../escaped' contains a path separator"), std::string::npos) << r.err;
  EXPECT_FALSE(Exists(d.Path("out")));
  EXPECT_FALSE(Exists(d.Path("escaped")));
  EXPECT_FALSE(Exists(d.Path("state/shard_0/status.json")));
}

TEST(PathSafetyE2eTest, ADatasetDictSplitNameCannotLeadOutOfTheShardFolder) {
  TempDir d;
  // merge-dir over a shard whose dataset_dict.json names ".." as a split: the parent folder holds data.jsonl.
  WriteFile(d.Path("in/data.jsonl"), "{\"a\":1}\n");
  WriteFile(d.Path("in/shard_0/dataset_dict.json"), "{\"splits\": [\"..\"]}\n");
  auto r = RunMmirage("merge-dir --input-dir " + d.Path("in") + " --output-dir " + d.Path("merged"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(d.Path("in/shard_0/dataset_dict.json") + ": invalid split name \"..\" (is '..')"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(Exists(d.Path("merged")));

  // A loadable input dataset whose dataset_dict.json names an absolute split: refused, naming the file.
  WriteFile(d.Path("hf/dataset_dict.json"), "{\"splits\": [\"/etc\"]}\n");
  WriteFile(d.Path("cfg.yaml"),
            "processors: []\n"
            "loading_params:\n"
            "  datasets: [{type: loadable, path: " +
                d.Path("hf") + ", output_dir: " + d.Path("out") +
                "}]\n"
                "  state_dir: " +
                d.Path("state") +
                "\n"
                "processing_params:\n"
                "  inputs: [{name: text, key: text}]\n"
                "  outputs: []\n"
                "  output_schema: {text: \"{{ text }}\"}\n");
  auto run = RunMmirage("run --config " + d.Path("cfg.yaml"));
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find(d.Path("hf/dataset_dict.json") + ": bad split name \"/etc\" (is an absolute path)"),
            std::string::npos)
      << run.err;
  EXPECT_FALSE(Exists(d.Path("out/shard_0/data.jsonl")));
}

TEST(PathSafetyE2eTest, HugeShardNumbersAreNotShardsAndNoShardIsMergedTwice) {
  TempDir d;
  WriteFile(d.Path("in/shard_0/data.jsonl"), "{\"a\":1}\n");
  WriteFile(d.Path("in/shard_99999999999999999999999/data.jsonl"), "{\"a\":2}\n");  // out of int64 range
  auto r = RunMmirage("merge-dir --input-dir " + d.Path("in") + " --output-dir " + d.Path("merged"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadLines(d.Path("merged/data.jsonl")), (std::vector<std::string>{"{\"a\":1}"}));
  // shard_00 is shard 0 too (as the original reads it): both at once is an error, not shard 0 merged twice.
  WriteFile(d.Path("in/shard_00/data.jsonl"), "{\"a\":3}\n");
  auto twice = RunMmirage("merge-dir --input-dir " + d.Path("in") + " --output-dir " + d.Path("merged2"));
  EXPECT_NE(twice.exit_code, 0);
  EXPECT_NE(twice.err.find("are both shard 0"), std::string::npos) << twice.err;
  EXPECT_FALSE(Exists(d.Path("merged2")));
}

TEST(PathSafetyE2eTest, PartialMergeIgnoresStaleShardFoldersBeyondNumShards) {
  TempDir d;
  WriteFile(d.Path("data.jsonl"), MakeRows(50));
  std::string cfg = d.Path("cfg.yaml");
  WriteFile(cfg, RestructureConfig(d.Path("data.jsonl"), d.Path("out"), d.Path("state"), "  num_shards: 3\n"));
  ASSERT_EQ(RunMmirage("run --config " + cfg + " --shard-id 1").exit_code, 0);
  // A folder left by an earlier run with more shards.
  WriteFile(d.Path("out/shard_7/data.jsonl"), "{\"stale\":true}\n");
  auto p = RunMmirage("merge --config " + cfg + " --allow-partial");
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.err.find("Ignoring stale shard folder(s) 7"), std::string::npos) << p.err;
  auto merged = ReadLines(d.Path("out/merged/data.jsonl"));
  EXPECT_EQ(merged.size(), 17u);
  for (const auto& line : merged) EXPECT_EQ(line.find("stale"), std::string::npos) << line;
}

}  // namespace
}  // namespace mmirage::testing
