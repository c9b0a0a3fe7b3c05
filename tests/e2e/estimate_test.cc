// End-to-end: `mmirage estimate` against a real run on the synthetic GGUF model.
#include <gtest/gtest.h>

#include "data/json.h"
#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

// 200 rows whose texts go from 1 to 40 words.
std::string VariedRows(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    std::string words;
    for (int w = 0; w < 1 + (i * 13) % 40; ++w) words += " w" + std::to_string((i * 3 + w) % 29);
    s += "{\"id\":" + std::to_string(i) + ",\"text\":\"Row " + std::to_string(i) + words + "\"}\n";
  }
  return s;
}

std::string EstimateConfig(const TempDir& d, const std::string& extra_processor = "") {
  return "processors:\n"
         "  - type: llm\n"
         "    server_args:\n"
         "      model_path: " +
         SharedTinyModel() +
         "\n"
         "      extra_engine_args: {max_running_requests: 4, context_length: 512, n_threads: 1}\n"
         // Stop strings cut the synthetic model's output at varying lengths.
         "    default_sampling_params: {temperature: 0, max_new_tokens: 24, stop: [\"e\", \"q\"]}\n" +
         extra_processor +
         "loading_params:\n"
         "  datasets: [{type: JSONL, path: " +
         d.Path("data.jsonl") + ", output_dir: " + d.Path("out") +
         ", output_format: jsonl}]\n"
         "  state_dir: " +
         d.Path("state") +
         "\n"
         "  num_shards: 2\n"
         "processing_params:\n"
         "  inputs: [{name: text, key: text}, {name: id, key: id}]\n"
         "  outputs:\n"
         "    - name: summary\n"
         "      type: llm\n"
         "      prompt: \"Summarise: {{ text }}\"\n"
         "  output_schema: {id: \"{{ id }}\", summary: \"{{ summary }}\"}\n"
         "execution_params: {retry: true, local_workers: 1, max_failed_rows: 200}\n";
}

struct Totals {
  int64_t prompt = 0, completion = 0;
};

Totals UsageTotals(const TempDir& d, int shards) {
  Totals t;
  for (int s = 0; s < shards; ++s) {
    for (const auto& line : ReadLines(d.Path("out/shard_" + std::to_string(s) + "/usage.jsonl"))) {
      auto u = ParseJson(line);
      EXPECT_TRUE(u.ok()) << line;
      if (!u.ok()) continue;
      t.prompt += u->Find("prompt_tokens")->as_int();
      t.completion += u->Find("completion_tokens")->as_int();
    }
  }
  return t;
}

void ExpectInside(const Value& interval, int64_t actual, const char* what) {
  ASSERT_TRUE(interval.is_object()) << what;
  int64_t lo = interval.Find("low")->as_int(), hi = interval.Find("high")->as_int();
  EXPECT_LE(lo, interval.Find("estimate")->as_int()) << what;
  EXPECT_GE(hi, interval.Find("estimate")->as_int()) << what;
  EXPECT_LE(lo, actual) << what << ": the real run's total is below the interval";
  EXPECT_GE(hi, actual) << what << ": the real run's total is above the interval";
  EXPECT_LT(hi - lo, actual) << what << ": the interval is uselessly wide";
}

