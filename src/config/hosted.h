// Reading the hosted-API keys of an llm endpoint (rate limits, adaptive concurrency, pricing). Internal to
// config/: called by the endpoint reader in loader.cc. Errors go to the reader's Diag with their location.
#pragma once

#include "config/config.h"
#include "config/yaml_reader.h"

namespace mmirage::config {

// Reads `max_concurrency` (an int >= 1 or "auto") and `rate_limits: {requests_per_minute, tokens_per_minute}`
// (each > 0), `pricing: {input_per_million, output_per_million, cached_input_per_million}` (each >= 0), and the
// Anthropic keys `system_prompt` and `anthropic_version`, from the endpoint map `e` into `c`.
void ReadHostedEndpointKeys(MapReader& e, EndpointConfig* c);

}  // namespace mmirage::config
