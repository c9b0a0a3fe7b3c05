// End-to-end: `mmirage run` with image inputs on the synthetic VLM (`mmirage-make-test-model --vlm`: a tiny qwen2
// model and a LLaVA MLP projector, 16 image tokens per image), on the embedded engine and through a managed
// llama-server (--mmproj), and the original's config_mock_vision.yaml (tests/fixtures/mock_vision, commit 2972ff6)
// unchanged but for model_path.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "data/json.h"
#include "e2e/e2e_util.h"
#include "util/base64.h"

namespace mmirage::testing {
namespace {

constexpr int kImageTokens = 16;

struct VlmFiles {
  TempDir dir;
  std::string model_dir, error;
};

// The VLM (model.gguf + mmproj-model.gguf in one folder), made once per test binary.
const VlmFiles& Vlm() {
  static VlmFiles f;  // its folder is removed at exit
  static const bool made = [] {
    f.model_dir = f.dir.Path("vlm");
    auto r = RunCommand("'" + MakeTestModelTool() + "' --vlm --seed 11 --out '" + f.model_dir + "'");
    if (r.exit_code != 0) f.error = "mmirage-make-test-model --vlm failed: " + r.err;
    return true;
  }();
  (void)made;
  return f;
}

// Synthetic images under the original's names (PNG data: the engines sniff the format from the bytes).
void WriteImages(const std::string& dir) {
  const char* names[] = {"cat.jpg", "dog.jpg", "mountain.jpg", "beach.jpg"};
  for (int i = 0; i < 4; ++i) {
    auto r = RunCommand("'" + MakeTestModelTool() + "' --png '" + dir + "/" + names[i] + "' --seed " +
                        std::to_string(i + 1));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
}

std::string Base64(const std::string& bytes) {
  std::string out;
  AppendBase64(bytes, &out);
  return out;
}

std::map<int64_t, Value> ByRowIndex(const std::vector<std::string>& lines, const char* key) {
  std::map<int64_t, Value> m;
  for (const auto& l : lines) {
    auto v = ParseJson(l);
    EXPECT_TRUE(v.ok()) << l;
    if (v.ok()) m[v->Find(key)->as_int()] = *v;
  }
  return m;
}

class VisionE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Vlm().error.empty()) << Vlm().error;
    WriteImages(d_.Path("imgs"));
    if (HasFatalFailure()) return;
    const std::string png = ReadFile(d_.Path("imgs/mountain.jpg"));
    WriteFile(d_.Path("imgs/corrupt.jpg"), png.substr(0, 45));
    const std::string q = "What is shown?";
    WriteFile(d_.Path("data.jsonl"), "{\"id\":0,\"photo\":\"cat.jpg\",\"q\":\"" + q +
                                         "\"}\n"
                                         "{\"id\":1,\"photo\":\"" +
                                         d_.Path("imgs/dog.jpg") + "\",\"detail\":\"file://" +
                                         d_.Path("imgs/mountain.jpg") + "\",\"q\":\"" + q +
                                         "\"}\n"
                                         "{\"id\":2,\"photo\":\"data:image/png;base64," +
                                         Base64(ReadFile(d_.Path("imgs/beach.jpg"))) + "\",\"q\":\"" + q +
                                         "\"}\n"
                                         "{\"id\":3,\"photo\":{\"bytes\":\"" +
                                         Base64(ReadFile(d_.Path("imgs/cat.jpg"))) +
                                         "\",\"path\":\"cat.jpg\"},\"q\":\"" + q +
                                         "\"}\n"
                                         "{\"id\":4,\"q\":\"" +
                                         q +
                                         "\"}\n"
                                         "{\"id\":5,\"photo\":\"corrupt.jpg\",\"q\":\"" +
                                         q +
                                         "\"}\n"
                                         "{\"id\":6,\"photo\":\"missing.jpg\",\"q\":\"" +
                                         q +
                                         "\"}\n"
                                         "{\"id\":7,\"photo\":{\"bytes\":null,\"path\":null},\"q\":\"" +
                                         q + "\"}\n");
  }

