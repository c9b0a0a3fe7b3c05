// Mapping an `llm` processor's config onto the embedded engine: SGLang names that have an equivalent, our native
// names, and warnings for what the embedded engine ignores. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "engine/engine.h"
#include "engine/llama_engine.h"

namespace mmirage::process::llm {

struct EngineOptionsMapping {
  engine::LlamaEngineOptions options;
  std::vector<std::string> warnings;  // "FILE:LINE:COL: ..."
};

// server_args.model_path → model; extra_engine_args: max_running_requests → n_parallel, context_length →
// n_ctx_seq, chunked_prefill_size → n_batch; native n_ctx (total, divided among sequences), n_batch, n_ubatch,
// n_threads, n_gpu_layers, flash_attn, cache_type_k, cache_type_v, prefix_reuse, seed. Other keys (e.g.
// mem_fraction_static) are ignored with a warning. Errors: a value of the wrong type (kInvalidArgument, located).
Result<EngineOptionsMapping> MapEngineOptions(const config::Processor& processor);

struct SamplingMapping {
  engine::SamplingParams params;
  Value chat_template_kwargs;  // custom_params.chat_template_kwargs (object) or null
  std::vector<std::string> warnings;
};

// default_sampling_params (SGLang names): temperature, top_p, top_k, min_p, max_new_tokens, stop (string or
// list), seed (or sampling_seed), repetition_penalty, frequency_penalty, presence_penalty, ignore_eos,
// custom_params.chat_template_kwargs. Unknown keys warn.
Result<SamplingMapping> MapSamplingParams(const config::Processor& processor);

}  // namespace mmirage::process::llm
