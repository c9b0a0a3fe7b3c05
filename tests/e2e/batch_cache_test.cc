// End-to-end: batch_api configs use the generation cache (docs/generation_cache.md, "Batch APIs"), against the
// fake provider, which logs every request it is asked to create: after run → collect, an output_schema edit
// submits nothing, a new output submits only its requests, a changed prompt / model / seed misses, answers the
// provider failed are submitted again, `cache: off` and `cache: read` behave as documented, requests at the
// provider's default temperature bypass the cache, and a collect killed at any moment never leads to a wrong
// answer. Each variant runs in its own state and output directories; they share one cache (the default
// <parent of state_dir>/generation_cache).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "data/json.h"
#include "e2e/batch_e2e_util.h"
#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

constexpr int kRows = 8;
constexpr int kShards = 2;
const std::string kKey = "OPENAI_API_KEY=test-key ANTHROPIC_API_KEY=test-key";

struct Knobs {
  std::string name = "a";
  std::string provider = "openai";
  std::string sampling = "    temperature: 0\n";
  std::string model;  // "" : the provider's default
  std::string summary_prompt = "Summarise: {{ text }}";
  std::string schema_extra;  // extra output_schema entries
  std::string extra_output;  // an output appended after the others
  std::string execution;     // more execution_params
  bool wait = true;
  std::string outputs;  // non-empty: replaces the three outputs
  std::string schema;   // non-empty: replaces the output_schema entries
  int shards = kShards;
};

void WriteRows(const TempDir& d) {
  WriteFile(d.Path("imgs/a.png"), std::string("\x89PNG\r\n\x1a\n\x01\x02", 10));
  std::string s;
  for (int i = 0; i < kRows; ++i) {
    s += "{\"id\":" + std::to_string(i) + ",\"text\":\"Fact number " + std::to_string(i) + " — über\"";
    if (i % 3 == 1) s += ",\"img\":\"imgs/a.png\"";
    s += "}\n";
  }
  WriteFile(d.Path("data.jsonl"), s);
}

std::string Config(const TempDir& d, int port, const Knobs& k) {
  std::string base = "http://127.0.0.1:" + std::to_string(port) + (k.provider == "openai" ? "/v1" : "");
  return "processors:\n"
         "  - type: batch_api\n"
         "    provider: " +
         k.provider +
         "\n"
         "    base_url: " +
         base + "\n" + k.sampling + (k.model.empty() ? "" : "    model: " + k.model + "\n") +
         "    max_requests_per_chunk: 5\n"
         "    price_per_million_input_tokens: 2.5\n"
         "    price_per_million_output_tokens: 10\n" +
         (k.wait ? "    wait: true\n    poll_interval_seconds: 1\n" : "") +
         "loading_params:\n"
         "  datasets:\n"
         "    - {path: " +
         d.Path("data.jsonl") + ", type: JSONL, output_dir: " + d.Path("out-" + k.name) +
         ", output_format: jsonl, image_base_path: " + d.path() +
         "}\n"
         "  num_shards: " +
         std::to_string(k.shards) +
         "\n"
         "  state_dir: " +
         d.Path("state-" + k.name) +
         "\n"
         "processing_params:\n"
         "  inputs:\n"
         "    - {name: text, key: text}\n"
         "    - {name: id, key: id}\n"
         "    - {name: picture, key: img, type: image, optional: true}\n"
         "  outputs:\n" +
         (k.outputs.empty() ? std::string("    - name: qa\n"
                                          "      type: batch_api\n"
                                          "      output_type: JSON\n"
                                          "      output_schema: [question, answer]\n"
                                          "      prompt: \"Ask about: {{ text }}\"\n"
                                          "    - name: summary\n"
                                          "      type: batch_api\n"
                                          "      prompt: \"" +
                                          k.summary_prompt +
                                          "\"\n"
                                          "    - name: followup\n"
                                          "      type: batch_api\n"
                                          "      prompt: \"Answer this: {{ qa.question }}\"\n")
                            : k.outputs) +
         k.extra_output +
         "  remove_columns: true\n"
         "  output_schema:\n" +
         (k.schema.empty() ? std::string("    id: \"{{ id }}\"\n"
                                         "    question: \"{{ qa.question }}\"\n"
                                         "    summary: \"{{ summary }}\"\n"
                                         "    followup: \"{{ followup }}\"\n")
                           : k.schema) +
         k.schema_extra +
         "execution_params:\n"
         "  retry: true\n"
         "  max_failed_rows: 100\n" +
         k.execution;
}

