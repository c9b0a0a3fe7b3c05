// Provider batch requests (OpenAI Batch, Anthropic Message Batches): the request one row's prompt becomes, in the
// exact shape and bytes MMIRAGE sends, plus the JSON text forms those bytes are made of.
//
// Pure functions except BuildBatchRequest, which reads local image files through `env` (inlined as base64).
// Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "data/value.h"
#include "util/env.h"
#include "util/status.h"

namespace mmirage::batch {

// Python json.dumps(v, ensure_ascii=False) forms: compact (separators "," ":") or standard (", " ": ");
// sort_keys sorts object keys by code point.
std::string PyJson(const Value& v, bool compact, bool sort_keys = false);

// One row's request before the provider's shape: the rendered prompt, its images (paths or URLs, in variable-name
// order) and, for a JSON output with a schema, the field names.
struct BatchPrompt {
  std::string custom_id;  // before provider normalisation
  std::string prompt;
  std::vector<std::string> images;           // non-empty: a multimodal request
  std::vector<std::string> expected_schema;  // field names; empty: plain output
};

// The provider request (OpenAI: {"custom_id","method","url","body"}; Anthropic: {"custom_id","params"}).
// Local image files are inlined as `data:<mime>;base64,…` (OpenAI: only files that exist, others left as they
// are; Anthropic: a missing file, an unsupported media type or a malformed data: URI is an error).
// Errors: kInvalidArgument with MMIRAGE's messages.
Result<Value> BuildBatchRequest(const config::BatchApiProcessor& p, Env* env, const BatchPrompt& in);

// Anthropic's custom_id rule (^[a-zA-Z0-9_-]{1,64}$): a valid id is kept; otherwise every other character
// becomes '_' and, when anything changed or it is longer than 64, the id is cut to 55 characters and suffixed with
// '-' and the first 8 hex digits of the SHA-1 of the (trimmed) raw id. Only ASCII letters and digits are kept (the
// API rejects other letters). Errors: a blank id.
Result<std::string> NormalizeAnthropicCustomId(std::string_view raw);

// Python mimetypes.guess_type for an image path's extension ("" when unknown).
std::string GuessImageMimeType(std::string_view path);

// Provider batch requests (batch_api): deterministic when `temperature` is 0 or (OpenAI) a `seed` is set; the
// provider's default temperature is not 0, so a config without them is not cached.
bool IsBatchDeterministic(const config::BatchApiProcessor& p);
// The key of one provider batch request (BuildBatchRequest): engine kind "batch_api", provider, base URL
// (BatchBaseUrl), OpenAI's batch_endpoint, and the request as sent minus its custom_id (OpenAI `body`,
// Anthropic `params`: model, messages with their inlined images, sampling, max_tokens, the JSON schema) as
// canonical JSON (sorted keys). "" when the request has neither body nor params.
std::string BatchRequestKey(const config::BatchApiProcessor& p, const Value& request);

}  // namespace mmirage::batch
