// The fleet keys of an llm processor (config/fleet.h): endpoint.base_urls, server_args.replicas / max_restarts.
#include "config/fleet.h"

#include <gtest/gtest.h>

namespace mmirage::config {
namespace {

Result<Config> LoadLlm(const std::string& llm_block) {
  std::string yaml = "processors:\n  - type: llm\n" + llm_block +
                     "loading_params:\n  datasets: [{type: JSONL, path: d.jsonl, output_dir: out}]\n"
                     "processing_params:\n  inputs: [{name: text, key: text}]\n"
                     "  outputs: [{name: a, type: llm, prompt: \"{{ text }}\"}]\n"
                     "  output_schema: {a: \"{{ a }}\"}\n";
  LoadOptions o;
  o.vars = [](const std::string& k) { return k == "HOME" ? std::optional<std::string>("/h") : std::nullopt; };
  return LoadConfigFromString(yaml, "cfg.yaml", o);
}

TEST(FleetConfigTest, BaseUrlsAndReplicasAreRead) {
  auto c = LoadLlm(
      "    backend: openai\n"
      "    endpoint: {base_urls: [\"http://a:1/v1\", \"http://b:2/v1\"]}\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const LlmProcessor& llm = c->processors[0].llm;
  ASSERT_EQ(llm.endpoint->base_urls.size(), 2u);
  EXPECT_EQ(llm.endpoint->base_url, "http://a:1/v1");
  EXPECT_EQ(llm.replicas, 1);
  EXPECT_FALSE(llm.replicas_auto);

  c = LoadLlm("    backend: sglang\n    server_args: {model_path: o/m, replicas: auto, max_restarts: 5}\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->processors[0].llm.replicas_auto);
  EXPECT_EQ(c->processors[0].llm.max_restarts, 5);
  c = LoadLlm("    backend: sglang\n    server_args: {model_path: o/m, replicas: 4}\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->processors[0].llm.replicas, 4);
  EXPECT_TRUE(c->processors[0].llm.backend_set);
}

TEST(FleetConfigTest, BadFleetKeysAreLocatedErrors) {
  auto c = LoadLlm("    backend: openai\n    endpoint: {base_url: \"http://a/v1\", base_urls: [\"http://b/v1\"]}\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cfg.yaml:4:"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("give base_url or base_urls, not both"), std::string::npos);
  c = LoadLlm("    backend: openai\n    endpoint: {base_urls: [\"ftp://b\"]}\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("'ftp://b' must start with http://"), std::string::npos);
  c = LoadLlm("    backend: sglang\n    server_args: {model_path: o/m, replicas: 0}\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("replicas must be 'auto' or an integer in [1, 1024]"), std::string::npos);
  c = LoadLlm("    backend: sglang\n    server_args: {model_path: o/m, replicas: many}\n");
  ASSERT_FALSE(c.ok());
  c = LoadLlm("    server_args: {model_path: o/m, max_restarts: -1}\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("max_restarts must be >= 0"), std::string::npos);
}

TEST(FleetConfigTest, PrefixAffinityIsReadFromEndpointOrServerArgs) {
  auto c = LoadLlm("    backend: openai\n    endpoint: {base_urls: [\"http://a/v1\"]}\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->processors[0].llm.affinity_prefix_chars, 256);  // defaults
  EXPECT_EQ(c->processors[0].llm.affinity_max_imbalance, 2);
  c = LoadLlm(
      "    backend: openai\n    endpoint: {base_urls: [\"http://a/v1\"], prefix_affinity: {prefix_chars: 1000, "
      "max_imbalance: 0}}\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->processors[0].llm.affinity_prefix_chars, 1000);
  EXPECT_EQ(c->processors[0].llm.affinity_max_imbalance, 0);
  c = LoadLlm("    backend: sglang\n    server_args: {model_path: o/m, replicas: 2, prefix_affinity: false}\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->processors[0].llm.affinity_prefix_chars, 0);
  c = LoadLlm("    backend: sglang\n    server_args: {model_path: o/m, prefix_affinity: {max_imbalance: 5}}\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->processors[0].llm.affinity_prefix_chars, 256);
  EXPECT_EQ(c->processors[0].llm.affinity_max_imbalance, 5);
}

TEST(FleetConfigTest, BadPrefixAffinityIsALocatedError) {
  struct Case {
    std::string llm, error;
  } cases[] = {
      {"    server_args: {model_path: o/m, prefix_affinity: 12}\n",
       "cfg.yaml:3:53: processors[0].server_args.prefix_affinity must be false, true or a map"},
      {"    server_args: {model_path: o/m, prefix_affinity: {prefix_chars: 0}}\n",
       "cfg.yaml:3:68: processors[0].server_args.prefix_affinity.prefix_chars must be an integer in [1, 1000000]"},
      {"    server_args: {model_path: o/m, prefix_affinity: {max_imbalance: -1}}\n",
       "prefix_affinity.max_imbalance must be an integer in [0, 1000000]"},
      {"    backend: openai\n    endpoint: {base_urls: [\"http://a/v1\"], prefix_affinity: false}\n"
       "    server_args: {model_path: o/m, prefix_affinity: true}\n",
       "give prefix_affinity in endpoint or server_args, not both"},
  };
  for (const auto& k : cases) {
    auto c = LoadLlm(k.llm);
    ASSERT_FALSE(c.ok()) << k.llm;
    EXPECT_NE(c.status().message().find(k.error), std::string::npos) << c.status().message();
  }
}

}  // namespace
}  // namespace mmirage::config
