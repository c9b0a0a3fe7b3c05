// The llama engine's adapter: loads the model and the context, turns Requests into PreparedRequests (chat
// template, tokens, sampler and grammar) on the submitting thread, and hands them to the DecodeLoop.
// llama.cpp and common throw; every call that may is wrapped here and its exceptions are caught by type.
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
// A Submit after Shutdown runs its callback at once, on the caller's thread, with kError "engine shut down".
// Determinism: greedy requests (temperature 0) give the same text whatever else runs beside them; sampled
// requests without a seed use `seed` + the request's submission index.
#include "engine/llama_engine.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "chat.h"
#include "common.h"
#include "data/json.h"
#include "engine/llama/llama_backends.h"
#include "engine/llama/llama_loop.h"
#include "engine/llama/llama_module_impl.h"
#include "engine/llama/llama_request.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "jinja/runtime.h"
#include "json-schema-to-grammar.h"
#include "llama.h"
#include "log.h"
#include "mtmd-helper.h"
#include "mtmd.h"
#include "sampling.h"
#include "engine/llama/llama_chat.h"
#include "util/cpu_load.h"
#include "util/dl.h"
#include "util/env.h"
#include "util/fnv.h"
#include "util/log.h"

namespace mmirage::engine {
namespace {

void LlamaLogToOurs(ggml_log_level level, const char* text, void* /*user_data*/) {
  if (level == GGML_LOG_LEVEL_CONT) return;  // continuation of a line already logged (debug output)
  std::string line(text);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.empty()) return;
  // With a unified KV cache llama.cpp compares the whole context with the training context; our limit is per
  // sequence (n_ctx_seq, capped at the training context), so this warning does not apply.
  if (line.find("possible training context overflow") != std::string::npos) level = GGML_LOG_LEVEL_DEBUG;
  // A corrupt image makes libmtmd try audio and then ffprobe (video) before giving up; the request's own error
  // says what went wrong, so these attempts are debug output.
  if (line.find("ffprobe") != std::string::npos || line.find("failed to decode buffer") != std::string::npos)
    level = GGML_LOG_LEVEL_DEBUG;
  LogLevel ours = level == GGML_LOG_LEVEL_ERROR  ? LogLevel::kError
                  : level == GGML_LOG_LEVEL_WARN ? LogLevel::kWarning
                                                 : LogLevel::kDebug;
  if (ours >= GetLogLevel()) LogMessage(ours, "llama.cpp: " + line);
}

void InitBackendOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llama_log_set(LlamaLogToOurs, nullptr);
    mtmd_helper_log_set(LlamaLogToOurs, nullptr);     // libmtmd's and clip's logger too
    common_log_set_verbosity_thold(LOG_LEVEL_ERROR);  // common's own logger: errors only
#ifdef MMIRAGE_LLAMA_DYNAMIC_BACKENDS
    // llama.cpp's shared build: the CPU backend built for this machine, else the best prebuilt
    // libggml-cpu-<family>.so, from the directory of libggml itself, wherever the install was moved to.
    const std::string dir = DirectoryOfSymbol(reinterpret_cast<const void*>(&ggml_backend_load_all_from_path));
    LogMessage(LogLevel::kDebug, mmirage_llama::LoadLlamaBackends(dir));
    if (ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU) == nullptr) {
      LogMessage(LogLevel::kError, "llama.cpp: no CPU backend (libggml-cpu-*.so) found in " + dir);
    }
#endif
    llama_backend_init();
  });
}

// True when the CPU backend runs its graphs with OpenMP (then it keeps its own thread team). Without OpenMP,
// llama.cpp starts and joins fresh threads for every decode step unless a threadpool is attached.
bool CpuBackendUsesOpenMp(ggml_backend_reg_t reg) {
  auto get_features = reinterpret_cast<ggml_backend_get_features_t>(
      ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features"));
  if (get_features == nullptr) return false;
  for (const ggml_backend_feature* f = get_features(reg); f->name != nullptr; ++f) {
    if (std::string(f->name) == "OPENMP") return true;
  }
  return false;
}

int CountGpus() {
  int n = 0;
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    if (ggml_backend_dev_type(ggml_backend_dev_get(i)) == GGML_BACKEND_DEVICE_TYPE_GPU) ++n;
  }
  return n;
}

