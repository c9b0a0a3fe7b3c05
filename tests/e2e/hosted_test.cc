// End-to-end: llm configs against a hosted API that enforces rate limits (tests/support/fake_hosted_provider.py on
// a free 127.0.0.1 port): with configured limits and with limits learned from the x-ratelimit-* headers, a run
// makes at most 1 % of its requests into 429s and takes at most 1.15× the limit-bound minimum, measured by the
// provider from its first accepted request to its last answer. The minimum is max(requests / RPM, tokens used /
// TPM): the per-minute limits, without the provider's burst allowance.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "data/json.h"
#include "e2e/batch_e2e_util.h"
#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

struct Hosted {
  std::unique_ptr<Child> child;
  int port = 0;
};

Hosted StartHosted(const TempDir& d, std::vector<std::string> flags) {
  Hosted h;
  h.port = *FindFreeLoopbackPort();
  std::vector<std::string> argv = {PythonPath(),
                                   std::string(MMIRAGE_SOURCE_DIR) + "/tests/support/fake_hosted_provider.py", "--port",
                                   std::to_string(h.port)};
  argv.insert(argv.end(), flags.begin(), flags.end());
  h.child = Start(argv, d.Path("provider.out"));
  EXPECT_NE(h.child, nullptr);
  EXPECT_TRUE(WaitHealthy(h.port, 20)) << ReadFile(d.Path("provider.out"));
  return h;
}

Value ProviderStats(int port) {
  HttpRequest r;
  r.method = "GET";
  r.url = "http://127.0.0.1:" + std::to_string(port) + "/stats";
  r.timeout_seconds = 5;
  HttpResponse resp = HttpFetch(r);
  auto v = ParseJson(resp.body);
  EXPECT_TRUE(v.ok()) << resp.body;
  return v.ok() ? *v : Value();
}

void WriteRows(const TempDir& d, int n) {
  std::string s;
  for (int i = 0; i < n; ++i)
    s += "{\"id\":" + std::to_string(i) + ",\"text\":\"Fact number " + std::to_string(i) + " about the world\"}\n";
  WriteFile(d.Path("data.jsonl"), s);
}

std::string HostedConfig(const TempDir& d, const std::string& endpoint) {
  return "processors:\n"
         "  - type: llm\n" +
         endpoint +
         "    default_sampling_params: {temperature: 0, max_new_tokens: 16}\n"
         "loading_params:\n"
         "  datasets: [{type: JSONL, path: data.jsonl, output_dir: out, output_format: jsonl}]\n"
         "  state_dir: state\n"
         "processing_params:\n"
         "  inputs: [{name: text, key: text}, {name: id, key: id}]\n"
         "  outputs: [{name: summary, type: llm, prompt: \"Summarise: {{ text }}\"}]\n"
         "  remove_columns: true\n"
         "  output_schema: {id: \"{{ id }}\", summary: \"{{ summary }}\"}\n";
}

