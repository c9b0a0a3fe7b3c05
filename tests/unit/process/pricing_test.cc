// Hosted-API prices: configured, built-in by model-name prefix, unknown; the cost arithmetic.
#include "process/llm/pricing.h"

#include <gtest/gtest.h>

namespace mmirage::process::llm {
namespace {

config::Processor Hosted(const std::string& backend, const std::string& model) {
  config::Processor p;
  p.type = "llm";
  p.llm.backend = backend;
  config::EndpointConfig ep;
  ep.base_url = "https://api.example/v1";
  ep.model = model;
  p.llm.endpoint = ep;
  return p;
}

TEST(PricingTest, BuiltInTableMatchesTheLongestPrefix) {
  auto mini = PricingFor(Hosted("openai", "gpt-4o-mini-2024-07-18"));
  ASSERT_TRUE(mini.has_value());
  EXPECT_DOUBLE_EQ(mini->input_per_million, 0.15);
  EXPECT_DOUBLE_EQ(mini->output_per_million, 0.60);
  auto full = PricingFor(Hosted("openai", "gpt-4o-2024-08-06"));
  ASSERT_TRUE(full.has_value());
  EXPECT_DOUBLE_EQ(full->input_per_million, 2.50);
  auto sonnet = PricingFor(Hosted("anthropic", "claude-sonnet-4-5-20250929"));
  ASSERT_TRUE(sonnet.has_value());
  EXPECT_DOUBLE_EQ(sonnet->output_per_million, 15.0);
  EXPECT_FALSE(PricingFor(Hosted("openai", "my-local-model")).has_value());
  EXPECT_FALSE(PricingFor(Hosted("sglang", "gpt-4o")).has_value());  // a server of our own costs no tokens
}

TEST(PricingTest, OpenAiAndAnthropicHaveABatchApiAtHalfPrice) {
  auto on = [](const std::string& backend, const std::string& url) {
    config::Processor p = Hosted(backend, "m");
    p.llm.endpoint->base_url = url;
    return BatchApiDiscountFor(p);
  };
  auto openai = on("openai", "https://api.openai.com/v1");
  ASSERT_TRUE(openai.has_value());
  EXPECT_EQ(openai->name, "OpenAI Batch API");
  EXPECT_DOUBLE_EQ(openai->fraction_off, 0.5);
  auto anthropic = on("anthropic", "https://api.anthropic.com/v1");
  ASSERT_TRUE(anthropic.has_value());
  EXPECT_DOUBLE_EQ(anthropic->fraction_off, 0.5);
  EXPECT_FALSE(on("openai", "https://api.together.xyz/v1").has_value());  // its batch offer is not known here
  EXPECT_FALSE(on("openai", "https://api.openai.com.example/v1").has_value());
  EXPECT_FALSE(on("sglang", "https://api.openai.com/v1").has_value());
}

TEST(PricingTest, ConfiguredPricingWins) {
  config::Processor p = Hosted("openai", "gpt-4o");
  config::EndpointConfig::Pricing mine;
  mine.input_per_million = 1;
  mine.output_per_million = 2;
  p.llm.endpoint->pricing = mine;
  auto got = PricingFor(p);
  ASSERT_TRUE(got.has_value());
  EXPECT_DOUBLE_EQ(got->input_per_million, 1);
  EXPECT_FALSE(got->cached_input_per_million.has_value());
  // Without endpoint.pricing, the processor's estimate prices come before the table.
  config::Processor q = Hosted("anthropic", "claude-sonnet-4-5");
  q.price_per_million_output_tokens = 7;
  auto est = PricingFor(q);
  ASSERT_TRUE(est.has_value());
  EXPECT_DOUBLE_EQ(est->input_per_million, 0);
  EXPECT_DOUBLE_EQ(est->output_per_million, 7);
}

TEST(PricingTest, CostCountsCachedInputAtItsPrice) {
  config::EndpointConfig::Pricing p;
  p.input_per_million = 2;
  p.output_per_million = 10;
  EXPECT_DOUBLE_EQ(CostUsd(p, 1000000, 500000, 100000), 2.0 + 1.0);  // cached at the input price when unset
  p.cached_input_per_million = 0.5;
  EXPECT_DOUBLE_EQ(CostUsd(p, 1000000, 500000, 100000), 1.0 + 0.25 + 1.0);
  EXPECT_DOUBLE_EQ(CostUsd(p, 10, 50, 0), 10 * 0.5 / 1e6);  // more cached than input: clamped
}

}  // namespace
}  // namespace mmirage::process::llm