struct RunFacts {
  int exit_code = -1;
  std::string err;
  std::map<std::string, int> submitted;   // custom ids created by this run (and its collects)
  std::map<int64_t, Value> rows;          // published rows by id
  std::map<int64_t, std::string> errors;  // row errors by row index
  int64_t cached_generations = 0, cached_output_tokens = 0, input_tokens = 0, usage_cached = 0;
  double cost = 0;
};

std::map<std::string, int> Delta(const std::map<std::string, int>& before, const std::map<std::string, int>& after) {
  std::map<std::string, int> d;
  for (const auto& [id, n] : after) {
    auto it = before.find(id);
    int was = it == before.end() ? 0 : it->second;
    if (n > was) d[id] = n - was;
  }
  return d;
}

// Runs variant k to the end (run, then collect until done) and reads what it published and counted.
RunFacts RunVariant(const TempDir& d, const Provider& prov, const Knobs& k) {
  RunFacts f;
  std::string cfg = d.Path("cfg-" + k.name + ".yaml");
  WriteFile(cfg, Config(d, prov.port, k));
  auto before = CreatedIds(prov.log);
  auto r = Mm(kKey, "run --config " + cfg);
  f.exit_code = r.exit_code;
  f.err = r.err;
  for (int i = 0; i < 20 && f.exit_code == 75; ++i) {
    auto c = Mm(kKey, "collect --config " + cfg);
    f.exit_code = c.exit_code;
    f.err += c.err;
  }
  f.submitted = Delta(before, CreatedIds(prov.log));
  for (int s = 0; s < k.shards; ++s) {
    std::string out = d.Path("out-" + k.name + "/shard_" + std::to_string(s));
    for (const Value& row : JsonLines(out + "/data.jsonl")) f.rows[row.Find("id")->as_int()] = row;
    for (const Value& e : JsonLines(out + "/errors.jsonl"))
      f.errors[e.Find("row_index")->as_int()] = e.Find("message")->as_string();
    for (const Value& u : JsonLines(out + "/usage.jsonl"))
      if (const Value* c = u.Find("cached_generations")) f.usage_cached += c->as_int();
    auto st = ParseJson(ReadFile(d.Path("state-" + k.name + "/shard_" + std::to_string(s) + "/status.json")));
    if (!st.ok() || st->Find("stats") == nullptr) continue;
    const Value& stats = *st->Find("stats");
    if (const Value* v = stats.Find("cached_generations")) f.cached_generations += v->as_int();
    if (const Value* v = stats.Find("cached_output_tokens")) f.cached_output_tokens += v->as_int();
    if (const Value* v = stats.Find("input_tokens")) f.input_tokens += v->as_int();
    if (const Value* v = stats.Find("cost")) f.cost += v->as_double();
  }
  return f;
}

// How many of `ids` start with the output name `prefix` + "-".
int CountOf(const std::map<std::string, int>& ids, const std::string& prefix) {
  int n = 0;
  for (const auto& [id, c] : ids) n += id.rfind(prefix + "-", 0) == 0 ? c : 0;
  return n;
}

int SealedCacheFiles(const TempDir& d) {
  auto r = RunCommand("ls " + d.Path("generation_cache") + " 2>/dev/null | grep -c '^gen-'");
  return std::atoi(r.out.c_str());
}

class BatchCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { WriteRows(d_); }
  Provider Start(std::vector<std::string> flags = {"--polls", "2"}) { return StartProvider(d_, std::move(flags)); }
  TempDir d_;
};

