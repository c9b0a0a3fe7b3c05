// Hosted-API endpoint keys: max_concurrency auto, rate_limits.
#include <gtest/gtest.h>

#include "config/config.h"

namespace mmirage::config {
namespace {

Result<Config> LoadEndpoint(const std::string& endpoint_extra, const std::string& tail = "") {
  std::string yaml =
      "processors:\n"
      "  - type: llm\n"
      "    backend: openai\n"
      "    endpoint:\n"
      "      base_url: \"http://127.0.0.1:1/v1\"\n" +
      endpoint_extra +
      "loading_params:\n"
      "  datasets: [{type: JSONL, path: a.jsonl, output_dir: out}]\n"
      "processing_params:\n"
      "  inputs: [{name: a, key: a}]\n"
      "  outputs: [{name: s, type: llm, prompt: \"{{ a }}\"}]\n"
      "  output_schema: {s: \"{{ s }}\"}\n" +
      tail;
  LoadOptions o;
  o.vars = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  return LoadConfigFromString(yaml, "cfg.yaml", o);
}

const EndpointConfig& Endpoint(const Config& c) { return *c.processors.at(0).llm.endpoint; }

TEST(HostedConfigTest, RateLimitsAndAutoConcurrency) {
  auto c = LoadEndpoint(
      "      max_concurrency: auto\n"
      "      rate_limits: {requests_per_minute: 500, tokens_per_minute: 30000.5}\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(Endpoint(*c).max_concurrency_auto);
  EXPECT_FALSE(Endpoint(*c).max_concurrency.has_value());
  EXPECT_EQ(Endpoint(*c).requests_per_minute, 500.0);
  EXPECT_EQ(Endpoint(*c).tokens_per_minute, 30000.5);
  EXPECT_TRUE(c->warnings.empty());
}

TEST(HostedConfigTest, DefaultsLearnLimitsAndKeepAFixedWindow) {
  auto c = LoadEndpoint("      max_concurrency: 12\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(Endpoint(*c).max_concurrency_auto);
  EXPECT_EQ(Endpoint(*c).max_concurrency, 12);
  EXPECT_FALSE(Endpoint(*c).requests_per_minute.has_value());
  EXPECT_FALSE(Endpoint(*c).tokens_per_minute.has_value());
}

TEST(HostedConfigTest, BadValuesAreLocatedErrors) {
  auto c = LoadEndpoint(
      "      max_concurrency: lots\n"
      "      rate_limits: {requests_per_minute: 0, tokens_per_minute: -5, burst: 3}\n");
  ASSERT_FALSE(c.ok());
  const std::string m = c.status().message();
  EXPECT_NE(m.find("cfg.yaml:6:"), std::string::npos) << m;
  EXPECT_NE(m.find("max_concurrency"), std::string::npos) << m;
  EXPECT_NE(m.find("cfg.yaml:7:"), std::string::npos) << m;
  EXPECT_NE(m.find("requests_per_minute must be > 0"), std::string::npos) << m;
  EXPECT_NE(m.find("tokens_per_minute must be > 0"), std::string::npos) << m;
  auto list = LoadEndpoint("      rate_limits: [1, 2]\n");
  ASSERT_FALSE(list.ok());
  const std::string lm = list.status().message();
  EXPECT_NE(lm.find("rate_limits: expected a map"), std::string::npos) << lm;
}

TEST(HostedConfigTest, PricingAndAnthropicKeys) {
  auto c = LoadEndpoint(
      "      pricing: {input_per_million: 3, output_per_million: 15.5, cached_input_per_million: 0.3}\n"
      "      system_prompt: Be brief.\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(Endpoint(*c).pricing.has_value());
  EXPECT_EQ(Endpoint(*c).pricing->input_per_million, 3.0);
  EXPECT_EQ(Endpoint(*c).pricing->output_per_million, 15.5);
  EXPECT_EQ(Endpoint(*c).pricing->cached_input_per_million, 0.3);
  EXPECT_EQ(Endpoint(*c).system_prompt, "Be brief.");
  EXPECT_EQ(Endpoint(*c).anthropic_version, "2023-06-01");
  auto bad = LoadEndpoint("      pricing: {input_per_million: -1}\n");
  ASSERT_FALSE(bad.ok());
  const std::string m = bad.status().message();
  EXPECT_NE(m.find("input_per_million must be >= 0"), std::string::npos) << m;
  EXPECT_NE(m.find("missing required key 'output_per_million'"), std::string::npos) << m;
}

TEST(HostedConfigTest, MaxCostUsdMustBePositive) {
  auto ok = LoadEndpoint("", "execution_params: {max_cost_usd: 2.5}\n");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->execution.max_cost_usd, 2.5);
  auto bad = LoadEndpoint("", "execution_params: {max_cost_usd: 0}\n");
  ASSERT_FALSE(bad.ok());
  const std::string m = bad.status().message();
  EXPECT_NE(m.find("max_cost_usd must be > 0"), std::string::npos) << m;
}

}  // namespace
}  // namespace mmirage::config
