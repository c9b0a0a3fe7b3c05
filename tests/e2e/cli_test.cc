// End-to-end: command-line behaviour, validate, preview, merge-dir, query.
#include <gtest/gtest.h>

#include "data/json.h"
#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

TEST(CliTest, UsageErrorsExitWithTwo) {
  EXPECT_EQ(RunMmirage("").exit_code, 2);
  EXPECT_EQ(RunMmirage("bogus").exit_code, 2);
  EXPECT_EQ(RunMmirage("run").exit_code, 2);  // --config required
  EXPECT_EQ(RunMmirage("run --config x.yaml --log-level LOUD").exit_code, 2);
  EXPECT_EQ(RunMmirage("run --config x.yaml --shard-id abc").exit_code, 2);
  auto v = RunMmirage("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out.rfind("mmirage ", 0), 0u);
  auto h = RunMmirage("--help");
  EXPECT_EQ(h.exit_code, 0);
  for (const char* cmd : {"run", "submit", "check", "retry", "merge", "merge-dir", "stats", "validate", "preview"})
    EXPECT_NE(h.out.find(cmd), std::string::npos) << cmd;
}

TEST(CliTest, ValidateReportsEveryErrorWithItsLocation) {
  TempDir d;
  WriteFile(d.Path("bad.yaml"),
            "processors: []\n"
            "loading_params:\n"
            "  datasets: []\n"
            "processing_params:\n"
            "  inputs:\n"
            "    - {name: a, key: \"length(@, @)\"}\n"
            "  outputs: []\n"
            "  output_schema: {x: \"{{ a | nope }}\"}\n"
            "execution_params: {retyr: true}\n");
  auto r = RunMmirage("validate --config " + d.Path("bad.yaml"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("error: " + d.Path("bad.yaml") + ":1:1: No datasets provided"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(d.Path("bad.yaml") + ":6:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(d.Path("bad.yaml") + ":8:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("warning: " + d.Path("bad.yaml") + ":9:20: unknown key 'retyr'"), std::string::npos) << r.err;
  WriteFile(d.Path("data.jsonl"), MakeRows(2));
  WriteFile(d.Path("good.yaml"), RestructureConfig(d.Path("data.jsonl"), d.Path("out"), d.Path("state")));
  auto ok = RunMmirage("validate --config " + d.Path("good.yaml"));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("OK"), std::string::npos);
  EXPECT_EQ(RunMmirage("validate --config " + d.Path("missing.yaml")).exit_code, 1);
}

TEST(CliTest, PreviewShowsVariablesPromptsAndOutputWithPlaceholders) {
  TempDir d;
  WriteFile(d.Path("data.jsonl"), MakeRows(10));
  WriteFile(d.Path("cfg.yaml"),
            "processors: [{type: llm, server_args: {model_path: m.gguf}}]\n"
            "loading_params:\n  datasets: [{type: JSONL, path: " +
                d.Path("data.jsonl") + ", output_dir: " + d.Path("out") +
                "}]\n  num_shards: 2\n"
                "processing_params:\n  inputs: [{name: t, key: text}]\n"
                "  outputs:\n"
                "    - {name: qa, type: llm, output_type: JSON, output_schema: [question, answer],\n"
                "       prompt: \"Make a question from: {{ t }}\"}\n"
                "  remove_columns: true\n"
                "  output_schema: {q: \"{{ qa.question }}\", src: \"{{ t }}\"}\n");
  auto r = RunMmirage("preview --config " + d.Path("cfg.yaml") + " -n 2 --shard-id 1 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> rows;
  size_t start = 0;
  while (start < r.out.size()) {
    size_t nl = r.out.find('\n', start);
    rows.push_back(r.out.substr(start, nl - start));
    start = nl + 1;
  }
  ASSERT_EQ(rows.size(), 2u);
  auto first = ParseJson(rows[0]);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->Find("row_index")->as_int(), 5);
  EXPECT_EQ(first->Find("prompts")->Find("qa")->as_string(),
            "Make a question from: The capital of country 5 is city 5");
  EXPECT_EQ(first->Find("output")->Find("q")->as_string(), "<qa.question: string>");
  auto text = RunMmirage("preview --config " + d.Path("cfg.yaml") + " -n 1");
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("prompt of 'qa':\n  | Make a question from: The capital of country 0"), std::string::npos)
      << text.out;
  EXPECT_FALSE(Exists(d.Path("out")));
}

TEST(CliTest, MergeDirMergesNestedDatasetsAndRefusesUnsafeOutputs) {
  TempDir d;
  WriteFile(d.Path("in/a/shard_0/data.jsonl"), "{\"i\":0}\n");
  WriteFile(d.Path("in/a/shard_1/data.jsonl"), "{\"i\":1}\n{\"i\":2}\n");
  WriteFile(d.Path("in/a/shard_1.tmp.host.1.abc/data.jsonl"), "{\"i\":99}\n");
  WriteFile(d.Path("in/b/shard_10/data.jsonl"), "{\"j\":10}\n");
  WriteFile(d.Path("in/b/shard_2/data.jsonl"), "{\"j\":2}\n");
  WriteFile(d.Path("in/b/shard_3/data.jsonl"), "");
  auto r = RunMmirage("merge-dir --input-dir " + d.Path("in") + " --output-dir " + d.Path("merged"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFile(d.Path("merged/a/data.jsonl")), "{\"i\":0}\n{\"i\":1}\n{\"i\":2}\n");
  EXPECT_EQ(ReadFile(d.Path("merged/b/data.jsonl")), "{\"j\":2}\n{\"j\":10}\n");
  EXPECT_NE(r.err.find("zero_rows=1"), std::string::npos);
  auto unsafe = RunMmirage("merge-dir --input-dir " + d.Path("in/a") + " --output-dir " + d.Path("in"));
  EXPECT_EQ(unsafe.exit_code, 1);
  EXPECT_NE(unsafe.err.find("Unsafe merge output path"), std::string::npos);
  auto none = RunMmirage("merge-dir --input-dir " + d.Path("merged") + " --output-dir " + d.Path("x"));
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("No dataset directories with shard_* folders"), std::string::npos);
}

TEST(CliTest, CatSkipsAShardFolderWhoseIdIsOutOfRange) {
  TempDir d;
  WriteFile(d.Path("out/shard_1/data.jsonl"), "{\"i\":1}\n");
  WriteFile(d.Path("out/shard_0/data.jsonl"), "{\"i\":0}\n");
  WriteFile(d.Path("out/shard_99999999999999999999/data.jsonl"), "{\"i\":2}\n");  // 20 digits: past int64
  auto r = RunMmirage("cat '" + d.Path("out") + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"i\":0}\n{\"i\":1}\n");
}

TEST(CliTest, QueryEvaluatesJmespathOnStdin) {
  auto r = RunCommand("printf '{\"a\":{\"b\":[1,2,3]}}' | '" + std::string(MMIRAGE_BINARY) + "' query 'a.b[-1]'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "3\n");
  auto bad = RunMmirage("query 'a.['");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("syntax error at column"), std::string::npos);
}

TEST(CliTest, CatSkipsAShardFolderWhoseIdOverflowsInt64) {
  // A folder named shard_ + 20 digits is not a shard of ours: cat reads the real shards and does not abort.
  TempDir d;
  WriteFile(d.Path("out/shard_0/data.jsonl"), "{\"a\":1}\n{\"a\":2}\n");
  WriteFile(d.Path("out/shard_99999999999999999999/data.jsonl"), "{\"a\":3}\n");
  auto r = RunMmirage("cat '" + d.Path("out") + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"a\":1}\n{\"a\":2}\n");
}

}  // namespace
}  // namespace mmirage::testing
