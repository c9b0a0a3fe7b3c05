// The OpenAI engine: requests to an OpenAI-compatible HTTP endpoint (SGLang, vLLM, llama-server, a hosted API),
// asynchronous on one event-loop thread (libcurl multi, util/http/event_loop.h) — no thread per request — with at
// most `max_concurrency` requests in flight; the rest wait in a FIFO queue (retries go first).
//
// Faults, per request (the same scheduler as the embedded engine sees only the final Completion):
//  - HTTP 408/409/429/5xx, a broken connection, no response within timeout_seconds, a connection that cannot be
//    made, a malformed 2xx body: retried up to max_retries times after an exponential backoff with full jitter
//    (backoff_base_seconds × 2^(n−1), at most backoff_max_seconds), and at least the server's Retry-After (capped
//    at max_retry_after_seconds). A request waiting for its retry does not hold a concurrency slot. When the
//    retries are used up: kError with kUnavailable "<last error> (gave up after N attempts)".
//  - other HTTP 4xx (a prompt longer than the context, a bad schema, a wrong model or key): kInvalidArgument
//    "HTTP 400: <server message>", not retried.
//  - endpoint down: once connections have failed (no HTTP response at all) for down_timeout_seconds, the
//    endpoint is declared down for good: every queued, waiting and later request fails at once with kUnavailable
//    "endpoint <base_url> unreachable for N s" (logged once), instead of each request spending its retries.
// The API key is sent as "Authorization: Bearer …" and never logged nor put in an error message.
//
// Images (Request::images) are `image_url` content parts of the user message, where their markers are; local
// files are read in Submit and sent, like image bytes, as base64 data: URLs with their MIME type (sniffed from the
// bytes); http(s) URLs are passed through for the server to fetch. An unreadable file, bytes of no known image
// type, or images with the completion API: kInvalidArgument.
//
// Threading: Submit builds the request body on the caller's thread and hands it to the loop; every callback runs
// on the loop thread (also for a request whose body cannot be built: kInvalidArgument). Shutdown finishes every
// pending request with kUnavailable "engine shut down" and joins the loop thread; a Submit after Shutdown runs its
// callback at once on the caller's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "engine/openai_protocol.h"

namespace mmirage {
class Env;
class HttpLoop;
}  // namespace mmirage

namespace mmirage::engine {

struct OpenAiEngineOptions {
  std::string base_url;                 // e.g. http://127.0.0.1:30000/v1 (a trailing '/' is ignored)
  std::string api_key;                  // "" = no Authorization header. Never logged.
  std::string model;                    // "" = the first id of GET {base_url}/models at creation, else omitted
  OpenAiMode mode = OpenAiMode::kChat;
  int max_concurrency = 64;             // requests in flight
  double timeout_seconds = 600;         // per attempt
  int max_retries = 5;                  // per request
  double down_timeout_seconds = 120;    // connection failures only, this long → endpoint down
  double backoff_base_seconds = 0.5;
  double backoff_max_seconds = 30;
  double max_retry_after_seconds = 300;
  uint64_t jitter_seed = 0;             // 0 = random
  double load_seconds = 0;              // what LoadSeconds reports (a managed server's start → healthy)
  int num_gpus = 0;                     // what NumGpus reports (a remote endpoint's GPUs are not ours)
  Env* env = nullptr;                   // wall clock for Retry-After dates; nullptr: Env::Default(). Borrowed.
  // Test hook: the loop to run on (borrowed; the engine calls its Stop at Shutdown). nullptr: the engine
  // creates and owns a curl loop.
  HttpLoop* loop = nullptr;
};

// Starts the engine (and, with loop == nullptr, its loop thread); with an empty model, asks the endpoint for its
// model id first (one GET, 10 s at most; failure only leaves the model out of requests).
// Errors: kInvalidArgument (empty base_url, max_concurrency < 1, max_retries < 0), kInternal (curl).
Result<std::unique_ptr<Engine>> CreateOpenAiEngine(const OpenAiEngineOptions& options);

}  // namespace mmirage::engine
