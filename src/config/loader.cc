// YAML → Config. Section readers below follow the config's sections in order; cross-field checks (templates,
// JMESPath, processors, shard range) live in validate.cc.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <memory>

#include "config/hosted.h"
#include "config/fleet.h"
#include "config/validate.h"
#include "data/json.h"
#include "config/yaml_reader.h"
#include "util/env_schemes.h"
#include "util/fnv.h"
#include "util/parse_int.h"
#include "util/path_safety.h"

namespace mmirage::config {
namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}
std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const std::vector<std::string> kProcessorTypes = {"llm", "batch_api", "image_gen", "custom"};

// ---- processors --------------------------------------------------------------------------------------------------
void ReadEndpoint(MapReader& r, LlmProcessor* p) {
  YAML::Node en = r.Get("endpoint");
  if (!en.IsDefined() || en.IsNull()) return;
  Diag* d = r.diag();
  if (!en.IsMap()) {
    d->Error(en, r.section() + ".endpoint: expected a map, got " + Describe(en));
    return;
  }
  MapReader e(d, &r.vars(), en, r.section() + ".endpoint");
  EndpointConfig c;
  if (!e.Has("base_url") && !e.Has("base_urls"))
    d->Error(en, r.section() + ".endpoint: missing required key 'base_url' (or 'base_urls')");
  ReadBaseUrls(e, r.section(), &c);
  ReadPrefixAffinity(e, p);
  if (e.String("base_url", &c.base_url) && c.base_url.rfind("http://", 0) != 0 && c.base_url.rfind("https://", 0) != 0)
    d->Error(e.LocOf("base_url"), r.section() + ".endpoint.base_url must start with http:// or https://");
  if (e.String("api_key_env", &c.api_key_env) && c.api_key_env.find_first_of(" $") != std::string::npos)
    d->Error(e.LocOf("api_key_env"), r.section() +
                                         ".endpoint.api_key_env names an environment variable (the key "
                                         "itself never goes in the YAML)");
  if (e.Has("api_key"))
    d->Error(e.LocOf("api_key"), r.section() +
                                     ".endpoint: put the key in an environment "
                                     "variable and name it with api_key_env");
  e.Get("api_key");
  e.String("model", &c.model);
  e.Literal("mode", {"chat", "completion"}, &c.mode);
  ReadHostedEndpointKeys(e, &c);
  if (e.Double("timeout_seconds", &c.timeout_seconds) && c.timeout_seconds <= 0)
    d->Error(e.LocOf("timeout_seconds"), r.section() + ".endpoint.timeout_seconds must be > 0");
  if (e.Int("max_retries", &c.max_retries) && c.max_retries < 0)
    d->Error(e.LocOf("max_retries"), r.section() + ".endpoint.max_retries must be >= 0");
  if (e.Double("down_timeout_seconds", &c.down_timeout_seconds) && c.down_timeout_seconds <= 0)
    d->Error(e.LocOf("down_timeout_seconds"), r.section() + ".endpoint.down_timeout_seconds must be > 0");
  e.Finish();
  p->endpoint = c;
}