TEST_F(BatchCacheTest, AnOutputSchemaEditSubmitsNothingAndANewOutputOnlyItsRequests) {
  Provider prov = Start();
  Knobs a;
  RunFacts fa = RunVariant(d_, prov, a);
  ASSERT_EQ(fa.exit_code, 0) << fa.err;
  ASSERT_EQ(fa.rows.size(), static_cast<size_t>(kRows)) << fa.err;
  EXPECT_EQ(fa.submitted.size(), 3u * kRows);  // qa, summary, then followup (reads qa)
  EXPECT_EQ(fa.cached_generations, 0);
  EXPECT_GT(fa.input_tokens, 0);
  EXPECT_GT(fa.cost, 0);
  EXPECT_GT(SealedCacheFiles(d_), 0);

  // Only output_schema changes: every request is answered by the cache, in `run` itself.
  Knobs b;
  b.name = "b";
  b.schema_extra = "    answer: \"{{ qa.answer }}\"\n";
  RunFacts fb = RunVariant(d_, prov, b);
  ASSERT_EQ(fb.exit_code, 0) << fb.err;
  EXPECT_TRUE(fb.submitted.empty()) << fb.submitted.size() << " submitted again";
  ASSERT_EQ(fb.rows.size(), static_cast<size_t>(kRows));
  for (const auto& [id, row] : fa.rows) {
    for (const char* k : {"question", "summary", "followup"})
      EXPECT_EQ(ToJson(*fb.rows[id].Find(k)), ToJson(*row.Find(k))) << id << " " << k;
    EXPECT_NE(fb.rows[id].Find("answer")->as_string().find("answer about Ask about: Fact number"), std::string::npos);
  }
  EXPECT_EQ(fb.cached_generations, 3 * kRows);
  EXPECT_EQ(fb.usage_cached, 3 * kRows);
  EXPECT_GT(fb.cached_output_tokens, 0);
  EXPECT_EQ(fb.input_tokens, 0);  // billed tokens only
  EXPECT_EQ(fb.cost, 0);
  EXPECT_NE(fb.err.find("answered by the generation cache"), std::string::npos) << fb.err;

  // One more output after the others: only its requests go to the provider.
  Knobs c = b;
  c.name = "c";
  c.extra_output = "    - name: title\n      type: batch_api\n      prompt: \"Title for: {{ text }}\"\n";
  c.schema_extra += "    title: \"{{ title }}\"\n";
  RunFacts fc = RunVariant(d_, prov, c);
  ASSERT_EQ(fc.exit_code, 0) << fc.err;
  EXPECT_EQ(static_cast<int>(fc.submitted.size()), kRows);
  EXPECT_EQ(CountOf(fc.submitted, "title"), kRows);
  EXPECT_EQ(fc.cached_generations, 3 * kRows);
  EXPECT_GT(fc.cost, 0);
  EXPECT_LT(fc.cost, fa.cost);
  for (const auto& [id, row] : fc.rows) EXPECT_NE(row.Find("title")->as_string().find("Title for"), std::string::npos);
}

TEST_F(BatchCacheTest, AChangedPromptModelOrSeedMisses) {
  Provider prov = Start();
  RunFacts fa = RunVariant(d_, prov, Knobs{});
  ASSERT_EQ(fa.exit_code, 0) << fa.err;
  ASSERT_EQ(fa.submitted.size(), 3u * kRows);

  Knobs p;
  p.name = "prompt";
  p.summary_prompt = "Summarise briefly: {{ text }}";
  RunFacts fp = RunVariant(d_, prov, p);
  ASSERT_EQ(fp.exit_code, 0) << fp.err;
  EXPECT_EQ(static_cast<int>(fp.submitted.size()), kRows);
  EXPECT_EQ(CountOf(fp.submitted, "summary"), kRows);
  for (const auto& [id, row] : fp.rows)
    EXPECT_NE(row.Find("summary")->as_string().find("Summarise briefly"), std::string::npos) << ToJson(row);

  Knobs m;
  m.name = "model";
  m.model = "gpt-4.1";
  RunFacts fm = RunVariant(d_, prov, m);
  ASSERT_EQ(fm.exit_code, 0) << fm.err;
  EXPECT_EQ(fm.submitted.size(), 3u * kRows);
  EXPECT_EQ(fm.cached_generations, 0);

  Knobs s;
  s.name = "seed";
  s.sampling = "    temperature: 0\n    seed: 7\n";
  RunFacts fs = RunVariant(d_, prov, s);
  ASSERT_EQ(fs.exit_code, 0) << fs.err;
  EXPECT_EQ(fs.submitted.size(), 3u * kRows);
  // A seed alone makes an OpenAI request cacheable: the same seeded config again submits nothing.
  Knobs s2 = s;
  s2.name = "seed2";
  s2.sampling = "    seed: 7\n";
  RunFacts f2 = RunVariant(d_, prov, s2);
  ASSERT_EQ(f2.exit_code, 0) << f2.err;
  EXPECT_EQ(f2.submitted.size(), 3u * kRows);  // no temperature in the body: another request
  Knobs s3 = s2;
  s3.name = "seed3";
  s3.schema_extra = "    again: \"{{ id }}\"\n";
  RunFacts f3 = RunVariant(d_, prov, s3);
  ASSERT_EQ(f3.exit_code, 0) << f3.err;
  EXPECT_TRUE(f3.submitted.empty());
}

