#include "config/config.h"

#include <gtest/gtest.h>

#include <map>

namespace mmirage::config {
namespace {

VarLookup FakeVars(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

Result<Config> Load(const std::string& yaml, std::map<std::string, std::string> vars = {{"HOME", "/home/u"}}) {
  LoadOptions o;
  o.vars = FakeVars(vars);
  return LoadConfigFromString(yaml, "cfg.yaml", o);
}

const char* kMinimal = R"(processors: []
loading_params:
  datasets:
    - type: JSONL
      path: data.jsonl
      output_dir: out
processing_params:
  inputs:
    - name: text
      key: text
  outputs: []
  output_schema:
    copy: "{{ text }}"
)";

TEST(ConfigTest, MinimalConfigGetsSpecDefaults) {
  auto c = Load(kMinimal);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->loading.num_shards, 1);
  EXPECT_EQ(c->loading.shard_id, 0);
  EXPECT_EQ(c->loading.batch_size, 1);
  EXPECT_EQ(c->loading.state_dir, "/home/u/.cache/MMIRAGE/state_dir");
  EXPECT_EQ(c->execution.mode, "local");
  EXPECT_EQ(c->execution.max_retries, 3);
  EXPECT_EQ(c->execution.max_failed_rows, 0);
  EXPECT_FALSE(c->processing.remove_columns);
  ASSERT_EQ(c->processing.output_schema.members.size(), 1u);
  EXPECT_EQ(c->processing.output_schema.members[0].second.plain_var, std::optional<std::string>("text"));
  EXPECT_TRUE(c->warnings.empty());
}

TEST(ConfigTest, EnvExpansionFollowsPythonExpandvars) {
  VarLookup vars = FakeVars({{"HOME", "/h"}, {"A", "x"}, {"A:-b", "weird"}});
  EXPECT_EQ(ExpandEnvVars("$HOME/data", vars), "/h/data");
  EXPECT_EQ(ExpandEnvVars("${HOME}x", vars), "/hx");
  EXPECT_EQ(ExpandEnvVars("$UNSET and ${UNSET}", vars), "$UNSET and ${UNSET}");
  EXPECT_EQ(ExpandEnvVars("$$HOME", vars), "$/h");
  EXPECT_EQ(ExpandEnvVars("${A:-b}", vars), "weird");
  EXPECT_EQ(ExpandEnvVars("${B:-b}", vars), "${B:-b}");
  EXPECT_EQ(ExpandEnvVars("cost: 5$", vars), "cost: 5$");
  EXPECT_EQ(ExpandEnvVars("${unclosed", vars), "${unclosed");
  EXPECT_EQ(ExpandUser("~/x", vars), "/h/x");
  EXPECT_EQ(ExpandUser("~user/x", vars), "~user/x");
}

TEST(ConfigTest, ShardFieldsFallBackWhenTheVariableIsUnset) {
  std::string y = std::string(kMinimal) + "  remove_columns: true\n";
  y.replace(y.find("      output_dir: out\n"), 22,
            "      output_dir: out\n  num_shards: \"$NSHARDS\"\n  shard_id: \"${SLURM_ARRAY_TASK_ID}\"\n");
  auto unset = Load(y);
  ASSERT_TRUE(unset.ok()) << unset.status().ToString();
  EXPECT_EQ(unset->loading.num_shards, 1);
  EXPECT_EQ(unset->loading.shard_id, 0);
  auto set = Load(y, {{"NSHARDS", " 4 "}, {"SLURM_ARRAY_TASK_ID", "3"}});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->loading.num_shards, 4);
  EXPECT_EQ(set->loading.shard_id, 3);
  auto bad = Load(y, {{"NSHARDS", "four"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("Invalid value for num_shards: 'four'"), std::string::npos);
}

TEST(ConfigTest, EveryErrorIsReportedWithItsLocationInOnePass) {
  const char* yaml = R"(processors: []
loading_params:
  datasets: []
  num_shards: 2
  shard_id: 5
processing_params:
  inputs:
    - name: q
      key: "foo[1"
  outputs:
    - name: answer
      type: llm
      prompt: "{{ q | uppper }}"
  output_schema:
    a: "{% if %}"
)";
  auto c = Load(yaml);
  ASSERT_FALSE(c.ok());
  const std::string m = c.status().message();
  EXPECT_NE(m.find("No datasets provided"), std::string::npos) << m;
  EXPECT_NE(m.find("cfg.yaml:5:13: Invalid shard_id=5, num_shards=2"), std::string::npos) << m;
  EXPECT_NE(m.find("cfg.yaml:9:"), std::string::npos) << m;  // JMESPath syntax error, on the key's line
  EXPECT_NE(m.find("invalid JMESPath key 'foo[1'"), std::string::npos) << m;
  EXPECT_NE(m.find("cfg.yaml:13:"), std::string::npos) << m;  // unknown filter, on the prompt's line
  EXPECT_NE(m.find("uppper"), std::string::npos) << m;
  EXPECT_NE(m.find("cfg.yaml:11:7: output 'answer' has type 'llm' but no processor"), std::string::npos) << m;
  EXPECT_NE(m.find("cfg.yaml:15:"), std::string::npos) << m;  // Jinja syntax error in output_schema
  // One line per error.
  int lines = 1;
  for (char ch : m) lines += ch == '\n';
  EXPECT_EQ(lines, 6) << m;
}

TEST(ConfigTest, TemplateErrorsInBlockScalarsPointAtTheTemplateLine) {
  std::string y = kMinimal;
  y.replace(y.find("    copy: \"{{ text }}\"\n"), 24,
            "    copy: |\n      first line\n      {{ text | nosuchfilter }}\n");
  auto c = Load(y);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cfg.yaml:15:7:"), std::string::npos) << c.status().message();
}

// The template's own line (TemplateError::line) is placed in the YAML file; the "line N" of the template's
// message is not repeated.
TEST(ConfigTest, APromptTemplateErrorPointsAtItsYamlLine) {
  std::string y = kMinimal;
  y.replace(y.find("  outputs: []\n"), 14,
            "  outputs:\n    - name: answer\n      type: llm\n      prompt: |\n        Question:\n\n"
            "        {{ text | nosuch }}\n");
  auto c = Load(y);
  ASSERT_FALSE(c.ok());
  const std::string m = c.status().message();
  EXPECT_NE(m.find("cfg.yaml:17:9: processing_params.outputs[0].prompt: invalid Jinja template: no filter named "
                   "'nosuch'\n"),
            std::string::npos)
      << m;
  EXPECT_EQ(m.find("line 3"), std::string::npos) << m;
}

TEST(ConfigTest, UnknownKeysAreLocatedWarningsWithSuggestions) {
  std::string y = std::string(kMinimal) + "execution_params:\n  retyr: true\n";
  auto c = Load(y);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_EQ(c->warnings[0], "cfg.yaml:15:3: unknown key 'retyr' in execution_params (ignored); did you mean 'retry'?");
}

TEST(ConfigTest, TypesAreCheckedNotCoerced) {
  std::string y = std::string(kMinimal) + "execution_params:\n  max_retries: \"3\"\n  merge: yes\n";
  auto c = Load(y);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cfg.yaml:15:16: execution_params.max_retries: expected an int, got string '3'"),
            std::string::npos)
      << c.status().message();
}