void ReadLlm(MapReader& r, const VarLookup& vars, LlmProcessor* p) {
  p->backend_set = r.Has("backend");
  r.Literal("backend", {"llama", "openai", "anthropic", "sglang", "vllm", "llama-server"}, &p->backend);
  ReadEndpoint(r, p);
  if ((p->backend == "openai" || p->backend == "anthropic") && !p->endpoint)
    r.diag()->Error(r.LocOf("backend"),
                    r.section() + ": backend '" + p->backend + "' needs an 'endpoint:' block with base_url");
  if (p->backend == "anthropic" && p->endpoint && p->endpoint->model.empty())
    r.diag()->Error(r.LocOf("endpoint"), r.section() + ": backend 'anthropic' needs endpoint.model");
  YAML::Node sc = r.Get("server_command");
  if (sc.IsDefined() && !sc.IsNull()) {
    if (sc.IsScalar()) {
      p->server_command = {ExpandEnvVars(sc.Scalar(), vars)};
    } else {
      r.StringList("server_command", &p->server_command);  // re-reads the list with type checks
    }
  }
  if (r.Double("server_startup_timeout_seconds", &p->server_startup_timeout_seconds) &&
      p->server_startup_timeout_seconds <= 0)
    r.diag()->Error(r.LocOf("server_startup_timeout_seconds"),
                    r.section() + ".server_startup_timeout_seconds must be > 0");
  YAML::Node sa = r.Get("server_args");
  bool tp_set = false;
  if (sa.IsDefined() && !sa.IsNull()) {
    if (!sa.IsMap()) {
      r.diag()->Error(sa, r.section() + ".server_args: expected a map, got " + Describe(sa));
    } else {
      MapReader s(r.diag(), &r.vars(), sa, r.section() + ".server_args");
      s.String("model_path", &p->model_path);
      int64_t tp = 1;
      tp_set = s.Has("tp_size");
      if (s.Int("tp_size", &tp)) p->tp_size = static_cast<int>(tp);
      s.Bool("trust_remote_code", &p->trust_remote_code);
      s.Bool("disable_custom_all_reduce", &p->disable_custom_all_reduce);
      s.MapValue("extra_engine_args", &p->extra_engine_args);
      s.String("mmproj_path", &p->mmproj_path);  // extension: vision projector (image inputs)
      ReadReplicas(s, p);
      s.Finish();
    }
  }
  if (!tp_set) {  // absent: SLURM_GPUS_ON_NODE, else 1
    auto g = vars("SLURM_GPUS_ON_NODE");
    p->tp_size = 1;
    if (g && !Trim(*g).empty()) {
      std::optional<int64_t> v = ParseInt64(Trim(*g));
      if (v && *v <= INT32_MAX) {
        if (*v > 0) p->tp_size = static_cast<int>(*v);
        else
          r.diag()->Warn(r.LocOf("type"),
                         "Invalid SLURM_GPUS_ON_NODE value '" + *g + "' (must be > 0), defaulting tp_size to 1");
      } else {
        r.diag()->Warn(r.LocOf("type"), "Invalid SLURM_GPUS_ON_NODE value '" + *g + "', defaulting tp_size to 1");
      }
    }
  }
  r.MapValue("default_sampling_params", &p->default_sampling_params);
  r.String("chat_template", &p->chat_template);
}

