// Issue #13, item 8: split names and job_name cannot escape their output folder.
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
      "      path: {" + splits + "}\n"
      "processing_params:\n"
      "  inputs: [{name: a, key: a}]\n"
      "  outputs: []\n"
      "  output_schema: {a: \"{{ a }}\"}\n"
      "execution_params: {job_name: \"" + job_name + "\"}\n";
  LoadOptions o;
  o.env = [](const std::string&) { return std::optional<std::string>(); };
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

}  // namespace
}  // namespace mmirage::config