// Runs `rows` rows in `shards` shards (more than one: as many local workers at once); checks every row is
// written, the 429 share and the time against the limit-bound minimum (slack for the workers' start when sharded).
// `own_rows`: data.jsonl is already written.
void RunAndCheck(const TempDir& d, const Hosted& h, int rows, double rpm, double tpm, const std::string& endpoint,
                 const std::string& expect_log = "", int shards = 1, bool own_rows = false) {
  if (!own_rows) WriteRows(d, rows);
  std::string cfg = HostedConfig(d, endpoint);
  if (shards > 1) {
    std::string n = std::to_string(shards);
    cfg = std::regex_replace(cfg, std::regex("  state_dir: state\n"), "  state_dir: state\n  num_shards: " + n + "\n");
    cfg += "execution_params: {retry: true, local_workers: " + n + "}\n";
  }
  WriteFile(d.Path("cfg.yaml"), cfg);
  auto r = Mm("", "run --config cfg.yaml", d.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t written = 0;
  for (int i = 0; i < shards; ++i)
    written += ReadLines(d.Path("out/shard_" + std::to_string(i) + "/data.jsonl")).size();
  EXPECT_EQ(written, static_cast<size_t>(rows));
  if (!expect_log.empty()) { EXPECT_NE(r.err.find(expect_log), std::string::npos) << r.err; }
  Value st = ProviderStats(h.port);
  ASSERT_TRUE(st.is_object());
  int64_t ok = st.Find("ok")->as_int(), limited = st.Find("429")->as_int();
  EXPECT_EQ(ok, rows);
  EXPECT_LE(limited * 100, ok) << limited << " 429s for " << ok << " requests";
  double span = st.Find("last_s")->as_number() - st.Find("first_s")->as_number();
  double minimum = std::max(rows / rpm, st.Find("tokens")->as_number() / tpm) * 60;
  EXPECT_LE(span, (shards > 1 ? 1.25 : 1.15) * minimum)
      << "took " << span << " s; the limits allow " << minimum << " s";
  std::cerr << "[ hosted ] " << shards << " shard(s): " << rows << " rows in " << span << " s, limit-bound minimum "
            << minimum << " s, " << limited << " 429s\n";
}

std::string Endpoint(int port, const std::string& extra) {
  return "    backend: openai\n"
         "    endpoint:\n"
         "      base_url: \"http://127.0.0.1:" +
         std::to_string(port) +
         "/v1\"\n"
         "      model: fake\n" +
         extra;
}

TEST(HostedE2eTest, ConfiguredLimitsRunNearTheMinimumWithoutA429Storm) {
  TempDir d;
  Hosted h = StartHosted(d, {"--rpm", "40000", "--tpm", "100000000"});
  RunAndCheck(d, h, 2000, 40000, 1e8,
              Endpoint(h.port, "      max_concurrency: 64\n      rate_limits: {requests_per_minute: 40000}\n"));
}

// Two local workers run the two shards at once against one account: they draw from one budget on this machine,
// so together they stay under the provider's limit and still finish near the limit-bound minimum (a little slack
// for the second worker starting after the first).
TEST(HostedE2eTest, LocalWorkersShareOneBudgetAndTogetherStayUnderIt) {
  TempDir d;
  Hosted h = StartHosted(d, {"--rpm", "40000", "--tpm", "100000000"});
  RunAndCheck(d, h, 2000, 40000, 1e8,
              Endpoint(h.port, "      max_concurrency: 64\n      rate_limits: {requests_per_minute: 40000}\n"),
              "2 shards run at once on this machine and share one rate-limit budget", 2);
}

// One shard has far less work (short rows) than the other: once it is done, the other uses the whole
// tokens/minute limit. With the limit split statically, shard 0 (about 9/10 of the tokens at half the limit)
// would take about 1.8x the limit-bound minimum; one shared budget finishes within 1.25x, with <= 1 % 429s.
TEST(HostedE2eTest, AShardThatFinishesEarlyLeavesItsPartOfTheLimitToTheOthers) {
  TempDir d;
  Hosted h = StartHosted(d, {"--rpm", "1000000", "--tpm", "1000000"});
  std::string rows;
  const std::string long_text(800, 'w');
  for (int i = 0; i < 400; ++i)  // shard 0: rows 0-199, ~220 tokens each; shard 1: rows 200-399, ~20 each
    rows += "{\"id\":" + std::to_string(i) + ",\"text\":\"" + (i < 200 ? long_text : "short") + " " +
            std::to_string(i) + "\"}\n";  // distinct prompts: none is answered from the generation cache
  WriteFile(d.Path("data.jsonl"), rows);
  RunAndCheck(d, h, 400, 1e6, 1e6,
              Endpoint(h.port, "      max_concurrency: 64\n      rate_limits: {tokens_per_minute: 1000000}\n"),
              "share one rate-limit budget", 2, true);
}

// Cost: a configured price gives status.json's cost_usd, `mmirage stats`'s total and the HTML report's cost.
TEST(HostedE2eTest, CostFromConfiguredPricesIsInStatsAndMmirageStats) {
  TempDir d;
  Hosted h = StartHosted(d, {"--rpm", "60000", "--tpm", "100000000"});
  WriteRows(d, 40);
  WriteFile(d.Path("cfg.yaml"),
            HostedConfig(d, Endpoint(h.port, "      pricing: {input_per_million: 2, output_per_million: 10}\n")));
  auto r = Mm("", "run --config cfg.yaml", d.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto st = ParseJson(ReadFile(d.Path("state/shard_0/status.json")));
  ASSERT_TRUE(st.ok());
  const Value* stats = st->Find("stats");
  ASSERT_NE(stats, nullptr);
  double in = static_cast<double>(stats->Find("input_tokens")->as_int());
  double out = static_cast<double>(stats->Find("output_tokens")->as_int());
  ASSERT_NE(stats->Find("cost_usd"), nullptr) << ToJson(*stats);
  EXPECT_NEAR(stats->Find("cost_usd")->as_number(), (in * 2 + out * 10) / 1e6, 1e-6);
  auto js = Mm("", "stats --config cfg.yaml", d.path());
  ASSERT_EQ(js.exit_code, 0) << js.err;
  auto agg = ParseJson(js.out);
  ASSERT_TRUE(agg.ok()) << js.out;
  EXPECT_NEAR(agg->Find("aggregate")->Find("total_cost_usd")->as_number(), (in * 2 + out * 10) / 1e6, 1e-6);
  auto table = Mm("", "stats --config cfg.yaml --format table", d.path());
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("Cost (hosted API prices)"), std::string::npos) << table.out;
  // The timeline's last sample holds the admission window and the limit learned from the headers; the HTML report
  // shows the cost and both over time.
  auto timeline = ReadLines(d.Path("state/shard_0/timeline.jsonl"));
  std::string last_sample;
  for (const auto& l : timeline)
    if (l.find("\"event\"") == std::string::npos) last_sample = l;
  EXPECT_NE(last_sample.find("\"window\":64"), std::string::npos) << last_sample;
  EXPECT_NE(last_sample.find("\"rpm_limit\":60000"), std::string::npos) << last_sample;
  auto html = Mm("", "stats --config cfg.yaml --html report.html", d.path());
  ASSERT_EQ(html.exit_code, 0) << html.err;
  std::string page = ReadFile(d.Path("report.html"));
  EXPECT_NE(page.find("id=\"hosted\""), std::string::npos);
  EXPECT_NE(page.find("data-key=\"total_cost_usd\">"), std::string::npos);
  EXPECT_NE(page.find("requests/minute limit in force"), std::string::npos);
}

// `mmirage estimate` prices an online engine from the built-in table (no pricing given), shows the batch API's
// discount beside it and, redirected to another OpenAI-compatible endpoint, still samples an Anthropic config.
TEST(HostedE2eTest, EstimateShowsTheCostOfAHostedModel) {
  TempDir d;
  Hosted h = StartHosted(d, {"--rpm", "60000", "--tpm", "100000000"});
  WriteRows(d, 30);
  WriteFile(d.Path("cfg.yaml"), HostedConfig(d,
                                             "    backend: anthropic\n"
                                             "    endpoint: {base_url: \"https://api.anthropic.com/v1\", "
                                             "model: claude-sonnet-4-5}\n"));
  std::string via = "http://127.0.0.1:" + std::to_string(h.port) + "/v1";
  auto e = Mm("", "estimate --config cfg.yaml --sample 5 --format json --generate-via " + via, d.path());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  auto v = ParseJson(e.out);
  ASSERT_TRUE(v.ok()) << e.out;
  const Value* cost = v->Find("cost_usd");
  ASSERT_TRUE(cost != nullptr && cost->is_object()) << e.out;
  EXPECT_GT(cost->Find("estimate")->as_number(), 0) << e.out;
  EXPECT_GT(ProviderStats(h.port).Find("ok")->as_int(), 0);  // the sample ran on the redirected endpoint
  // Anthropic has a batch API at half the price: its cost is shown beside the online one.
  const Value* batch = v->Find("batch_cost_usd");
  ASSERT_TRUE(batch != nullptr && batch->is_object()) << e.out;
  EXPECT_NEAR(batch->Find("estimate")->as_number(), cost->Find("estimate")->as_number() / 2, 0.011) << e.out;
  EXPECT_EQ(v->Find("batch_api")->as_string(), "Anthropic Message Batches");
  auto table = Mm("", "estimate --config cfg.yaml --sample 5 --generate-via " + via, d.path());
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("with the Anthropic Message Batches)"), std::string::npos) << table.out;
}