void ReadBatchApi(MapReader& r, BatchApiProcessor* p) {
  const std::string& sec = r.section();
  Diag* d = r.diag();
  std::string provider;
  r.String("provider", &provider);
  p->provider = Lower(Trim(provider));
  if (p->provider.empty()) {
    d->Error(r.LocOf("provider"), sec + ": batch config must include a non-empty provider");
    return;
  }
  if (p->provider != "openai" && p->provider != "anthropic") {
    d->Error(r.LocOf("provider"), sec + ".provider: Unknown batch provider '" + p->provider +
                                      "'. Available providers: ['anthropic', 'openai']");
    return;
  }
  auto fail = [&](const char* key, const std::string& msg) {
    d->Error(r.LocOf(key), sec + ": Failed to instantiate batch provider config for '" + p->provider + "': " + msg);
  };
  if (r.Int("max_chunk_bytes", &p->max_chunk_bytes) && p->max_chunk_bytes < 1)
    fail("max_chunk_bytes", "max_chunk_bytes must be >= 1");
  if (r.OptInt("max_requests_per_chunk", &p->max_requests_per_chunk) && p->max_requests_per_chunk &&
      *p->max_requests_per_chunk < 1)
    fail("max_requests_per_chunk", "max_requests_per_chunk must be >= 1 when provided");
  r.String("metadata_output_path", &p->metadata_output_path);
  if (r.String("oversized_request_policy", &p->oversized_request_policy)) {
    p->oversized_request_policy = Lower(Trim(p->oversized_request_policy));
    if (p->oversized_request_policy != "isolate" && p->oversized_request_policy != "reject")
      fail("oversized_request_policy", "oversized_request_policy must be either 'isolate' or 'reject'");
  }
  r.OptString("base_url", &p->base_url);
  bool openai = p->provider == "openai";
  // Without base_url, the provider SDKs' own variable names a gateway, as it does for OpenAI's and Anthropic's clients.
  if (!p->base_url) {
    auto env = r.vars()(openai ? "OPENAI_BASE_URL" : "ANTHROPIC_BASE_URL");
    if (env && !Trim(*env).empty()) p->base_url = Trim(*env);
  }
  p->model = openai ? "gpt-4.1-mini" : "claude-haiku-4-5";
  if (r.String("model", &p->model) && Trim(p->model).empty()) fail("model", "model must be a non-empty string");
  if (openai) {
    if (r.String("completion_window", &p->completion_window) && p->completion_window != "24h")
      fail("completion_window", "completion_window must be one of {'24h'}");
    if (r.String("batch_endpoint", &p->batch_endpoint) && (p->batch_endpoint.empty() || p->batch_endpoint[0] != '/'))
      fail("batch_endpoint", "batch_endpoint must start with '/'");
    r.MapValue("metadata", &p->metadata);
    // Extensions: sent in every request's body when set (a deterministic request uses the generation cache).
    if (r.OptDouble("temperature", &p->temperature) && p->temperature && (*p->temperature < 0 || *p->temperature > 2))
      fail("temperature", "temperature must be in the range [0, 2] for OpenAI");
    r.OptInt("seed", &p->seed);
    for (const char* k : {"max_tokens", "top_p", "timeout_seconds"}) {
      if (r.Has(k)) fail(k, std::string("unexpected keyword argument '") + k + "'");
      r.Get(k);
    }
  } else {
    if (r.Int("max_tokens", &p->max_tokens) && p->max_tokens < 1) fail("max_tokens", "max_tokens must be >= 1");
    if (r.OptDouble("temperature", &p->temperature) && p->temperature && (*p->temperature < 0 || *p->temperature > 1))
      fail("temperature", "temperature must be in the range [0, 1] for Anthropic");
    if (r.OptDouble("top_p", &p->top_p) && p->top_p && (*p->top_p <= 0 || *p->top_p > 1))
      fail("top_p", "top_p must be in the range (0, 1] when provided");
    if (r.OptDouble("timeout_seconds", &p->timeout_seconds) && p->timeout_seconds && *p->timeout_seconds <= 0)
      fail("timeout_seconds", "timeout_seconds must be > 0 when provided");
    if (p->temperature && p->top_p) fail("top_p", "temperature and top_p are mutually exclusive for Anthropic");
    auto is_int = [&](const char* k) {
      YAML::Node n = r.Get(k);
      if (!n.IsDefined() || !n.IsScalar()) return false;
      const std::string& t = n.Scalar();
      size_t i = (!t.empty() && (t[0] == '-' || t[0] == '+')) ? 1 : 0;
      return i < t.size() && t.find_first_not_of("0123456789", i) == std::string::npos;
    };
    p->temperature_is_int = is_int("temperature");
    p->top_p_is_int = is_int("top_p");
    for (const char* k : {"completion_window", "batch_endpoint", "metadata"}) {
      if (r.Has(k)) fail(k, std::string("unexpected keyword argument '") + k + "'");
      r.Get(k);
    }
  }
  // Extensions (both providers).
  r.Bool("wait", &p->wait);
  if (r.Int("poll_interval_seconds", &p->poll_interval_seconds) && p->poll_interval_seconds < 1)
    fail("poll_interval_seconds", "poll_interval_seconds must be >= 1");
  for (auto [k, f] : {std::pair{"price_per_million_input_tokens", &p->price_per_million_input_tokens},
                      std::pair{"price_per_million_output_tokens", &p->price_per_million_output_tokens}}) {
    if (r.OptDouble(k, f) && *f && **f < 0) fail(k, std::string(k) + " must be >= 0");
  }
  // Unknown keys in a batch_api block are errors, not warnings (MMIRAGE's constructor rejects them too).
  for (const char* k : {"export_prompts_dir"}) {
    if (r.Has(k)) fail(k, std::string("unexpected keyword argument '") + k + "'");
    r.Get(k);
  }
}

