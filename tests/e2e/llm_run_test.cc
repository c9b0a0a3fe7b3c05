// End-to-end: `mmirage run` with model outputs on the synthetic GGUF model (build/mmirage-make-test-model).
#include <gtest/gtest.h>

#include "data/json.h"
#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

const std::string& TinyModel() { return SharedTinyModel(); }

std::string LlmConfig(const TempDir& d, const std::string& model, const std::string& extra_engine = "",
                      const std::string& sampling = "temperature: 0, max_new_tokens: 24") {
  return "processors:\n"
         "  - type: llm\n"
         "    server_args:\n"
         "      model_path: " +
         model +
         "\n"
         "      extra_engine_args: {max_running_requests: 4, context_length: 512, n_threads: 1" +
         extra_engine +
         "}\n"
         "    default_sampling_params: {" +
         sampling +
         "}\n"
         "loading_params:\n"
         "  datasets: [{type: JSONL, path: " +
         d.Path("data.jsonl") + ", output_dir: " + d.Path("out") +
         ", output_format: jsonl}]\n"
         "  state_dir: " +
         d.Path("state") +
         "\n"
         "  batch_size: 8\n"
         "processing_params:\n"
         "  inputs: [{name: text, key: text}, {name: id, key: id}]\n"
         "  outputs:\n"
         "    - name: summary\n"
         "      type: llm\n"
         "      prompt: \"Summarise: {{ text }}\"\n"
         "    - name: judge\n"
         "      type: llm\n"
         "      output_type: JSON\n"
         "      output_schema:\n"
         "        score: {type: int, min: 0, max: 3}\n"
         "        relevant: bool\n"
         "      prompt: \"Rate this summary of '{{ text }}': {{ summary }}\"\n"
         "  remove_columns: true\n"
         "  output_schema:\n"
         "    id: \"{{ id }}\"\n"
         "    summary: \"{{ summary }}\"\n"
         "    judge: \"{{ judge }}\"\n";
}

