// The embedded llama.cpp engine: one model, one context with `n_parallel` sequences over a unified KV cache, and
// one thread running a continuous-batching decode loop (new prompts are prefilled in chunks beside running
// decodes; a finished sequence takes the next request at once). A shared prompt prefix is evaluated once and its
// KV cells are shared with new sequences. JSON outputs are constrained by a grammar built from the JSON schema
// (llama.cpp's converter); chat formatting uses the model's own template (or `chat_template_file`).
//
// Images (Request::images, with mmproj_path): each image is decoded and preprocessed by libmtmd in Submit, on
// the caller's thread, and its kImageMarker in the formatted prompt becomes the image's media tokens; the decode
// loop encodes it (one image at a time, see llama_loop.h) unless the same pixels were encoded recently (the
// encode cache, keyed by the SHA-256 of the decoded pixels). Image tokens count as prompt tokens. Request errors
// (kInvalidArgument): images without a projector, an http(s) URL (the embedded engine does not fetch), an
// unreadable file, bytes that are not an image, marker and image counts that differ.
//
// Errors of one request (prompt longer than the context, a grammar that cannot be built, a decode failure that
// can be isolated) finish that request with kError; the other requests go on:
//  - template, tokenization, sampler or schema problems: kInvalidArgument (found in Submit, reported through the
//    callback on the engine thread like every completion);
//  - a prompt of more than n_ctx_seq - 1 tokens: kInvalidArgument "prompt has N tokens, more than the context of
//    M" (M = n_ctx_seq - 1: one position is kept for the answer);
//  - no KV cell left even for a single token after dropping the shared prefix: kUnavailable for the request whose
//    token did not fit; a failing llama_decode: kInternal for the requests with tokens in the failing part;
//  - Shutdown: kUnavailable "engine shut down" for every active and queued request.
// Generation ends at an end-of-generation token (kStop, not in the text; with ignore_eos those tokens are banned,
// except under a JSON schema, whose grammar can only end with one), before a stop string (kStop, text cut before
// it), after max_new_tokens tokens or when the sequence's n_ctx_seq positions are used up (kLength).
//
// Threading: Submit templates and tokenizes on the caller's thread (concurrent callers are fine) and never waits
// for generation; one engine thread owns the llama context and runs every callback. A Submit after Shutdown
// runs its callback at once, on the caller's thread, with kError "engine shut down".
// Determinism: greedy requests (temperature 0) give the same text whatever else runs beside them; sampled
// requests without a seed use `seed` + the request's submission index.
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
  std::string mmproj_path;           // vision projector GGUF (libmtmd); empty: text only (images are an error)
  size_t image_cache_bytes = size_t{256} << 20;  // embeddings of recent images, reused by image hash; 0: off
  int n_parallel = 8;                // parallel sequences (SGLang max_running_requests)
  int n_ctx_seq = 4096;              // context per sequence (SGLang context_length), tokens; total = × n_parallel
  int n_batch = 2048;                // tokens per decode call (SGLang chunked_prefill_size); at least n_parallel
  int n_ubatch = 512;
  int n_threads = 0;                 // 0 = the usable CPUs less those other processes keep busy (util/cpu_load.h)
  int n_gpu_layers = -1;             // -1 = all layers when a GPU backend is present
  std::string flash_attn = "auto";   // auto | on | off
  std::string cache_type_k = "f16";  // KV cache types
  std::string cache_type_v = "f16";
  bool prefix_reuse = true;          // share a common prompt prefix between sequences (see llama_prefix.h)
  int min_prefix_tokens = 32;        // shortest prefix worth sharing, tokens
  uint64_t seed = 0;                 // default sampling seed
  // Debug switch for a batch-synchronous loop (MMIRAGE's): requests are admitted only when every
  // sequence is idle (benchmarks only).
  bool batch_barrier = false;
  Env* env = nullptr;                // file checks and reads, clock; nullptr: Env::Default(). Borrowed.
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