  std::string Config(const std::string& backend_lines, const std::string& outputs) const {
    return "processors:\n"
           "  - type: llm\n" +
           backend_lines +
           "    default_sampling_params: {temperature: 0, max_new_tokens: 16}\n"
           "loading_params:\n"
           "  datasets: [{type: JSONL, path: " +
           d_.Path("data.jsonl") + ", output_dir: " + d_.Path("out") + ", image_base_path: " + d_.Path("imgs") +
           ", output_format: jsonl}]\n"
           "  state_dir: " +
           d_.Path("state") +
           "\n"
           "processing_params:\n"
           "  inputs:\n"
           "    - {name: photo, key: photo, type: image, optional: true}\n"
           "    - {name: detail, key: detail, type: image, optional: true}\n"
           "    - {name: q, key: q}\n"
           "    - {name: id, key: id}\n"
           "  outputs:\n" +
           outputs +
           "  remove_columns: true\n"
           "  output_schema: {id: \"{{ id }}\", caption: \"{{ caption }}\"}\n"
           "execution_params: {max_failed_rows: 8}\n";
  }

  // One sequence per engine: batched greedy decoding is not bitwise batch-invariant, and rows 0 and 3 (the same
  // pixels) are compared.
  // Checks the outputs common to both engines: rows 0-4 and 7 written, 5 (corrupt) and 6 (missing) listed.
  void CheckRun(int images_per_output) {
    auto rows = ByRowIndex(ReadLines(d_.Path("out/shard_0/data.jsonl")), "id");
    auto errors = ByRowIndex(ReadLines(d_.Path("out/shard_0/errors.jsonl")), "row_index");
    auto usage = ByRowIndex(ReadLines(d_.Path("out/shard_0/usage.jsonl")), "row_index");
    for (int64_t id : {0, 1, 2, 3, 4, 7}) {
      ASSERT_TRUE(rows.count(id)) << "row " << id
                                  << " missing; errors: " << ReadFile(d_.Path("out/shard_0/errors.jsonl"));
      EXPECT_TRUE(rows[id].Find("caption")->is_string());
    }
    ASSERT_TRUE(errors.count(5)) << ReadFile(d_.Path("out/shard_0/errors.jsonl"));
    EXPECT_EQ(errors[5].Find("stage")->as_string(), "generate");
    EXPECT_NE(errors[5].Find("source")->as_string().find("data.jsonl:6"), std::string::npos);
    ASSERT_TRUE(errors.count(6));
    EXPECT_EQ(errors[6].Find("stage")->as_string(), "extract");
    EXPECT_NE(errors[6].Find("message")->as_string().find("Resolved image path '" + d_.Path("imgs/missing.jpg") +
                                                          "' does not exist"),
              std::string::npos)
        << errors[6].Find("message")->as_string();
    // Image tokens are prompt tokens: a row with n images costs n × 16 more than the same prompt without.
    auto prompt = [&](int64_t id) { return usage.at(id).Find("prompt_tokens")->as_int(); };
    const int64_t base = prompt(4);
    EXPECT_EQ(prompt(7), base);  // a null Image struct is no image
    for (int64_t id : {0, 2, 3}) {
      EXPECT_GE(prompt(id), base + images_per_output * kImageTokens) << id;
      EXPECT_LE(prompt(id), base + images_per_output * (kImageTokens + 2)) << id;
    }
    EXPECT_GE(prompt(1), base + 2 * images_per_output * kImageTokens);
    // Row 3 (struct with the bytes of cat.jpg) and row 0 (cat.jpg by path) see the same pixels.
    EXPECT_EQ(ToJson(*rows[0].Find("caption")), ToJson(*rows[3].Find("caption")));
    EXPECT_NE(ToJson(*rows[0].Find("caption")), ToJson(*rows[4].Find("caption")));
  }

  TempDir d_;
};

