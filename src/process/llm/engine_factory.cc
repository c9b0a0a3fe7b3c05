#include "process/llm/engine_factory.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>

#include "data/json.h"
#include "process/llm/engine_choice.h"
#include "process/llm/fleet_factory.h"
#include "process/llm/mmproj.h"
#include "process/llm/model_ref.h"
#include "util/env.h"
#include "util/fnv.h"
#include "util/hex.h"
#include "util/log.h"
#include "util/net.h"
#include "util/process/process_info.h"

namespace mmirage::process::llm {
namespace {

constexpr int64_t kDefaultMaxConcurrency = 64;
constexpr int64_t kAutoMaxConcurrency = 256;  // the ceiling of `max_concurrency: auto`
constexpr int64_t kDefaultLlamaServerSlots = 8;
constexpr int64_t kDefaultCtxPerSlot = 4096;

bool IsManaged(const std::string& backend) {
  return backend == "sglang" || backend == "vllm" || backend == "llama-server";
}

std::string Where(const config::Processor& p) { return p.loc.ToString() + ": processor 'llm'"; }

std::optional<int64_t> IntArg(const Value& extra, const char* key) {
  const Value* v = extra.is_object() ? extra.Find(key) : nullptr;
  if (v == nullptr) return std::nullopt;
  if (v->is_int()) return v->as_int();
  if (v->is_double() && std::floor(v->as_double()) == v->as_double()) return static_cast<int64_t>(v->as_double());
  return std::nullopt;
}

std::string Substitute(std::string s, const std::string& key, const std::string& value) {
  for (size_t pos = s.find(key); pos != std::string::npos; pos = s.find(key, pos + value.size()))
    s.replace(pos, key.size(), value);
  return s;
}

// `value` as it must be written at this point of a shell command to stand for itself, by the quoting in force
// there: outside quotes one single-quoted word ('it'\''s'); inside '…' the same with the quote closed and
// reopened around each "'"; inside "…" with $ ` " \ escaped.
std::string ShellQuoted(const std::string& value, char quote) {
  bool plain = !value.empty();
  for (unsigned char c : value) plain = plain && (std::isalnum(c) || std::strchr("_./:=@%+,-", c) != nullptr);
  if (plain) return value;  // nothing the shell would read differently (a port, most paths)
  std::string out;
  if (quote == '"') {
    for (char c : value) {
      if (c == '$' || c == '`' || c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    return out;
  }
  if (quote == 0) out.push_back('\'');
  for (char c : value) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  if (quote == 0) out.push_back('\'');
  return out;
}

// A one-string server_command with {port} and {model_path} replaced, each by a value the shell reads back
// verbatim (a model path with spaces, quotes or $(…) neither splits nor runs), whatever quotes the user put
// around the placeholder. The quote state is tracked as sh does: '…' literal, "…" with \ escapes, \ outside.
std::string SubstituteForShell(const std::string& cmd, const std::vector<std::pair<std::string, std::string>>& vars) {
  std::string out;
  char quote = 0;
  for (size_t i = 0; i < cmd.size();) {
    bool replaced = false;
    for (const auto& [key, value] : vars) {
      if (cmd.compare(i, key.size(), key) == 0) {
        out += ShellQuoted(value, quote);
        i += key.size();
        replaced = true;
        break;
      }
    }
    if (replaced) continue;
    char c = cmd[i];
    out.push_back(c);
    ++i;
    if (c == '\\' && quote != '\'' && i < cmd.size()) {
      out.push_back(cmd[i++]);  // an escaped character, quote or not
    } else if (quote == 0 && (c == '\'' || c == '"')) {
      quote = c;
    } else if (quote != 0 && c == quote) {
      quote = 0;
    }
  }
  return out;
}

std::string ScalarText(const Value& v) {
  if (v.is_string()) return v.as_string();
  if (v.is_int()) return std::to_string(v.as_int());
  if (v.is_double()) return FormatDouble(v.as_double());
  if (v.is_bool()) return v.as_bool() ? "true" : "false";
  return ToJson(v);
}

// `--key-with-dashes value` for one extra_engine_args entry.
void AppendFlag(const std::string& key, const Value& v, std::vector<std::string>* argv) {
  std::string flag = "--" + key;
  for (char& c : flag)
    if (c == '_') c = '-';
  if (v.is_null() || (v.is_bool() && !v.as_bool())) return;
  argv->push_back(flag);
  if (v.is_bool()) return;
  if (v.is_array()) {
    for (const auto& e : v.as_array()) argv->push_back(ScalarText(e));
  } else {
    argv->push_back(ScalarText(v));
  }
}

// <state_dir>/shard_<id>/server.log, or server_<replica>.log for a replica of a fleet.
std::string ShardLogPath(const EngineFactoryOptions& o, int replica) {
  return JoinPath(JoinPath(o.state_dir.empty() ? "." : o.state_dir, "shard_" + std::to_string(o.shard_id)),
                  replica < 0 ? "server.log" : "server_" + std::to_string(replica) + ".log");
}

std::string LlamaServerDir() {
  auto self = SelfExecutablePath();
  if (!self.ok()) return "";
  size_t slash = self->rfind('/');
  return slash == std::string::npos ? "." : self->substr(0, slash);
}

Result<std::unique_ptr<engine::Engine>> CreateOpenAi(const config::Processor& p, const EngineFactoryOptions& fo) {
  MMIRAGE_ASSIGN_OR_RETURN(engine::OpenAiEngineOptions o, MapOpenAiEngineOptions(p, fo.vars));
  if (p.llm.endpoint && !p.llm.endpoint->base_urls.empty()) return CreateUrlFleet(p, o);
  auto e = engine::CreateOpenAiEngine(o);
  if (!e.ok()) return e.status().WithContext(Where(p));
  return e;
}

// The managed server of replica `index` (-1: the only one) on a fresh port, pinned to `gpus` unless "".
Result<engine::ManagedServerOptions> ManagedOptions(const config::Processor& p, const EngineFactoryOptions& fo,
                                                    const std::string& model, const std::string& python, int index,
                                                    const std::string& gpus) {
  auto port = FindFreeLoopbackPort();
  if (!port.ok()) return port.status().WithContext(Where(p));
  auto argv = BuildServerCommand(p, *port, model, LlamaServerDir());
  if (!argv.ok()) return argv.status();
  if (p.llm.backend == "sglang" && p.llm.server_command.empty() && !argv->empty()) (*argv)[0] = python;
  engine::ManagedServerOptions so;
  so.name = p.llm.backend;
  so.argv = std::move(*argv);
  so.port = *port;
  so.log_path = ShardLogPath(fo, index);
  so.startup_timeout_seconds = p.llm.server_startup_timeout_seconds;
  if (!gpus.empty()) so.env_overrides.emplace_back("CUDA_VISIBLE_DEVICES", gpus);
  return so;
}

Result<std::unique_ptr<engine::Engine>> LaunchManaged(const config::Processor& p, const EngineFactoryOptions& fo,
                                                      const std::string& model, const std::string& python,
                                                      const engine::OpenAiEngineOptions& eo) {
  MMIRAGE_ASSIGN_OR_RETURN(engine::ManagedServerOptions so, ManagedOptions(p, fo, model, python, -1, ""));
  auto e = engine::CreateManagedServerEngine(so, eo);
  if (!e.ok()) return e.status().WithContext(Where(p));
  return e;
}

Result<std::unique_ptr<engine::Engine>> CreateManaged(const config::Processor& p, const EngineFactoryOptions& fo,
                                                      const std::string& python) {
  MMIRAGE_ASSIGN_OR_RETURN(engine::OpenAiEngineOptions eo, MapOpenAiEngineOptions(p, fo.vars));
  std::string model = p.llm.model_path;
  if (p.llm.backend == "llama-server" && IsHfModelRef(model)) {
    auto local = ResolveModelPath(Env::Default(), model, fo.vars);
    if (!local.ok()) return local.status().WithContext(Where(p));
    model = *local;
  }
  config::Processor resolved = p;
  if (p.llm.backend == "llama-server" && p.llm.server_command.empty()) {
    auto mmproj = ResolveMmprojPath(Env::Default(), model, p.llm.mmproj_path, fo.vars);
    if (!mmproj.ok()) return mmproj.status().WithContext(Where(p));
    resolved.llm.mmproj_path = *mmproj;
  }
  if (!p.llm.replicas_auto && p.llm.replicas == 1) return LaunchManaged(resolved, fo, model, python, eo);
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<std::string> slices, ReplicaGpuSlices(p, VisibleGpus(fo.vars)));
  auto server_for = [resolved, fo, model, python](int index, const std::string& gpus) {
    return ManagedOptions(resolved, fo, model, python, index, gpus);
  };
  return CreateManagedFleet(p, slices, server_for, ReplicaEngineOptions(eo));
}

}  // namespace

Result<engine::OpenAiEngineOptions> MapOpenAiEngineOptions(const config::Processor& p, const config::VarLookup& vars) {
  engine::OpenAiEngineOptions o;
  const config::LlmProcessor& llm = p.llm;
  if (!llm.endpoint && (llm.backend == "openai" || llm.backend == "anthropic"))
    return Status::InvalidArgument(Where(p) + ": backend '" + llm.backend +
                                   "' needs an 'endpoint:' block with base_url");
  config::EndpointConfig ep = llm.endpoint.value_or(config::EndpointConfig{});
  o.base_url = ep.base_url;
  if (llm.backend == "anthropic") {
    o.api = engine::HttpApi::kAnthropic;
    o.anthropic_version = ep.anthropic_version;
    o.system_prompt = ep.system_prompt;
  }
  o.model = ep.model;
  o.mode = ep.mode == "completion" ? engine::OpenAiMode::kCompletion : engine::OpenAiMode::kChat;
  o.max_concurrency = static_cast<int>(ep.max_concurrency.value_or(
      IntArg(llm.extra_engine_args, "max_running_requests").value_or(kDefaultMaxConcurrency)));
  o.max_concurrency = std::max(1, o.max_concurrency);
  if (ep.max_concurrency_auto) {
    o.adaptive_concurrency = true;
    o.max_concurrency =
        static_cast<int>(IntArg(llm.extra_engine_args, "max_running_requests").value_or(kAutoMaxConcurrency));
  }
  o.requests_per_minute = ep.requests_per_minute.value_or(0);
  o.tokens_per_minute = ep.tokens_per_minute.value_or(0);
  config::VarLookup lookup = vars ? vars : config::ProcessVarLookup();
  // Set by the executor that starts several shards at once (local workers, a SLURM array): they split the limits.
  if (std::optional<std::string> shares = lookup(kRateLimitSharesVar); shares && !shares->empty()) {
    char* end = nullptr;
    long n = std::strtol(shares->c_str(), &end, 10);
    if (*end != 0 || n < 1 || n > 1000000)
      return Status::InvalidArgument(std::string(kRateLimitSharesVar) + "='" + *shares +
                                     "': expected a whole number >= 1");
    o.rate_limit_shares = static_cast<int>(n);
  }
  if (std::optional<std::string> dir = lookup(kSharedBudgetDirVar); dir && !dir->empty())
    o.shared_budget_path = *dir + "/ratelimit_" + Hex64(Fnv1a64(o.model, Fnv1a64(o.base_url + "\n")));
  o.timeout_seconds = ep.timeout_seconds;
  o.max_retries = static_cast<int>(ep.max_retries);
  o.down_timeout_seconds = ep.down_timeout_seconds;
  o.num_gpus = llm.backend == "sglang" || llm.backend == "vllm" ? std::max(1, llm.tp_size) : 0;
  if (!ep.api_key_env.empty()) {
    std::optional<std::string> key = lookup(ep.api_key_env);
    if (!key || key->empty()) {
      return Status::InvalidArgument(Where(p) + ": endpoint.api_key_env names the environment variable '" +
                                     ep.api_key_env + "', which is not set");
    }
    o.api_key = *key;
  }
  return o;
}

Result<std::vector<std::string>> BuildServerCommand(const config::Processor& p, int port, const std::string& model,
                                                    const std::string& llama_server_dir) {
  const config::LlmProcessor& llm = p.llm;
  std::string port_s = std::to_string(port);
  std::vector<std::string> argv;
  if (!llm.server_command.empty()) {
    if (llm.server_command.size() == 1) {
      return std::vector<std::string>{
          "/bin/sh", "-c", SubstituteForShell(llm.server_command[0], {{"{port}", port_s}, {"{model_path}", model}})};
    }
    for (const auto& a : llm.server_command)
      argv.push_back(Substitute(Substitute(a, "{port}", port_s), "{model_path}", model));
    return argv;
  }
  const Value& extra = llm.extra_engine_args;
  std::set<std::string> consumed;
  std::string tp = std::to_string(std::max(1, llm.tp_size));
  if (llm.backend == "sglang") {
    argv = {"python",    "-m", "sglang.launch_server", "--model-path", model, "--host", "127.0.0.1", "--port", port_s,
            "--tp-size", tp};
    if (llm.trust_remote_code) argv.push_back("--trust-remote-code");
    if (llm.disable_custom_all_reduce) argv.push_back("--disable-custom-all-reduce");
    if (!llm.chat_template.empty()) argv.insert(argv.end(), {"--chat-template", llm.chat_template});
  } else if (llm.backend == "vllm") {
    argv = {"vllm", "serve", model, "--host", "127.0.0.1", "--port", port_s, "--tensor-parallel-size", tp};
    if (llm.trust_remote_code) argv.push_back("--trust-remote-code");
    if (llm.disable_custom_all_reduce) argv.push_back("--disable-custom-all-reduce");
    // vllm's --chat-template takes a file (or template text), not the template names MMIRAGE configs use.
    if (llm.chat_template.find('/') != std::string::npos)
      argv.insert(argv.end(), {"--chat-template", llm.chat_template});
    if (auto n = IntArg(extra, "max_running_requests")) argv.insert(argv.end(), {"--max-num-seqs", std::to_string(*n)});
    if (auto n = IntArg(extra, "context_length")) argv.insert(argv.end(), {"--max-model-len", std::to_string(*n)});
    consumed = {"max_running_requests", "context_length"};
  } else if (llm.backend == "llama-server") {
    int64_t slots = std::max<int64_t>(
        1,
        IntArg(extra, "max_running_requests").value_or(IntArg(extra, "n_parallel").value_or(kDefaultLlamaServerSlots)));
    int64_t per_slot =
        IntArg(extra, "context_length").value_or(IntArg(extra, "n_ctx_seq").value_or(kDefaultCtxPerSlot));
    int64_t ctx = IntArg(extra, "n_ctx").value_or(per_slot * slots);
    argv = {JoinPath(llama_server_dir.empty() ? "." : llama_server_dir, "llama-server"),
            "-m",
            model,
            "--host",
            "127.0.0.1",
            "--port",
            port_s,
            "-np",
            std::to_string(slots),
            "-c",
            std::to_string(ctx)};
    // A template file is passed on; a name (qwen2-vl, llava, ... in MMIRAGE configs) is not one llama-server knows:
    // the GGUF's own template is used.
    if (!llm.chat_template.empty() && llm.chat_template.find('/') != std::string::npos)
      argv.insert(argv.end(), {"--chat-template-file", llm.chat_template});
    if (!llm.mmproj_path.empty() && llm.mmproj_path != kMmprojAuto)
      argv.insert(argv.end(), {"--mmproj", llm.mmproj_path});
    static const std::vector<std::pair<const char*, const char*>> kRenames = {{"n_batch", "--batch-size"},
                                                                              {"chunked_prefill_size", "--batch-size"},
                                                                              {"n_ubatch", "--ubatch-size"},
                                                                              {"n_threads", "--threads"},
                                                                              {"random_seed", "--seed"}};
    for (const auto& [key, flag] : kRenames) {
      if (const Value* v = extra.is_object() ? extra.Find(key) : nullptr)
        argv.insert(argv.end(), {flag, ScalarText(*v)});
      consumed.insert(key);
    }
    consumed.insert({"max_running_requests", "n_parallel", "context_length", "n_ctx_seq", "n_ctx", "prefix_reuse",
                     "min_prefix_tokens", "batch_barrier"});
  } else {
    return Status::InvalidArgument(Where(p) + ": backend '" + llm.backend + "' does not start a server");
  }
  consumed.insert({"tp_size", "model_path", "image_cache_mib"});
  if (extra.is_object()) {
    for (const auto& [k, v] : extra.as_object())
      if (!consumed.count(k)) AppendFlag(k, v, &argv);
  }
  return argv;
}

Status CheckBackendRunnable(const config::Processor& processor) {
  MMIRAGE_ASSIGN_OR_RETURN(config::Processor p,
                           WithChosenEngine(Env::Default(), processor, SystemEngineProbes(), nullptr, nullptr));
  const std::string& backend = p.llm.backend;
  if (backend == "openai" || backend == "anthropic" || backend == "sglang" || backend == "vllm")
    return Status::OK();  // checked at start
  if (backend != "llama" && backend != "llama-server")
    return Status::InvalidArgument(Where(p) + ": unknown backend '" + backend + "'");
  if (backend == "llama-server" && p.llm.server_command.empty()) {
    std::string bin = JoinPath(LlamaServerDir(), "llama-server");
    if (!Env::Default()->IsRegularFile(bin)) {
      return Status::NotFound(Where(p) + ": backend 'llama-server' needs " + bin +
                              " (built by scripts/setup.sh), or a server_command");
    }
  }
  if (IsHfModelRef(p.llm.model_path)) {
    Status ref = ParseHfModelRef(p.llm.model_path).status();  // well-formed; downloaded at load
    if (!ref.ok()) return ref.WithContext(p.loc.ToString() + ": server_args.model_path");
  } else if (!Env::Default()->IsRegularFile(p.llm.model_path)) {
    if (backend == "llama-server" && !p.llm.server_command.empty()) return Status::OK();  // the command decides
    return Status::NotFound(p.loc.ToString() + ": model file not found: '" + p.llm.model_path +
                            "' (server_args.model_path must name a GGUF file)");
  }
  return Status::OK();
}

EngineFactory DefaultEngineFactory(EngineFactoryOptions options) {
  return [options](const config::Processor& p,
                   std::vector<std::string>* warnings) -> Result<std::unique_ptr<engine::Engine>> {
    std::string python;
    auto chosen = WithChosenEngine(Env::Default(), p, SystemEngineProbes(), options.vars, &python);
    if (!chosen.ok()) return chosen.status();
    const std::string& backend = chosen->llm.backend;
    if (backend == "llama") return LlamaEngineFactory()(p, warnings);
    if (backend == "openai" || backend == "anthropic") return CreateOpenAi(p, options);
    if (IsManaged(backend)) return CreateManaged(*chosen, options, python);
    return Status::InvalidArgument(Where(p) + ": unknown backend '" + backend + "'");
  };
}

}  // namespace mmirage::process::llm