// execution_params.max_cost_usd: each run stops starting rows before the budget, commits and exits non-zero saying
// how far it got; running again continues, and the output ends identical to a run without a budget.
TEST(HostedE2eTest, CostBudgetStopsResumablyAndResumesToIdenticalOutput) {
  TempDir budget, clean;
  Hosted h = StartHosted(budget, {"--rpm", "60000", "--tpm", "100000000"});
  const std::string cfg =
      HostedConfig(budget, Endpoint(h.port, "      pricing: {input_per_million: 1000, output_per_million: 1000}\n"));
  WriteRows(budget, 60);
  WriteRows(clean, 60);
  WriteFile(budget.Path("cfg.yaml"), cfg + "execution_params: {max_cost_usd: 0.5}\n");
  WriteFile(clean.Path("cfg.yaml"), cfg);
  auto first = Mm("", "run --config cfg.yaml", budget.path());
  EXPECT_NE(first.exit_code, 0);
  EXPECT_NE(first.err.find("max_cost_usd (0.5) reached: $"), std::string::npos) << first.err;
  EXPECT_NE(first.err.find("run again to continue (resumable)"), std::string::npos) << first.err;
  int runs = 1;
  for (int exit_code = first.exit_code; exit_code != 0 && runs < 10; ++runs)
    exit_code = Mm("", "run --config cfg.yaml", budget.path()).exit_code;
  EXPECT_GE(runs, 3) << "each run spends at most $0.5 of the ~$1.7 the 60 rows cost";
  ASSERT_EQ(Mm("", "run --config cfg.yaml", clean.path()).exit_code, 0);
  auto got = ReadLines(budget.Path("out/shard_0/data.jsonl"));
  EXPECT_EQ(got.size(), 60u);
  EXPECT_EQ(got, ReadLines(clean.Path("out/shard_0/data.jsonl")));
}

