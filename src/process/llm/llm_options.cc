#include "process/llm/llm_options.h"

#include <cmath>
#include <set>

namespace mmirage::process::llm {
namespace {

std::string Where(const config::Processor& p, const std::string& field) {
  return p.loc.ToString() + ": processor '" + p.type + "' " + field;
}

Status TypeError(const config::Processor& p, const std::string& field, const char* expected, const Value& v) {
  return Status::InvalidArgument(Where(p, field) + ": expected " + expected + ", got " + v.TypeName());
}

Result<int64_t> AsInt(const config::Processor& p, const std::string& field, const Value& v) {
  if (v.is_int()) return v.as_int();
  if (v.is_double() && std::floor(v.as_double()) == v.as_double()) return static_cast<int64_t>(v.as_double());
  return TypeError(p, field, "an integer", v);
}

Result<double> AsNumber(const config::Processor& p, const std::string& field, const Value& v) {
  if (v.is_number()) return v.as_number();
  return TypeError(p, field, "a number", v);
}

Result<bool> AsBool(const config::Processor& p, const std::string& field, const Value& v) {
  if (v.is_bool()) return v.as_bool();
  return TypeError(p, field, "a boolean", v);
}

Result<std::string> AsString(const config::Processor& p, const std::string& field, const Value& v) {
  if (v.is_string()) return v.as_string();
  if (v.is_bool()) return std::string(v.as_bool() ? "on" : "off");
  return TypeError(p, field, "a string", v);
}

}  // namespace

Result<EngineOptionsMapping> MapEngineOptions(const config::Processor& p) {
  EngineOptionsMapping m;
  engine::LlamaEngineOptions& o = m.options;
  o.model_path = p.llm.model_path;
  if (!p.llm.chat_template.empty() && p.llm.chat_template.find('/') != std::string::npos) {
    o.chat_template_file = p.llm.chat_template;
  } else if (!p.llm.chat_template.empty()) {
    // Template names in MMIRAGE configs (qwen2-vl, llava, internvl, phi3_v, ...) pick an HF processor's template;
    // a GGUF carries its own, and its projector decides how images are tokenized.
    m.warnings.push_back(Where(p, "chat_template") + " '" + p.llm.chat_template +
                         "' is a template name: the embedded engine uses the GGUF's own chat template (give a "
                         "template file path to override it)");
  }
  std::optional<int64_t> n_ctx_total;
  const Value& extra = p.llm.extra_engine_args;
  static const std::set<std::string> kIgnoredQuietly = {"trust_remote_code", "disable_custom_all_reduce", "tp_size",
                                                        "model_path"};
  if (extra.is_object()) {
    for (const auto& [k, v] : extra.as_object()) {
      std::string f = "extra_engine_args." + k;
      if (k == "max_running_requests" || k == "n_parallel") {
        MMIRAGE_ASSIGN_OR_RETURN(int64_t x, AsInt(p, f, v));
        // llama.cpp holds at most 256 sequences (LLAMA_MAX_SEQ), one of them the shared prefix. SGLang's
        // max_running_requests is only an upper bound, so a larger value (MMIRAGE's benchmark config asks
        // for 1000) is capped, not an error.
        constexpr int64_t kMaxParallel = 255;
        if (x > kMaxParallel) {
          m.warnings.push_back(Where(p, f) + " = " + std::to_string(x) + " exceeds the embedded engine's " +
                               std::to_string(kMaxParallel) + " parallel sequences; using " +
                               std::to_string(kMaxParallel));
          x = kMaxParallel;
        }
        o.n_parallel = static_cast<int>(std::max<int64_t>(1, x));
      } else if (k == "context_length" || k == "n_ctx_seq") {
        MMIRAGE_ASSIGN_OR_RETURN(int64_t x, AsInt(p, f, v));
        o.n_ctx_seq = static_cast<int>(x);
      } else if (k == "n_ctx") {
        MMIRAGE_ASSIGN_OR_RETURN(int64_t x, AsInt(p, f, v));
        n_ctx_total = x;
      } else if (k == "chunked_prefill_size" || k == "n_batch") {
        MMIRAGE_ASSIGN_OR_RETURN(int64_t x, AsInt(p, f, v));
        o.n_batch = static_cast<int>(x);
      } else if (k == "n_ubatch") {
        MMIRAGE_ASSIGN_OR_RETURN(int64_t x, AsInt(p, f, v));
        o.n_ubatch = static_cast<int>(x);
      } else if (k == "n_threads") {
        MMIRAGE_ASSIGN_OR_RETURN(int64_t x, AsInt(p, f, v));
        o.n_threads = static_cast<int>(x);
      } else if (k == "n_gpu_layers") {
        MMIRAGE_ASSIGN_OR_RETURN(int64_t x, AsInt(p, f, v));
        o.n_gpu_layers = static_cast<int>(x);
      } else if (k == "flash_attn") {
        MMIRAGE_ASSIGN_OR_RETURN(o.flash_attn, AsString(p, f, v));
      } else if (k == "cache_type_k" || k == "kv_cache_dtype") {
        MMIRAGE_ASSIGN_OR_RETURN(o.cache_type_k, AsString(p, f, v));
        if (k == "kv_cache_dtype") o.cache_type_v = o.cache_type_k;
      } else if (k == "cache_type_v") {
        MMIRAGE_ASSIGN_OR_RETURN(o.cache_type_v, AsString(p, f, v));
      } else if (k == "prefix_reuse") {
        MMIRAGE_ASSIGN_OR_RETURN(o.prefix_reuse, AsBool(p, f, v));
      } else if (k == "batch_barrier") {  // debug: a batch-synchronous loop (MMIRAGE's), for benchmarks
        MMIRAGE_ASSIGN_OR_RETURN(o.batch_barrier, AsBool(p, f, v));
      } else if (k == "image_cache_mib") {  // image-encode reuse budget; 0 turns reuse off
        MMIRAGE_ASSIGN_OR_RETURN(int64_t x, AsInt(p, f, v));
        o.image_cache_bytes = static_cast<size_t>(std::max<int64_t>(0, x)) << 20;
      } else if (k == "min_prefix_tokens") {
        MMIRAGE_ASSIGN_OR_RETURN(int64_t x, AsInt(p, f, v));
        o.min_prefix_tokens = static_cast<int>(x);
      } else if (k == "random_seed" || k == "seed") {
        MMIRAGE_ASSIGN_OR_RETURN(int64_t x, AsInt(p, f, v));
        o.seed = static_cast<uint64_t>(x);
      } else if (!kIgnoredQuietly.count(k)) {
        m.warnings.push_back(Where(p, f) + " is ignored by the embedded llama.cpp engine");
      }
    }
  }
  if (n_ctx_total) o.n_ctx_seq = static_cast<int>(std::max<int64_t>(256, *n_ctx_total / o.n_parallel));
  if (p.llm.tp_size > 1)
    m.warnings.push_back(Where(p, "server_args.tp_size") + " > 1: the embedded engine uses one device per process");
  return m;
}

Result<SamplingMapping> MapSamplingParams(const config::Processor& p) {
  SamplingMapping m;
  engine::SamplingParams& s = m.params;
  const Value& sp = p.llm.default_sampling_params;
  if (!sp.is_object()) return m;
  for (const auto& [k, v] : sp.as_object()) {
    std::string f = "default_sampling_params." + k;
    if (k == "temperature") {
      MMIRAGE_ASSIGN_OR_RETURN(s.temperature, AsNumber(p, f, v));
    } else if (k == "top_p") {
      MMIRAGE_ASSIGN_OR_RETURN(s.top_p, AsNumber(p, f, v));
    } else if (k == "top_k") {
      MMIRAGE_ASSIGN_OR_RETURN(int64_t x, AsInt(p, f, v));
      s.top_k = static_cast<int>(x);
    } else if (k == "min_p") {
      MMIRAGE_ASSIGN_OR_RETURN(s.min_p, AsNumber(p, f, v));
    } else if (k == "max_new_tokens" || k == "max_tokens") {
      MMIRAGE_ASSIGN_OR_RETURN(int64_t x, AsInt(p, f, v));
      s.max_new_tokens = static_cast<int>(x);
    } else if (k == "stop") {
      if (v.is_string()) {
        s.stop = {v.as_string()};
      } else if (v.is_array()) {
        for (const auto& e : v.as_array()) {
          if (!e.is_string()) return TypeError(p, f, "a string or a list of strings", e);
          s.stop.push_back(e.as_string());
        }
      } else if (!v.is_null()) {
        return TypeError(p, f, "a string or a list of strings", v);
      }
    } else if (k == "seed" || k == "sampling_seed") {
      MMIRAGE_ASSIGN_OR_RETURN(int64_t x, AsInt(p, f, v));
      s.seed = static_cast<uint64_t>(x);
    } else if (k == "repetition_penalty") {
      MMIRAGE_ASSIGN_OR_RETURN(s.repetition_penalty, AsNumber(p, f, v));
    } else if (k == "frequency_penalty") {
      MMIRAGE_ASSIGN_OR_RETURN(s.frequency_penalty, AsNumber(p, f, v));
    } else if (k == "presence_penalty") {
      MMIRAGE_ASSIGN_OR_RETURN(s.presence_penalty, AsNumber(p, f, v));
    } else if (k == "ignore_eos") {
      MMIRAGE_ASSIGN_OR_RETURN(s.ignore_eos, AsBool(p, f, v));
    } else if (k == "custom_params") {
      if (const Value* kw = v.Find("chat_template_kwargs")) {
        if (!kw->is_object()) return TypeError(p, f + ".chat_template_kwargs", "a map", *kw);
        m.chat_template_kwargs = *kw;
      }
    } else {
      m.warnings.push_back(Where(p, f) + " is not supported by the embedded engine (ignored)");
    }
  }
  return m;
}

}  // namespace mmirage::process::llm
