// End-to-end: `mmirage tune` on the synthetic model with a tiny budget: the table, --format json, --write.
#include <gtest/gtest.h>

#include "config/config.h"
#include "data/json.h"
#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

std::string TuneRows(int n) {
  std::string s;
  for (int i = 0; i < n; ++i)
    s += "{\"id\":" + std::to_string(i) + ",\"sys\":\"You are helper " + std::to_string(i % 4) + ".\",\"q\":\"Item " +
         std::to_string(i) + std::string(static_cast<size_t>(i % 5) * 4, 'z') + "?\"}\n";
  return s;
}

std::string TuneConfig(const TempDir& d) {
  return "# the user's config\n"
         "processors:\n"
         "  - type: llm\n"
         "    server_args:\n"
         "      model_path: " +
         SharedTinyModel() +
         "\n"
         "      extra_engine_args: {max_running_requests: 2, context_length: 256, n_threads: 1}\n"
         "    default_sampling_params: {temperature: 0, max_new_tokens: 4}\n"
         "loading_params:\n"
         "  datasets: [{type: JSONL, path: " +
         d.Path("data.jsonl") + ", output_dir: " + d.Path("out") +
         ", output_format: jsonl}]\n"
         "  state_dir: " +
         d.Path("state") +
         "\n"
         "processing_params:\n"
         "  inputs: [{name: sys, key: sys}, {name: q, key: q}, {name: id, key: id}]\n"
         "  outputs:\n"
         "    - {name: a, type: llm, prompt: \"{{ sys }} {{ q }}\"}\n"
         "  output_schema: {id: \"{{ id }}\", a: \"{{ a }}\"}\n";
}

Result<config::Config> Load(const std::string& path) {
  config::LoadOptions o;
  return config::LoadConfig(path, o);
}

TEST(TuneE2eTest, JsonReportAndATunedCopyThatDiffersOnlyInTunedKeys) {
  ASSERT_FALSE(SharedTinyModel().empty()) << "cannot generate the synthetic model with " << MakeTestModelTool();
  TempDir d;
  WriteFile(d.Path("data.jsonl"), TuneRows(30));
  WriteFile(d.Path("c.yaml"), TuneConfig(d));
  auto r = RunMmirage("tune --config '" + d.Path("c.yaml") + "' --budget-seconds 4 --sample 6 --format json --write '" +
                      d.Path("tuned.yaml") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto report = ParseJson(r.out);
  ASSERT_TRUE(report.ok()) << r.out;
  EXPECT_EQ(report->Find("sample_rows")->as_int(), 6);
  ASSERT_GE(report->Find("trials")->size(), 1u);
  EXPECT_LT(report->Find("elapsed_seconds")->as_double(), 12.0);
  const Value* best = report->Find("best");
  ASSERT_TRUE(best != nullptr && best->Find("ok")->as_bool());
  // Trials wrote nothing of a run.
  EXPECT_FALSE(Exists(d.Path("out")));
  EXPECT_FALSE(Exists(d.Path("state")));
  EXPECT_FALSE(Exists(d.Path("generation_cache")));  // where the config's cache would be: trials never use it

  auto before = Load(d.Path("c.yaml"));
  auto after = Load(d.Path("tuned.yaml"));
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  ASSERT_TRUE(after.ok()) << after.status().ToString() << ReadFile(d.Path("tuned.yaml"));
  ASSERT_TRUE(after->tuned_by.has_value());
  EXPECT_NE(after->tuned_by->find("mmirage tune"), std::string::npos);
  Value extra = before->processors[0].llm.extra_engine_args;
  std::string order = before->processing.order;
  for (const auto& [key, value] : best->Find("settings")->as_object()) {
    if (key == "order") order = value.as_string();
    else extra.Set(key, value);
  }
  EXPECT_EQ(after->processors[0].llm.extra_engine_args, extra) << ReadFile(d.Path("tuned.yaml"));
  EXPECT_EQ(after->processing.order, order);
  EXPECT_EQ(after->processing.outputs[0].prompt, before->processing.outputs[0].prompt);
  EXPECT_EQ(after->loading.datasets[0].path, before->loading.datasets[0].path);
  EXPECT_EQ(after->processors[0].llm.default_sampling_params, before->processors[0].llm.default_sampling_params);
  auto v = RunMmirage("validate --config '" + d.Path("tuned.yaml") + "'");
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;

  // stats (table, JSON, HTML) and estimate say that the config is tuned; the original's say nothing.
  const std::string marker = *after->tuned_by;
  for (const char* args :
       {"stats --format table", "stats", "stats --format html", "estimate --no-generate --sample 2"}) {
    auto tuned = RunMmirage(std::string(args) + " --config '" + d.Path("tuned.yaml") + "'");
    EXPECT_EQ(tuned.exit_code, 0) << args << tuned.err;
    EXPECT_NE(tuned.out.find("tuned"), std::string::npos) << args << ": " << tuned.out;
    EXPECT_NE(tuned.out.find(marker.substr(0, 20)), std::string::npos) << args << ": " << tuned.out;
    auto plain = RunMmirage(std::string(args) + " --config '" + d.Path("c.yaml") + "'");
    EXPECT_EQ(plain.out.find("mmirage tune"), std::string::npos) << args << ": " << plain.out;
  }
}

TEST(TuneE2eTest, TheTableListsTrialsTheBestAndTheProjection) {
  ASSERT_FALSE(SharedTinyModel().empty()) << "cannot generate the synthetic model with " << MakeTestModelTool();
  TempDir d;
  WriteFile(d.Path("data.jsonl"), TuneRows(12));
  WriteFile(d.Path("c.yaml"), TuneConfig(d));
  auto r = RunMmirage("tune --config '" + d.Path("c.yaml") + "' --budget-seconds 2 --sample 4");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("(config)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("out tok/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("per billion output tokens"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace mmirage::testing