void ReadImageGen(MapReader& r, ImageGenProcessor* p) {
  Diag* d = r.diag();
  r.Literal("backend", {"external", "sglang"}, &p->backend);
  YAML::Node ext = r.Get("external");
  if (ext.IsDefined() && !ext.IsNull()) {
    MapReader e(d, &r.vars(), ext, r.section() + ".external");
    ImageGenEndpoint x;
    if (!e.Has("base_url")) d->Error(ext, r.section() + ".external: missing required key 'base_url'");
    if (e.String("base_url", &x.base_url) && Trim(x.base_url).empty())
      d->Error(e.LocOf("base_url"), "external.base_url must be non-empty");
    if (e.OptString("api_key", &x.api_key) && x.api_key)
      d->Warn(e.LocOf("api_key"), "external.api_key is a secret written in the config; prefer api_key_env");
    e.OptString("api_key_env", &x.api_key_env);
    e.Int("timeout_seconds", &x.timeout_seconds);
    e.OptString("request_model", &x.request_model);
    if (e.Int("max_concurrent_requests", &x.max_concurrent_requests) && x.max_concurrent_requests < 1)
      d->Error(e.LocOf("max_concurrent_requests"), "external.max_concurrent_requests must be >= 1");
    e.Finish();
    p->external = x;
  }
  YAML::Node sg = r.Get("sglang");
  if (sg.IsDefined() && !sg.IsNull()) {
    MapReader s(d, &r.vars(), sg, r.section() + ".sglang");
    ImageGenSglang x;
    if (s.String("model_path", &x.model_path) || true) {
      if (Trim(x.model_path).empty()) d->Error(s.LocOf("model_path"), "sglang.model_path must be non-empty");
    }
    s.OptInt("port", &x.port);
    s.Int("num_gpus", &x.num_gpus);
    s.OptString("dtype", &x.dtype);
    s.Int("startup_timeout_seconds", &x.startup_timeout_seconds);
    s.StringList("extra_server_args", &x.extra_server_args);
    if (s.OptString("api_key", &x.api_key) && x.api_key)
      d->Warn(s.LocOf("api_key"), "sglang.api_key is a secret written in the config; prefer api_key_env");
    s.OptString("api_key_env", &x.api_key_env);
    s.Int("timeout_seconds", &x.timeout_seconds);
    s.OptString("request_model", &x.request_model);
    if (s.Int("max_concurrent_requests", &x.max_concurrent_requests) && x.max_concurrent_requests < 1)
      d->Error(s.LocOf("max_concurrent_requests"), "sglang.max_concurrent_requests must be >= 1");
    s.Finish();
    p->sglang = x;
  }
  if (p->backend == "external" && !p->external)
    d->Error(r.LocOf("backend"), "backend='external' requires an 'external:' configuration block.");
  if (p->backend == "sglang" && !p->sglang)
    d->Error(r.LocOf("backend"), "backend='sglang' requires a 'sglang:' configuration block.");
  r.MapValue("default_sampling_params", &p->default_sampling_params);
  r.Bool("parallel_inference", &p->parallel_inference);
  if (r.OptInt("parallel_chunk_size", &p->parallel_chunk_size) && p->parallel_chunk_size) {
    if (*p->parallel_chunk_size <= 0) {
      d->Error(r.LocOf("parallel_chunk_size"), "parallel_chunk_size must be > 0 when set");
    } else {
      // Accepted so that MMIRAGE configs load, but it cannot change anything here: say so rather than ignore it.
      d->Warn(r.LocOf("parallel_chunk_size"),
              "parallel_chunk_size has no effect: every sample is its own request (at most "
              "max_concurrent_requests in flight) and a failed sample is retried alone");
    }
  }
  r.String("output_dir", &p->output_dir);
  if (r.String("file_format", &p->file_format) && Trim(p->file_format).empty()) {
    d->Warn(r.LocOf("file_format"), "empty file_format; using 'png'");
    p->file_format = "png";
  }
}

void ReadCustom(MapReader& r, CustomProcessor* p) {
  Diag* d = r.diag();
  // Extension: `command: [program, args...]` runs any program speaking the worker protocol.
  if (r.StringList("command", &p->command) && p->command.empty())
    d->Error(r.LocOf("command"), "command must be a non-empty list of strings");
  r.String("python_executable", &p->python_executable);
  p->python_executable = Trim(p->python_executable);
  r.String("script_path", &p->script_path);
  p->script_path = Trim(p->script_path);
  r.String("function_name", &p->function_name);
  p->function_name = Trim(p->function_name);
  if (!p->command.empty()) {
    if (!p->script_path.empty() || !p->function_name.empty())
      d->Error(r.LocOf("command"), "command replaces script_path and function_name; give one or the other");
  } else {
    if (p->script_path.empty()) d->Error(r.LocOf("script_path"), "script_path must be a non-empty string");
    if (p->function_name.empty()) d->Error(r.LocOf("function_name"), "function_name must be a non-empty string");
  }
  if (r.Int("max_workers", &p->max_workers) && p->max_workers < 1)
    d->Error(r.LocOf("max_workers"), "max_workers must be >= 1");
  if (r.OptInt("timeout_ms", &p->timeout_ms) && p->timeout_ms && *p->timeout_ms < 1)
    d->Error(r.LocOf("timeout_ms"), "timeout_ms must be >= 1, or unset to disable the timeout");
  if (r.Int("max_timeouts", &p->max_timeouts) && p->max_timeouts < 1)
    d->Error(r.LocOf("max_timeouts"), "max_timeouts must be >= 1");
  if (r.Int("max_errors", &p->max_errors) && p->max_errors < 1)
    d->Error(r.LocOf("max_errors"), "max_errors must be >= 1");
  r.AnyValue("fallback_value", &p->fallback_value);
  r.Literal("start_method", {"spawn", "fork", "forkserver"}, &p->start_method);
}