TEST_F(BatchCacheTest, AnthropicAtTemperatureZeroIsCachedAtTheDefaultTemperatureItIsNot) {
  Provider prov = Start();
  Knobs a;
  a.provider = "anthropic";
  RunFacts fa = RunVariant(d_, prov, a);
  ASSERT_EQ(fa.exit_code, 0) << fa.err;
  ASSERT_EQ(fa.submitted.size(), 3u * kRows);
  Knobs b = a;
  b.name = "b";
  b.schema_extra = "    answer: \"{{ qa.answer }}\"\n";
  RunFacts fb = RunVariant(d_, prov, b);
  ASSERT_EQ(fb.exit_code, 0) << fb.err;
  EXPECT_TRUE(fb.submitted.empty());
  for (const auto& [id, row] : fa.rows) EXPECT_EQ(ToJson(*fb.rows[id].Find("followup")), ToJson(*row.Find("followup")));

  // The provider's default temperature: not deterministic, so never cached; preview says so.
  Knobs s = a;
  s.name = "sampled";
  s.sampling = "";
  RunFacts f1 = RunVariant(d_, prov, s);
  ASSERT_EQ(f1.exit_code, 0) << f1.err;
  s.name = "sampled2";
  RunFacts f2 = RunVariant(d_, prov, s);
  ASSERT_EQ(f2.exit_code, 0) << f2.err;
  EXPECT_EQ(f2.submitted.size(), 3u * kRows);
  auto pv = Mm(kKey, "preview --config " + d_.Path("cfg-sampled2.yaml"));
  EXPECT_NE(pv.out.find("generation cache: qa: not cached (batch anthropic at the provider's default temperature"),
            std::string::npos)
      << pv.out << pv.err;
  auto pc = Mm(kKey, "preview --config " + d_.Path("cfg-b.yaml"));
  EXPECT_NE(pc.out.find("generation cache: qa: cached (temperature 0, batch anthropic)"), std::string::npos) << pc.out;
}

TEST_F(BatchCacheTest, CacheOffNeitherReadsNorWritesAndReadModeNeverWrites) {
  Provider prov = Start();
  Knobs off;
  off.name = "off";
  off.execution = "  cache: off\n";
  RunFacts f0 = RunVariant(d_, prov, off);
  ASSERT_EQ(f0.exit_code, 0) << f0.err;
  EXPECT_EQ(f0.submitted.size(), 3u * kRows);
  EXPECT_EQ(SealedCacheFiles(d_), 0);
  Knobs rd;
  rd.name = "read";
  rd.execution = "  cache: read\n";
  RunFacts f1 = RunVariant(d_, prov, rd);
  ASSERT_EQ(f1.exit_code, 0) << f1.err;
  EXPECT_EQ(f1.submitted.size(), 3u * kRows);
  EXPECT_EQ(SealedCacheFiles(d_), 0);  // read: nothing stored
  RunFacts f2 = RunVariant(d_, prov, Knobs{"rw"});
  ASSERT_EQ(f2.exit_code, 0) << f2.err;
  EXPECT_EQ(f2.submitted.size(), 3u * kRows);
  EXPECT_GT(SealedCacheFiles(d_), 0);
  rd.name = "read2";
  RunFacts f3 = RunVariant(d_, prov, rd);
  ASSERT_EQ(f3.exit_code, 0) << f3.err;
  EXPECT_TRUE(f3.submitted.empty());
  EXPECT_EQ(f3.cached_generations, 3 * kRows);
  off.name = "off2";
  RunFacts f4 = RunVariant(d_, prov, off);
  ASSERT_EQ(f4.exit_code, 0) << f4.err;
  EXPECT_EQ(f4.submitted.size(), 3u * kRows);
  EXPECT_EQ(f4.cached_generations, 0);
}