TEST(ConfigTest, YamlSyntaxErrorIsLocated) {
  auto c = Load("processors: [\nloading_params: {");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message().rfind("cfg.yaml:", 0), 0u) << c.status().message();
  EXPECT_NE(c.status().message().find("invalid YAML"), std::string::npos);
}

TEST(ConfigTest, MissingSectionsAreErrors) {
  auto c = Load("{}");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("missing required section 'processors'"), std::string::npos);
  EXPECT_NE(c.status().message().find("missing required section 'processing_params'"), std::string::npos);
}

const char* kLlm = R"(processors:
  - type: llm
    server_args:
      model_path: m.gguf
loading_params:
  datasets: [{type: JSONL, path: d.jsonl, output_dir: o}]
processing_params:
  inputs: [{name: q, key: question}]
  outputs:
    - name: ans
      type: llm
      output_type: JSON
      output_schema: SCHEMA
      prompt: "Answer {{ q }}"
  output_schema:
    a: "{{ ans.score }}"
)";

Result<Config> LoadSchema(const std::string& schema, std::map<std::string, std::string> vars = {}) {
  std::string y = kLlm;
  y.replace(y.find("SCHEMA"), 6, schema);
  return Load(y, vars);
}

TEST(ConfigTest, JsonOutputSchemaFormsAreParsed) {
  auto c = LoadSchema("{score: {type: int, min: 0, max: \"3\"}, ok: bool, why: str}");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const auto& s = c->processing.outputs[0].schema;
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].type, FieldType::kInt);
  EXPECT_EQ(*s[0].min, 0);
  EXPECT_EQ(*s[0].max, 3);
  EXPECT_EQ(s[1].type, FieldType::kBool);
  EXPECT_EQ(s[2].type, FieldType::kString);
  auto list = LoadSchema("[a, b]");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->processing.outputs[0].schema.size(), 2u);
}

