// The engine a config without `backend:` gets from its model (process/llm/engine_choice.h), with fake probes.
#include "process/llm/engine_choice.h"

#include <gtest/gtest.h>

#include "support/test_util.h"

namespace mmirage::process::llm {
namespace {

config::Processor Llm(const std::string& model, const std::string& backend = "") {
  config::Processor p;
  p.type = "llm";
  p.loc = {"c.yaml", 3, 5};
  p.llm.model_path = model;
  p.llm.backend = backend.empty() ? "llama" : backend;
  p.llm.backend_set = !backend.empty();
  return p;
}

struct Probe {
  bool sglang = false, vllm = false;
  std::vector<std::string> pythons;  // interpreters probed
  EngineProbes Fns() {
    return {[this](const std::string& py) {
              pythons.push_back(py);
              return sglang;
            },
            [this] { return vllm; }};
  }
};

config::VarLookup NoVars() {
  return [](const std::string&) { return std::optional<std::string>(); };
}

TEST(EngineChoiceTest, HubIdsAndModelDirectoriesAreHubModelsGgufFilesAreNot) {
  testing::TempDir d;
  Env* env = Env::Default();
  EXPECT_TRUE(IsHubModel(env, "Qwen/Qwen3-4B-Instruct-2507"));
  EXPECT_TRUE(IsHubModel(env, "meta-llama/Llama-3.1-8B"));
  EXPECT_FALSE(IsHubModel(env, "models/tiny.gguf"));
  EXPECT_FALSE(IsHubModel(env, "hf://Qwen/Qwen2.5-0.5B-Instruct-GGUF/q.gguf"));
  EXPECT_FALSE(IsHubModel(env, "none"));
  EXPECT_FALSE(IsHubModel(env, "/abs/owner/name"));
  EXPECT_FALSE(IsHubModel(env, "a/b/c"));
  testing::WriteFile(d.Path("hfdir/config.json"), "{}");
  testing::WriteFile(d.Path("stdir/model-00001.safetensors"), "x");
  testing::WriteFile(d.Path("empty/readme"), "x");
  testing::WriteFile(d.Path("own/file"), "x");
  EXPECT_TRUE(IsHubModel(env, d.Path("hfdir")));
  EXPECT_TRUE(IsHubModel(env, d.Path("stdir")));
  EXPECT_FALSE(IsHubModel(env, d.Path("empty")));
  EXPECT_FALSE(IsHubModel(env, d.Path("own/file")));
}

TEST(EngineChoiceTest, SglangFirstThenVllmWithTheInterpreterFromTheEnvironment) {
  Probe probe{true, true};
  auto c = ChooseEngine(Env::Default(), Llm("Qwen/Qwen3-4B"), probe.Fns(), NoVars());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->backend, "sglang");
  EXPECT_EQ(c->python, "python3");
  EXPECT_NE(c->reason.find("python3 can import sglang"), std::string::npos) << c->reason;

  probe.sglang = false;
  config::VarLookup vars = [](const std::string& k) {
    return k == "MMIRAGE_PYTHON" ? std::optional<std::string>("/opt/py/bin/python") : std::nullopt;
  };
  c = ChooseEngine(Env::Default(), Llm("Qwen/Qwen3-4B"), probe.Fns(), vars);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->backend, "vllm");
  EXPECT_NE(c->reason.find("vllm is on PATH"), std::string::npos) << c->reason;
  EXPECT_EQ(probe.pythons.back(), "/opt/py/bin/python");
}

TEST(EngineChoiceTest, NeitherEngineIsOneErrorNamingTheThreeRemedies) {
  Probe probe;
  auto c = ChooseEngine(Env::Default(), Llm("Qwen/Qwen3-4B"), probe.Fns(), NoVars());
  ASSERT_FALSE(c.ok());
  std::string m = c.status().message();
  EXPECT_EQ(m.rfind("c.yaml:3:5: ", 0), 0u) << m;
  EXPECT_NE(m.find("pip install sglang"), std::string::npos) << m;
  EXPECT_NE(m.find("pip install vllm"), std::string::npos) << m;
  EXPECT_NE(m.find("backend: openai"), std::string::npos) << m;
  EXPECT_NE(m.find("hf://<owner>/<repo>/<file>.gguf"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << "one line: " << m;
}

TEST(EngineChoiceTest, AWrittenBackendOrAGgufModelIsKeptWithoutProbing) {
  Probe probe{true, true};
  auto c = ChooseEngine(Env::Default(), Llm("Qwen/Qwen3-4B", "vllm"), probe.Fns(), NoVars());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->backend, "vllm");
  EXPECT_EQ(c->python, "python");
  c = ChooseEngine(Env::Default(), Llm("hf://o/r/m.gguf"), probe.Fns(), NoVars());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->backend, "llama");
  EXPECT_TRUE(probe.pythons.empty());
  std::string py;
  auto p = WithChosenEngine(Env::Default(), Llm("Qwen/Qwen3-4B"), probe.Fns(), NoVars(), &py);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->llm.backend, "sglang");
  EXPECT_EQ(py, "python3");
}

}  // namespace
}  // namespace mmirage::process::llm