TEST_F(BatchCacheTest, AnswersTheProviderFailedAreSubmittedAgain) {
  Provider prov = Start({"--polls", "2", "--fail-every", "4"});
  RunFacts fa = RunVariant(d_, prov, Knobs{});
  ASSERT_EQ(fa.exit_code, 0) << fa.err;
  ASSERT_FALSE(fa.errors.empty());
  Knobs b;
  b.name = "b";
  b.schema_extra = "    answer: \"{{ qa.answer }}\"\n";
  RunFacts fb = RunVariant(d_, prov, b);
  ASSERT_EQ(fb.exit_code, 0) << fb.err;
  // Exactly the requests that failed at the provider in the first run (it fails them again: same custom ids).
  std::set<std::string> failed, again;
  auto files = RunCommand("cat " + d_.Path("state-a/shard_*/batch/results/*.jsonl"));
  ASSERT_EQ(files.exit_code, 0);
  size_t pos = 0;
  while (pos < files.out.size()) {
    size_t nl = files.out.find('\n', pos);
    if (nl == std::string::npos) nl = files.out.size();
    std::string line = files.out.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    auto v = ParseJson(line);
    ASSERT_TRUE(v.ok()) << line;
    if (v->Find("response")->Find("status_code")->as_int() != 200) failed.insert(v->Find("custom_id")->as_string());
  }
  ASSERT_FALSE(failed.empty());
  for (const auto& [id, n] : fb.submitted) again.insert(id);
  EXPECT_EQ(again, failed);
  EXPECT_FALSE(fb.submitted.empty());
  EXPECT_LT(fb.submitted.size(), fa.submitted.size());
  EXPECT_EQ(fb.errors.size(), fa.errors.size());
  for (const auto& [id, n] : fb.submitted) EXPECT_EQ(fa.submitted.count(id), 1u) << id;
  for (const auto& [i, m] : fb.errors)
    EXPECT_NE(m.find("provider error: fake provider failure"), std::string::npos) << m;
}

TEST_F(BatchCacheTest, ACollectKilledAtAnyMomentNeverLeadsToAWrongAnswer) {
  Provider prov = Start({"--polls", "2", "--create-delay", "0.1"});
  Knobs a;
  a.wait = false;
  std::string cfg = d_.Path("cfg-a.yaml");
  WriteFile(cfg, Config(d_, prov.port, a));
  auto r = Mm(kKey, "run --config " + cfg);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 75) << r.err;
  // Collects killed after 50 ms, 150 ms, ...: during downloads, the next stage's submission, publication and the
  // cache writes; then collected to the end.
  for (int ms : {50, 150, 300, 500, 800}) {
    auto col = mmirage::testing::Start({MMIRAGE_BINARY, "collect", "--config", cfg}, d_.Path("collect.log"),
                                       {{"OPENAI_API_KEY", "test-key"}});
    ASSERT_NE(col, nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    (void)col->process->Signal(SIGKILL);
    col->process->Wait();
    col->process.reset();
  }
  int rc = 75;
  for (int i = 0; i < 20 && rc == 75; ++i) rc = Mm(kKey, "collect --config " + cfg).exit_code;
  ASSERT_EQ(rc, 0);
  std::map<int64_t, Value> rows_a;
  for (int s = 0; s < kShards; ++s)
    for (const Value& row : JsonLines(d_.Path("out-a/shard_" + std::to_string(s) + "/data.jsonl")))
      rows_a[row.Find("id")->as_int()] = row;
  ASSERT_EQ(rows_a.size(), static_cast<size_t>(kRows));
  // The same requests again (another state directory): what the cache answers is what the provider answered.
  Knobs b;
  b.name = "b";
  RunFacts fb = RunVariant(d_, prov, b);
  ASSERT_EQ(fb.exit_code, 0) << fb.err;
  ASSERT_EQ(fb.rows.size(), static_cast<size_t>(kRows));
  for (const auto& [id, row] : rows_a) EXPECT_EQ(ToJson(fb.rows[id]), ToJson(row)) << id;
  EXPECT_EQ(fb.cached_generations + static_cast<int64_t>(fb.submitted.size()), 3 * kRows);
  EXPECT_GT(fb.cached_generations, 0);
}