void ReadProcessors(Diag* d, const VarLookup& vars, const YAML::Node& list, Config* c) {
  if (!list.IsSequence()) {
    d->Error(list, "processors: expected a list of processor maps, got " + Describe(list));
    return;
  }
  int i = 0;
  for (const auto& node : list) {
    std::string sec = "processors[" + std::to_string(i++) + "]";
    if (!node.IsMap()) {
      d->Error(node, sec + ": expected a map, got " + Describe(node));
      continue;
    }
    MapReader r(d, &vars, node, sec);
    Processor p;
    p.loc = d->LocOf(node);
    if (!r.Has("type")) {
      d->Error(node, sec + ": missing required key 'type'");
      continue;
    }
    std::string type;
    if (!r.String("type", &type)) continue;
    if (std::find(kProcessorTypes.begin(), kProcessorTypes.end(), type) == kProcessorTypes.end()) {
      d->Error(r.LocOf("type"), sec + ": Processor " + type +
                                    " not registered. Available processors are ['llm', 'batch_api', 'image_gen', "
                                    "'custom']");
      continue;
    }
    p.type = type;
    for (auto [key, field] : {std::pair{"price_per_million_input_tokens", &p.price_per_million_input_tokens},
                              std::pair{"price_per_million_output_tokens", &p.price_per_million_output_tokens}}) {
      if (r.OptDouble(key, field) && *field && **field < 0) d->Error(r.LocOf(key), sec + "." + key + " must be >= 0");
    }
    if (type == "llm") ReadLlm(r, vars, &p.llm);
    else if (type == "batch_api") ReadBatchApi(r, &p.batch_api);
    else if (type == "image_gen") ReadImageGen(r, &p.image_gen);
    else ReadCustom(r, &p.custom);
    if (type == "batch_api") {
      // Unknown keys in a batch_api block are errors (MMIRAGE's constructor rejects them too).
      size_t before = d->warnings.size();
      r.Finish();
      for (size_t k = before; k < d->warnings.size(); ++k) d->errors.push_back(d->warnings[k]);
      d->warnings.resize(before);
    } else {
      r.Finish();
    }
    for (const auto& prev : c->processors) {
      if (prev.type == p.type) {
        d->Warn(p.loc,
                sec + ": a second processor of type '" + type + "' replaces the earlier one (only the last is used)");
      }
    }
    c->processors.push_back(std::move(p));
  }
}

// ---- loading_params ----------------------------------------------------------------------------------------------
// int | string fields: a value that is still an unresolved ${VAR} reference after expansion is kept as a string.
bool IsUnresolvedRef(const std::string& raw) {
  std::string t = Trim(raw);
  auto ident = [](const std::string& s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    for (char c : s)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
  };
  if (t.size() > 1 && t[0] == '$' && t[1] != '{') return ident(t.substr(1));
  if (t.size() > 3 && t[0] == '$' && t[1] == '{' && t.back() == '}') return ident(t.substr(2, t.size() - 3));
  return false;
}

void ReadIntOrString(MapReader& r, const char* key, std::optional<int64_t> fallback, int64_t* out) {
  YAML::Node n = r.Get(key);
  if (!n.IsDefined()) return;
  Value v = n.IsScalar() ? ResolveScalar(n) : Value();
  if (v.is_int() || v.is_bool()) {
    *out = v.is_bool() ? v.as_bool() : v.as_int();
    return;
  }
  if (!v.is_string()) {
    r.diag()->Error(n, r.section() + "." + key + ": expected an int or a string, got " + Describe(n));
    return;
  }
  std::string raw = ExpandEnvVars(v.as_string(), r.vars());
  if (std::optional<int64_t> parsed = ParseInt64(Trim(raw))) {
    *out = *parsed;
  } else if (IsUnresolvedRef(raw) && fallback) {
    *out = *fallback;
  } else {
    std::string hint = raw.find(":-") != std::string::npos ? " (the ${VAR:-default} syntax is not supported)" : "";
    r.diag()->Error(n, "Invalid value for " + std::string(key) + ": '" + raw + "'" + hint);
  }
}