TEST(ConfigTest, JsonOutputSchemaRulesGiveTheSpecMessages) {
  struct Case {
    const char* schema;
    const char* message;
  } cases[] = {
      {"{s: {type: int, mn: 1}}",
       "Field 's' in output_schema of 'ans': Unknown key(s) ['mn']. Allowed keys: ['max', 'min', 'type']."},
      {"{s: {min: 1}}", "Field 's' in output_schema of 'ans': missing required key 'type'."},
      {"{s: {type: tuple}}",
       "Unsupported type 'tuple'. Supported types: ['bool', 'boolean', 'float', 'int', 'integer', 'number', 'str', "
       "'string']."},
      {"{s: {type: str, min: 1}}", "'min'/'max' are only allowed for numeric types, got type 'str'."},
      {"{s: {type: int, min: abc}}", "'min' must be a number, got 'abc'."},
      {"{s: {type: int, max: true}}", "'max' must be a number, got True."},
      {"{s: {type: int, min: \"0.5\"}}", "'min' must be a whole number for an int field, got '0.5'."},
      {"{s: {type: int, min: 5, max: 2}}", "min 5 cannot be greater than max 2."},
  };
  for (const auto& c : cases) {
    auto r = LoadSchema(c.schema);
    ASSERT_FALSE(r.ok()) << c.schema;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << c.schema << "\n" << r.status().message();
  }
}

TEST(ConfigTest, JsonOutputWithoutSchemaIsALoadError) {
  auto c = LoadSchema("[]");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("has output_type=JSON but no output_schema defined"), std::string::npos);
}

TEST(ConfigTest, PromptUsingAnUnknownVariableIsAnError) {
  std::string y = kLlm;
  y.replace(y.find("SCHEMA"), 6, "[a]");
  y.replace(y.find("Answer {{ q }}"), 14, "Answer {{ qq }}");
  auto c = Load(y);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("uses undefined variable 'qq'"), std::string::npos) << c.status().message();
}

TEST(ConfigTest, TpSizeDefaultsFromSlurmGpusOnNode) {
  auto c = LoadSchema("[a]", {{"SLURM_GPUS_ON_NODE", "4"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->processors[0].llm.tp_size, 4);
  auto bad = LoadSchema("[a]", {{"SLURM_GPUS_ON_NODE", "4(x2)"}});
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->processors[0].llm.tp_size, 1);
  ASSERT_FALSE(bad->warnings.empty());
  EXPECT_NE(bad->warnings[0].find("Invalid SLURM_GPUS_ON_NODE value '4(x2)', defaulting tp_size to 1"),
            std::string::npos);
}

TEST(ConfigTest, InputExtensionsOptionalAndDefault) {
  std::string y = kMinimal;
  y.replace(y.find("      key: text\n"), 16, "      key: text\n      optional: true\n      default: {a: 1}\n");
  auto c = Load(y);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->processing.inputs[0].optional);
  ASSERT_TRUE(c->processing.inputs[0].default_value.has_value());
  EXPECT_EQ(c->processing.inputs[0].default_value->Find("a")->as_int(), 1);
}