// With two local workers, max_cost_usd is the run's budget, not each shard's: every `mmirage run` spends at most
// about the budget in all (not twice it), stops with a non-zero exit saying so, and running again continues to the
// output of a run without a budget.
TEST(HostedE2eTest, TheCostBudgetIsTheRunsAcrossLocalWorkers) {
  TempDir budget, clean;
  Hosted h = StartHosted(budget, {"--rpm", "60000", "--tpm", "100000000"});
  std::string cfg =
      HostedConfig(budget, Endpoint(h.port, "      pricing: {input_per_million: 1000, output_per_million: 1000}\n"));
  cfg = std::regex_replace(cfg, std::regex("  state_dir: state\n"), "  state_dir: state\n  num_shards: 2\n");
  WriteRows(budget, 60);
  WriteRows(clean, 60);
  WriteFile(budget.Path("cfg.yaml"), cfg + "execution_params: {retry: true, local_workers: 2, max_cost_usd: 0.5}\n");
  WriteFile(clean.Path("cfg.yaml"), cfg + "execution_params: {retry: true, local_workers: 2}\n");
  double tokens_before = 0;
  int runs = 0;
  for (int exit_code = 1; exit_code != 0 && runs < 10; ++runs) {
    auto r = Mm("", "run --config cfg.yaml", budget.path());
    exit_code = r.exit_code;
    double tokens = ProviderStats(h.port).Find("tokens")->as_number();
    double spent = (tokens - tokens_before) * 1000 / 1e6;  // $1000 per million tokens, in and out
    tokens_before = tokens;
    EXPECT_LE(spent, 0.5 * 1.15) << "run " << runs << " spent $" << spent << " of a $0.5 budget\n" << r.err;
    if (exit_code != 0) {
      EXPECT_NE(r.err.find("execution_params.max_cost_usd (0.5) reached: the shards spent $"), std::string::npos)
          << r.err;
    }
  }
  EXPECT_GE(runs, 3) << "each run spends at most $0.5 of the ~$1.7 the 60 rows cost";
  ASSERT_EQ(Mm("", "run --config cfg.yaml", clean.path()).exit_code, 0);
  for (const char* shard : {"out/shard_0/data.jsonl", "out/shard_1/data.jsonl"}) {
    auto got = ReadLines(budget.Path(shard));
    EXPECT_EQ(got.size(), 30u);
    EXPECT_EQ(got, ReadLines(clean.Path(shard)));
  }
}

