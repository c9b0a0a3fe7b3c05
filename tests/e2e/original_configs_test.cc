// End-to-end: the original MMIRAGE's twelve example configs (tests/fixtures/mmirage-2972ff6/configs, unchanged)
// validate from a copy of the original's tree, with the fake sglang package (tests/support/fake_sglang) importable,
// and config_mock.yaml, whose engine is SGLang, runs through the fake launcher (which execs llama-server on the
// synthetic model). The run's only substitution is the dataset's data: tests/mock_data/data.jsonl at the path the
// config names holds the original's first row only, so that the run stays short. The configs themselves are
// never edited. The two text batch_api configs run against the fake provider (tests/support/fake_batch_provider.py),
// reached the way the provider SDKs allow without editing a config: OPENAI_BASE_URL / ANTHROPIC_BASE_URL. The
// others run elsewhere (custom_test, image_gen_test, hf_io_test, vision_test) or need what this machine does not
// have (SLURM mode, a vision model, the vision configs' images, a diffusion server).
#include <unistd.h>

#include <gtest/gtest.h>

#include "e2e/batch_e2e_util.h"
#include "e2e/e2e_util.h"

namespace mmirage::testing {
namespace {

const std::string kSupport = std::string(MMIRAGE_SOURCE_DIR) + "/tests/support";
const std::string kFixtures = std::string(MMIRAGE_SOURCE_DIR) + "/tests/fixtures/mmirage-2972ff6";

const char* const kConfigs[] = {
    "config_benchmark_datatrove",
    "config_comprehensive",
    "config_image_gen_external",
    "config_image_gen_sglang",
    "config_mock",
    "config_mock_anthropic_batch",
    "config_mock_anthropic_batch_vision",
    "config_mock_custom_module",
    "config_mock_image_gen_local",
    "config_mock_openai_batch",
    "config_mock_openai_batch_vision",
    "config_mock_vision",
};

std::string LlamaServer() {
  std::string bin = MMIRAGE_BINARY;
  return bin.substr(0, bin.rfind('/')) + "/llama-server";
}

class OriginalConfigsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(RunCommand("cp -r '" + kFixtures + "/configs' '" + kFixtures + "/tests' '" + d_.path() + "/'").exit_code,
              0);
    // The vision configs' dataset (tests/fixtures/mock_vision holds the original's file).
    ASSERT_EQ(RunCommand("mkdir -p tests/mock_data_vision && cp '" + std::string(MMIRAGE_SOURCE_DIR) +
                             "/tests/fixtures/mock_vision/data.jsonl' tests/mock_data_vision/",
                         d_.path())
                  .exit_code,
              0);
  }
  // `mmirage args` in the copied tree, the fake sglang importable, HOME inside the tree.
  CommandResult Mmirage(const std::string& args) {
    return RunCommand("HOME='" + d_.path() + "' FAKE_SERVER_ARGV_LOG='" + d_.Path("argv.log") +
                          "' FAKE_LLAMA_SERVER='" + LlamaServer() + "' FAKE_MODEL='" + SharedTinyModel() +
                          "' MMIRAGE_PYTHON='" + PythonPath() + "' PYTHONPATH='" + kSupport +
                          "/fake_sglang' PATH=/usr/bin:/bin '" + MMIRAGE_BINARY + "' " + args,
                      d_.path());
  }
  TempDir d_;
};

TEST_F(OriginalConfigsTest, AllTwelveValidateUnchanged) {
  for (const char* name : kConfigs) {
    std::string path = std::string("configs/") + name + ".yaml";
    EXPECT_EQ(ReadFile(d_.Path(path)), ReadFile(kFixtures + "/" + path)) << name << " must stay unchanged";
    auto v = Mmirage("validate --config " + path);
    EXPECT_EQ(v.exit_code, 0) << name << ": " << v.err << v.out;
    EXPECT_NE(v.out.find(path + ": OK ("), std::string::npos) << v.out;
    // The llm configs name a Hugging Face model id: validate says it runs on the (fake) SGLang.
    std::string n = name;
    bool llm = n == "config_mock" || n == "config_comprehensive" || n == "config_mock_vision" ||
               n == "config_benchmark_datatrove";
    EXPECT_EQ(v.out.find("engine: sglang (model_path is a Hugging Face model id") != std::string::npos, llm)
        << name << ": " << v.out;
  }
}

