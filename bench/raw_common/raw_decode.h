// What the raw baselines (bench/raw_llama: text, bench/raw_mtmd: vision) share: loading llama.cpp's backends in its
// shared build, greedy picking straight from the logits, and one decode step of every sequence of a wave. Header
// only; each baseline is one translation unit linked against llama.cpp alone.
#pragma once

#include <vector>

#include "llama.h"

#ifdef MMIRAGE_LLAMA_DYNAMIC_BACKENDS
#include <dlfcn.h>

#include <string>

#include <cstdio>
#include <cstdlib>

#include "engine/llama/llama_backends.h"
#include "ggml-backend.h"
#endif

namespace raw_bench {

// llama.cpp's shared build: load the backends that sit beside libggml, as the engine does (llama_backends.h). A static
// build has them linked in: nothing to do.
inline void LoadBackends() {
#ifdef MMIRAGE_LLAMA_DYNAMIC_BACKENDS
  Dl_info info{};
  std::string dir;
  if (dladdr(reinterpret_cast<const void*>(&ggml_backend_load_all_from_path), &info) != 0 && info.dli_fname) {
    dir = info.dli_fname;
    dir = dir.substr(0, dir.rfind('/'));
  }
  const std::string note = mmirage_llama::LoadLlamaBackends(dir);  // what the engine loads too
  if (std::getenv("MMIRAGE_BENCH_VERBOSE") != nullptr) std::fprintf(stderr, "%s\n", note.c_str());
#endif
}

// Greedy straight from the logits of batch entry `idx` (-1: the last): the cheapest possible sampler, so the
// baseline is a best case.
inline llama_token Greedy(llama_context* ctx, int idx, int n_vocab) {
  const float* logits = llama_get_logits_ith(ctx, idx);
  llama_token best = 0;
  for (llama_token t = 1; t < n_vocab; ++t)
    if (logits[t] > logits[best]) best = t;
  return best;
}

// One decode step of sequences 0..next.size()-1: feeds next[s] at pos[s]++ and replaces it with the greedy
// successor. False when llama_decode fails.
inline bool DecodeStep(llama_context* ctx, llama_batch& batch, std::vector<llama_token>& next,
                       std::vector<llama_pos>& pos, int n_vocab) {
  batch.n_tokens = 0;
  for (size_t s = 0; s < next.size(); ++s) {
    const int j = batch.n_tokens++;
    batch.token[j] = next[s];
    batch.pos[j] = pos[s]++;
    batch.n_seq_id[j] = 1;
    batch.seq_id[j][0] = static_cast<llama_seq_id>(s);
    batch.logits[j] = true;
  }
  if (llama_decode(ctx, batch) != 0) return false;
  for (size_t s = 0; s < next.size(); ++s) next[s] = Greedy(ctx, static_cast<int>(s), n_vocab);
  return true;
}

}  // namespace raw_bench
