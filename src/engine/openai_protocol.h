// The OpenAI-compatible wire format and the retry arithmetic of the OpenAI engine, as pure functions: request
// bodies for /chat/completions and /completions, response parsing, Retry-After, backoff with full jitter and
// error descriptions. Pure and thread-safe; no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/engine.h"
#include "util/status.h"

namespace mmirage::engine {

enum class OpenAiMode {
  kChat,        // POST {base_url}/chat/completions, the prompt as the one user message
  kCompletion,  // POST {base_url}/completions, the prompt verbatim
};

struct OpenAiCall {
  std::string path;  // "/chat/completions" or "/completions" (appended to the base URL)
  std::string body;  // JSON
  bool chat = true;  // which response shape to expect
};

// Builds the body of one request. Raw-prompt requests always use /completions. Sampling maps to the API's
// names: max_tokens, temperature, top_p, stop, seed, frequency_penalty, presence_penalty; top_k (> 0), min_p
// (> 0), repetition_penalty (≠ 1, also as llama-server's repeat_penalty) and ignore_eos (true) as the extra body
// fields SGLang, vLLM and llama-server accept; chat_template_kwargs (a non-empty object) as is; a JSON schema as
// response_format {"type": "json_schema", "json_schema": {"name": "output", "schema": …, "strict": true}}.
// `model` is omitted when empty. With images, the user message's content is a list of parts: the prompt's text
// between the image markers as "text" parts and each image as {"type": "image_url", "image_url": {"url": …}}
// (kBytes as a base64 data: URL with the sniffed MIME type, kUrl as is). Errors: kInvalidArgument when json_schema
// is not valid JSON, marker and image counts differ, image bytes are of no known image type, an image is still a
// kFile (the engine reads files first), or images come with the completion API.
Result<OpenAiCall> BuildOpenAiCall(const Request& request, OpenAiMode mode, const std::string& model);

// Parses a 2xx response body: choices[0].message.content (chat) or choices[0].text, finish_reason ("length" →
// kLength, anything else → kStop), usage.prompt_tokens / completion_tokens /
// prompt_tokens_details.cached_tokens (0 when absent). Errors: kUnavailable "malformed response: …" (a truncated
// or foreign body is worth another try).
Result<Completion> ParseOpenAiResponse(std::string_view body, bool chat);

// A Retry-After header value in seconds: delta-seconds ("120", also fractional "1.5") or an HTTP date
// ("Wed, 21 Oct 2015 07:28:00 GMT", relative to now_unix_seconds; a past date gives 0). nullopt when the value
// is empty or unparsable.
std::optional<double> ParseRetryAfterSeconds(std::string_view value, int64_t now_unix_seconds);

// Delay before retry number `retry` (1 = the first retry): exponential backoff with full jitter, i.e.
// uniform01 × min(cap, base × 2^(retry−1)). REQUIRES: retry >= 1, 0 <= uniform01 < 1.
uint64_t BackoffDelayMicros(int retry, uint64_t base_micros, uint64_t cap_micros, double uniform01);

// True for the HTTP statuses worth retrying: 408, 409, 429 and 5xx.
bool IsRetryableHttpStatus(int status_code);
// True for the statuses that mean "slow down": 429, 503 and Anthropic's 529 (overloaded_error).
bool IsOverloadHttpStatus(int status_code);

// "HTTP 503: <error.message or the start of the body>" — one line, at most about 300 characters.
std::string DescribeHttpError(int status_code, std::string_view body);

}  // namespace mmirage::engine
