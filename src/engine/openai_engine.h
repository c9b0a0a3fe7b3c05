// The OpenAI engine: requests to an OpenAI-compatible HTTP endpoint (SGLang, vLLM, llama-server, a hosted API) or,
// with api = kAnthropic, to Anthropic's Messages API, with the same retries, admission and accounting;
// asynchronous on one event-loop thread (util/http/event_loop.h); each request is admitted by an
// AdmissionController (rate limits, concurrency window: engine/admission.h), the rest queued FIFO (retries first).
// Images are `image_url` parts (local files and bytes as base64 data: URLs). Errors per request: retryable faults
// (408/409/429/5xx, broken or refused connection, timeout, malformed 2xx body) are retried with backoff and
// Retry-After, then kUnavailable "… (gave up after N attempts)"; other 4xx and bad images: kInvalidArgument, not
// retried; an endpoint unreachable for down_timeout_seconds fails every request at once. The API key is never logged
// nor put in a message (details: openai_engine.cc). Threading: Submit builds the body on the caller's thread; every
// callback runs on the loop thread. Shutdown finishes pending requests with kUnavailable "engine shut down" and joins
// the loop thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/admission.h"
#include "engine/engine.h"
#include "engine/openai_protocol.h"

namespace mmirage {
class Env;
class HttpLoop;
}  // namespace mmirage

namespace mmirage::engine {

// The wire format: OpenAI's chat/completions (openai_protocol.h), or Anthropic's Messages (anthropic_protocol.h):
// POST {base_url}/messages with the key as x-api-key and an anthropic-version header.
enum class HttpApi { kOpenAi, kAnthropic };

struct OpenAiEngineOptions {
  HttpApi api = HttpApi::kOpenAi;
  std::string base_url;  // e.g. http://127.0.0.1:30000/v1 (a trailing '/' is ignored)
  std::string api_key;   // "" = no Authorization header. Never logged.
  std::string model;     // "" = the first id of GET {base_url}/models at creation, else omitted (anthropic: required)
  std::string anthropic_version = "2023-06-01";  // kAnthropic: the anthropic-version header
  std::string system_prompt;                     // kAnthropic: the `system` parameter ("" = none)
  OpenAiMode mode = OpenAiMode::kChat;
  int max_concurrency = 64;           // requests in flight (adaptive_concurrency: the most)
  bool adaptive_concurrency = false;  // max_concurrency: auto (an AIMD window, engine/admission.h)
  double requests_per_minute = 0;     // rate limits; 0 = learned from the endpoint's x-ratelimit-* headers
  double tokens_per_minute = 0;
  int rate_limit_shares = 1;  // shards of the run that use these limits at once: each uses limit / shares
  // Set: the limits are one budget with the other processes on this machine that name the same file
  // (util/shared_counters.h; rate_limit_shares is then ignored). "" = this process's own buckets.
  std::string shared_budget_path;
  // Shared admission (several engines, one budget); nullptr: the engine makes its own from the fields above.
  std::shared_ptr<AdmissionController> admission;
  double timeout_seconds = 600;       // per attempt
  int max_retries = 5;                // per request
  double down_timeout_seconds = 120;  // connection failures only, this long → endpoint down
  double backoff_base_seconds = 0.5;
  double backoff_max_seconds = 30;
  double max_retry_after_seconds = 300;
  uint64_t jitter_seed = 0;  // 0 = random
  double load_seconds = 0;   // what LoadSeconds reports (a managed server's start → healthy)
  int num_gpus = 0;          // what NumGpus reports (a remote endpoint's GPUs are not ours)
  Env* env = nullptr;        // wall clock for Retry-After dates; nullptr: Env::Default(). Borrowed.
  // Test hook: the loop to run on (borrowed; the engine calls its Stop at Shutdown). nullptr: the engine
  // creates and owns a curl loop.
  HttpLoop* loop = nullptr;
};

// Starts the engine (and, with loop == nullptr, its loop thread); with an empty model, asks the endpoint for its
// model id first (one GET, 10 s at most; failure only leaves the model out of requests).
// Errors: kInvalidArgument (empty base_url, max_concurrency < 1, max_retries < 0, kAnthropic without a model),
// kInternal (curl).
Result<std::unique_ptr<Engine>> CreateOpenAiEngine(const OpenAiEngineOptions& options);

}  // namespace mmirage::engine
