// Issue #13, item 8: split names and job_name cannot escape their output folder; item 11: NaN / infinity in
// sampling values (and any numeric option) is a located load error, not invalid JSON later.
#include <gtest/gtest.h>

#include "config/config.h"

namespace mmirage::config {
namespace {

std::string Load(const std::string& splits, const std::string& job_name) {
  std::string yaml =
      "processors: []\n"
      "loading_params:\n"
      "  datasets:\n"
      "    - type: JSONL\n"
      "      output_dir: out\n"
      "      path: {" +
      splits +
      "}\n"
      "processing_params:\n"
      "  inputs: [{name: a, key: a}]\n"
      "  outputs: []\n"
      "  output_schema: {a: \"{{ a }}\"}\n"
      "execution_params: {job_name: \"" +
      job_name + "\"}\n";
  LoadOptions o;
  o.vars = [](const std::string&) { return std::optional<std::string>(); };
  auto c = LoadConfigFromString(yaml, "cfg.yaml", o);
  return c.ok() ? "OK" : c.status().message();
}

TEST(PathSafetyTest, SplitNamesAndJobNameMustBePlainComponents) {
  EXPECT_EQ(Load("train: a.jsonl, test: b.jsonl", "job"), "OK");
  EXPECT_NE(Load("../evil: a.jsonl", "job").find("split name '../evil' contains a path separator"), std::string::npos);
  EXPECT_NE(Load("'/abs': a.jsonl", "job").find("split name '/abs' is an absolute path"), std::string::npos);
  EXPECT_NE(Load("'..': a.jsonl", "job").find("split name '..' is '..'"), std::string::npos);
  EXPECT_NE(Load("'': a.jsonl", "job").find("split name '' is empty"), std::string::npos);
  EXPECT_NE(Load("\"a\\0b\": a.jsonl", "job").find("contains a NUL byte"), std::string::npos);
  EXPECT_NE(Load("'a\\b': a.jsonl", "job").find("contains a path separator"), std::string::npos);
  EXPECT_NE(Load("train: a.jsonl", "../../etc/x").find("job_name '../../etc/x' contains a path separator"),
            std::string::npos);
  EXPECT_NE(Load("train: a.jsonl", "/tmp/x").find("job_name '/tmp/x' is an absolute path"), std::string::npos);
  EXPECT_NE(Load("train: a.jsonl", "").find("job_name '' is empty"), std::string::npos);
}

TEST(PathSafetyTest, ErrorsNameTheFileAndTheLineOfTheName) {
  // The split map is on line 6 of the generated config, job_name on line 11.
  std::string split = Load("ok: a.jsonl, ../evil: b.jsonl", "job");
  EXPECT_EQ(split.rfind("cfg.yaml:6:", 0), 0u) << split;
  EXPECT_EQ(split.find('\n'), std::string::npos) << "one line: " << split;
  std::string job = Load("train: a.jsonl", "..");
  EXPECT_EQ(job.rfind("cfg.yaml:11:", 0), 0u) << job;
}

std::string LoadLlm(const std::string& processor_extra, const std::string& server_args = "{model_path: m}") {
  std::string yaml =
      "processors:\n"
      "  - type: llm\n"
      "    backend: openai\n"
      "    server_args: " +
      server_args +
      "\n"
      "    endpoint: {base_url: \"http://127.0.0.1:1/v1\"}\n" +
      processor_extra +
      "loading_params:\n"
      "  datasets: [{type: JSONL, path: a.jsonl, output_dir: out}]\n"
      "processing_params:\n"
      "  inputs: [{name: a, key: a}]\n"
      "  outputs: [{name: s, type: llm, prompt: \"{{ a }}\"}]\n"
      "  output_schema: {s: \"{{ s }}\"}\n";
  LoadOptions o;
  o.vars = [](const std::string&) { return std::optional<std::string>(); };
  auto c = LoadConfigFromString(yaml, "cfg.yaml", o);
  return c.ok() ? "OK" : c.status().message();
}

TEST(NonFiniteNumbersTest, SamplingValuesMustBeFiniteAndTheErrorIsLocated) {
  EXPECT_EQ(LoadLlm("    default_sampling_params: {temperature: 0.5, top_p: 1}\n"), "OK");
  std::string nan = LoadLlm("    default_sampling_params: {temperature: .nan}\n");
  EXPECT_NE(nan.find("cfg.yaml:6:"), std::string::npos) << nan;
  EXPECT_NE(nan.find("default_sampling_params.temperature: '.nan' is not a finite number"), std::string::npos) << nan;
  std::string inf = LoadLlm("    default_sampling_params:\n      top_p: 1\n      stop_scores: [1, -.inf]\n");
  EXPECT_NE(inf.find("cfg.yaml:8:"), std::string::npos) << inf;
  EXPECT_NE(inf.find("default_sampling_params.stop_scores[1]: '-.inf' is not a finite number"), std::string::npos)
      << inf;
  std::string extra = LoadLlm("", "{model_path: m, extra_engine_args: {gpu_memory_utilization: .Inf}}");
  EXPECT_NE(extra.find("is not a finite number"), std::string::npos) << extra;
  std::string timeout = LoadLlm("    server_startup_timeout_seconds: .nan\n");
  EXPECT_NE(timeout.find("server_startup_timeout_seconds: '.nan' is not a finite number"), std::string::npos)
      << timeout;
  // A string that only looks like one stays a string.
  EXPECT_EQ(LoadLlm("    default_sampling_params: {stop: [\".nan\"]}\n"), "OK");
}

Result<Config> LoadImageGen(const std::string& filename_template) {
  std::string yaml =
      "processors:\n"
      "  - type: image_gen\n"
      "    backend: external\n"
      "    external: {base_url: \"http://127.0.0.1:1/v1\"}\n"
      "    output_dir: images\n"
      "loading_params:\n"
      "  datasets: [{type: JSONL, path: a.jsonl, output_dir: out}]\n"
      "processing_params:\n"
      "  inputs: [{name: a, key: a}]\n"
      "  outputs: [{name: img, type: image_gen, prompt: \"{{ a }}\", filename_template: \"" +
      filename_template +
      "\"}]\n"
      "  output_schema: {img: \"{{ img }}\"}\n";
  LoadOptions o;
  o.vars = [](const std::string&) { return std::optional<std::string>(); };
  return LoadConfigFromString(yaml, "cfg.yaml", o);
}

TEST(PathSafetyTest, AFilenameTemplateWithSeparatorsIsLoadedWithAWarning) {
  auto plain = LoadImageGen("img_{{ a }}_{{ a / 2 }}");  // a division inside {{ }} is not a separator
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_TRUE(plain->warnings.empty()) << plain->warnings[0];
  auto sub = LoadImageGen("../sub/{{ a }}");
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  ASSERT_EQ(sub->warnings.size(), 1u);
  EXPECT_EQ(sub->warnings[0].rfind("cfg.yaml:10:", 0), 0u) << sub->warnings[0];
  EXPECT_NE(sub->warnings[0].find("holds a path separator"), std::string::npos) << sub->warnings[0];
}

}  // namespace
}  // namespace mmirage::config
