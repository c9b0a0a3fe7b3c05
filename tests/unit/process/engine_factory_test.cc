// Config → OpenAI engine options and managed server commands (process/llm/engine_factory.h).
#include "process/llm/engine_factory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "util/process/subprocess.h"

#include "data/json.h"

namespace mmirage::process::llm {
namespace {

config::Processor Llm(const std::string& backend, const std::string& extra_json = "{}") {
  config::Processor p;
  p.type = "llm";
  p.llm.backend = backend;
  p.llm.model_path = "/models/m.gguf";
  p.llm.extra_engine_args = *ParseJson(extra_json);
  return p;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

config::VarLookup Vars(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

TEST(EngineFactoryTest, EndpointMapsToEngineOptionsWithTheKeyFromTheEnvironment) {
  config::Processor p = Llm("openai", R"({"max_running_requests": 48})");
  config::EndpointConfig ep;
  ep.base_url = "http://h:1/v1";
  ep.api_key_env = "MY_KEY";
  ep.mode = "completion";
  ep.timeout_seconds = 30;
  ep.max_retries = 3;
  ep.down_timeout_seconds = 9;
  p.llm.endpoint = ep;
  auto o = MapOpenAiEngineOptions(p, Vars({{"MY_KEY", "sk-1"}}));
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->base_url, "http://h:1/v1");
  EXPECT_EQ(o->api_key, "sk-1");
  EXPECT_EQ(o->mode, engine::OpenAiMode::kCompletion);
  EXPECT_EQ(o->max_concurrency, 48);  // from max_running_requests
  EXPECT_DOUBLE_EQ(o->timeout_seconds, 30);
  EXPECT_EQ(o->max_retries, 3);
  EXPECT_DOUBLE_EQ(o->down_timeout_seconds, 9);
  EXPECT_EQ(o->num_gpus, 0);

  p.llm.endpoint->max_concurrency = 5;
  EXPECT_EQ(MapOpenAiEngineOptions(p, Vars({{"MY_KEY", "k"}}))->max_concurrency, 5);
  p.llm.extra_engine_args = Value::EmptyObject();
  p.llm.endpoint->max_concurrency.reset();
  EXPECT_EQ(MapOpenAiEngineOptions(p, Vars({{"MY_KEY", "k"}}))->max_concurrency, 64);
}

TEST(EngineFactoryTest, AnUnsetKeyVariableIsAnErrorThatDoesNotLeakAnything) {
  config::Processor p = Llm("openai");
  p.llm.endpoint = config::EndpointConfig{};
  p.llm.endpoint->base_url = "http://h/v1";
  p.llm.endpoint->api_key_env = "MISSING";
  auto o = MapOpenAiEngineOptions(p, Vars({}));
  ASSERT_FALSE(o.ok());
  EXPECT_TRUE(o.status().IsInvalidArgument());
  EXPECT_NE(o.status().message().find("'MISSING', which is not set"), std::string::npos);
}

TEST(EngineFactoryTest, TheShardsThatRunAtOnceSplitTheRateLimits) {
  config::Processor p = Llm("openai");
  p.llm.endpoint = config::EndpointConfig{};
  p.llm.endpoint->base_url = "http://h/v1";
  EXPECT_EQ(MapOpenAiEngineOptions(p, Vars({}))->rate_limit_shares, 1);
  EXPECT_EQ(MapOpenAiEngineOptions(p, Vars({{kRateLimitSharesVar, "3"}}))->rate_limit_shares, 3);
  for (const char* bad : {"0", "-2", "x", "2x"}) {
    auto o = MapOpenAiEngineOptions(p, Vars({{kRateLimitSharesVar, bad}}));
    ASSERT_FALSE(o.ok()) << bad;
    EXPECT_NE(o.status().message().find("MMIRAGE_RATE_LIMIT_SHARES"), std::string::npos);
  }
}

TEST(EngineFactoryTest, LocalWorkersShareOneBudgetFilePerEndpointAndModel) {
  config::Processor p = Llm("openai");
  p.llm.endpoint = config::EndpointConfig{};
  p.llm.endpoint->base_url = "http://h/v1";
  p.llm.endpoint->model = "m1";
  EXPECT_EQ(MapOpenAiEngineOptions(p, Vars({}))->shared_budget_path, "");
  std::string a = MapOpenAiEngineOptions(p, Vars({{kSharedBudgetDirVar, "/run/x"}}))->shared_budget_path;
  EXPECT_EQ(a.rfind("/run/x/ratelimit_", 0), 0u) << a;
  EXPECT_EQ(MapOpenAiEngineOptions(p, Vars({{kSharedBudgetDirVar, "/run/x"}}))->shared_budget_path, a);
  p.llm.endpoint->model = "m2";  // another model has its own limits
  EXPECT_NE(MapOpenAiEngineOptions(p, Vars({{kSharedBudgetDirVar, "/run/x"}}))->shared_budget_path, a);
}

TEST(EngineFactoryTest, OpenAiBackendNeedsAnEndpoint) {
  EXPECT_TRUE(MapOpenAiEngineOptions(Llm("openai"), Vars({})).status().IsInvalidArgument());
  EXPECT_TRUE(MapOpenAiEngineOptions(Llm("llama-server"), Vars({})).ok());  // managed: filled in at start
}

TEST(EngineFactoryTest, SglangCommandCarriesServerArgsAndExtrasAsFlags) {
  config::Processor p = Llm("sglang", R"({"mem_fraction_static": 0.85, "enable_mixed_chunk": true,
                                          "disable_radix_cache": false, "max_running_requests": 128})");
  p.llm.model_path = "Qwen/Qwen3-4B";
  p.llm.tp_size = 2;
  auto argv = BuildServerCommand(p, 4321, p.llm.model_path, "/bin-dir");
  ASSERT_TRUE(argv.ok());
  EXPECT_EQ(Join(*argv),
            "python -m sglang.launch_server --model-path Qwen/Qwen3-4B --host 127.0.0.1 --port 4321 --tp-size 2 "
            "--trust-remote-code --mem-fraction-static 0.85 --enable-mixed-chunk --max-running-requests 128");
  EXPECT_EQ(MapOpenAiEngineOptions(p, Vars({}))->num_gpus, 2);
}

TEST(EngineFactoryTest, VllmCommandRenamesTheSglangKeys) {
  config::Processor p =
      Llm("vllm", R"({"max_running_requests": 64, "context_length": 8192, "gpu_memory_utilization": 0.9})");
  p.llm.trust_remote_code = false;
  auto argv = BuildServerCommand(p, 99, "/m", "");
  ASSERT_TRUE(argv.ok());
  EXPECT_EQ(Join(*argv),
            "vllm serve /m --host 127.0.0.1 --port 99 --tensor-parallel-size 1 --max-num-seqs 64 "
            "--max-model-len 8192 --gpu-memory-utilization 0.9");
}

TEST(EngineFactoryTest, LlamaServerCommandSizesSlotsAndContext) {
  config::Processor p = Llm("llama-server", R"({"max_running_requests": 4, "context_length": 512, "n_threads": 2,
                                                "prefix_reuse": true, "n_gpu_layers": 99})");
  auto argv = BuildServerCommand(p, 7, "/models/m.gguf", "/opt/mmirage/build");
  ASSERT_TRUE(argv.ok());
  EXPECT_EQ(Join(*argv),
            "/opt/mmirage/build/llama-server -m /models/m.gguf --host 127.0.0.1 --port 7 -np 4 "
            "-c 2048 --threads 2 --n-gpu-layers 99");
  config::Processor d = Llm("llama-server");
  EXPECT_EQ(Join(*BuildServerCommand(d, 7, "/m", "/b")),
            "/b/llama-server -m /m --host 127.0.0.1 --port 7 -np 8 -c 32768");
}

TEST(EngineFactoryTest, LlamaServerGetsTheProjectorAndOnlyTemplateFiles) {
  config::Processor p = Llm("llama-server");
  p.llm.mmproj_path = "/models/mmproj.gguf";
  p.llm.chat_template = "qwen2-vl";  // a name of the original's table: not one llama-server knows
  EXPECT_EQ(Join(*BuildServerCommand(p, 7, "/m", "/b")),
            "/b/llama-server -m /m --host 127.0.0.1 --port 7 -np 8 -c 32768 --mmproj /models/mmproj.gguf");
  p.llm.chat_template = "/t/vl.jinja";
  p.llm.mmproj_path = "auto";  // resolved by CreateManaged before the command is built
  EXPECT_EQ(Join(*BuildServerCommand(p, 7, "/m", "/b")),
            "/b/llama-server -m /m --host 127.0.0.1 --port 7 -np 8 -c 32768 --chat-template-file /t/vl.jinja");
  config::Processor v = Llm("vllm", R"({"image_cache_mib": 0})");
  v.llm.chat_template = "llava";
  EXPECT_EQ(Join(*BuildServerCommand(v, 7, "/m", "")),
            "vllm serve /m --host 127.0.0.1 --port 7 --tensor-parallel-size 1 --trust-remote-code");
}

TEST(EngineFactoryTest, AGivenServerCommandIsUsedVerbatimWithSubstitutions) {
  config::Processor p = Llm("sglang", R"({"ignored": 1})");
  p.llm.server_command = {"my-server", "--model={model_path}", "--port", "{port}"};
  EXPECT_EQ(Join(*BuildServerCommand(p, 5000, "/m", "")), "my-server --model=/m --port 5000");
  p.llm.server_command = {"exec my-server --port {port} --port2 {port}"};
  EXPECT_EQ(Join(*BuildServerCommand(p, 5000, "/m", "")), "/bin/sh -c exec my-server --port 5000 --port2 5000");
}

// Issue #13 item 8: in a one-string server_command, {model_path} (and {port}) reach the server verbatim, whatever
// the path holds and whatever quotes the user put around the placeholder; nothing in the path runs.
TEST(EngineFactoryTest, OneStringServerCommandQuotesSubstitutedValuesForTheShell) {
  char tmpl[] = "/tmp/mmirage_quote_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  std::string pwned = dir + "/pwned";
  std::string model = dir + "/my models/it's \"$(touch " + pwned + ")\" `touch " + pwned + "` $HOME \\ end";
  config::Processor p = Llm("vllm");
  for (std::string cmd : {"printf '%s\\n' {model_path} {port}", "printf '%s\\n' \"{model_path}\" \"{port}\"",
                          "printf '%s\\n' '{model_path}' '{port}'", "printf '%s\\n' --model={model_path} x{port}"}) {
    p.llm.server_command = {cmd};
    auto argv = BuildServerCommand(p, 5000, model, "");
    ASSERT_TRUE(argv.ok());
    ASSERT_EQ(argv->size(), 3u);
    EXPECT_EQ((*argv)[0], "/bin/sh");
    auto r = RunCommandCapture(*argv, 10);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->exit_code, 0) << cmd << " → " << (*argv)[2] << ": " << r->err;
    bool prefixed = cmd.find("--model=") != std::string::npos;
    EXPECT_EQ(r->out, (prefixed ? "--model=" : "") + model + "\n" + (prefixed ? "x" : "") + "5000\n")
        << cmd << " → " << (*argv)[2];
    EXPECT_NE(::access(pwned.c_str(), F_OK), 0) << "the model path ran a command: " << (*argv)[2];
  }
  ::unlink(pwned.c_str());
  ::rmdir(tmpl);
}

}  // namespace
}  // namespace mmirage::process::llm
