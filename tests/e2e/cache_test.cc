// End-to-end: the generation cache across runs of edited configs, on the synthetic GGUF model.
#include <gtest/gtest.h>

#include <map>

#include "data/json.h"
#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

struct Knobs {
  std::string model;
  std::string name = "run";  // state_dir / output_dir suffix: one cache (the parent of state_dir)
  std::string sampling = "temperature: 0, max_new_tokens: 16";
  std::string summary_prompt = "Summarise: {{ text }}";
  std::string schema_extra;  // extra output_schema entries
  std::string extra_output;  // an output appended after `judge`
  std::string execution;     // execution_params body
  std::string loading_extra;
  int parallel = 4;
  bool judge = true;  // the second output (its prompt contains the first's output)
};

std::string Config(const TempDir& d, const Knobs& k) {
  return "processors:\n"
         "  - type: llm\n"
         "    server_args:\n"
         "      model_path: " +
         k.model +
         "\n"
         "      extra_engine_args: {max_running_requests: " +
         std::to_string(k.parallel) +
         ", context_length: 512, n_threads: 1}\n"
         "    default_sampling_params: {" +
         k.sampling +
         "}\n"
         "loading_params:\n"
         "  datasets: [{type: JSONL, path: " +
         d.Path("data.jsonl") + ", output_dir: " + d.Path("out-" + k.name) +
         ", output_format: jsonl}]\n"
         "  state_dir: " +
         d.Path("state-" + k.name) + "\n" + k.loading_extra +
         "processing_params:\n"
         "  inputs: [{name: text, key: text}, {name: id, key: id}]\n"
         "  outputs:\n"
         "    - name: summary\n"
         "      type: llm\n"
         "      prompt: \"" +
         k.summary_prompt + "\"\n" +
         (k.judge ? "    - name: judge\n"
                    "      type: llm\n"
                    "      output_type: JSON\n"
                    "      output_schema: {score: {type: int, min: 0, max: 3}}\n"
                    "      prompt: \"Rate: {{ summary }}\"\n"
                  : "") +
         k.extra_output +
         "  remove_columns: true\n"
         "  output_schema:\n"
         "    id: \"{{ id }}\"\n"
         "    summary: \"{{ summary }}\"\n" +
         k.schema_extra +
         "execution_params:\n"
         "  max_failed_rows: 1000\n" +
         k.execution;
}

struct RunFacts {
  int64_t generations = 0, cached = 0, rows = 0;
  Value stats;
  std::string err;
  std::map<int64_t, std::string> summaries;  // id → summary
};

RunFacts RunCfg(const TempDir& d, const Knobs& k, int num_shards = 1) {
  RunFacts f;
  std::string cfg = d.Path("cfg-" + k.name + ".yaml");
  WriteFile(cfg, Config(d, k));
  auto r = RunMmirage("run --config " + cfg);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  f.err = r.err;
  for (int s = 0; s < num_shards; ++s) {
    std::string shard = d.Path("out-" + k.name + "/shard_" + std::to_string(s));
    for (const auto& line : ReadLines(shard + "/usage.jsonl")) {
      auto u = ParseJson(line);
      EXPECT_TRUE(u.ok()) << line;
      if (!u.ok()) continue;
      f.generations += u->Find("generations")->as_int();
      const Value* c = u->Find("cached_generations");
      EXPECT_NE(c, nullptr) << line;
      if (c) f.cached += c->as_int();
    }
    for (const auto& line : ReadLines(shard + "/data.jsonl")) {
      auto v = ParseJson(line);
      if (!v.ok()) continue;
      ++f.rows;
      f.summaries[v->Find("id")->as_int()] = v->Find("summary")->as_string();
    }
    auto st = ParseJson(ReadFile(d.Path("state-" + k.name + "/shard_" + std::to_string(s) + "/status.json")));
    if (st.ok() && s == 0) f.stats = *st->Find("stats");
  }
  return f;
}

std::string Rows(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    std::string words;
    for (int w = 0; w < 1 + (i * 7) % 13; ++w) words += " word" + std::to_string((i + w) % 17);
    s += "{\"id\":" + std::to_string(i) + ",\"text\":\"Row " + std::to_string(i) + words + "\"}\n";
  }
  return s;
}

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(SharedTinyModel().empty()) << "cannot generate the synthetic model with " << MakeTestModelTool();
    WriteFile(d_.Path("data.jsonl"), Rows(24));
    base_.model = SharedTinyModel();
  }
  TempDir d_;
  Knobs base_;
};