TEST(ConfigTest, SlurmModeRequiresAnAccount) {
  auto c = Load(std::string(kMinimal) + "execution_params:\n  mode: slurm\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("account is required when mode='slurm'"), std::string::npos);
  auto bad = Load(std::string(kMinimal) + "execution_params:\n  mode: cloud\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("Invalid execution mode: 'cloud'. Must be 'local', 'slurm' or 'ray'."),
            std::string::npos);
}

TEST(ConfigTest, BatchApiValidation) {
  std::string y = kMinimal;
  y.replace(
      y.find("processors: []"), 14,
      "processors:\n  - type: batch_api\n    provider: Anthropic\n    temperature: 0.5\n    top_p: 0.5\n    bogus: 1");
  auto c = Load(y);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("temperature and top_p are mutually exclusive"), std::string::npos)
      << c.status().message();
  EXPECT_NE(c.status().message().find("unknown key 'bogus'"), std::string::npos) << c.status().message();
}

TEST(ConfigTest, BatchApiBaseUrlFallsBackToTheProviderSdkVariable) {
  for (const char* provider : {"openai", "anthropic"}) {
    std::string y = kMinimal;
    y.replace(y.find("processors: []"), 14, std::string("processors:\n  - type: batch_api\n    provider: ") + provider);
    std::string var = std::string(provider) == "openai" ? "OPENAI_BASE_URL" : "ANTHROPIC_BASE_URL";
    auto plain = Load(y);
    ASSERT_TRUE(plain.ok()) << plain.status().ToString();
    EXPECT_FALSE(plain->processors[0].batch_api.base_url.has_value()) << provider;
    auto gw = Load(y, {{"HOME", "/home/u"}, {var, " http://127.0.0.1:9/v1 "}});
    ASSERT_TRUE(gw.ok()) << gw.status().ToString();
    EXPECT_EQ(gw->processors[0].batch_api.base_url.value_or(""), "http://127.0.0.1:9/v1") << provider;
    // The config's own base_url wins over the variable.
    std::string own = y;
    own.replace(own.find(std::string("provider: ") + provider), 10 + std::string(provider).size(),
                std::string("provider: ") + provider + "\n    base_url: http://own/v1");
    auto c = Load(own, {{"HOME", "/home/u"}, {var, "http://127.0.0.1:9/v1"}});
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->processors[0].batch_api.base_url.value_or(""), "http://own/v1") << provider;
  }
}

TEST(ConfigTest, YamlScalarsResolveLikePyYaml) {
  std::string y = std::string(kMinimal);
  y.replace(y.find("    copy: \"{{ text }}\"\n"), 24,
            "    a: yes\n    b: 1e3\n    c: 1.5\n    d: ~\n    e: '12'\n    f: 0x10\n");
  auto c = Load(y);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const auto& m = c->processing.output_schema.members;
  ASSERT_EQ(m.size(), 6u);
  EXPECT_TRUE(m[0].second.constant.is_bool());
  EXPECT_EQ(m[1].second.constant, Value("1e3"));  // a string in YAML 1.1 (a variable-free template: folded)
  EXPECT_TRUE(m[2].second.constant.is_double());
  EXPECT_TRUE(m[3].second.constant.is_null());
  EXPECT_EQ(m[4].second.constant, Value("12"));
  EXPECT_EQ(m[5].second.constant.as_int(), 16);
}

}  // namespace
}  // namespace mmirage::config
