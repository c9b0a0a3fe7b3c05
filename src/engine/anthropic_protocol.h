// The Anthropic Messages wire format (POST {base_url}/messages) as pure functions, for the HTTP engine's
// `api: anthropic` (openai_engine.h): request bodies and response parsing. Pure and thread-safe; no I/O.
#pragma once

#include <string>
#include <string_view>

#include "engine/engine.h"
#include "engine/openai_protocol.h"
#include "util/status.h"

namespace mmirage::engine {

// The tool whose input is a JSON output: a request with a json_schema forces it (tool_choice) and the answer's
// tool_use input is the output's text.
inline constexpr char kAnthropicJsonTool[] = "output";

// Builds one /messages request: model, max_tokens (= max_new_tokens), the prompt as the one user message (text
// blocks between the image markers, each image a {"type": "image", "source": …} block: kBytes as base64 with the
// sniffed MIME type, kUrl as {"type": "url"}), `system` when non-empty, temperature, top_p (≠ 1), top_k (> 0),
// stop_sequences; a json_schema as the forced tool kAnthropicJsonTool. Errors: kInvalidArgument for an empty
// model, a schema that is not valid JSON, marker and image counts that differ, image bytes of a type Anthropic
// does not take (JPEG, PNG, GIF, WebP are), an unread kFile image, or a raw prompt.
Result<OpenAiCall> BuildAnthropicCall(const Request& request, const std::string& model, const std::string& system);

// Parses a 2xx /messages body: the text blocks joined, or the kAnthropicJsonTool tool_use input as compact JSON;
// stop_reason "max_tokens" → kLength, else kStop; usage.input_tokens (+ cache_creation_input_tokens +
// cache_read_input_tokens) and output_tokens; cache_read_input_tokens as cached_prompt_tokens.
// Errors: kUnavailable "malformed response: …".
Result<Completion> ParseAnthropicResponse(std::string_view body);

}  // namespace mmirage::engine
