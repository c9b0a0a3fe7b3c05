// The embedded llama.cpp engine: one model, one context with `n_parallel` sequences over a unified KV cache, and
// one thread running a continuous-batching decode loop (engine/llama_loop.h); a shared prompt prefix is evaluated
// once. JSON outputs are grammar-constrained; chat formatting uses the model's own template (or
// `chat_template_file`); images (with mmproj_path) become the model's media tokens.
// Errors finish one request with kError, the others go on: kInvalidArgument for a bad template, prompt, schema or
// image and for a prompt longer than the context; kUnavailable when no KV cell is left or after Shutdown;
// kInternal for a failing decode (the cases, and when generation ends: llama_engine.cc).
// Threading: Submit prepares on the caller's thread (concurrent callers are fine) and never waits; one engine
// thread owns the llama context and runs every callback. Greedy requests are deterministic whatever runs beside.
#pragma once

#include <memory>
#include <string>

#include "engine/engine.h"

namespace mmirage {
class Env;
}  // namespace mmirage

namespace mmirage::engine {

struct LlamaEngineOptions {
  std::string model_path;          // GGUF file
  std::string chat_template_file;  // empty: the model's own template
  std::string mmproj_path;         // vision projector GGUF (libmtmd); empty: text only (images are an error)
  size_t image_cache_bytes = size_t{256} << 20;  // embeddings of recent images, reused by image hash; 0: off
  int n_parallel = 8;                            // parallel sequences (SGLang max_running_requests)
  int n_ctx_seq = 4096;  // context per sequence (SGLang context_length), tokens; total = × n_parallel
  int n_batch = 2048;    // tokens per decode call (SGLang chunked_prefill_size); at least n_parallel
  int n_ubatch = 512;
  int n_threads = 0;                 // 0 = the usable CPUs less those other processes keep busy (util/cpu_load.h)
  int n_gpu_layers = -1;             // -1 = all layers when a GPU backend is present
  std::string flash_attn = "auto";   // auto | on | off
  std::string cache_type_k = "f16";  // KV cache types
  std::string cache_type_v = "f16";
  bool prefix_reuse = true;    // share a common prompt prefix between sequences (see llama_prefix.h)
  int min_prefix_tokens = 32;  // shortest prefix worth sharing, tokens
  uint64_t seed = 0;           // default sampling seed
  // Debug switch for a batch-synchronous loop (MMIRAGE's): requests are admitted only when every
  // sequence is idle (benchmarks only).
  bool batch_barrier = false;
  Env* env = nullptr;  // file checks and reads, clock; nullptr: Env::Default(). Borrowed.
};

// Loads the model, creates the context (n_seq_max = n_parallel + 1: the extra sequence holds the shared prefix;
// n_ctx = n_ctx_seq × n_parallel cells, n_ctx_seq capped at the model's training context) and the chat
// templates, and starts the engine thread. LoadSeconds() covers all of it.
// With mmproj_path, also loads the projector (kNotFound when missing, kInvalidArgument when libmtmd cannot load it
// or it does not fit the model).
// Errors: kNotFound (no model file, or no chat_template_file), kInvalidArgument ("cannot load model '<path>'
// (not a GGUF file or unsupported architecture)", a chat template that does not parse, an unknown flash_attn or
// KV cache type, n_parallel < 1, ...), kInternal (context creation failed, e.g. out of memory).
Result<std::unique_ptr<Engine>> CreateLlamaEngine(const LlamaEngineOptions& options);

// Counters of a llama engine (for benchmarks); zeroes for other engines.
EngineCounters GetEngineCounters(const Engine& engine);

}  // namespace mmirage::engine
