// What hosted generations cost: an endpoint's `pricing`, else a small built-in table of well-known model names
// (list prices in USD per million tokens; a configured `pricing` always wins). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/config.h"

namespace mmirage::process::llm {

// The pricing of an llm processor on a hosted backend (openai, anthropic): endpoint.pricing, else the processor's
// price_per_million_input_tokens / _output_tokens, else the built-in entry whose name is the longest prefix of
// endpoint.model. nullopt: not hosted, or no price known.
std::optional<config::EndpointConfig::Pricing> PricingFor(const config::Processor& processor);

// USD for `input_tokens` prompt tokens (of which `cached_input_tokens` were served from the provider's prompt
// cache, priced at cached_input_per_million when set) and `output_tokens` generated tokens.
double CostUsd(const config::EndpointConfig::Pricing& pricing, int64_t input_tokens, int64_t cached_input_tokens,
               int64_t output_tokens);

// A provider's batch API and its discount on the online price, shown beside an online estimate: OpenAI's Batch API
// (backend openai on api.openai.com) and Anthropic's Message Batches (backend anthropic on api.anthropic.com), both
// 50 % off. nullopt for other endpoints (a compatible provider's batch offer is not known here).
struct BatchApiDiscount {
  std::string name;  // e.g. "OpenAI Batch API"
  double fraction_off = 0;
};
std::optional<BatchApiDiscount> BatchApiDiscountFor(const config::Processor& processor);

}  // namespace mmirage::process::llm