Result<ggml_type> ParseCacheType(const std::string& name) {
  static const ggml_type kTypes[] = {GGML_TYPE_F32,  GGML_TYPE_F16,    GGML_TYPE_BF16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0,
                                     GGML_TYPE_Q4_1, GGML_TYPE_IQ4_NL, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1};
  for (ggml_type t : kTypes) {
    if (name == ggml_type_name(t)) return t;
  }
  return Status::InvalidArgument("unsupported KV cache type '" + name +
                                 "' (f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1)");
}

Result<llama_flash_attn_type> ParseFlashAttn(const std::string& s) {
  if (s == "auto") return LLAMA_FLASH_ATTN_TYPE_AUTO;
  if (s == "on") return LLAMA_FLASH_ATTN_TYPE_ENABLED;
  if (s == "off") return LLAMA_FLASH_ATTN_TYPE_DISABLED;
  return Status::InvalidArgument("flash_attn must be auto, on or off, got '" + s + "'");
}

struct ModelDeleter {
  void operator()(llama_model* m) const { llama_model_free(m); }
};
struct ContextDeleter {
  void operator()(llama_context* c) const { llama_free(c); }
};
struct MtmdDeleter {
  void operator()(mtmd_context* c) const { mtmd_free(c); }
};
struct BitmapDeleter {
  void operator()(mtmd_bitmap* b) const { mtmd_bitmap_free(b); }
};
struct ChunksDeleter {
  void operator()(mtmd_input_chunks* c) const { mtmd_input_chunks_free(c); }
};

// Pseudo token for entry `k` of an image with id `id` (see ImageSegment): negative, so never a real token.
llama_token ImagePseudoToken(uint64_t id_hash, int k) {
  return -1 - static_cast<llama_token>((id_hash + static_cast<uint64_t>(k) * 0x9E3779B97F4A7C15ull) & 0x3FFFFFFF);
}

uint64_t HashId(const std::string& id) { return Fnv1a64(id, kFnv1aStandardOffset); }

