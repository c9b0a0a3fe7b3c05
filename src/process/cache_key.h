// Generation cache keys: what decides a generation, hashed (cache/hash.h). Thread-safe free functions.
//
// Key = SHA-256 over: the model identity (below), the exact request after prompt templating (prompt text, raw or
// chat, chat_template_kwargs), every sampling parameter (temperature, top_p, top_k, min_p, max_new_tokens, stop,
// seed, penalties, ignore_eos), the JSON schema, and each image's content hash (a URL: the URL).
// Model identity:
//  - llama (embedded) and llama-server with a GGUF file: "gguf" + file size + SHA-256 of its first 16 MiB (the
//    header, tensor table and the first tensors' data), the chat template override (file contents), and the
//    engine settings that change outputs (context per sequence, KV cache types, flash attention, GPU layers), and
//    the vision projector (mmproj) the same way as the model;
//  - openai: the endpoint's base_url, model name and mode;
//  - sglang / vllm: backend, model_path (a name or a directory: not hashed), server_command, extra_engine_args.
// The engine kind (backend) is part of every identity.
#pragma once

#include <memory>
#include <string>

#include "cache/generation_cache.h"
#include "config/config.h"
#include "engine/engine.h"
#include "util/env.h"

namespace mmirage::process {

// Bytes of a GGUF file hashed for its identity (with its size).
constexpr size_t kModelIdentityBytes = 16u << 20;

// The model identity digest of an llm processor. `model_path` is the resolved local model file for backends that
// read one (hf:// references already downloaded), else ignored. Errors: an unreadable model file (kIOError /
// kNotFound).
Result<std::string> ModelIdentity(Env* env, const config::Processor& processor, const std::string& model_path);

// Deterministic requests only are cached: greedy (temperature <= 0) or an explicit seed.
bool IsDeterministic(const engine::SamplingParams& sampling);

// The 32-byte key of `request` on the model with identity `model_identity`; images count by content (file and
// inline bytes hashed; a URL by itself). "" when an image file cannot be read (the request is then not cached).
std::string RequestKey(const std::string& model_identity, const engine::Request& request, Env* env = nullptr);

// Whether the generations of `output` will use the cache under `config`, and a short reason for preview/estimate
// ("greedy", "seed 7", "cache: off", "temperature 0.8 without a seed", ...).
struct OutputCachePlan {
  bool cached = false;
  std::string reason;
};
OutputCachePlan PlanOutputCache(const config::Config& config, const config::OutputVar& output);

// The cache of config.execution (cache, cache_dir, cache_max_gb); nullptr when cache is off, or (with a warning)
// when it cannot be opened: a run never fails for its cache.
std::unique_ptr<cache::GenerationCache> OpenGenerationCache(Env* env, const config::Config& config);

}  // namespace mmirage::process