void ReadLoading(Diag* d, const VarLookup& vars, const YAML::Node& node, LoadingParams* lp) {
  if (!node.IsMap()) {
    d->Error(node, "loading_params: expected a map, got " + Describe(node));
    return;
  }
  MapReader r(d, &vars, node, "loading_params");
  YAML::Node ds = r.Get("datasets");
  if (ds.IsDefined() && !ds.IsSequence()) d->Error(ds, "loading_params.datasets: expected a list, got " + Describe(ds));
  if (ds.IsSequence()) {
    int i = 0;
    for (const auto& dn : ds) {
      std::string sec = "loading_params.datasets[" + std::to_string(i++) + "]";
      if (!dn.IsMap()) {
        d->Error(dn, sec + ": expected a map, got " + Describe(dn));
        continue;
      }
      MapReader dr(d, &vars, dn, sec);
      DatasetConfig dc;
      dc.loc = d->LocOf(dn);
      if (!dr.Has("type")) d->Error(dn, sec + ": missing required key 'type'");
      if (dr.String("type", &dc.type) && dc.type != "JSONL" && dc.type != "loadable" && dc.type != "parquet") {
        d->Error(dr.LocOf("type"), sec + ": Loader " + dc.type +
                                       " not registered. Available loaders are ['JSONL', 'loadable', 'parquet']");
      }
      if (dr.String("output_format", &dc.output_format) && dc.output_format != "hf" && dc.output_format != "jsonl" &&
          dc.output_format != "parquet") {
        d->Error(dr.LocOf("output_format"),
                 sec + ".output_format: '" + dc.output_format + "' is not one of hf, jsonl, parquet");
      }
      if (!dr.Has("output_dir")) d->Error(dn, sec + ": missing required key 'output_dir'");
      if (dr.String("output_dir", &dc.output_dir) && Trim(dc.output_dir).empty())
        d->Error(dr.LocOf("output_dir"), sec + ".output_dir must be non-empty");
      YAML::Node p = dr.Get("path");
      if (p.IsMap()) {
        for (const auto& kv : p) {
          Value v = kv.second.IsScalar() ? ResolveScalar(kv.second) : Value();
          if (!v.is_string()) {
            d->Error(kv.second,
                     sec + ".path." + kv.first.Scalar() + ": expected a file path, got " + Describe(kv.second));
            continue;
          }
          if (std::string why = UnsafePathComponent(kv.first.Scalar()); !why.empty())  // path safety
            d->Error(kv.first,
                     "split name '" + kv.first.Scalar() + "' " + why + " (split names become folders of output_dir)");
          dc.splits.emplace_back(kv.first.Scalar(), ExpandEnvVars(v.as_string(), vars));
        }
        if (dc.splits.empty()) d->Error(p, sec + ".path: the split map is empty");
        if (dc.type == "loadable")
          d->Error(p, sec +
                          ".path: type 'loadable' takes one save_to_disk directory (a DatasetDict directory "
                          "is read split by split), not a split map");
      } else if (p.IsDefined()) {
        dr.String("path", &dc.path);  // re-reads with type checking
      }
      if (dc.path.empty() && dc.splits.empty() && !(p.IsDefined() && p.IsMap()))
        d->Error(p.IsDefined() ? p : YAML::Node(dn),
                 sec + ".path: a dataset needs a non-empty path (file, glob or split map)");
      dr.OptString("image_base_path", &dc.image_base_path);
      dr.Finish();
      lp->datasets.push_back(std::move(dc));
    }
  }
  std::string state_dir;
  YAML::Node sd = r.Get("state_dir");
  if (sd.IsDefined() && (sd.IsNull() || ResolveScalar(sd).is_null())) {
    state_dir = "";  // an explicit null means the default
  } else {
    r.String("state_dir", &state_dir);
  }
  state_dir = Trim(state_dir);
  if (state_dir.empty()) state_dir = "~/.cache/MMIRAGE/state_dir";
  lp->state_dir = ExpandUser(state_dir, vars);
  std::string legacy;
  if (r.String("output_dir", &legacy) && !legacy.empty())
    d->Warn(r.LocOf("output_dir"), "loading_params.output_dir is legacy and unused; set datasets[*].output_dir");
  lp->num_shards_loc = r.LocOf("num_shards");
  lp->shard_id_loc = r.LocOf("shard_id");
  ReadIntOrString(r, "num_shards", 1, &lp->num_shards);
  ReadIntOrString(r, "shard_id", 0, &lp->shard_id);
  ReadIntOrString(r, "batch_size", std::nullopt, &lp->batch_size);
  lp->batch_size = std::max<int64_t>(lp->batch_size, 1);
  r.Finish();
}