TEST_F(BatchCacheTest, AShardKilledMidSubmissionKeepsItsCacheDecisionsWhenTheCacheChangesMeanwhile) {
  Provider prov = Start({"--polls", "2", "--create-delay", "0.3"});
  const std::string qa =
      "    - {name: qa, type: batch_api, output_type: JSON, output_schema: [question, answer], "
      "prompt: \"Ask about: {{ text }}\"}\n";
  const std::string summary = "    - {name: summary, type: batch_api, prompt: \"Summarise: {{ text }}\"}\n";
  // The cache holds the qa answers.
  Knobs q;
  q.name = "qa-only";
  q.shards = 1;
  q.outputs = qa;
  q.schema = "    id: \"{{ id }}\"\n    question: \"{{ qa.question }}\"\n";
  ASSERT_EQ(RunVariant(d_, prov, q).exit_code, 0);
  // The full config: its stage 0 finds the qa answers and submits the summaries, 5 a chunk, 0.3 s a create;
  // killed during that submission.
  Knobs k;
  k.name = "full";
  k.shards = 1;
  k.wait = false;
  std::string cfg = d_.Path("cfg-full.yaml");
  WriteFile(cfg, Config(d_, prov.port, k));
  auto before = CreatedIds(prov.log);
  auto run = mmirage::testing::Start({MMIRAGE_BINARY, "run", "--config", cfg, "--shard-id", "0"}, d_.Path("run.log"),
                                     {{"OPENAI_API_KEY", "test-key"}});
  ASSERT_NE(run, nullptr);
  // Killed as soon as its first chunk is created: the cache decisions are journaled, the next create (0.3 s) is
  // in flight.
  for (int i = 0; i < 500 && Delta(before, CreatedIds(prov.log)).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  (void)run->process->Signal(SIGKILL);
  run->process->Wait();
  run->process.reset();
  auto killed = Delta(before, CreatedIds(prov.log));
  ASSERT_FALSE(killed.empty());
  ASSERT_LT(killed.size(), static_cast<size_t>(kRows));  // stage 0 (the 8 summaries) not all submitted
  // Meanwhile another config stores every summary answer in the cache.
  Knobs sm;
  sm.name = "summary-only";
  sm.shards = 1;
  sm.outputs = summary;
  sm.schema = "    id: \"{{ id }}\"\n    summary: \"{{ summary }}\"\n";
  ASSERT_EQ(RunVariant(d_, prov, sm).exit_code, 0);
  // The killed shard resumes with the decisions it journaled: its chunks are the same, none is sent twice.
  auto resumed_before = CreatedIds(prov.log);
  int rc = 75;
  std::string err;
  for (int i = 0; i < 20 && rc == 75; ++i) {
    auto r = Mm(kKey, (i == 0 ? "run --shard-id 0 --config " : "collect --config ") + cfg);
    rc = r.exit_code;
    err += r.err;
    if (rc == 0 && !Exists(d_.Path("out-full/shard_0/data.jsonl"))) rc = 75;
  }
  ASSERT_EQ(rc, 0) << err << ReadFile(d_.Path("run.log"));
  EXPECT_EQ(err.find("differs from the one journaled"), std::string::npos) << err;
  EXPECT_NE(err.find("resuming the submission"), std::string::npos) << err;
  auto resumed = Delta(resumed_before, CreatedIds(prov.log));
  for (const auto& [id, n] : resumed) {
    EXPECT_EQ(n, 1) << id;
    EXPECT_EQ(killed.count(id), 0u) << id << " sent by the killed run and again";
    EXPECT_EQ(id.rfind("qa-", 0), std::string::npos) << id << ": qa was answered by the cache";
  }
  for (const auto& [id, n] : killed) EXPECT_EQ(id.rfind("qa-", 0), std::string::npos) << id;
  std::map<int64_t, Value> rows;
  for (const Value& row : JsonLines(d_.Path("out-full/shard_0/data.jsonl"))) rows[row.Find("id")->as_int()] = row;
  ASSERT_EQ(rows.size(), static_cast<size_t>(kRows));
  for (const auto& [id, row] : rows) {
    EXPECT_NE(row.Find("summary")->as_string().find("Answer to: Summarise: Fact number " + std::to_string(id)),
              std::string::npos)
        << ToJson(row);
    EXPECT_NE(row.Find("followup")->as_string().find("Answer to: Answer this: question about"), std::string::npos);
  }
}

TEST_F(BatchCacheTest, IdenticalRequestsInOneRunAreSubmittedOnce) {
  // Rows 4..7 repeat rows 0..3 (text and image): their requests are byte-identical but for the custom id.
  std::string rows;
  for (int i = 0; i < kRows; ++i) {
    int j = i % 4;
    rows += "{\"id\":" + std::to_string(i) + ",\"text\":\"Fact number " + std::to_string(j) + "\"" +
            (j == 1 ? ",\"img\":\"imgs/a.png\"" : "") + "}\n";
  }
  WriteFile(d_.Path("data.jsonl"), rows);
  Provider prov = Start();
  Knobs k;
  k.shards = 1;
  RunFacts f = RunVariant(d_, prov, k);
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(f.submitted.size(), 3u * 4);  // qa, summary, followup of the 4 distinct rows
  for (const auto& [id, n] : f.submitted) EXPECT_EQ(n, 1) << id;
  ASSERT_EQ(f.rows.size(), static_cast<size_t>(kRows));
  for (int i = 4; i < kRows; ++i) {
    for (const char* c : {"question", "summary", "followup"})
      EXPECT_EQ(ToJson(*f.rows[i].Find(c)), ToJson(*f.rows[i - 4].Find(c))) << i << " " << c;
  }
  EXPECT_EQ(f.cached_generations, 3 * 4);  // the repeats: not submitted, not billed
  EXPECT_NE(f.err.find("identical to another one"), std::string::npos) << f.err;
  // cache: off sends everything.
  Knobs off = k;
  off.name = "off";
  off.execution = "  cache: off\n";
  RunFacts f2 = RunVariant(d_, prov, off);
  ASSERT_EQ(f2.exit_code, 0) << f2.err;
  EXPECT_EQ(f2.submitted.size(), 3u * kRows);
}

TEST_F(BatchCacheTest, AnEditedConfigOnAPublishedShardSaysToUseAnotherStateDir) {
  Provider prov = Start();
  Knobs a;
  a.shards = 1;
  ASSERT_EQ(RunVariant(d_, prov, a).exit_code, 0);
  Knobs b = a;  // same state_dir, output_schema edited
  b.schema_extra = "    answer: \"{{ qa.answer }}\"\n";
  WriteFile(d_.Path("cfg-edited.yaml"), Config(d_, prov.port, b));
  auto r = Mm(kKey, "run --shard-id 0 --config " + d_.Path("cfg-edited.yaml"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("shard 0 was published from another version of the config or its input data (config "
                       "changed; journal "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("run the edited config with another state_dir"), std::string::npos) << r.err;
  // The published shard stays published.
  auto st = ParseJson(ReadFile(d_.Path("state-a/shard_0/status.json")));
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->Find("status")->as_string(), "success");
}

TEST(BatchCacheConfigTest, SamplingKeysAreCheckedPerProvider) {
  TempDir d;
  WriteRows(d);
  Knobs k;
  k.sampling = "    temperature: 3\n";
  WriteFile(d.Path("cfg.yaml"), Config(d, 1, k));
  auto r = Mm(kKey, "validate --config " + d.Path("cfg.yaml"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("cfg.yaml:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("temperature must be in the range [0, 2] for OpenAI"), std::string::npos) << r.err;
  // Anthropic has no seed: the key is refused, as every unknown batch_api key.
  k.provider = "anthropic";
  k.sampling = "    temperature: 0\n    seed: 3\n";
  WriteFile(d.Path("cfg.yaml"), Config(d, 1, k));
  r = Mm(kKey, "validate --config " + d.Path("cfg.yaml"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("cfg.yaml:6:5: unknown key 'seed'"), std::string::npos) << r.err;
  // OpenAI: a seed alone is valid.
  k.provider = "openai";
  k.sampling = "    seed: 3\n";
  WriteFile(d.Path("cfg.yaml"), Config(d, 1, k));
  r = Mm(kKey, "validate --config " + d.Path("cfg.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace mmirage::testing
