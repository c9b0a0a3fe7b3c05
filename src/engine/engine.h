// Engine: the inference backend interface the pipeline talks to. Speaks only our own types — no llama.h here.
//
// A request is one chat turn (the rendered prompt as the user message) or a raw completion; the engine applies
// the model's chat template, generates under the request's sampling parameters and optional grammar, and calls
// the request's callback exactly once with a Completion (text, token counts, finish reason, or an error).
//
// Thread-safety: Submit may be called from any thread, concurrently. Callbacks run on the engine's own thread
// and must be quick (hand the result over and return). Shutdown (or destruction) finishes every pending request
// with an error completion before returning; no callback runs afterwards.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/value.h"
#include "util/status.h"

namespace mmirage::engine {

// Sampling parameters (SGLang names and defaults where they exist).
struct SamplingParams {
  double temperature = 1.0;          // 0 = greedy
  double top_p = 1.0;
  int top_k = -1;                    // -1 = disabled
  double min_p = 0.0;
  int max_new_tokens = 128;
  std::vector<std::string> stop;     // generation stops before any of these strings
  std::optional<uint64_t> seed;      // default: engine seed
  double repetition_penalty = 1.0;   // 1 = off
  double frequency_penalty = 0.0;
  double presence_penalty = 0.0;
  bool ignore_eos = false;
};

struct Request {
  std::string prompt;                // the user message (chat) or the raw text (raw_prompt = true)
  bool raw_prompt = false;           // true: no chat template is applied
  Value chat_template_kwargs;        // object or null, e.g. {"enable_thinking": false}
  SamplingParams sampling;
  std::string json_schema;           // non-empty: constrain the output to this JSON schema (a JSON text)
};

enum class FinishReason { kStop, kLength, kError };
const char* FinishReasonName(FinishReason r);

struct Completion {
  std::string text;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // prompt tokens reused from a shared prefix instead of evaluated
  FinishReason finish = FinishReason::kStop;
  // Set when finish == kError. kInvalidArgument means the request can never succeed as sent (prompt longer
  // than the context, an unusable JSON schema) and is not worth retrying; other codes may succeed on retry.
  Status error;
};

using CompletionCallback = std::function<void(Completion)>;

class Engine {
 public:
  virtual ~Engine() = default;
  // Enqueues a request. Never blocks on generation.
  virtual void Submit(Request request, CompletionCallback done) = 0;
  // Requests that can be generated at the same time (parallel sequences / concurrency).
  virtual int Capacity() const = 0;
  // Seconds spent loading the model (or starting the server) before the first request could run.
  virtual double LoadSeconds() const = 0;
  // GPUs used (0 on CPU).
  virtual int NumGpus() const = 0;
  // Finishes pending requests with errors and stops the engine thread. Idempotent.
  virtual void Shutdown() = 0;
};

// Counters an engine keeps for benchmarks (monotonic since creation).
struct EngineCounters {
  int64_t prompt_tokens_evaluated = 0;  // prompt tokens actually run through the model
  int64_t prompt_tokens_reused = 0;     // prompt tokens served from a shared prefix
  int64_t tokens_generated = 0;
  int64_t decode_calls = 0;
};

}  // namespace mmirage::engine