// ---- execution_params --------------------------------------------------------------------------------------------
void ReadExecution(Diag* d, const VarLookup& vars, const YAML::Node& node, ExecutionParams* e) {
  if (!node.IsDefined() || node.IsNull()) return;
  if (!node.IsMap()) {
    d->Error(node, "execution_params: expected a map, got " + Describe(node));
    return;
  }
  MapReader r(d, &vars, node, "execution_params");
  if (r.String("mode", &e->mode) && e->mode != "local" && e->mode != "slurm" && e->mode != "ray")
    d->Error(r.LocOf("mode"), "Invalid execution mode: '" + e->mode + "'. Must be 'local', 'slurm' or 'ray'.");
  ReadRay(d, vars, r.Get("ray"), e->mode == "ray", r.LocOf("mode"), &e->ray);
  r.Bool("retry", &e->retry);
  r.Bool("merge", &e->merge);
  if (r.Int("max_retries", &e->max_retries) && e->max_retries < 0)
    d->Error(r.LocOf("max_retries"), "max_retries must be >= 0, got " + std::to_string(e->max_retries));
  r.Int("poll_interval_seconds", &e->poll_interval_seconds);
  r.Int("settle_time_seconds", &e->settle_time_seconds);
  r.OptString("project_root", &e->project_root);
  r.String("report_dir", &e->report_dir);
  r.String("hf_home", &e->hf_home);
  r.OptString("edf_env", &e->edf_env);
  r.OptString("account", &e->account);
  if (r.String("job_name", &e->job_name)) {
    if (std::string why = UnsafePathComponent(e->job_name); !why.empty())
      d->Error(r.LocOf("job_name"),
               "execution_params.job_name '" + e->job_name + "' " + why + " (it names files in report_dir)");
  }
  r.OptString("reservation", &e->reservation);
  r.Int("nodes", &e->nodes);
  r.Int("ntasks_per_node", &e->ntasks_per_node);
  r.Int("gpus", &e->gpus);
  r.Int("cpus_per_task", &e->cpus_per_task);
  r.String("time_limit", &e->time_limit);
  if (r.Int("max_failed_rows", &e->max_failed_rows) && e->max_failed_rows < 0)
    d->Error(r.LocOf("max_failed_rows"), "max_failed_rows must be >= 0");
  if (r.OptDouble("max_cost_usd", &e->max_cost_usd) && e->max_cost_usd && !(*e->max_cost_usd > 0))
    d->Error(r.LocOf("max_cost_usd"), "max_cost_usd must be > 0");
  if (r.Int("local_workers", &e->local_workers) && e->local_workers < 1)
    d->Error(r.LocOf("local_workers"), "local_workers must be >= 1");
  ReadGpusPerWorker(r, e);
  if (r.OptInt("commit_every_rows", &e->commit_every_rows) && e->commit_every_rows && *e->commit_every_rows < 1)
    d->Error(r.LocOf("commit_every_rows"), "commit_every_rows must be >= 1");
  if (r.Double("commit_interval_seconds", &e->commit_interval_seconds) && e->commit_interval_seconds <= 0)
    d->Error(r.LocOf("commit_interval_seconds"), "commit_interval_seconds must be > 0");
  if (r.Double("heartbeat_timeout_seconds", &e->heartbeat_timeout_seconds) && e->heartbeat_timeout_seconds <= 0)
    d->Error(r.LocOf("heartbeat_timeout_seconds"), "heartbeat_timeout_seconds must be > 0");
  r.OptString("partition", &e->partition);
  r.OptString("qos", &e->qos);
  r.OptString("mem", &e->mem);
  if (r.OptInt("array_parallelism", &e->array_parallelism) && e->array_parallelism && *e->array_parallelism < 1)
    d->Error(r.LocOf("array_parallelism"), "array_parallelism must be >= 1");
  r.StringList("extra_sbatch_args", &e->extra_sbatch_args);
  r.OptString("mmirage_bin", &e->mmirage_bin);
  Value cache;
  if (r.AnyValue("cache", &cache)) {
    if (cache.is_bool()) cache = Value(cache.as_bool() ? "readwrite" : "off");  // YAML reads `off` as false
    if (cache.is_string() &&
        (cache.as_string() == "off" || cache.as_string() == "read" || cache.as_string() == "readwrite")) {
      e->cache = cache.as_string();
    } else {
      d->Error(r.LocOf("cache"), "execution_params.cache must be off, read or readwrite, got " + ToJson(cache));
    }
  }
  std::optional<std::string> cache_dir;
  if (r.OptString("cache_dir", &cache_dir) && cache_dir && !Trim(*cache_dir).empty()) {
    e->cache_dir = ExpandUser(Trim(*cache_dir), vars);
    if (!PathScheme(e->cache_dir).empty())  // SQLite files: they need a local (or shared POSIX) file system
      d->Error(r.LocOf("cache_dir"), "cache_dir must be a local directory, got " + e->cache_dir);
  }
  if (r.Double("cache_max_gb", &e->cache_max_gb) && !(e->cache_max_gb > 0))
    d->Error(r.LocOf("cache_max_gb"), "cache_max_gb must be > 0");
  if (e->mode == "slurm" && (!e->account || Trim(*e->account).empty()))
    d->Error(r.LocOf("mode"), "account is required when mode='slurm'");
  r.Finish();
}

}  // namespace

