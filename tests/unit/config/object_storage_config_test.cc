// Configs with s3:// paths: the generation cache (SQLite files) stays on a local disk.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "config/config.h"

namespace mmirage::config {
namespace {

Result<Config> LoadWithHome(const std::string& yaml) {
  LoadOptions o;
  o.vars = [](const std::string& name) -> std::optional<std::string> {
    if (name == "HOME") return std::string("/home/u");
    return std::nullopt;
  };
  return LoadConfigFromString(yaml, "cfg.yaml", o);
}

std::string Config(const std::string& state_dir, const std::string& execution) {
  return "processors: []\nloading_params:\n  datasets:\n    - {type: JSONL, path: s3://b/in.jsonl, output_dir: "
         "s3://b/out}\n"
         "  state_dir: " +
         state_dir + "\nprocessing_params:\n  inputs: [{name: text, key: text}]\n  outputs: []\n" +
         "  output_schema: {copy: \"{{ text }}\"}\n" + execution;
}

TEST(ObjectStorageConfigTest, StateDirInABucketKeepsTheCacheLocal) {
  auto c = LoadWithHome(Config("s3://b/state", ""));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->loading.state_dir, "s3://b/state");
  EXPECT_EQ(c->execution.cache_dir, "/home/u/.cache/mmirage/generation_cache");
  auto local = LoadWithHome(Config("/data/run/state", ""));
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ(local->execution.cache_dir, "/data/run/generation_cache");
}

TEST(ObjectStorageConfigTest, ACacheDirInABucketIsALocatedError) {
  auto c = LoadWithHome(Config("s3://b/state", "execution_params:\n  cache_dir: s3://b/cache\n"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cfg.yaml:11:"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("cache_dir must be a local directory"), std::string::npos)
      << c.status().message();
}

}  // namespace
}  // namespace mmirage::config
