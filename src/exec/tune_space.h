// The search space of `mmirage tune`: which knobs matter for a processor's backend, their current values and the
// values worth trying, coarse first. Pure functions over the config; no I/O. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "data/value.h"

namespace mmirage::exec {

struct TuneKnob {
  std::string key;              // "order", "max_concurrency" or an extra_engine_args key
  Value current;                // the config's value (or the engine's default)
  std::vector<Value> coarse;    // values to try first, the current one left out
  bool numeric_refine = false;  // after the coarse pass: try the midpoints around the best value
};

// Knobs in the order they are searched (the most effective first): embedded llama: parallel sequences, order,
// n_batch/n_ubatch, flash_attn, KV cache type, threads (CPU only); llama-server: slots, order, n_batch/n_ubatch,
// threads; sglang: max_running_requests, order, chunked_prefill_size, mem_fraction_static; vllm: max_running_requests,
// order, max_num_batched_tokens, gpu_memory_utilization; openai endpoint: max_concurrency, order. `processor` has its
// backend chosen (process/llm/engine_choice.h). `usable_cpus` bounds the thread counts tried (0: threads are not
// tuned).
std::vector<TuneKnob> TuneKnobs(const config::Processor& processor, const config::Config& config, int usable_cpus);

// Midpoints between `best` and its neighbours among `tried` (integers, distinct, not tried yet).
std::vector<Value> RefineCandidates(const Value& best, const std::vector<Value>& tried);

}  // namespace mmirage::exec