TEST_F(CacheTest, AnOutputSchemaEditRerunsWithZeroRegenerations) {
  RunFacts first = RunCfg(d_, base_);
  EXPECT_GT(first.generations, 0);
  EXPECT_EQ(first.rows + 0, static_cast<int64_t>(first.summaries.size()));
  EXPECT_GT(first.rows, 0);
  // A first run hits only requests repeated inside it (identical summaries give identical judge prompts).
  EXPECT_LT(first.cached, first.generations / 4);
  EXPECT_EQ(first.stats.Find("cached_generations")->as_int(), first.cached);
  Knobs k = base_;
  k.name = "edited";
  k.schema_extra = "    judged: \"{{ judge.score }}\"\n";
  RunFacts second = RunCfg(d_, k);
  EXPECT_EQ(second.generations, first.generations);
  EXPECT_EQ(second.cached, second.generations);  // zero regenerations
  EXPECT_EQ(second.summaries, first.summaries);
  EXPECT_EQ(second.stats.Find("cached_generations")->as_int(), first.generations);
  EXPECT_GT(second.stats.Find("cached_output_tokens")->as_int(), 0);
  EXPECT_TRUE(second.stats.Find("output_tokens")->is_null());  // nothing was generated: no throughput
  EXPECT_NE(second.err.find("answered from"), std::string::npos) << second.err;
}

TEST_F(CacheTest, AddingAnOutputAfterAnExistingOneGeneratesOnlyTheNewOne) {
  RunFacts first = RunCfg(d_, base_);
  Knobs k = base_;
  k.name = "more";
  k.extra_output = "    - name: title\n      type: llm\n      prompt: \"Title for: {{ summary }}\"\n";
  k.schema_extra = "    title: \"{{ title }}\"\n";
  RunFacts second = RunCfg(d_, k);
  EXPECT_GE(second.cached, first.generations);  // every earlier generation came from the cache
  EXPECT_GT(second.generations - second.cached, 0);
  EXPECT_LE(second.generations - second.cached, second.rows);  // at most one new generation per row: the title
  EXPECT_EQ(second.summaries, first.summaries);
}

// The changed configs have one output whose prompts are all different (unique row texts), so no request repeats
// inside the run: every hit would come from an earlier run.
TEST_F(CacheTest, AChangedPromptSamplingParameterOrModelMisses) {
  RunFacts first = RunCfg(d_, base_);
  ASSERT_GT(first.generations, 0);
  Knobs plain = base_;
  plain.judge = false;
  Knobs prompt = plain;
  prompt.name = "prompt";
  prompt.summary_prompt = "Summarize: {{ text }}";
  RunFacts p = RunCfg(d_, prompt);
  EXPECT_GT(p.generations, 0);
  EXPECT_EQ(p.cached, 0);
  Knobs sampling = plain;
  sampling.name = "sampling";
  sampling.sampling = "temperature: 0, max_new_tokens: 15";
  EXPECT_EQ(RunCfg(d_, sampling).cached, 0);
  std::string other = d_.Path("other.gguf");
  ASSERT_TRUE(MakeTinyModel(other, 11));
  Knobs model = plain;
  model.name = "model";
  model.model = other;
  EXPECT_EQ(RunCfg(d_, model).cached, 0);
  Knobs same = plain;  // and the unchanged summary output still hits every row
  same.name = "same";
  RunFacts again = RunCfg(d_, same);
  EXPECT_EQ(again.cached, again.generations);
  EXPECT_EQ(again.generations, again.rows);
}

TEST_F(CacheTest, SampledOutputsWithoutASeedBypassTheCacheAndSeededOnesUseIt) {
  Knobs k = base_;
  k.sampling = "temperature: 0.9, max_new_tokens: 8";
  k.name = "sampled1";
  RunCfg(d_, k);
  k.name = "sampled2";
  RunFacts f = RunCfg(d_, k);
  EXPECT_EQ(f.cached, 0);
  k.sampling = "temperature: 0.9, seed: 5, max_new_tokens: 8";
  k.name = "seeded1";
  RunCfg(d_, k);
  k.name = "seeded2";
  f = RunCfg(d_, k);
  EXPECT_EQ(f.cached, f.generations);
}

