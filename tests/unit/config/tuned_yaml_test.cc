#include "config/tuned_yaml.h"

#include <gtest/gtest.h>

#include "config/config.h"

namespace mmirage::config {
namespace {

const char* kYaml = R"(# a comment
processors:
  - type: llm
    server_args:
      model_path: m.gguf
      extra_engine_args: {n_parallel: 4, n_threads: 1}
loading_params:
  datasets: [{type: JSONL, path: d.jsonl, output_dir: o}]
processing_params:
  inputs: [{name: t, key: t}]
  outputs:
    - name: a
      type: llm
      prompt: |
        Line one {{ t }}
        "quoted": yes
  output_schema: {a: "{{ a }}", n: "true", t: '{{ t }}'}
)";

Result<Config> Load(const std::string& y) {
  LoadOptions o;
  o.vars = [](const std::string&) { return std::optional<std::string>(); };
  return LoadConfigFromString(y, "t.yaml", o);
}

TEST(TunedYamlTest, OnlyTheTunedKeysChangeAndTheMarkerIsSet) {
  std::vector<YamlEdit> edits = {
      {{"processors", "[0]", "server_args", "extra_engine_args", "n_parallel"}, "16", "tuned (was 4)"},
      {{"processing_params", "order"}, "prefix", "tuned (was input)"}};
  auto out = RewriteTunedYaml(kYaml, "t.yaml", edits, "mmirage tune: n_parallel=16", "Tuned copy\nsecond line");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->rfind("# Tuned copy\n# second line\n", 0), 0u) << *out;
  EXPECT_NE(out->find("n_parallel: 16  # tuned (was 4)"), std::string::npos) << *out;
  EXPECT_NE(out->find("order: prefix  # tuned (was input)"), std::string::npos) << *out;
  auto before = Load(kYaml);
  auto after = Load(*out);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  ASSERT_TRUE(after.ok()) << after.status().ToString() << "\n" << *out;
  EXPECT_TRUE(after->warnings.empty());
  EXPECT_EQ(after->tuned_by, std::optional<std::string>("mmirage tune: n_parallel=16"));
  EXPECT_FALSE(before->tuned_by.has_value());
  EXPECT_EQ(after->processing.order, "prefix");
  Value extra = before->processors[0].llm.extra_engine_args;
  extra.Set("n_parallel", int64_t{16});
  EXPECT_EQ(after->processors[0].llm.extra_engine_args, extra);
  EXPECT_EQ(after->processing.outputs[0].prompt, before->processing.outputs[0].prompt);
  EXPECT_EQ(after->processing.output_schema.members.size(), 3u);
  // A quoted "true" stays the string it was.
  EXPECT_NE(out->find("n: \"true\""), std::string::npos) << *out;
}

TEST(TunedYamlTest, BadYamlAndBadPathsAreErrors) {
  EXPECT_FALSE(RewriteTunedYaml("a: [", "t.yaml", {}, "x", "h").ok());
  EXPECT_FALSE(RewriteTunedYaml("- 1\n", "t.yaml", {}, "x", "h").ok());
  auto r = RewriteTunedYaml(kYaml, "t.yaml", {{{"processors", "[3]", "x"}, "1", ""}}, "x", "h");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no item [3]"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace mmirage::config
