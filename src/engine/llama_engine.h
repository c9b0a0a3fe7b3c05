// The embedded llama.cpp engine: one model, one context with `n_parallel` sequences over a unified KV cache, and
// one thread running a continuous-batching decode loop (new prompts are prefilled in chunks beside running
// decodes; a finished sequence takes the next request at once). A shared prompt prefix is evaluated once and its
// KV cells are shared with new sequences. JSON outputs are constrained by a grammar built from the JSON schema
// (llama.cpp's converter); chat formatting uses the model's own template (or `chat_template_file`).
//
// Errors of one request (prompt longer than the context, a grammar that cannot be built, a decode failure that
// can be isolated) finish that request with kError; the other requests go on.
#pragma once

#include <memory>
#include <string>

#include "engine/engine.h"

namespace mmirage {
class Env;
}  // namespace mmirage

namespace mmirage::engine {

struct LlamaEngineOptions {
  std::string model_path;            // GGUF file
  std::string chat_template_file;    // empty: the model's own template
  int n_parallel = 8;                // parallel sequences (SGLang max_running_requests)
  int n_ctx_seq = 4096;              // context per sequence (SGLang context_length); total = n_ctx_seq × n_parallel
  int n_batch = 2048;                // tokens per decode call (SGLang chunked_prefill_size)
  int n_ubatch = 512;
  int n_threads = 0;                 // 0 = all cores
  int n_gpu_layers = -1;             // -1 = all layers when a GPU backend is present
  std::string flash_attn = "auto";   // auto | on | off
  std::string cache_type_k = "f16";  // KV cache types
  std::string cache_type_v = "f16";
  bool prefix_reuse = true;          // share a common prompt prefix between sequences
  int min_prefix_tokens = 32;        // shortest prefix worth sharing
  uint64_t seed = 0;                 // default sampling seed
  // Debug switch reproducing the original's batch-synchronous loop: requests are admitted only when every
  // sequence is idle (benchmarks only).
  bool batch_barrier = false;
  Env* env = nullptr;                // file checks and reads, clock; nullptr: Env::Default(). Borrowed.
};

// Loads the model. Errors: kNotFound (no file), kInvalidArgument (not a GGUF / unsupported architecture),
// kInternal (context creation failed).
Result<std::unique_ptr<Engine>> CreateLlamaEngine(const LlamaEngineOptions& options);

// Counters of a llama engine (for benchmarks); zeroes for other engines.
EngineCounters GetEngineCounters(const Engine& engine);

}  // namespace mmirage::engine
