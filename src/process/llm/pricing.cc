// Prices (contract: pricing.h). The table holds list prices of a few well-known models; a configured pricing is the
// way to state any other price (or a negotiated one).
#include "process/llm/pricing.h"

#include <cstring>

#include <algorithm>

namespace mmirage::process::llm {
namespace {

struct Entry {
  const char* prefix;
  double input, output, cached_input;  // USD per million tokens
};

constexpr Entry kTable[] = {
    {"gpt-4o", 2.50, 10.00, 1.25},
    {"gpt-4o-mini", 0.15, 0.60, 0.075},
    {"gpt-4.1", 2.00, 8.00, 0.50},
    {"gpt-4.1-mini", 0.40, 1.60, 0.10},
    {"gpt-4.1-nano", 0.10, 0.40, 0.025},
    {"o4-mini", 1.10, 4.40, 0.275},
    {"claude-opus-4", 15.00, 75.00, 1.50},
    {"claude-sonnet-4", 3.00, 15.00, 0.30},
    {"claude-3-7-sonnet", 3.00, 15.00, 0.30},
    {"claude-haiku-4-5", 1.00, 5.00, 0.10},
    {"claude-3-5-haiku", 0.80, 4.00, 0.08},
};

}  // namespace

std::optional<BatchApiDiscount> BatchApiDiscountFor(const config::Processor& p) {
  if (!p.llm.endpoint) return std::nullopt;
  const std::string& url = p.llm.endpoint->base_url;
  auto on = [&](const char* host) {  // exactly that host, any scheme, port and path
    size_t at = url.find("://");
    size_t begin = at == std::string::npos ? 0 : at + 3, n = std::strlen(host);
    if (url.compare(begin, n, host) != 0) return false;
    return begin + n == url.size() || url[begin + n] == '/' || url[begin + n] == ':';
  };
  if (p.llm.backend == "openai" && on("api.openai.com")) return BatchApiDiscount{"OpenAI Batch API", 0.5};
  if (p.llm.backend == "anthropic" && on("api.anthropic.com"))
    return BatchApiDiscount{"Anthropic Message Batches", 0.5};
  return std::nullopt;
}

std::optional<config::EndpointConfig::Pricing> PricingFor(const config::Processor& p) {
  if (p.type != "llm" || (p.llm.backend != "openai" && p.llm.backend != "anthropic") || !p.llm.endpoint)
    return std::nullopt;
  const config::EndpointConfig& ep = *p.llm.endpoint;
  if (ep.pricing) return ep.pricing;
  if (p.price_per_million_input_tokens || p.price_per_million_output_tokens) {
    config::EndpointConfig::Pricing out;
    out.input_per_million = p.price_per_million_input_tokens.value_or(0);
    out.output_per_million = p.price_per_million_output_tokens.value_or(0);
    return out;
  }
  const Entry* best = nullptr;
  for (const Entry& e : kTable) {
    const std::string prefix = e.prefix;
    if (ep.model.rfind(prefix, 0) == 0 && (best == nullptr || prefix.size() > std::string(best->prefix).size()))
      best = &e;
  }
  if (best == nullptr) return std::nullopt;
  config::EndpointConfig::Pricing out;
  out.input_per_million = best->input;
  out.output_per_million = best->output;
  out.cached_input_per_million = best->cached_input;
  return out;
}

double CostUsd(const config::EndpointConfig::Pricing& pricing, int64_t input_tokens, int64_t cached_input_tokens,
               int64_t output_tokens) {
  int64_t cached = std::clamp<int64_t>(cached_input_tokens, 0, std::max<int64_t>(0, input_tokens));
  double cached_price = pricing.cached_input_per_million.value_or(pricing.input_per_million);
  return (static_cast<double>(input_tokens - cached) * pricing.input_per_million +
          static_cast<double>(cached) * cached_price +
          static_cast<double>(output_tokens) * pricing.output_per_million) /
         1e6;
}

}  // namespace mmirage::process::llm
