// exec/tune: the search over a fake engine (no model): trials, failing settings, the report, the search space.
#include "exec/tune.h"

#include <gtest/gtest.h>

#include "data/json.h"
#include "exec/tune_space.h"
#include "support/fake_engine.h"
#include "support/test_util.h"

namespace mmirage::exec {
namespace {

config::Config TuneConfig(const testing::TempDir& dir, const std::string& extra = "{n_parallel: 4}") {
  std::string rows;
  for (int i = 0; i < 40; ++i)
    rows += "{\"s\":\"system " + std::to_string(i % 4) + "\",\"q\":\"" + std::string(1 + i % 9, 'x') + "\"}\n";
  testing::WriteFile(dir.Path("d.jsonl"), rows);
  std::string y = "processors: [{type: llm, server_args: {model_path: fake.gguf, extra_engine_args: " + extra +
                  "}}]\n"
                  "loading_params:\n  datasets: [{type: JSONL, path: " +
                  dir.Path("d.jsonl") + ", output_dir: " + dir.Path("out") + "}]\n  state_dir: " + dir.Path("state") +
                  "\n"
                  "processing_params:\n  inputs: [{name: s, key: s}, {name: q, key: q}]\n"
                  "  outputs: [{name: a, type: llm, prompt: '{{ s }} {{ q }}'}]\n"
                  "  output_schema: {a: '{{ a }}'}\n";
  config::LoadOptions o;
  o.vars = [](const std::string&) { return std::optional<std::string>(); };
  auto c = config::LoadConfigFromString(y, "t.yaml", o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(*c);
}

int64_t SlotsOf(const config::Processor& p) {
  const Value* v = p.llm.extra_engine_args.Find("n_parallel");
  return v != nullptr && v->is_int() ? v->as_int() : 8;
}

// A fake engine with the trial's parallel slots; 16 slots "run out of memory" at load, 8 slots lose rows.
process::EngineFactory FakeFactory(std::atomic<int>* engines) {
  return [engines](const config::Processor& p, std::vector<std::string>*) -> Result<std::unique_ptr<engine::Engine>> {
    int64_t slots = SlotsOf(p);
    if (slots == 16) return Status::Internal("cannot create a llama context: out of memory");
    ++*engines;
    auto reply = [slots](const engine::Request& r, int) {
      engine::Completion c;
      if (slots == 8 && r.prompt.find("xxxxxxxx") != std::string::npos) {
        c.finish = engine::FinishReason::kError;
        c.error = Status::Unavailable("the KV cache is full");
        return c;
      }
      c.text = "ok";
      c.prompt_tokens = 5;
      c.completion_tokens = 3;
      return c;
    };
    return std::unique_ptr<engine::Engine>(
        std::make_unique<testing::FakeEngine>(reply, testing::FakeEngineOptions{.capacity = static_cast<int>(slots)}));
  };
}

TEST(TuneTest, FailingSettingsAreReportedAndNeverChosen) {
  testing::TempDir dir;
  config::Config c = TuneConfig(dir);
  std::atomic<int> engines{0};
  TuneOptions o;
  o.config = &c;
  o.budget_seconds = 30;
  o.sample_rows = 16;
  o.engine_factory = FakeFactory(&engines);
  auto r = RunTune(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->sample_rows, 16);
  EXPECT_EQ(r->backend, "llama");
  ASSERT_GE(r->trials.size(), 4u);
  EXPECT_TRUE(r->trials[0].changes.empty());
  bool saw_oom = false, saw_lost_rows = false;
  for (const TuneTrial& t : r->trials) {
    if (t.Label() == "n_parallel=16") {
      saw_oom = true;
      EXPECT_FALSE(t.ok);
      EXPECT_NE(t.error.find("out of memory"), std::string::npos) << t.error;
    }
    if (t.Label() == "n_parallel=8") {
      saw_lost_rows = true;
      EXPECT_FALSE(t.ok);
      EXPECT_NE(t.error.find("KV cache is full"), std::string::npos) << t.error;
    }
  }
  EXPECT_TRUE(saw_oom);
  EXPECT_TRUE(saw_lost_rows);
  EXPECT_TRUE(r->Best().ok);
  EXPECT_GE(r->gain, 1.0);
  EXPECT_TRUE(r->gpu_days_per_billion_tokens.has_value());
  // Nothing of a run was written: no output, no state.
  EXPECT_FALSE(testing::Exists(dir.Path("out")));
  EXPECT_FALSE(testing::Exists(dir.Path("state")));
}

TEST(TuneTest, TheReportIsJsonWithEveryTrial) {
  testing::TempDir dir;
  config::Config c = TuneConfig(dir);
  std::atomic<int> engines{0};
  TuneOptions o;
  o.config = &c;
  o.sample_rows = 6;
  o.engine_factory = FakeFactory(&engines);
  auto r = RunTune(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto v = ParseJson(ToJson(r->ToValue()));
  ASSERT_TRUE(v.ok());
  ASSERT_TRUE(v->Find("trials")->is_array());
  EXPECT_EQ(v->Find("trials")->size(), r->trials.size());
  EXPECT_EQ(v->Find("own")->Find("n_parallel")->as_int(), 4);
  EXPECT_TRUE(v->Find("best")->Find("ok")->as_bool());
}

TEST(TuneTest, AConfigWhoseOwnSettingsFailIsAnError) {
  testing::TempDir dir;
  config::Config c = TuneConfig(dir, "{n_parallel: 16}");
  std::atomic<int> engines{0};
  TuneOptions o;
  o.config = &c;
  o.engine_factory = FakeFactory(&engines);
  auto r = RunTune(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the config's own settings failed"), std::string::npos);
  EXPECT_NE(r.status().message().find("out of memory"), std::string::npos);
}

TEST(TuneTest, ATinyBudgetRunsOnlyTheConfigsOwnTrial) {
  testing::TempDir dir;
  config::Config c = TuneConfig(dir);
  std::atomic<int> engines{0};
  TuneOptions o;
  o.config = &c;
  o.budget_seconds = 1e-9;
  o.engine_factory = FakeFactory(&engines);
  auto r = RunTune(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->trials.size(), 1u);
  EXPECT_EQ(r->best, 0u);
  EXPECT_EQ(engines.load(), 1);
}

TEST(TuneSpaceTest, EmbeddedEngineKnobsStartWithParallelSequences) {
  testing::TempDir dir;
  config::Config c = TuneConfig(dir, "{n_parallel: 4, n_threads: 2}");
  auto knobs = TuneKnobs(c.processors[0], c, 8);
  ASSERT_GE(knobs.size(), 6u);
  EXPECT_EQ(knobs[0].key, "n_parallel");
  EXPECT_EQ(knobs[0].current.as_int(), 4);
  ASSERT_EQ(knobs[0].coarse.size(), 3u);
  EXPECT_EQ(knobs[0].coarse[0].as_int(), 2);
  EXPECT_EQ(knobs[0].coarse[2].as_int(), 16);
  EXPECT_EQ(knobs[1].key, "order");
  EXPECT_EQ(knobs[1].coarse[0].as_string(), "prefix");
  EXPECT_EQ(knobs.back().key, "n_threads");
  EXPECT_EQ(TuneKnobs(c.processors[0], c, 0).back().key, "kv_cache_dtype");  // threads only on CPU
}

TEST(TuneSpaceTest, EndpointsTuneConcurrencyAndServersTheirSchedulers) {
  testing::TempDir dir;
  config::Config c = TuneConfig(dir, "{max_running_requests: 32, chunked_prefill_size: 4096}");
  c.processors[0].llm.backend = "openai";
  c.processors[0].llm.endpoint = config::EndpointConfig{};
  EXPECT_EQ(TuneKnobs(c.processors[0], c, 8)[0].key, "max_concurrency");
  EXPECT_EQ(TuneKnobs(c.processors[0], c, 8)[0].current.as_int(), 32);
  c.processors[0].llm.backend = "sglang";
  auto k = TuneKnobs(c.processors[0], c, 8);
  std::vector<std::string> keys;
  for (const auto& x : k) keys.push_back(x.key);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"max_running_requests", "order", "chunked_prefill_size", "mem_fraction_static"}));
  EXPECT_EQ(k[2].current.as_int(), 4096);
  auto applied = ApplyTuneSettings(c, 0, {{"chunked_prefill_size", Value(int64_t{8192})}, {"order", Value("prefix")}});
  EXPECT_EQ(applied.processors[0].llm.extra_engine_args.Find("chunked_prefill_size")->as_int(), 8192);
  EXPECT_EQ(applied.processing.order, "prefix");
  // vLLM names its prefill chunk and memory share differently; its own defaults when the config sets none.
  c.processors[0].llm.backend = "vllm";
  k = TuneKnobs(c.processors[0], c, 8);
  keys.clear();
  for (const auto& x : k) keys.push_back(x.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"max_running_requests", "order", "max_num_batched_tokens",
                                            "gpu_memory_utilization"}));
  EXPECT_EQ(k[0].current.as_int(), 32);
  EXPECT_EQ(k[2].current.as_int(), 2048);
  EXPECT_DOUBLE_EQ(k[3].current.as_double(), 0.9);
}

TEST(TuneSpaceTest, RefinementTriesTheMidpointsAroundTheBest) {
  std::vector<Value> tried{Value(int64_t{8}), Value(int64_t{4}), Value(int64_t{16}), Value(int64_t{32})};
  auto mid = RefineCandidates(Value(int64_t{16}), tried);
  ASSERT_EQ(mid.size(), 2u);
  EXPECT_EQ(mid[0].as_int(), 12);
  EXPECT_EQ(mid[1].as_int(), 24);
  EXPECT_TRUE(RefineCandidates(Value("prefix"), tried).empty());
  EXPECT_TRUE(RefineCandidates(Value(int64_t{1}), {Value(int64_t{2})}).empty());  // no integer between 1 and 2
}

}  // namespace
}  // namespace mmirage::exec