TEST_F(CacheTest, CacheOffNeitherReadsNorWrites) {
  Knobs k = base_;
  k.execution = "  cache: off\n";
  RunCfg(d_, k);
  EXPECT_FALSE(Exists(d_.Path("generation_cache")));
  Knobs rw = base_;
  rw.name = "rw";
  RunCfg(d_, rw);
  ASSERT_TRUE(Exists(d_.Path("generation_cache")));
  k.name = "off2";
  RunFacts f = RunCfg(d_, k);
  EXPECT_EQ(f.cached, 0);
  EXPECT_TRUE(f.stats.Find("cached_generations") == nullptr);
}

TEST_F(CacheTest, ReadModeUsesButNeverWritesTheCache) {
  Knobs k = base_;
  k.execution = "  cache: read\n  cache_dir: " + d_.Path("ro_cache") + "\n";
  RunCfg(d_, k);
  EXPECT_FALSE(Exists(d_.Path("ro_cache")));
}

TEST_F(CacheTest, FourConcurrentShardWorkersWriteOneCache) {
  Knobs k = base_;
  k.parallel = 2;
  k.loading_extra = "  num_shards: 4\n";
  k.execution = "  retry: true\n  local_workers: 4\n";
  RunFacts first = RunCfg(d_, k, 4);
  EXPECT_EQ(first.cached, 0);
  EXPECT_EQ(first.rows + 0, first.rows);
  auto files = RunCommand("ls " + d_.Path("generation_cache") + " | grep -c '^gen-'");
  EXPECT_EQ(files.out, "4\n") << files.out;  // one sealed file per shard process
  k.name = "again";
  k.schema_extra = "    n: \"{{ id + 1 }}\"\n";
  RunFacts second = RunCfg(d_, k, 4);
  EXPECT_EQ(second.cached, second.generations);
  EXPECT_EQ(second.generations, first.generations);
  EXPECT_EQ(second.summaries, first.summaries);
  auto stats = RunMmirage("cache stats --config " + d_.Path("cfg-again.yaml") + " --format json");
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  auto v = ParseJson(stats.out);
  ASSERT_TRUE(v.ok()) << stats.out;
  EXPECT_EQ(v->Find("open_files")->as_int(), 0);
  EXPECT_GT(v->Find("distinct_entries")->as_int(), 0);
}

TEST_F(CacheTest, ADamagedCacheFileIsIgnoredWithAWarningNeverAWrongAnswer) {
  Knobs k = base_;
  k.parallel = 1;  // one sequence: regenerations are bitwise reproducible, so answers can be compared
  RunFacts first = RunCfg(d_, k);
  auto ls = RunCommand("ls " + d_.Path("generation_cache") + "/gen-*");
  ASSERT_EQ(ls.exit_code, 0);
  std::string file = ls.out.substr(0, ls.out.find('\n'));
  // Damage the stored texts of some entries (flip bits a few bytes into each "Row ..." prompt echo is not
  // guaranteed; flip bytes across the second half of the file instead).
  std::string bytes = ReadFile(file);
  for (size_t i = bytes.size() / 2; i < bytes.size(); i += 97) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
  WriteFile(file, bytes);
  k.name = "after";
  RunFacts second = RunCfg(d_, k);
  EXPECT_NE(second.err.find("generation cache"), std::string::npos) << second.err;
  EXPECT_LT(second.cached, second.generations);
  EXPECT_EQ(second.summaries, first.summaries);  // what was regenerated or read equals the original answers
  // A file that is not SQLite at all: ignored too.
  WriteFile(file, "garbage");
  k.name = "garbage";
  RunFacts third = RunCfg(d_, k);
  EXPECT_NE(third.err.find("not a readable generation cache file"), std::string::npos) << third.err;
  EXPECT_EQ(third.summaries, first.summaries);
}

TEST_F(CacheTest, ABadCacheSettingIsAConfigError) {
  Knobs k = base_;
  k.execution = "  cache: sometimes\n  cache_max_gb: 0\n";
  WriteFile(d_.Path("bad.yaml"), Config(d_, k));
  auto r = RunMmirage("validate --config " + d_.Path("bad.yaml"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("execution_params.cache must be off, read or readwrite"), std::string::npos)
      << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("cache_max_gb must be > 0"), std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace mmirage::testing