TEST(HostedE2eTest, UnknownLimitsAreLearnedFromTheHeaders) {
  TempDir d;
  Hosted h = StartHosted(d, {"--rpm", "100000", "--tpm", "600000"});
  RunAndCheck(d, h, 1000, 100000, 600000, Endpoint(h.port, "      max_concurrency: auto\n"),
              "rate limit 600000 tokens/minute (from headers)");
}

// Anthropic Messages, native: the key as x-api-key, limits learned from anthropic-ratelimit-* headers, 529
// overloaded_error answers retried, a JSON output through the forced tool, the system prompt sent.
TEST(HostedE2eTest, AnthropicMessagesWithOverloadAnswersAndAJsonTool) {
  TempDir d;
  Hosted h = StartHosted(d, {"--rpm", "30000", "--tpm", "10000000", "--overload-rate", "0.03", "--api-key", "k-123"});
  WriteRows(d, 200);
  std::string endpoint =
      "    backend: anthropic\n"
      "    endpoint:\n"
      "      base_url: \"http://127.0.0.1:" +
      std::to_string(h.port) +
      "/v1\"\n"
      "      model: claude-test\n"
      "      api_key_env: TEST_ANTHROPIC_KEY\n"
      "      system_prompt: Answer briefly.\n"
      "      max_concurrency: auto\n"
      "      max_retries: 8\n";
  std::string cfg = HostedConfig(d, endpoint);
  cfg = std::regex_replace(cfg, std::regex("  outputs: .*\n"),
                           "  outputs:\n"
                           "    - {name: summary, type: llm, prompt: \"Summarise: {{ text }}\"}\n"
                           "    - name: judge\n"
                           "      type: llm\n"
                           "      output_type: JSON\n"
                           "      output_schema: {score: {type: int, min: 0, max: 3}, relevant: bool}\n"
                           "      prompt: \"Rate: {{ summary }}\"\n");
  cfg = std::regex_replace(cfg, std::regex("summary: \"\\{\\{ summary \\}\\}\"\\}"),
                           "summary: \"{{ summary }}\", judge: \"{{ judge }}\"}");
  WriteFile(d.Path("cfg.yaml"), cfg);
  auto r = Mm("TEST_ANTHROPIC_KEY=k-123", "run --config cfg.yaml", d.path());
  ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << cfg;
  EXPECT_NE(r.err.find("rate limit 30000 requests/minute (from headers)"), std::string::npos) << r.err;
  auto rows = ReadLines(d.Path("out/shard_0/data.jsonl"));
  ASSERT_EQ(rows.size(), 200u);
  auto v = ParseJson(rows[0]);
  ASSERT_TRUE(v.ok()) << rows[0];
  EXPECT_EQ(v->Find("summary")->as_string().rfind("Answer to: Summarise: Fact number", 0), 0u) << rows[0];
  ASSERT_TRUE(v->Find("judge")->is_object()) << rows[0];
  EXPECT_EQ(v->Find("judge")->Find("score")->as_int(), 1);
  Value st = ProviderStats(h.port);
  EXPECT_EQ(st.Find("ok")->as_int(), 400);
  EXPECT_GT(st.Find("529")->as_int(), 0);
  EXPECT_EQ(st.Find("other")->as_int(), 0);  // no 401 (key), no 400 (version, max_tokens)
}

}  // namespace
}  // namespace mmirage::testing
