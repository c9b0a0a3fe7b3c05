#include "process/cache_key.h"

#include "cache/hash.h"
#include "data/json.h"
#include "process/llm/llm_options.h"
#include "util/log.h"

namespace mmirage::process {
namespace {

// A new Request or SamplingParams field changes what a generation depends on: add it to RequestKey (and images'
// content hashes with #10), then update these sizes.
static_assert(sizeof(engine::SamplingParams) == 112, "new SamplingParams field: add it to RequestKey");
static_assert(sizeof(engine::Request) == 248, "new Request field: add it to RequestKey (images: their hashes)");

Status HashFilePrefix(Env* env, const std::string& path, size_t max_bytes, cache::Hasher* h) {
  MMIRAGE_ASSIGN_OR_RETURN(uint64_t size, env->GetFileSize(path));
  MMIRAGE_ASSIGN_OR_RETURN(auto file, env->NewSequentialFile(path));
  h->AddInt(static_cast<int64_t>(size));
  std::string buf(1 << 20, '\0');
  size_t left = max_bytes;
  while (left > 0) {
    MMIRAGE_ASSIGN_OR_RETURN(size_t n, file->Read(std::min(left, buf.size()), buf.data()));
    if (n == 0) break;
    h->AddRaw(std::string_view(buf.data(), n));
    left -= n;
  }
  return Status::OK();
}

void AddValue(cache::Hasher* h, const Value& v) { h->AddString(v.is_null() ? "null" : ToJson(v)); }

}  // namespace

Result<std::string> ModelIdentity(Env* env, const config::Processor& p, const std::string& model_path) {
  cache::Hasher h;
  const config::LlmProcessor& llm = p.llm;
  h.AddString("mmirage-model-identity-1").AddString(llm.backend);
  if (llm.backend == "llama" || (llm.backend == "llama-server" && llm.server_command.empty())) {
    h.AddString("gguf");
    MMIRAGE_TRY(HashFilePrefix(env, model_path, kModelIdentityBytes, &h));
    MMIRAGE_ASSIGN_OR_RETURN(process::llm::EngineOptionsMapping m, process::llm::MapEngineOptions(p));
    const engine::LlamaEngineOptions& o = m.options;
    if (!o.chat_template_file.empty()) {
      MMIRAGE_ASSIGN_OR_RETURN(std::string tmpl, env->ReadFileToString(o.chat_template_file));
      h.AddString(tmpl);
    } else {
      h.AddString(llm.chat_template);
    }
    h.AddInt(o.n_ctx_seq).AddString(o.cache_type_k).AddString(o.cache_type_v).AddString(o.flash_attn);
    h.AddInt(o.n_gpu_layers);
    // The vision projector decides image answers too: by content when it is a file, else by its setting.
    const std::string& mm = o.mmproj_path.empty() ? llm.mmproj_path : o.mmproj_path;
    if (!mm.empty()) {
      h.AddString("mmproj");
      if (env->IsRegularFile(mm)) MMIRAGE_TRY(HashFilePrefix(env, mm, kModelIdentityBytes, &h));
      else h.AddString(mm);
    }
    if (llm.backend == "llama-server") AddValue(&h, llm.extra_engine_args);
  } else if (llm.backend == "openai" || llm.backend == "anthropic") {
    config::EndpointConfig ep = llm.endpoint.value_or(config::EndpointConfig{});
    h.AddString(ep.base_url).AddString(ep.model).AddString(ep.mode);
    if (llm.backend == "anthropic") h.AddString("anthropic").AddString(ep.system_prompt);
  } else {
    h.AddString(llm.model_path).AddString(llm.chat_template).AddInt(llm.tp_size);
    for (const auto& a : llm.server_command) h.AddString(a);
    AddValue(&h, llm.extra_engine_args);
  }
  return h.Finish();
}

bool IsDeterministic(const engine::SamplingParams& sp) { return sp.temperature <= 0 || sp.seed.has_value(); }

std::string RequestKey(const std::string& model_identity, const engine::Request& r, Env* env) {
  cache::Hasher h;
  h.AddString("mmirage-request-1").AddString(model_identity);
  h.AddString(r.prompt).AddBool(r.raw_prompt);
  AddValue(&h, r.chat_template_kwargs);
  const engine::SamplingParams& s = r.sampling;
  // Greedy decoding ignores the sampling knobs that only shape the distribution, and the seed.
  bool greedy = s.temperature <= 0;
  h.AddBool(greedy);
  if (!greedy) {
    h.AddDouble(s.temperature).AddDouble(s.top_p).AddInt(s.top_k).AddDouble(s.min_p);
    h.AddInt(s.seed ? static_cast<int64_t>(*s.seed) : -1);
  }
  h.AddInt(s.max_new_tokens).AddInt(static_cast<int64_t>(s.stop.size()));
  for (const auto& stop : s.stop) h.AddString(stop);
  h.AddDouble(s.repetition_penalty).AddDouble(s.frequency_penalty).AddDouble(s.presence_penalty);
  h.AddBool(s.ignore_eos);
  h.AddString(r.json_schema);
  // Images by content: a file's bytes, an inline image's bytes; a URL by itself (its content is not fetched here).
  h.AddInt(static_cast<int64_t>(r.images.size()));
  for (const auto& img : r.images) {
    h.AddInt(static_cast<int64_t>(img.kind));
    if (img.kind == engine::ImageInput::Kind::kBytes) {
      cache::Hasher ih;
      ih.AddRaw(img.bytes);
      h.AddString(ih.Finish());
    } else if (img.kind == engine::ImageInput::Kind::kFile) {
      Result<std::string> bytes = (env ? env : Env::Default())->ReadFileToString(img.source);
      if (!bytes.ok()) return "";  // unreadable: the engine reports it; nothing to cache
      cache::Hasher ih;
      ih.AddRaw(*bytes);
      h.AddString(ih.Finish());
    } else {
      h.AddString(img.source);
    }
  }
  return h.Finish();
}

OutputCachePlan PlanOutputCache(const config::Config& config, const config::OutputVar& o) {
  if (config.execution.cache == "off") return {false, "cache: off"};
  const config::Processor* p = config.FindProcessor(o.type);
  if (o.type == "batch_api" && p != nullptr) {
    const config::BatchApiProcessor& b = p->batch_api;
    std::string mode = config.execution.cache == "read" ? " (cache: read)" : "";
    if (b.temperature && *b.temperature <= 0) return {true, "temperature 0, batch " + b.provider + mode};
    if (b.provider == "openai" && b.seed) return {true, "seed " + std::to_string(*b.seed) + ", batch openai" + mode};
    return {false, b.temperature ? "temperature " + FormatDouble(*b.temperature) + " without a seed: not deterministic"
                                 : std::string("batch ") + b.provider +
                                       " at the provider's default temperature: not deterministic (set temperature: 0" +
                                       (b.provider == "openai" ? " or a seed)" : ")")};
  }
  if (o.type != "llm" || p == nullptr) return {false, "not an llm output"};
  auto sm = process::llm::MapSamplingParams(*p);
  if (!sm.ok()) return {false, sm.status().message()};
  const engine::SamplingParams& s = sm->params;
  std::string mode = config.execution.cache == "read" ? " (cache: read)" : "";
  if (s.temperature <= 0) return {true, "greedy" + mode};
  if (s.seed) return {true, "seed " + std::to_string(*s.seed) + mode};
  return {false, "temperature " + FormatDouble(s.temperature) + " without a seed: not deterministic"};
}

std::unique_ptr<cache::GenerationCache> OpenGenerationCache(Env* env, const config::Config& config) {
  auto mode = cache::ParseCacheMode(config.execution.cache);
  if (!mode || *mode == cache::CacheMode::kOff) return nullptr;
  cache::CacheOptions o;
  o.dir = config.execution.cache_dir;
  o.mode = *mode;
  o.max_bytes = static_cast<uint64_t>(config.execution.cache_max_gb * 1e9);
  o.env = env;
  auto c = cache::GenerationCache::Open(o);
  if (!c.ok()) {
    LOG_WARN("generation cache disabled: " << c.status().message());
    return nullptr;
  }
  return std::move(*c);
}

}  // namespace mmirage::process
