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
  EXPECT_NE(Load("'/abs': a.jsonl", "job").find("split name '/abs' contains a path separator"), std::string::npos);
  EXPECT_NE(Load("'..': a.jsonl", "job").find("split name '..' is '..'"), std::string::npos);
  EXPECT_NE(Load("train: a.jsonl", "../../etc/x").find("job_name '../../etc/x' contains a path separator"),
            std::string::npos);
  EXPECT_NE(Load("train: a.jsonl", "..").find("cfg.yaml"), std::string::npos);  // the error names the file
}

}  // namespace
}  // namespace mmirage::config