// A persistent CPU threadpool (ggml's own, found through the CPU backend's registry so that it works with both the
// static and the shared llama.cpp build). Freed after the context that uses it.
class CpuThreadpool {
 public:
  CpuThreadpool() = default;
  CpuThreadpool(const CpuThreadpool&) = delete;
  CpuThreadpool& operator=(const CpuThreadpool&) = delete;
  CpuThreadpool(CpuThreadpool&& o) noexcept : pool_(o.pool_), free_(o.free_) { o.pool_ = nullptr; }
  CpuThreadpool& operator=(CpuThreadpool&& o) noexcept {
    std::swap(pool_, o.pool_);
    std::swap(free_, o.free_);
    return *this;
  }
  ~CpuThreadpool() {
    if (pool_ != nullptr && free_ != nullptr) free_(pool_);
  }
  // Creates a pool of n_threads when the CPU backend needs one (no OpenMP); otherwise leaves this empty.
  void Create(int n_threads) {
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (cpu == nullptr || n_threads < 2) return;
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(cpu);
    if (CpuBackendUsesOpenMp(reg)) return;
    auto make =
        reinterpret_cast<decltype(&ggml_threadpool_new)>(ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new"));
    free_ = reinterpret_cast<decltype(&ggml_threadpool_free)>(
        ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free"));
    if (make == nullptr || free_ == nullptr) return;
    ggml_threadpool_params params = ggml_threadpool_params_default(n_threads);
    pool_ = make(&params);
  }
  ggml_threadpool* get() const { return pool_; }

 private:
  ggml_threadpool* pool_ = nullptr;
  decltype(&ggml_threadpool_free) free_ = nullptr;
};

class LlamaEngine final : public Engine {
 public:
  LlamaEngine(CpuThreadpool threadpool, std::unique_ptr<llama_model, ModelDeleter> model,
              std::unique_ptr<llama_context, ContextDeleter> ctx, std::unique_ptr<mtmd_context, MtmdDeleter> mctx,
              common_chat_templates_ptr templates, const LlamaEngineOptions& options, const LoopOptions& loop_options,
              double load_seconds, int n_gpus)
      : threadpool_(std::move(threadpool)),
        model_(std::move(model)),
        ctx_(std::move(ctx)),
        mctx_(std::move(mctx)),
        env_(options.env != nullptr ? options.env : Env::Default()),
        templates_(std::move(templates)),
        vocab_(llama_model_get_vocab(model_.get())),
        seed_(options.seed),
        load_seconds_(load_seconds),
        n_gpus_(n_gpus),
        n_parallel_(loop_options.n_parallel) {
    const int n_vocab = llama_vocab_n_tokens(vocab_);
    for (llama_token t = 0; t < n_vocab; ++t) {
      if (llama_vocab_is_eog(vocab_, t)) eog_bias_.push_back({t, -INFINITY});
    }
    loop_ = std::make_unique<DecodeLoop>(model_.get(), ctx_.get(), mctx_.get(), loop_options);
  }
  ~LlamaEngine() override { Shutdown(); }

  void Submit(Request request, CompletionCallback done) override {
    auto prepared = std::make_unique<PreparedRequest>();
    prepared->done = std::move(done);
    prepared->error = Prepare(request, prepared.get());
    std::unique_ptr<PreparedRequest> rejected = loop_->Enqueue(std::move(prepared));
    if (rejected) {  // after Shutdown: there is no engine thread any more, so answer here
      Completion c;
      c.finish = FinishReason::kError;
      c.error = Status::Unavailable("engine shut down");
      rejected->done(std::move(c));
    }
  }
  int Capacity() const override { return n_parallel_; }
  double LoadSeconds() const override { return load_seconds_; }
  int NumGpus() const override { return n_gpus_; }
  void Shutdown() override { loop_->Stop(); }
  EngineCounters counters() const { return loop_->counters(); }

 private:
  // Template, tokens and sampler of `request`; a non-OK status is the request's error.
  Status Prepare(const Request& request, PreparedRequest* out);
  Result<std::string> FormatPrompt(const Request& request) const;
  // Tokens and image segments of `text` (the formatted prompt, one kImageMarker per image).
  Status TokenizeWithImages(const Request& request, const std::string& text, PreparedRequest* out);
  Status MakeSampler(const Request& request, uint64_t seed, PreparedRequest* out);

  // Declaration order is destruction order in reverse: the loop goes first, the model last.
  CpuThreadpool threadpool_;  // destroyed after ctx_
  std::unique_ptr<llama_model, ModelDeleter> model_;
  std::unique_ptr<llama_context, ContextDeleter> ctx_;
  std::unique_ptr<mtmd_context, MtmdDeleter> mctx_;  // null without a projector
  Env* env_;
  common_chat_templates_ptr templates_;
  const llama_vocab* vocab_;
  std::vector<llama_logit_bias> eog_bias_;  // -inf on every end-of-generation token (ignore_eos)
  uint64_t seed_;
  std::atomic<uint64_t> n_submitted_{0};  // per-request seed offset, in Submit order
  double load_seconds_;
  int n_gpus_;
  int n_parallel_;
  std::unique_ptr<DecodeLoop> loop_;
};

Status LlamaEngine::Prepare(const Request& request, PreparedRequest* out) {
  const uint64_t index = n_submitted_.fetch_add(1);
  Result<std::string> text = FormatPrompt(request);
  if (!text.ok()) return text.status();
  // add_special: BOS when the model wants one (common_chat strips the template's own BOS then);
  // parse_special: the template's control tokens are tokens, not text.
  if (!request.images.empty()) {
    MMIRAGE_TRY(TokenizeWithImages(request, *text, out));
  } else {
    out->prompt = common_tokenize(vocab_, *text, /*add_special=*/true, /*parse_special=*/true);
  }
  out->stop = request.sampling.stop;
  out->max_new_tokens = request.sampling.max_new_tokens;
  out->ignore_eos = request.sampling.ignore_eos;
  // Seed: the request's, else the engine's plus the submission index (deterministic for a given order).
  return MakeSampler(request, request.sampling.seed.value_or(seed_ + index), out);
}

Status LlamaEngine::TokenizeWithImages(const Request& request, const std::string& text, PreparedRequest* out) {
  const size_t n_images = request.images.size();
  if (!mctx_) {
    return Status::InvalidArgument("the request has " + std::to_string(n_images) +
                                   " image(s) but the model has no vision projector (set server_args.mmproj_path)");
  }
  const size_t n_markers = CountImageMarkers(text);
  if (n_markers != n_images) {
    return Status::InvalidArgument("the prompt has " + std::to_string(n_markers) + " image marker(s) for " +
                                   std::to_string(n_images) + " image(s)");
  }
  std::vector<std::unique_ptr<mtmd_bitmap, BitmapDeleter>> bitmaps;
  std::vector<const mtmd_bitmap*> bitmap_ptrs;
  for (const ImageInput& im : request.images) {
    std::string file_bytes;
    const std::string* bytes = &im.bytes;
    const std::string what = im.kind == ImageInput::Kind::kBytes ? im.source : "'" + im.source + "'";
    if (im.kind == ImageInput::Kind::kUrl) {
      return Status::InvalidArgument("image " + what +
                                     ": the embedded engine does not fetch http(s) images (download them first, or "
                                     "use an OpenAI-compatible backend)");
    }
    if (im.kind == ImageInput::Kind::kFile) {
      Result<std::string> r = env_->ReadFileToString(im.source);
      if (!r.ok()) return Status::InvalidArgument("image " + what + ": " + r.status().message());
      file_bytes = std::move(*r);
      bytes = &file_bytes;
    }
    if (bytes->empty()) return Status::InvalidArgument("image " + what + " is empty");
    // Only formats stb_image decodes in-process: anything else would make libmtmd try audio and ffmpeg.
    const std::string mime = SniffImageMime(*bytes);
    if (mime.empty() || mime == "image/webp") {
      return Status::InvalidArgument("image " + what + " cannot be decoded (" +
                                     (mime.empty() ? std::string("not a known image format")
                                                   : std::string("WebP is not supported by the embedded engine")) +
                                     ", " + std::to_string(bytes->size()) + " bytes; PNG, JPEG, GIF and BMP are)");
    }
    mtmd_helper_bitmap_wrapper w =
        mtmd_helper_bitmap_init_from_buf(mctx_.get(), reinterpret_cast<const unsigned char*>(bytes->data()),
                                         bytes->size(), /*placeholder=*/false, mtmd_helper_init_opt_default());
    if (w.video_ctx != nullptr) mtmd_helper_video_free(w.video_ctx);
    std::unique_ptr<mtmd_bitmap, BitmapDeleter> bitmap(w.bitmap);
    if (!bitmap || w.video_ctx != nullptr) {
      return Status::InvalidArgument("image " + what + " cannot be decoded (" + mime + " data is corrupt, " +
                                     std::to_string(bytes->size()) + " bytes)");
    }
    if (mtmd_bitmap_is_audio(bitmap.get())) return Status::InvalidArgument("image " + what + " is audio, not an image");
    bitmap_ptrs.push_back(bitmap.get());
    bitmaps.push_back(std::move(bitmap));
  }
  std::unique_ptr<mtmd_input_chunks, ChunksDeleter> chunks(mtmd_input_chunks_init());
  mtmd_input_text input{text.c_str(), text.size(), /*add_special=*/true, /*parse_special=*/true};
  const int32_t ret = mtmd_tokenize(mctx_.get(), chunks.get(), &input, bitmap_ptrs.data(), bitmap_ptrs.size());
  if (ret == 1) return Status::InvalidArgument("the prompt's image markers do not match its images");
  if (ret != 0) return Status::InvalidArgument("an image could not be preprocessed for the vision encoder");
  out->prompt.clear();
  for (size_t i = 0; i < mtmd_input_chunks_size(chunks.get()); ++i) {
    const mtmd_input_chunk* chunk = mtmd_input_chunks_get(chunks.get(), i);
    const mtmd_input_chunk_type type = mtmd_input_chunk_get_type(chunk);
    if (type == MTMD_INPUT_CHUNK_TYPE_TEXT) {
      size_t n = 0;
      const llama_token* tokens = mtmd_input_chunk_get_tokens_text(chunk, &n);
      out->prompt.insert(out->prompt.end(), tokens, tokens + n);
      continue;
    }
    if (type != MTMD_INPUT_CHUNK_TYPE_IMAGE) return Status::InvalidArgument("only image media are supported");
    ImageSegment seg;
    seg.start = static_cast<int>(out->prompt.size());
    seg.n_tokens = static_cast<int>(mtmd_input_chunk_get_n_tokens(chunk));
    seg.n_pos = static_cast<int>(mtmd_input_chunk_get_n_pos(chunk));
    const char* id = mtmd_input_chunk_get_id(chunk);
    seg.id = id != nullptr ? id : "";
    seg.chunk.reset(mtmd_input_chunk_copy(chunk));
    if (!seg.chunk || seg.n_tokens <= 0) return Status::Internal("libmtmd returned an empty image chunk");
    const uint64_t h = HashId(seg.id.empty() ? std::to_string(i) : seg.id);
    for (int k = 0; k < seg.n_tokens; ++k) out->prompt.push_back(ImagePseudoToken(h, k));
    out->images.push_back(std::move(seg));
  }
  if (!out->images.empty() &&
      out->images.back().start + out->images.back().n_tokens == static_cast<int>(out->prompt.size())) {
    return Status::InvalidArgument("the prompt ends with an image; text must follow it");
  }
  return Status::OK();
}

Result<std::string> LlamaEngine::FormatPrompt(const Request& request) const {
  return ApplyChatTemplate(templates_.get(), request);
}

Status LlamaEngine::MakeSampler(const Request& request, uint64_t seed, PreparedRequest* out) {
  const SamplingParams& sp = request.sampling;
  common_params_sampling params;
  uint32_t seed32 = static_cast<uint32_t>(seed ^ (seed >> 32));
  if (seed32 == LLAMA_DEFAULT_SEED) seed32 = 0x9E3779B9u;  // LLAMA_DEFAULT_SEED would mean "random"
  params.seed = seed32;
  params.temp = static_cast<float>(std::max(0.0, sp.temperature));  // <= 0: greedy
  params.top_p = static_cast<float>(sp.top_p);
  params.top_k = sp.top_k < 0 ? 0 : sp.top_k;  // <= 0: disabled
  params.min_p = static_cast<float>(sp.min_p);
  params.penalty_repeat = static_cast<float>(sp.repetition_penalty);
  params.penalty_freq = static_cast<float>(sp.frequency_penalty);
  params.penalty_present = static_cast<float>(sp.presence_penalty);
  params.penalty_last_n = std::max(64, sp.max_new_tokens);  // the sampler sees generated tokens only (as SGLang)
  params.no_perf = true;
  if (params.temp <= 0.0f) {
    // Greedy: penalties, then the single best token. Same choice as temperature 0 in the default chain, without
    // the softmax over the whole vocabulary that the default chain still does (most of a tiny model's time).
    params.samplers = {COMMON_SAMPLER_TYPE_PENALTIES, COMMON_SAMPLER_TYPE_TOP_K};
    params.top_k = 1;
  }
  // ignore_eos bans end-of-generation tokens, except under a grammar, whose only way to end is one of them.
  if (sp.ignore_eos && request.json_schema.empty()) params.logit_bias = eog_bias_;
  out->has_grammar = !request.json_schema.empty();
  out->fast_greedy = params.temp <= 0.0f && !out->has_grammar && sp.repetition_penalty == 1.0 &&
                     sp.frequency_penalty == 0.0 && sp.presence_penalty == 0.0;
  if (out->has_grammar) {
    try {
      params.grammar = common_grammar(COMMON_GRAMMAR_TYPE_OUTPUT_FORMAT,
                                      json_schema_to_grammar(common_json::parse(request.json_schema)));
    } catch (const common_json_error& e) {
      return Status::InvalidArgument(std::string("json_schema: ") + e.what());
    } catch (const std::invalid_argument& e) {
      return Status::InvalidArgument(std::string("json_schema cannot be turned into a grammar: ") + e.what());
    } catch (const std::runtime_error& e) {
      return Status::InvalidArgument(std::string("json_schema cannot be turned into a grammar: ") + e.what());
    }
  }
  try {
    out->sampler.reset(common_sampler_init(model_.get(), params));
  } catch (const std::invalid_argument& e) {  // non-finite penalties
    return Status::InvalidArgument(std::string("invalid sampling parameters: ") + e.what());
  } catch (const std::runtime_error& e) {  // "failed to parse grammar"
    return Status::InvalidArgument(std::string("cannot build the sampler: ") + e.what());
  }
  if (!out->sampler) return Status::Internal("common_sampler_init returned null");
  return Status::OK();
}

// Model, context and chat templates, or the error that stops the engine from loading.
struct Loaded {
  CpuThreadpool threadpool;  // outlives ctx (members are destroyed in reverse order)
  std::unique_ptr<llama_model, ModelDeleter> model;
  std::unique_ptr<llama_context, ContextDeleter> ctx;
  std::unique_ptr<mtmd_context, MtmdDeleter> mctx;
  common_chat_templates_ptr templates;
  LoopOptions loop;
  int n_gpus = 0;
};

Status LoadModel(const LlamaEngineOptions& o, Env* env, Loaded* out) {
  if (!env->FileExists(o.model_path)) return Status::NotFound("model file '" + o.model_path + "' does not exist");
  const int n_gpus = llama_supports_gpu_offload() ? CountGpus() : 0;
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = n_gpus == 0 ? 0 : o.n_gpu_layers;  // negative: all layers
  out->model.reset(llama_model_load_from_file(o.model_path.c_str(), mp));
  if (!out->model) {
    return Status::InvalidArgument("cannot load model '" + o.model_path +
                                   "' (not a GGUF file or unsupported architecture)");
  }
  out->n_gpus = mp.n_gpu_layers == 0 ? 0 : n_gpus;
  return Status::OK();
}

Status CreateContext(const LlamaEngineOptions& o, Loaded* out) {
  if (o.n_parallel < 1) return Status::InvalidArgument("n_parallel must be at least 1");
  if (o.n_ctx_seq < 2) return Status::InvalidArgument("n_ctx_seq must be at least 2");
  if (o.n_batch < 1 || o.n_ubatch < 1) return Status::InvalidArgument("n_batch and n_ubatch must be positive");
  Result<ggml_type> type_k = ParseCacheType(o.cache_type_k);
  if (!type_k.ok()) return type_k.status();
  Result<ggml_type> type_v = ParseCacheType(o.cache_type_v);
  if (!type_v.ok()) return type_v.status();
  Result<llama_flash_attn_type> flash = ParseFlashAttn(o.flash_attn);
  if (!flash.ok()) return flash.status();

  LoopOptions& loop = out->loop;
  loop.n_parallel = o.n_parallel;
  const int n_ctx_train = llama_model_n_ctx_train(out->model.get());
  loop.n_ctx_seq = n_ctx_train > 0 ? std::min(o.n_ctx_seq, n_ctx_train) : o.n_ctx_seq;
  // Every generating sequence needs one token per batch.
  loop.n_batch = std::max(o.n_batch, o.n_parallel);
  loop.prefix_reuse = o.prefix_reuse;
  loop.min_prefix_tokens = o.min_prefix_tokens;
  loop.batch_barrier = o.batch_barrier;
  loop.image_cache_bytes = o.image_cache_bytes;

  const int n_threads =
      o.n_threads > 0 ? o.n_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(loop.n_ctx_seq) * static_cast<uint32_t>(o.n_parallel);
  cp.n_batch = static_cast<uint32_t>(loop.n_batch);
  cp.n_ubatch = static_cast<uint32_t>(std::min(o.n_ubatch, loop.n_batch));
  cp.n_seq_max = static_cast<uint32_t>(o.n_parallel + 1);  // + the shared-prefix sequence
  cp.kv_unified = true;  // sequences share cells (prefix copies) and one pool of n_ctx cells
  cp.n_threads = n_threads;
  cp.n_threads_batch = n_threads;
  cp.flash_attn_type = *flash;
  cp.type_k = *type_k;
  cp.type_v = *type_v;
  cp.no_perf = true;
  out->ctx.reset(llama_init_from_model(out->model.get(), cp));
  if (!out->ctx) {
    return Status::Internal("cannot create a llama context (n_ctx " + std::to_string(cp.n_ctx) + ", n_batch " +
                            std::to_string(cp.n_batch) + ", KV " + o.cache_type_k + "/" + o.cache_type_v + ")");
  }
  out->threadpool.Create(n_threads);
  if (out->threadpool.get() != nullptr) llama_attach_threadpool(out->ctx.get(), out->threadpool.get(), nullptr);
  return Status::OK();
}

Status LoadProjector(const LlamaEngineOptions& o, Env* env, Loaded* out) {
  if (o.mmproj_path.empty()) return Status::OK();
  if (!env->FileExists(o.mmproj_path)) return Status::NotFound("mmproj file '" + o.mmproj_path + "' does not exist");
  Result<llama_flash_attn_type> flash = ParseFlashAttn(o.flash_attn);
  if (!flash.ok()) return flash.status();
  mtmd_context_params mp = mtmd_context_params_default();
  mp.use_gpu = out->n_gpus > 0;
  mp.print_timings = false;
  mp.n_threads = o.n_threads > 0 ? o.n_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  mp.media_marker = kImageMarker;
  mp.flash_attn_type = *flash;
  out->mctx.reset(mtmd_init_from_file(o.mmproj_path.c_str(), out->model.get(), mp));
  if (!out->mctx) {
    return Status::InvalidArgument("cannot load the vision projector '" + o.mmproj_path +
                                   "' (not an mmproj GGUF, an unsupported projector, or one made for another model)");
  }
  if (!mtmd_support_vision(out->mctx.get())) {
    return Status::InvalidArgument("the projector '" + o.mmproj_path + "' has no vision encoder");
  }
  return Status::OK();
}

Status LoadTemplates(const LlamaEngineOptions& o, Env* env, Loaded* out) {
  std::string override_text;
  if (!o.chat_template_file.empty()) {
    Result<std::string> text = env->ReadFileToString(o.chat_template_file);
    if (!text.ok()) return text.status().WithContext("chat_template_file");
    override_text = std::move(*text);
  }
  try {
    out->templates = common_chat_templates_init(out->model.get(), override_text);
  } catch (const std::runtime_error& e) {
    return Status::InvalidArgument(std::string("cannot parse the chat template: ") + e.what());
  } catch (const std::invalid_argument& e) {
    return Status::InvalidArgument(std::string("cannot parse the chat template: ") + e.what());
  }
  if (!out->templates) return Status::InvalidArgument("cannot parse the chat template");
  return Status::OK();
}

// n_threads 0: the usable CPUs less those that other processes kept busy while the model loaded (at least 100 ms
// of watching), so that a shared machine does not make llama.cpp's spinning threads wait for each other.
int DefaultThreads(Env* env, const CpuSample& before) {
  const int usable = UsableCpus();
  if (usable < 2) return 1;
  if (before.ok) {
    const uint64_t now = SampleCpus().wall_micros;
    if (now < before.wall_micros + 100000) env->SleepMicros(before.wall_micros + 100000 - now);
  }
  const double others = OtherProcessesBusyCpus(before, SampleCpus(), usable);
  const int n = ThreadsForIdleCpus(usable, others);
  if (n < usable) {
    char busy[32];
    std::snprintf(busy, sizeof(busy), "%.1f", others);
    LogMessage(LogLevel::kInfo, "llama.cpp: " + std::to_string(n) + " of " + std::to_string(usable) +
                                    " CPUs for decoding: other processes keep " + busy +
                                    " busy (extra_engine_args.n_threads sets the count)");
  }
  return n;
}

}  // namespace

namespace llama_module {

Result<std::unique_ptr<Engine>> CreateEngine(const LlamaEngineOptions& options) {
  Env* env = options.env != nullptr ? options.env : Env::Default();
  InitBackendOnce();
  const uint64_t start_us = env->MonotonicMicros();
  Loaded loaded;
  const CpuSample before_load = SampleCpus();
  MMIRAGE_TRY(LoadModel(options, env, &loaded));
  LlamaEngineOptions opts = options;
  if (opts.n_threads <= 0) opts.n_threads = DefaultThreads(env, before_load);
  MMIRAGE_TRY(CreateContext(opts, &loaded));
  MMIRAGE_TRY(LoadProjector(opts, env, &loaded));
  MMIRAGE_TRY(LoadTemplates(opts, env, &loaded));
  const double load_seconds = static_cast<double>(env->MonotonicMicros() - start_us) / 1e6;
  return std::unique_ptr<Engine>(new LlamaEngine(
      std::move(loaded.threadpool), std::move(loaded.model), std::move(loaded.ctx), std::move(loaded.mctx),
      std::move(loaded.templates), options, loaded.loop, load_seconds, loaded.n_gpus));
}

EngineCounters CountersOf(const Engine& engine) {
  if (const auto* llama = dynamic_cast<const LlamaEngine*>(&engine)) return llama->counters();
  return EngineCounters{};
}

}  // namespace llama_module
}  // namespace mmirage::engine