TEST(EstimateTest, TheIntervalHoldsTheRealRunsTokenTotalsAndNothingOfTheRunIsTouched) {
  ASSERT_FALSE(SharedTinyModel().empty()) << "cannot generate the synthetic model with " << MakeTestModelTool();
  TempDir d;
  WriteFile(d.Path("data.jsonl"), VariedRows(200));
  WriteFile(d.Path("cfg.yaml"),
            EstimateConfig(d, "    price_per_million_input_tokens: 1.5\n    price_per_million_output_tokens: 6\n"));
  auto e = RunMmirage("estimate --config " + d.Path("cfg.yaml") + " --format json");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  auto v = ParseJson(e.out);
  ASSERT_TRUE(v.ok()) << e.out;
  // Nothing of the real run exists yet: no state, no outputs, no cache.
  EXPECT_FALSE(Exists(d.Path("state")));
  EXPECT_FALSE(Exists(d.Path("out")));
  EXPECT_FALSE(Exists(d.Path("generation_cache")));
  EXPECT_EQ(v->Find("rows_total")->as_int(), 200);
  EXPECT_EQ(v->Find("sample_rows")->as_int(), 64);
  for (const char* k : {"input_tokens", "output_tokens", "wall_seconds", "cost_usd"}) {
    const Value* x = v->Find(k);
    ASSERT_NE(x, nullptr) << k;
    ASSERT_TRUE(x->is_object()) << k << ": " << e.out;
    for (const char* f : {"estimate", "low", "high"})
      EXPECT_TRUE(x->Find(f) && x->Find(f)->is_number()) << k << "." << f;
  }
  EXPECT_TRUE(v->Find("gpu_days_per_billion_tokens")->is_number());
  ASSERT_TRUE(v->Find("assumptions")->is_array());
  EXPECT_GE(v->Find("assumptions")->as_array().size(), 3u);
  EXPECT_NE(e.out.find("this machine's CPU"), std::string::npos);  // says what is measured and what is assumed
  EXPECT_FALSE(v->Find("output_tokens_bound")->as_bool());

  auto r = RunMmirage("run --config " + d.Path("cfg.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Totals t = UsageTotals(d, 2);
  ASSERT_GT(t.completion, 0);
  ExpectInside(*v->Find("input_tokens"), t.prompt, "input_tokens");
  ExpectInside(*v->Find("output_tokens"), t.completion, "output_tokens");
  double cost = v->Find("cost_usd")->Find("estimate")->as_number();
  double expect = v->Find("input_tokens")->Find("estimate")->as_number() * 1.5e-6 +
                  v->Find("output_tokens")->Find("estimate")->as_number() * 6e-6;
  EXPECT_NEAR(cost, expect, 0.011);

  // The same sample every time: a second estimate gives the same token figures.
  auto again = RunMmirage("estimate --config " + d.Path("cfg.yaml") + " --no-generate --format json");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  auto w = ParseJson(again.out);
  ASSERT_TRUE(w.ok());
  // The tokenizer (vocab-only) counts exactly what the engine counted on the sample.
  EXPECT_EQ(w->Find("input_tokens")->Find("estimate")->as_int(), v->Find("input_tokens")->Find("estimate")->as_int());
  EXPECT_TRUE(w->Find("output_tokens_bound")->as_bool());
  EXPECT_EQ(w->Find("output_tokens")->Find("high")->as_int(), 200 * 24);  // max_new_tokens × rows
  EXPECT_TRUE(w->Find("wall_seconds")->is_null());
}

TEST(EstimateTest, TheTableSaysWhichOutputsAreCached) {
  ASSERT_FALSE(SharedTinyModel().empty());
  TempDir d;
  WriteFile(d.Path("data.jsonl"), VariedRows(20));
  WriteFile(d.Path("cfg.yaml"), EstimateConfig(d));
  auto e = RunMmirage("estimate --config " + d.Path("cfg.yaml") + " --no-generate --sample 5");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("output summary: cached (greedy)"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("input tokens"), std::string::npos) << e.out;
  auto p = RunMmirage("preview --config " + d.Path("cfg.yaml") + " -n 1");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("summary: cached (greedy)"), std::string::npos) << p.out;
}

TEST(EstimateTest, AMissingDatasetIsAClearError) {
  ASSERT_FALSE(SharedTinyModel().empty());
  TempDir d;
  WriteFile(d.Path("cfg.yaml"), EstimateConfig(d));
  auto e = RunMmirage("estimate --config " + d.Path("cfg.yaml"));
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_NE(e.err.find("data.jsonl"), std::string::npos) << e.err;
}

}  // namespace
}  // namespace mmirage::testing
