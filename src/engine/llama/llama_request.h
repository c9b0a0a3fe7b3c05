// Private to the llama engine (src/engine/llama_*.cc): the native form a Request takes at the engine's edge.
//
// Submit turns a Request into a PreparedRequest on the caller's thread (chat template, tokenization, sampler and
// grammar), so the decode loop only ever sees tokens (one thread owns the model; everything else stays off it). A
// request that could not be prepared still travels the queue, carrying its error, so that its callback runs on the
// engine thread like every other one.
//
// Thread-safety: a PreparedRequest is owned by one thread at a time (the submitter, then the loop).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "engine/engine.h"
#include "llama.h"
#include "mtmd.h"
#include "sampling.h"
#include "util/status.h"

namespace mmirage::engine {

struct MtmdChunkDeleter {
  void operator()(mtmd_input_chunk* c) const { mtmd_input_chunk_free(c); }
};
using MtmdChunkPtr = std::unique_ptr<mtmd_input_chunk, MtmdChunkDeleter>;

// An image of the prompt: `n_tokens` entries of `prompt` from `start` stand for its embeddings. Those entries
// hold pseudo tokens (negative, derived from the image's hash), so two prompts agree on them only when they have
// the same image there; they are never fed to llama_decode as tokens.
struct ImageSegment {
  int start = 0;       // index in PreparedRequest::prompt
  int n_tokens = 0;    // KV cells the image takes
  int n_pos = 0;       // positions it advances (n_tokens, except for M-RoPE models)
  std::string id;      // SHA-256 of the decoded pixels (libmtmd's bitmap id): the encode-cache key
  MtmdChunkPtr chunk;  // libmtmd's image chunk (preprocessed pixels)
};

struct PreparedRequest {
  std::vector<llama_token> prompt;   // full prompt, template applied (image entries: see ImageSegment)
  std::vector<ImageSegment> images;  // in prompt order; the prompt never ends inside one
  common_sampler_ptr sampler;        // per-request chain (grammar included); null when error is set
  std::vector<std::string> stop;     // stop strings (the text is cut before the first one)
  int max_new_tokens = 0;
  bool ignore_eos = false;  // ignored with a grammar: a complete grammar admits only end-of-generation
  bool has_grammar = false;
  // Plain greedy (temperature 0, no grammar, neutral penalties): the loop takes the argmax of the logits itself
  // instead of running the sampler chain over the whole vocabulary (the same token, without copying and sorting
  // ~150k candidates per generated token).
  bool fast_greedy = false;
  CompletionCallback done;
  Status error;  // non-OK: finish at once with kError and this status
};

// Loop-side knobs, derived from LlamaEngineOptions by the adapter.
struct LoopOptions {
  int n_parallel = 1;
  int n_ctx_seq = 0;  // per-sequence context (positions), already capped
  int n_batch = 512;  // tokens per llama_decode call
  bool prefix_reuse = true;
  int min_prefix_tokens = 32;
  bool batch_barrier = false;
  size_t image_cache_bytes = 0;  // encode cache of image embeddings (0: every image is encoded)
};

}  // namespace mmirage::engine