TEST_F(OriginalConfigsTest, ConfigMockRunsOnTheFakeSglangLauncher) {
  ASSERT_EQ(::access(LlamaServer().c_str(), X_OK), 0) << "llama-server is not built: " << LlamaServer();
  ASSERT_FALSE(SharedTinyModel().empty()) << "cannot generate the synthetic model";
  auto rows = ReadLines(kFixtures + "/tests/mock_data/data.jsonl");
  ASSERT_EQ(rows.size(), 50u);
  WriteFile(d_.Path("tests/mock_data/data.jsonl"), rows[0] + "\n");
  auto r = Mmirage("run -q --config configs/config_mock.yaml");
  EXPECT_NE(ReadFile(d_.Path("argv.log")).find("-m sglang.launch_server --model-path Qwen/Qwen3-4B-Instruct-2507"),
            std::string::npos)
      << "the fake SGLang launcher was not used";
  // The synthetic model's text is seldom the JSON the config asks for: the row is answered either as a row of the
  // merged output (then the run succeeds) or as a row error (then the run fails for that reason only).
  auto errors = ReadLines(d_.Path("tests/output/data/shard_0/errors.jsonl"));
  if (r.exit_code == 0) {
    auto merged = CatLines(d_.Path("tests/output/data/merged"));
    ASSERT_EQ(merged.size(), 1u) << r.err;
    EXPECT_NE(merged[0].find("{\"conversations\":[{\"role\":\"user\",\"content\":"), std::string::npos) << merged[0];
    EXPECT_TRUE(errors.empty());
  } else {
    EXPECT_NE(r.err.find("1 row(s) failed (max_failed_rows=0)"), std::string::npos) << r.err;
    EXPECT_EQ(errors.size(), 1u);
  }
}

TEST_F(OriginalConfigsTest, TextBatchConfigsRunUnchangedAgainstTheFakeProvider) {
  auto rows = ReadLines(kFixtures + "/tests/mock_data/data.jsonl");
  ASSERT_EQ(rows.size(), 50u);
  WriteFile(d_.Path("tests/mock_data/data.jsonl"), rows[0] + "\n" + rows[1] + "\n" + rows[2] + "\n");
  struct Case {
    const char* config;
    const char* env;  // the key and the SDK's base-URL variable
    const char* out;
  };
  Provider prov = StartProvider(d_, {"--polls", "1"});
  ASSERT_NE(prov.child, nullptr);
  std::string base = "http://127.0.0.1:" + std::to_string(prov.port);
  for (const Case& c :
       {Case{"config_mock_openai_batch", "OPENAI_API_KEY=test-key OPENAI_BASE_URL=", "openai/v1"},
        Case{"config_mock_anthropic_batch", "ANTHROPIC_API_KEY=test-key ANTHROPIC_BASE_URL=", "anthropic"}}) {
    std::string url = std::string(c.out) == "openai/v1" ? base + "/v1" : base;
    std::string env = std::string(c.env) + url + " HOME='" + d_.Path(c.config) + "'";  // a state dir each
    std::string cfg = std::string("configs/") + c.config + ".yaml";
    auto r = Mm(env, "run -q --config " + cfg, d_.path());
    ASSERT_EQ(r.exit_code, 0) << c.config << ": " << r.err;
    int rc = 75;
    for (int i = 0; i < 10 && rc == 75; ++i) rc = Mm(env, "collect --config " + cfg, d_.path()).exit_code;
    ASSERT_EQ(rc, 0) << c.config;
    EXPECT_EQ(ReadFile(d_.Path(cfg)), ReadFile(kFixtures + "/" + cfg)) << "the config must stay unchanged";
  }
  // Both configs' rows were answered by the fake provider (its answers name the schema's fields), and it was asked
  // for each row once per config.
  for (const char* out : {"tests/output/data_openai_batch", "tests/output/data_anthropic_batch"}) {
    auto lines = CatLines(d_.Path(std::string(out) + "/shard_0"));
    ASSERT_EQ(lines.size(), 3u) << out;
    for (const auto& l : lines)
      EXPECT_NE(l.find("{\"role\":\"user\",\"content\":\"question about "), std::string::npos) << l;
  }
  auto created = CreatedIds(prov.log);
  EXPECT_EQ(created.size(), 3u);  // both configs name their requests alike: <output>-text-s<shard>-...-r<row>
  for (const auto& [id, n] : created) EXPECT_EQ(n, 2) << id;
}

}  // namespace
}  // namespace mmirage::testing
