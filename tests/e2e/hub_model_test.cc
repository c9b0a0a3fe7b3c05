// End-to-end: a config that names a Hugging Face model id (as the original's configs do) and no `backend:` runs
// on a managed SGLang server when python can import sglang, else on vLLM when `vllm` is on PATH, else fails before
// any row with the remedies. The fake sglang package and vllm launcher (tests/support/fake_sglang, fake_vllm) log
// their command line and exec llama-server on the synthetic model.
#include <unistd.h>

#include <gtest/gtest.h>

#include <regex>

#include "e2e/e2e_util.h"
#include "e2e/fake_launchers.h"

namespace mmirage::testing {
namespace {

const std::string kFixtures = std::string(MMIRAGE_SOURCE_DIR) + "/tests/fixtures/mmirage-2972ff6";
const std::string& kHubId = kFakeHubId;

std::string Config(const TempDir& d) {
  return "processors:\n"
         "  - type: llm\n"
         "    server_args: {model_path: " +
         kHubId +
         ", tp_size: 1, disable_custom_all_reduce: true}\n"
         "    default_sampling_params: {temperature: 0, max_new_tokens: 8}\n" +
         SummariseDataYaml(d) +
         "  remove_columns: true\n"
         "execution_params: {max_failed_rows: 3}\n";
}

class HubModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::access(BuiltLlamaServer().c_str(), X_OK), 0) << "llama-server is not built: " << BuiltLlamaServer();
    ASSERT_FALSE(SharedTinyModel().empty()) << "cannot generate the synthetic model";
    WriteFile(d_.Path("data.jsonl"), MakeRows(3));
    WriteFile(d_.Path("c.yaml"), Config(d_));
  }
  // Environment assignments for the fakes, then `mmirage args`.
  CommandResult Mmirage(const std::string& env, const std::string& args) { return RunWithFakeLaunchers(d_, env, args); }
  // The synthetic model's greedy text is sometimes invalid UTF-8, which llama-server answers with HTTP 500: such a
  // row is a row error, still an answered row.
  void ExpectEveryRowAnswered() {
    size_t rows = ReadLines(d_.Path("out/shard_0/data.jsonl")).size();
    EXPECT_GE(rows, 1u);
    EXPECT_EQ(rows + ReadLines(d_.Path("out/shard_0/errors.jsonl")).size(), 3u);
  }
  // `run` with `env`: every row answered, the cache keyed on the server's model (no "cache off" warning); returns
  // the command lines the fake launchers logged.
  std::string RunAndReadServerCommand(const std::string& env) {
    auto r = Mmirage(env, "run -q --config c.yaml");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    ExpectEveryRowAnswered();
    EXPECT_EQ(r.err.find("generation cache off"), std::string::npos) << r.err;
    return ReadFile(d_.Path("argv.log"));
  }
  TempDir d_;
};

TEST_F(HubModelTest, PythonWithSglangRunsAManagedSglangServer) {
  std::string env = FakeSglangEnv();
  // The original's own config validates unchanged and says which engine it will use.
  auto v = Mmirage(env, "validate --config '" + kFixtures + "/configs/config_mock.yaml'");
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("engine: sglang (model_path is a Hugging Face model id and " + PythonPath() +
                       " can import sglang: a managed SGLang server)"),
            std::string::npos)
      << v.out;
  std::string log = RunAndReadServerCommand(env);
  EXPECT_TRUE(std::regex_search(log, std::regex("-m sglang.launch_server --model-path " + kHubId +
                                                " --host 127.0.0.1 --port [0-9]+ --tp-size 1 "
                                                "--trust-remote-code --disable-custom-all-reduce\n$")))
      << log;
}

TEST_F(HubModelTest, WithoutSglangAVllmOnPathRunsAManagedVllmServer) {
  std::string env = FakeVllmEnv();
  auto p = Mmirage(env, "preview -n 1 --config c.yaml");
  EXPECT_NE(p.err.find("engine: vllm (model_path is a Hugging Face model id, sglang is not importable and vllm is "
                       "on PATH: a managed vLLM server)"),
            std::string::npos)
      << p.err;
  std::string log = RunAndReadServerCommand(env);
  EXPECT_TRUE(std::regex_match(log, std::regex("vllm serve " + kHubId +
                                               " --host 127.0.0.1 --port [0-9]+ --tensor-parallel-size 1 "
                                               "--trust-remote-code --disable-custom-all-reduce\n")))
      << log;
}

TEST_F(HubModelTest, NeitherEngineFailsBeforeAnyRowWithTheRemedies) {
  std::string env = "MMIRAGE_PYTHON=/bin/false PATH=/usr/bin:/bin";
  auto v = Mmirage(env, "validate --config c.yaml");
  ASSERT_EQ(v.exit_code, 0) << v.err;  // a valid config; another machine may have the engine
  EXPECT_NE(v.out.find("engine: none available here"), std::string::npos) << v.out;
  auto r = Mmirage(env, "run -q --config c.yaml");
  EXPECT_NE(r.exit_code, 0);
  for (const char* remedy : {"pip install sglang", "pip install vllm", "backend: openai", "hf://<owner>/<repo>/"})
    EXPECT_NE(r.err.find(remedy), std::string::npos) << remedy << " missing in: " << r.err;
  EXPECT_FALSE(Exists(d_.Path("out/shard_0"))) << "no row may be written";
  EXPECT_FALSE(Exists(d_.Path("argv.log"))) << "no server may start";
}

}  // namespace
}  // namespace mmirage::testing