TEST(LlmRunTest, PlainAndJsonOutputsAreWrittenTypedOrListedAsErrors) {
  ASSERT_FALSE(TinyModel().empty()) << "cannot generate the synthetic model with " << MakeTestModelTool();
  TempDir d;
  WriteFile(d.Path("data.jsonl"), MakeRows(24));
  WriteFile(d.Path("cfg.yaml"), LlmConfig(d, TinyModel()) + "execution_params: {max_failed_rows: 24}\n");
  auto r = RunMmirage("run --config " + d.Path("cfg.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = ReadLines(d.Path("out/shard_0/data.jsonl"));
  auto errors = ReadLines(d.Path("out/shard_0/errors.jsonl"));
  EXPECT_EQ(rows.size() + errors.size(), 24u);
  EXPECT_GT(rows.size(), 0u);
  int64_t last_id = -1;
  for (const auto& line : rows) {
    auto v = ParseJson(line);
    ASSERT_TRUE(v.ok()) << line;
    EXPECT_GT(v->Find("id")->as_int(), last_id);  // input order
    last_id = v->Find("id")->as_int();
    ASSERT_TRUE(v->Find("summary")->is_string());
    const Value* j = v->Find("judge");
    ASSERT_TRUE(j->is_object()) << line;
    ASSERT_TRUE(j->Find("score")->is_int()) << line;
    EXPECT_GE(j->Find("score")->as_int(), 0);
    EXPECT_LE(j->Find("score")->as_int(), 3);
    EXPECT_TRUE(j->Find("relevant")->is_bool()) << line;
  }
  for (const auto& line : errors) {
    auto e = ParseJson(line);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->Find("stage")->as_string(), "generate") << line;
  }
  auto st = ParseJson(ReadFile(d.Path("state/shard_0/status.json")));
  ASSERT_TRUE(st.ok());
  const Value* stats = st->Find("stats");
  ASSERT_TRUE(stats->is_object());
  EXPECT_GT(stats->Find("input_tokens")->as_int(), 0);
  EXPECT_GT(stats->Find("output_tokens")->as_int(), 0);
  EXPECT_TRUE(stats->Find("model_load_seconds")->is_number());
  EXPECT_EQ(stats->Find("num_gpus")->as_int(), 0);  // CPU
  EXPECT_TRUE(stats->Find("tokens_per_sec_per_gpu")->is_null());
  EXPECT_TRUE(stats->Find("tokens_per_sec")->is_number());
  // Per-row accounting: one usage line per row that called the model, summing to the shard's totals.
  auto usage = ReadLines(d.Path("out/shard_0/usage.jsonl"));
  EXPECT_EQ(usage.size(), 24u);
  int64_t prompt = 0, completion = 0;
  for (const auto& line : usage) {
    auto u = ParseJson(line);
    ASSERT_TRUE(u.ok()) << line;
    EXPECT_GE(u->Find("generations")->as_int(), 2) << line;  // two outputs per row
    prompt += u->Find("prompt_tokens")->as_int();
    completion += u->Find("completion_tokens")->as_int();
  }
  EXPECT_EQ(prompt, stats->Find("input_tokens")->as_int());
  EXPECT_EQ(completion, stats->Find("output_tokens")->as_int());
}

TEST(LlmRunTest, GreedyRunsAreReproducible) {
  ASSERT_FALSE(TinyModel().empty());
  std::string outputs[2];
  for (int i = 0; i < 2; ++i) {
    TempDir d;
    WriteFile(d.Path("data.jsonl"), MakeRows(12));
    // One sequence: batched decoding is not bitwise batch-invariant, and batch composition depends on timing.
    std::string cfg = LlmConfig(d, TinyModel());
    cfg.replace(cfg.find("max_running_requests: 4"), 23, "max_running_requests: 1");
    WriteFile(d.Path("cfg.yaml"), cfg + "execution_params: {max_failed_rows: 12}\n");
    auto r = RunMmirage("run --config " + d.Path("cfg.yaml"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    outputs[i] = ReadFile(d.Path("out/shard_0/data.jsonl")) + ReadFile(d.Path("out/shard_0/errors.jsonl"));
  }
  EXPECT_EQ(outputs[0], outputs[1]);
}

TEST(LlmRunTest, APromptLongerThanTheContextIsARowErrorNotACrash) {
  ASSERT_FALSE(TinyModel().empty());
  TempDir d;
  std::string rows = MakeRows(3);
  rows += "{\"id\":3,\"text\":\"" + std::string(6000, 'x') + " " + std::string(3000, 'y') + "\",\"tags\":[]}\n";
  WriteFile(d.Path("data.jsonl"), rows);
  WriteFile(d.Path("cfg.yaml"), LlmConfig(d, TinyModel()) + "execution_params: {max_failed_rows: 4}\n");
  auto r = RunMmirage("run --config " + d.Path("cfg.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto errors = ReadLines(d.Path("out/shard_0/errors.jsonl"));
  bool found = false;
  for (const auto& e : errors) {
    auto v = ParseJson(e);
    if (v.ok() && v->Find("row_index")->as_int() == 3) {
      found = true;
      EXPECT_NE(v->Find("message")->as_string().find("context"), std::string::npos) << e;
    }
  }
  EXPECT_TRUE(found) << ReadFile(d.Path("out/shard_0/errors.jsonl"));
}

TEST(LlmRunTest, AFileThatIsNotAModelIsAClearError) {
  TempDir d;
  WriteFile(d.Path("data.jsonl"), MakeRows(2));
  WriteFile(d.Path("bad.gguf"), "this is not a gguf file");
  WriteFile(d.Path("cfg.yaml"), LlmConfig(d, d.Path("bad.gguf")));
  auto r = RunMmirage("run --config " + d.Path("cfg.yaml"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad.gguf"), std::string::npos) << r.err;
  auto st = ParseJson(ReadFile(d.Path("state/shard_0/status.json")));
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->Find("status")->as_string(), "failed");
}

}  // namespace
}  // namespace mmirage::testing