TEST_F(VisionE2eTest, EmbeddedEngineRunsImageRowsWithRowErrorsForBadImages) {
  const std::string vlm = Vlm().model_dir;
  const std::string backend =
      "    server_args:\n"
      "      model_path: " +
      vlm +
      "/model.gguf\n"
      "      mmproj_path: " +
      vlm +
      "/mmproj-model.gguf\n"
      "      extra_engine_args: {max_running_requests: 1, context_length: 512, n_threads: 1}\n";
  WriteFile(d_.Path("cfg.yaml"), Config(backend, "    - {name: caption, type: llm, prompt: \"{{ q }}\"}\n"));
  auto r = RunMmirage("run --config " + d_.Path("cfg.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CheckRun(1);
}

TEST_F(VisionE2eTest, JsonOutputsAndPromptPlacedImagesOnTheEmbeddedEngine) {
  const std::string vlm = Vlm().model_dir;
  // No mmproj_path: the one mmproj*.gguf next to the model is used.
  const std::string backend =
      "    server_args:\n"
      "      model_path: " +
      vlm +
      "/model.gguf\n"
      "      extra_engine_args: {max_running_requests: 2, context_length: 512, n_threads: 1}\n"
      "    chat_template: qwen2-vl\n";
  std::string cfg = Config(backend,
                           "    - name: facts\n"
                           "      type: llm\n"
                           "      output_type: JSON\n"
                           "      output_schema: {relevant: bool}\n"
                           "      prompt: \"Compare {{ photo }} with {{ detail }}. {{ q }}\"\n"
                           "    - {name: caption, type: llm, prompt: \"{{ facts }}\"}\n");
  cfg.replace(cfg.find("max_new_tokens: 16"), 18, "max_new_tokens: 48");
  WriteFile(d_.Path("cfg.yaml"), cfg);
  auto r = RunMmirage("run --config " + d_.Path("cfg.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("chat_template 'qwen2-vl' is a template name"), std::string::npos) << r.err;
  auto rows = ByRowIndex(ReadLines(d_.Path("out/shard_0/data.jsonl")), "id");
  auto errors = ByRowIndex(ReadLines(d_.Path("out/shard_0/errors.jsonl")), "row_index");
  EXPECT_TRUE(errors.count(5) && errors.count(6));
  int json_rows = 0;
  for (auto& [id, row] : rows) {
    EXPECT_TRUE(row.Find("caption")->is_string()) << id;
    ++json_rows;
  }
  for (auto& [id, e] : errors) {
    if (id == 5 || id == 6) continue;
    EXPECT_EQ(e.Find("stage")->as_string(), "generate") << ToJson(e);  // an invalid JSON output, not an image error
  }
  // A random model may wander in whitespace until max_new_tokens; some rows must make it.
  EXPECT_GE(json_rows, 1) << ReadFile(d_.Path("out/shard_0/errors.jsonl"));
}

TEST_F(VisionE2eTest, ManagedLlamaServerGetsTheProjectorAndImageParts) {
  const std::string vlm = Vlm().model_dir;
  const std::string backend =
      "    backend: llama-server\n"
      "    server_args:\n"
      "      model_path: " +
      vlm +
      "/model.gguf\n"
      "      extra_engine_args: {max_running_requests: 1, context_length: 512, n_threads: 1}\n";
  WriteFile(d_.Path("cfg.yaml"), Config(backend, "    - {name: caption, type: llm, prompt: \"{{ q }}\"}\n"));
  auto r = RunMmirage("run --config " + d_.Path("cfg.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err << ReadFile(d_.Path("state/shard_0/server.log")).substr(0, 3000);
  EXPECT_NE(ReadFile(d_.Path("state/shard_0/server.log")).find("mmproj-model.gguf"), std::string::npos);
  CheckRun(1);
}

TEST_F(VisionE2eTest, PreviewShowsImagesAndWhereTheyGoInTheUserTurn) {
  const std::string backend = "    server_args: {model_path: " + Vlm().model_dir + "/model.gguf}\n";
  WriteFile(d_.Path("cfg.yaml"),
            Config(backend, "    - {name: caption, type: llm, prompt: \"Is {{ detail }} like the other? {{ q }}\"}\n"));
  auto r = RunMmirage("preview -n 2 --config " + d_.Path("cfg.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("photo = \"<image: " + d_.Path("imgs/cat.jpg") + " (image/png 32x32, "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  | <image 1: photo>\n  | Is <image 2: detail> like the other? What is shown?"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("<image 2: detail> = " + d_.Path("imgs/mountain.jpg") + " (image/png 32x32"), std::string::npos)
      << r.out;
}

TEST_F(VisionE2eTest, HfImageColumnsOfALoadableDatasetAreImages) {
  // An HF dataset with an Image feature (struct {bytes, path}), written by Python `datasets`; a null image last.
  const std::string script =
      "import datasets, sys\n"
      "rows = [{'id': i, 'img': {'bytes': open(p, 'rb').read(), 'path': None}} for i, p in enumerate(sys.argv[2:])]\n"
      "rows.append({'id': len(rows), 'img': None})\n"
      "f = datasets.Features({'id': datasets.Value('int64'), 'img': datasets.Image()})\n"
      "datasets.Dataset.from_list(rows, features=f).save_to_disk(sys.argv[1])\n";
  WriteFile(d_.Path("make_hf.py"), script);
  auto made =
      RunCommand("'" + PythonPath() + "' '" + d_.Path("make_hf.py") + "' '" + d_.Path("hf") + "' '" +
                 d_.Path("imgs/cat.jpg") + "' '" + d_.Path("imgs/cat.jpg") + "' '" + d_.Path("imgs/dog.jpg") + "'");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string vlm = Vlm().model_dir;
  WriteFile(d_.Path("hf.yaml"),
            "processors:\n"
            "  - type: llm\n"
            "    server_args:\n"
            "      model_path: " +
                vlm +
                "/model.gguf\n"
                "      extra_engine_args: {max_running_requests: 1, context_length: 512, n_threads: 1}\n"
                "    default_sampling_params: {temperature: 0, max_new_tokens: 12}\n"
                "loading_params:\n"
                "  datasets: [{type: loadable, path: " +
                d_.Path("hf") + ", output_dir: " + d_.Path("hf_out") +
                ", output_format: jsonl}]\n"
                "  state_dir: " +
                d_.Path("hf_state") +
                "\n"
                "processing_params:\n"
                "  inputs: [{name: img, key: img, type: image, optional: true}, {name: id, key: id}]\n"
                "  outputs: [{name: caption, type: llm, prompt: \"Describe.\"}]\n"
                "  remove_columns: true\n"
                "  output_schema: {id: \"{{ id }}\", caption: \"{{ caption }}\"}\n");
  auto r = RunMmirage("run --config " + d_.Path("hf.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = ByRowIndex(ReadLines(d_.Path("hf_out/shard_0/data.jsonl")), "id");
  auto usage = ByRowIndex(ReadLines(d_.Path("hf_out/shard_0/usage.jsonl")), "row_index");
  ASSERT_EQ(rows.size(), 4u) << ReadFile(d_.Path("hf_out/shard_0/errors.jsonl")) << r.err;
  auto prompt = [&](int64_t id) { return usage.at(id).Find("prompt_tokens")->as_int(); };
  for (int64_t id : {0, 1, 2}) EXPECT_GE(prompt(id), prompt(3) + kImageTokens) << id;
  EXPECT_EQ(ToJson(*rows[0].Find("caption")), ToJson(*rows[1].Find("caption")));  // the same bytes
  EXPECT_NE(ToJson(*rows[0].Find("caption")), ToJson(*rows[3].Find("caption")));
  auto st = ParseJson(ReadFile(d_.Path("hf_state/shard_0/status.json")));
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->Find("stats")->Find("images_encoded")->as_int(), 2);  // cat once, dog once
  EXPECT_EQ(st->Find("stats")->Find("images_reused")->as_int(), 1);
}

TEST(MockVisionConfigTest, TheOriginalsConfigRunsUnchangedButForModelPath) {
  TempDir w;
  // The config samples up to 512 tokens per row at temperature 0.1: a VLM whose end-of-generation tokens are
  // favoured keeps the captions short (a random model would otherwise always run to 512 tokens).
  const std::string vlm_dir = w.Path("vlm");
  auto made = RunCommand("'" + MakeTestModelTool() + "' --vlm --seed 11 --eos-bias 2 --out '" + vlm_dir + "'");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string fixtures = std::string(MMIRAGE_SOURCE_DIR) + "/tests/fixtures/mock_vision/";
  std::string cfg = ReadFile(fixtures + "config_mock_vision.yaml");
  const std::string original = "model_path: Qwen/Qwen3-VL-8B-Instruct";
  ASSERT_NE(cfg.find(original), std::string::npos);
  cfg.replace(cfg.find(original), original.size(), "model_path: " + vlm_dir + "/model.gguf");
  WriteFile(w.Path("configs/config_mock_vision.yaml"), cfg);
  WriteFile(w.Path("tests/mock_data_vision/data.jsonl"), ReadFile(fixtures + "data.jsonl"));
  WriteImages(w.Path("tests/mock_data_vision"));
  // Relative paths are relative to the working directory, as in the original; ~ is a private HOME.
  auto r = RunCommand(
      "HOME='" + w.Path("home") + "' '" + MMIRAGE_BINARY + "' run --config configs/config_mock_vision.yaml", w.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The original writes an HF dataset (the default output_format): read the merged output back with `cat`.
  auto cat = RunMmirage("cat '" + w.Path("tests/output/data_vision/merged") + "'");
  ASSERT_EQ(cat.exit_code, 0) << cat.err << r.err;
  std::vector<std::string> rows;
  for (size_t at = 0, nl; (nl = cat.out.find('\n', at)) != std::string::npos; at = nl + 1) {
    if (nl > at) rows.push_back(cat.out.substr(at, nl - at));
  }
  ASSERT_EQ(rows.size(), 10u) << cat.out << r.err;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto v = ParseJson(rows[i]);
    ASSERT_TRUE(v.ok()) << rows[i];
    const std::string image = v->Find("image")->as_string();
    EXPECT_EQ(image.rfind(w.Path("tests/mock_data_vision/"), 0), 0u) << image;  // resolved to an absolute path
    EXPECT_TRUE(v->Find("caption")->is_string());
  }
  auto st = ParseJson(ReadFile(w.Path("tests/output/data_vision/_pipeline_state/shard_0/status.json")));
  ASSERT_TRUE(st.ok());
  EXPECT_GE(st->Find("stats")->Find("input_tokens")->as_int(), 10 * kImageTokens);
}

TEST(VisionResumeTest, KillNineThenResumeGivesTheFaultFreeOutputWithImageRows) {
  ASSERT_TRUE(Vlm().error.empty()) << Vlm().error;
  TempDir d;
  WriteImages(d.Path("imgs"));
  const char* names[] = {"cat.jpg", "dog.jpg", "mountain.jpg", "beach.jpg"};
  std::string data;
  for (int i = 0; i < 48; ++i) {
    data += "{\"id\":" + std::to_string(i) + ",\"photo\":\"" + names[i % 4] + "\",\"q\":\"Question " +
            std::to_string(i) + "\"}\n";
  }
  WriteFile(d.Path("data.jsonl"), data);
  auto config = [&](const std::string& tag) {
    return "processors:\n"
           "  - type: llm\n"
           "    server_args:\n"
           "      model_path: " +
           Vlm().model_dir +
           "/model.gguf\n"
           "      extra_engine_args: {max_running_requests: 1, context_length: 512, n_threads: 1}\n"
           "    default_sampling_params: {temperature: 0, max_new_tokens: 24}\n"
           "loading_params:\n"
           "  datasets: [{type: JSONL, path: " +
           d.Path("data.jsonl") + ", output_dir: " + d.Path(tag + "_out") + ", image_base_path: " + d.Path("imgs") +
           ", output_format: jsonl}]\n"
           "  state_dir: " +
           d.Path(tag + "_state") +
           "\n"
           "processing_params:\n"
           "  inputs: [{name: photo, key: photo, type: image}, {name: q, key: q}, {name: id, key: id}]\n"
           "  outputs: [{name: answer, type: llm, prompt: \"{{ q }}\"}]\n"
           "  remove_columns: true\n"
           "  output_schema: {id: \"{{ id }}\", answer: \"{{ answer }}\"}\n"
           "execution_params: {cache: off, commit_every_rows: 3, commit_interval_seconds: 0.2}\n";
  };
  WriteFile(d.Path("ref.yaml"), config("ref"));
  auto ref = RunMmirage("run --config " + d.Path("ref.yaml") + " --log-level WARNING");
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  const std::string expected = ReadFile(d.Path("ref_out/shard_0/data.jsonl"));
  ASSERT_EQ(ReadLines(d.Path("ref_out/shard_0/data.jsonl")).size(), 48u);

  WriteFile(d.Path("faulty.yaml"), config("faulty"));
  int kills = 0;
  for (int delay_ms : {700, 1100, 900}) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setsid();
      FILE* f = std::freopen(d.Path("faulty.log").c_str(), "a", stderr);
      (void)f;
      std::string cfg = d.Path("faulty.yaml");
      ::execl(MMIRAGE_BINARY, MMIRAGE_BINARY, "run", "--config", cfg.c_str(), "--log-level", "WARNING",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    ++kills;
  }
  auto fin = RunMmirage("run --config " + d.Path("faulty.yaml") + " --log-level WARNING");
  ASSERT_EQ(fin.exit_code, 0) << fin.err << ReadFile(d.Path("faulty.log"));
  EXPECT_EQ(ReadFile(d.Path("faulty_out/shard_0/data.jsonl")), expected);
  EXPECT_GE(kills, 1) << "the run finished before the first kill; lengthen the workload";
}

}  // namespace
}  // namespace mmirage::testing