const Processor* Config::FindProcessor(const std::string& type) const {
  const Processor* found = nullptr;
  for (const auto& p : processors)
    if (p.type == type) found = &p;
  return found;
}

Result<Config> LoadConfigFromString(const std::string& yaml, const std::string& name, const LoadOptions& options) {
  VarLookup base_vars = options.vars ? options.vars : ProcessVarLookup();
  auto looked_up = std::make_shared<std::map<std::string, std::optional<std::string>>>();
  VarLookup vars = [base_vars, looked_up](const std::string& var) {
    auto value = base_vars(var);
    (*looked_up)[var] = value;  // recorded for the resume identity (Config::expanded_vars)
    return value;
  };
  Diag diag(name);
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    Loc loc{name, e.mark.is_null() ? 1 : e.mark.line + 1, e.mark.is_null() ? 1 : e.mark.column + 1};
    return Status::InvalidArgument(loc.ToString() + ": invalid YAML: " + e.msg);
  }
  Config c;
  c.path = name;
  c.fingerprint = Fnv1a64(yaml);
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);  // empty file = empty map
  if (!root.IsMap()) return Status::InvalidArgument(diag.LocOf(root).ToString() + ": the config must be a YAML map");
  // yaml-cpp throws on some node misuse (found by fuzz/fuzz_config): whatever slips through is a config error.
  try {
    if (std::string shape = CheckYamlShape(diag, root); !shape.empty()) return Status::InvalidArgument(shape);
    MapReader top(&diag, &vars, root, "");
    for (const char* req : {"processors", "loading_params", "processing_params"}) {
      if (!top.Has(req)) diag.Error(Loc{name, 1, 1}, std::string("missing required section '") + req + "'");
    }
    if (top.Has("processors")) ReadProcessors(&diag, vars, top.Get("processors"), &c);
    if (top.Has("loading_params")) ReadLoading(&diag, vars, top.Get("loading_params"), &c.loading);
    ReadExecution(&diag, vars, top.Get("execution_params"), &c.execution);
    if (c.execution.cache_dir.empty() && !PathScheme(c.loading.state_dir).empty()) {
      // A state directory in object storage: the cache's SQLite files stay on this machine's disk.
      c.execution.cache_dir = ExpandUser("~/.cache/mmirage/generation_cache", vars);
    }
    if (c.execution.cache_dir.empty()) {  // beside the state directory: the configs of one pipeline share it
      std::string sd = c.loading.state_dir;
      while (sd.size() > 1 && sd.back() == '/') sd.pop_back();
      size_t slash = sd.rfind('/');
      std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : sd.substr(0, slash);
      c.execution.cache_dir = parent + (parent == "/" ? "" : "/") + "generation_cache";
    }
    if (options.shard_id_override) c.loading.shard_id = *options.shard_id_override;
    if (top.Has("processing_params")) ReadProcessing(&diag, vars, yaml, top.Get("processing_params"), &c);
    top.OptString("tuned_by", &c.tuned_by);
    top.Get("processors");
    top.Get("loading_params");
    top.Get("processing_params");
    top.Finish();
    ValidateConfig(&diag, &c);
  } catch (const YAML::Exception& e) { return Status::InvalidArgument(name + ": invalid config: " + e.what()); }
  c.expanded_vars = *looked_up;
  c.warnings = std::move(diag.warnings);
  if (!diag.errors.empty()) {
    std::string msg;
    for (const auto& e : diag.errors) msg += (msg.empty() ? "" : "\n") + e;
    // Warnings travel with the errors (marked), so that a failing config still shows its typos.
    for (const auto& w : c.warnings) msg += "\nwarning: " + w;
    return Status::InvalidArgument(msg);
  }
  return c;
}

Result<Config> LoadConfig(const std::string& path, const LoadOptions& options) {
  Env* env = options.fs ? options.fs : Env::Default();
  auto text = env->ReadFileToString(path);
  if (!text.ok()) return text.status().WithContext("cannot read config file");
  return LoadConfigFromString(*text, path, options);
}

}  // namespace mmirage::config
