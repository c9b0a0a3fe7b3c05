// processing_params.order: input (default) | prefix.
#include <gtest/gtest.h>

#include "config/config.h"

namespace mmirage::config {
namespace {

Result<Config> LoadWithOrder(const std::string& order_line) {
  std::string y =
      "processors: []\n"
      "loading_params:\n  datasets: [{type: JSONL, path: d.jsonl, output_dir: o}]\n"
      "processing_params:\n  inputs: [{name: t, key: t}]\n  outputs: []\n" +
      order_line + "  output_schema: {c: '{{ t }}'}\n";
  LoadOptions o;
  o.vars = [](const std::string&) { return std::optional<std::string>(); };
  return LoadConfigFromString(y, "cfg.yaml", o);
}

TEST(ConfigOrderTest, DefaultsToInputOrder) {
  auto c = LoadWithOrder("");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->processing.order, "input");
}

TEST(ConfigOrderTest, AcceptsPrefix) {
  auto c = LoadWithOrder("  order: prefix\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->processing.order, "prefix");
  EXPECT_TRUE(c->warnings.empty());
}

TEST(ConfigOrderTest, AnUnknownOrderIsALocatedError) {
  auto c = LoadWithOrder("  order: random\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cfg.yaml:7:10: processing_params.order: invalid value 'random'"),
            std::string::npos)
      << c.status().message();
}

}  // namespace
}  // namespace mmirage::config
