// Engines by `backend` (when it is not written, by the model: process/llm/engine_choice.h): llama → the embedded engine
// (LlamaEngineFactory); openai → the OpenAI engine on `endpoint`; sglang | vllm | llama-server → a server started for
// the shard (engine/managed_server.h) and the OpenAI engine against it. Also the config → options mappings of the
// OpenAI engine and of server commands, as pure functions (besides the API key lookup, which goes through the injected
// VarLookup). Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "engine/managed_server.h"
#include "engine/openai_engine.h"
#include "process/output_generator.h"

namespace mmirage::process::llm {

struct EngineFactoryOptions {
  std::string state_dir;  // a managed server's log: <state_dir>/shard_<shard_id>/server.log
  int64_t shard_id = 0;
  config::VarLookup vars;  // the API key variable (endpoint.api_key_env), HF_*; default: the process env
};

// Dispatches on processor.llm.backend (see above). Errors: those of the engine it creates, located at the
// processor.
EngineFactory DefaultEngineFactory(EngineFactoryOptions options = {});

// The environment variable with which an executor tells each shard how many shards run at once.
inline constexpr char kRateLimitSharesVar[] = "MMIRAGE_RATE_LIMIT_SHARES";

// The environment variable with which the local executor names the directory where the shards it runs at once on
// this machine keep their shared budgets (util/shared_counters.h): one file per endpoint and model.
inline constexpr char kSharedBudgetDirVar[] = "MMIRAGE_SHARED_BUDGET_DIR";

// endpoint → OpenAI engine options: base_url, mode, timeout_seconds, max_retries, down_timeout_seconds, model;
// max_concurrency from endpoint.max_concurrency, else extra_engine_args.max_running_requests, else 64 (`auto`:
// adaptive, at most max_running_requests, else 256); rate_limits as given (absent: learned); the API key
// from the variable named by api_key_env, read once here. Managed backends may omit `endpoint` (base_url is then
// filled in by the server); num_gpus = tp_size for sglang/vllm, 0 otherwise.
// rate_limit_shares from the variable kRateLimitSharesVar (the shards that run at once and split the limits);
// shared_budget_path from kSharedBudgetDirVar: <dir>/ratelimit_<hash of base_url and model>.
// Errors: kInvalidArgument when api_key_env names an unset variable, backend openai has no endpoint, or
// kRateLimitSharesVar is not a whole number >= 1.
Result<engine::OpenAiEngineOptions> MapOpenAiEngineOptions(const config::Processor& processor,
                                                           const config::VarLookup& vars);

// The command of a managed server listening on 127.0.0.1:`port`:
//  - server_command (verbatim; "{port}" and "{model_path}" substituted; one string runs through /bin/sh -c, the
//    values quoted for the shell by the quoting in force at the placeholder, so they are read back verbatim);
//  - sglang:       python -m sglang.launch_server --model-path M --host 127.0.0.1 --port P --tp-size T ...
//  - vllm:         vllm serve M --host 127.0.0.1 --port P --tensor-parallel-size T ...
//  - llama-server: <llama_server_dir>/llama-server -m M --host 127.0.0.1 --port P -np N -c N×ctx ...
// followed by extra_engine_args as `--key-with-dashes value` (true → the bare flag, false/null → nothing, a list
// → several values, a map → its JSON). Renames: vllm max_running_requests → --max-num-seqs, context_length →
// --max-model-len; llama-server max_running_requests → -np (default 8), context_length → context per slot (default
// 4096), n_ctx → -c, n_batch/chunked_prefill_size → --batch-size, n_ubatch → --ubatch-size, n_threads →
// --threads; the embedded engine's own keys (prefix_reuse, min_prefix_tokens, batch_barrier) are dropped.
// trust_remote_code / disable_custom_all_reduce become flags for sglang and vllm; chat_template is passed on to
// sglang, and to vllm / llama-server only when it is a file path (a name is not one they know); llama-server gets
// `--mmproj <mmproj_path>` when it is set to a file (CreateManaged resolves "auto" first, see process/llm/mmproj.h).
// `model_path` is the (resolved) model. Pure.
Result<std::vector<std::string>> BuildServerCommand(const config::Processor& processor, int port,
                                                    const std::string& model_path, const std::string& llama_server_dir);

// Whether `processor` can run in this build, before anything starts: the model file of llama / llama-server
// (a GGUF path or an hf:// reference), the llama-server binary next to mmirage (or on PATH) unless
// server_command is given; for a Hub model id without `backend:`, that SGLang or vLLM is here. Errors: kNotFound,
// kInvalidArgument, located at the processor.
Status CheckBackendRunnable(const config::Processor& processor);

}  // namespace mmirage::process::llm
