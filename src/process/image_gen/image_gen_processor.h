// The `image_gen` processor: text-to-image over HTTP (`POST <api>/images/generations`, the OpenAI images API that
// SGLang diffusion serves). One request per row's sample, at most `max_concurrent_requests` in flight; retryable
// failures (429, 5xx, connection, timeout) are retried alone with backoff, then the row fails with the server's
// answer (never a silent null). Images are written atomically under `output_dir` (`output_mode: path`) or kept as
// an image value (`pil`); file names never leave output_dir. Seeds and file naming are described in the .cc.
// `backend: sglang` starts `sglang serve` for the shard unless $MMIRAGE_SGLANG_BASE_URL names a running one.
// Thread-safety: as OutputProcessor. Ownership: owns its HTTP loop, saver thread and managed server.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "process/output_processor.h"
#include "util/env.h"

namespace mmirage::engine {
class ManagedServer;
}  // namespace mmirage::engine

namespace mmirage::process::image_gen {

struct ImageGenStartOptions {
  config::VarLookup vars;  // api_key_env, MMIRAGE_SGLANG_BASE_URL, ~; default: the process environment
  Env* env = nullptr;      // output_dir, image files, clock; nullptr: Env::Default(). Borrowed.
  int64_t shard_id = 0;
  std::string log_dir;                 // where the managed server's log goes (default: output_dir)
  int max_attempts = 4;                // per sample, on retryable failures
  double first_backoff_seconds = 0.5;  // doubled after each retryable failure
  double validate_timeout_seconds = 10;
};

// URL normalisation: trimmed, trailing '/' removed; ".../v1" → api = it, root = it without /v1; else
// root = it, api = it + "/v1". kInvalidArgument when blank.
struct ImageGenUrls {
  std::string root;
  std::string api;
};
Result<ImageGenUrls> NormalizeImageGenUrl(std::string_view url);

// The file stem: runs of characters outside [A-Za-z0-9._-] → one '_', leading/trailing '.' and '_'
// stripped; "image" when nothing is left.
std::string SanitizeFileStem(std::string_view rendered);

// __source_hash: the first 8 hex digits of SHA-256 of the canonical JSON of `vars` — compact, object keys sorted
// (byte order) at every level, strings UTF-8 unescaped, numbers as our JSON writes them, bytes as base64. An
// empty environment hashes the bytes "empty" (as MMIRAGE does, so hashes match).
std::string SourceHash(const Value& vars);

// The request body for one sample. Errors (kInvalidArgument, a row error): blank prompt, n != 1.
Result<std::string> BuildImageRequestBody(const config::ImageGenProcessor& p, const config::OutputVar& o,
                                          const std::string& request_model, const std::string& prompt,
                                          const std::string& negative_prompt, std::optional<int64_t> seed);

// `sglang serve --model-path M --port P --num-gpus N [--dtype D] <extra_server_args>` for an image_gen processor
// with backend sglang, healthy when this returns; the log is `log_path`. P is
// `sglang.port`, else a free port. Errors: those of engine::ManagedServer::Start.
Result<std::unique_ptr<engine::ManagedServer>> StartImageServer(const config::ImageGenSglang& s,
                                                                const std::string& log_path);

// For an orchestrator that runs several shard processes (`run` with retry): the one shared server of the
// config's image_gen processor when its backend is sglang and $MMIRAGE_SGLANG_BASE_URL is not set (then give the
// shard processes MMIRAGE_SGLANG_BASE_URL = its base_url()); nullptr otherwise.
Result<std::unique_ptr<engine::ManagedServer>> StartSharedImageServer(const config::Config& config,
                                                                      const std::string& log_dir,
                                                                      const config::VarLookup& vars);

// Starts the processor: output_dir created, the server validated (GET <root>/models, <api>/models,
// <root>/health; the first JSON object wins), or started (backend sglang). Errors are located at the processor.
Result<std::unique_ptr<OutputProcessor>> StartImageGenProcessor(const config::Config& config,
                                                                const config::Processor& p,
                                                                const ImageGenStartOptions& options,
                                                                std::vector<std::string>* warnings);

}  // namespace mmirage::process::image_gen
