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
#include <string_view>
#include <vector>

#include "data/value.h"
#include "util/status.h"

namespace mmirage::engine {

// Sampling parameters (SGLang names and defaults where they exist).
struct SamplingParams {
  double temperature = 1.0;  // 0 = greedy
  double top_p = 1.0;
  int top_k = -1;  // -1 = disabled
  double min_p = 0.0;
  int max_new_tokens = 128;
  std::vector<std::string> stop;    // generation stops before any of these strings
  std::optional<uint64_t> seed;     // default: engine seed
  double repetition_penalty = 1.0;  // 1 = off
  double frequency_penalty = 0.0;
  double presence_penalty = 0.0;
  bool ignore_eos = false;
};

// The text that stands for one image in a Request's prompt. The prompt holds exactly one marker per image, in
// the order of Request::images; the engine puts each image there (media tokens for the embedded engine, an
// `image_url` content part for OpenAI-compatible endpoints).
inline constexpr char kImageMarker[] = "<__mmirage_image__>";

// One image of a request: a local file, the bytes of an image file (PNG, JPEG, ...), or an http(s) URL.
struct ImageInput {
  enum class Kind { kFile, kBytes, kUrl };
  Kind kind = Kind::kFile;
  std::string source;  // kFile: the absolute path; kUrl: the URL; kBytes: a description for errors
  std::string bytes;   // kBytes: the encoded image file
};

// Counts kImageMarker occurrences in `text`.
size_t CountImageMarkers(const std::string& text);
// MIME type of an encoded image from its first bytes ("image/png", "image/jpeg", "image/gif", "image/webp",
// "image/bmp"), or "" when the bytes are none of these.
std::string SniffImageMime(std::string_view bytes);

struct Request {
  std::string prompt;              // the user message (chat) or the raw text (raw_prompt = true)
  std::vector<ImageInput> images;  // one per kImageMarker in prompt, in order
  bool raw_prompt = false;         // true: no chat template is applied
  Value chat_template_kwargs;      // object or null, e.g. {"enable_thinking": false}
  SamplingParams sampling;
  std::string json_schema;  // non-empty: constrain the output to this JSON schema (a JSON text)
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
  // Set with an error when the server refused the connection or the connection broke: the server's fault (or
  // gone), never the request's content. A timeout is not one (a long request may time out on any server).
  bool transport_failure = false;
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
  int64_t images_encoded = 0;  // images run through the vision encoder
  int64_t images_reused = 0;   // images whose encoding was served from the encode cache
  int64_t image_tokens = 0;    // image tokens decoded into sequences (also in prompt_tokens_evaluated)
};

}  // namespace mmirage::engine
