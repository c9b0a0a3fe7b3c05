// End-to-end: the `image_gen` processor against tests/support/fake_images_server.py on 127.0.0.1: the original's
// two example configs (only the URL changed), request bodies, seeds, file names, retries, a hanging server,
// re-runs, formats and the managed `sglang serve` backend.
#include <gtest/gtest.h>

#include <chrono>

#include "data/json.h"
#include "e2e/e2e_util.h"
#include "support/fake_images_server.h"

namespace mmirage::testing {
namespace {

const std::string kFixtures = std::string(MMIRAGE_SOURCE_DIR) + "/tests/fixtures/mmirage-2972ff6";

std::vector<Value> JsonLines(const std::string& path) {
  std::vector<Value> out;
  for (const auto& l : ReadLines(path)) {
    auto v = ParseJson(l);
    EXPECT_TRUE(v.ok()) << l;
    if (v.ok()) out.push_back(*v);
  }
  return out;
}

std::vector<Value> Bodies(const FakeImagesServer& s) {
  std::vector<Value> out;
  for (const auto& l : s.Posts()) {
    auto v = ParseJson(l);
    EXPECT_TRUE(v.ok()) << l;
    if (v.ok()) out.push_back(*v->Find("body"));
  }
  return out;
}

std::string Ls(const std::string& dir) { return RunCommand("ls -A '" + dir + "'").out; }

class ImageGenTest : public ::testing::Test {
 protected:
  // A config over `n` rows {"id": i, "text": "thing i"} with one image_gen output (plus `more_outputs`).
  std::string Config(const std::string& url, const std::string& output_fields, int n = 6,
                     const std::string& processor_extra = "", const std::string& more_outputs = "",
                     const std::string& execution = "") {
    std::string data;
    for (int i = 0; i < n; ++i)
      data += "{\"id\":" + std::to_string(i) + ",\"text\":\"thing " + std::to_string(i) + "\"}\n";
    WriteFile(dir_.Path("data.jsonl"), data);
    std::string cfg =
        "processors:\n  - type: image_gen\n    backend: external\n    external:\n      base_url: " + url +
        "\n      timeout_seconds: 30\n      max_concurrent_requests: 3\n    output_dir: " + dir_.Path("images") + "\n" +
        processor_extra + "loading_params:\n  state_dir: " + dir_.Path("state") +
        "\n  datasets:\n    - type: JSONL\n      path: " + dir_.Path("data.jsonl") +
        "\n      output_dir: " + dir_.Path("out") + "\n      output_format: jsonl" +
        "\nprocessing_params:\n  inputs:\n    - name: text\n      key: text\n    - name: id\n      key: id\n"
        "  outputs:\n    - name: img\n      type: image_gen\n      prompt: \"draw {{ text }}\"\n" +
        output_fields + more_outputs +
        "  remove_columns: true\n  output_schema:\n    id: \"{{ id }}\"\n    img: \"{{ img }}\"\n" + execution;
    WriteFile(dir_.Path("cfg.yaml"), cfg);
    return dir_.Path("cfg.yaml");
  }
  std::vector<Value> Rows() { return JsonLines(dir_.Path("out/shard_0/data.jsonl")); }
  TempDir dir_;
};

// The original's configs/config_mock_image_gen_local.yaml, only base_url changed: every row gets a PNG under
// output_dir, named by the original's template; the shard is an HF dataset whose `image` column is an HF Image
// feature with the bytes embedded (cast_images), as the original's; the requests carry the original's body.
TEST_F(ImageGenTest, OriginalLocalConfigRunsUnchangedButForTheUrl) {
  FakeImagesServer server(dir_.path());
  ASSERT_EQ(server.error(), "");
  ASSERT_EQ(RunCommand("cp -r '" + kFixtures + "/configs' '" + kFixtures + "/tests' '" + dir_.path() + "/'").exit_code,
            0);
  ASSERT_EQ(RunCommand("sed -i 's#http://127.0.0.1:30010/v1#" + server.BaseUrl() +
                           "#' configs/config_mock_image_gen_local.yaml",
                       dir_.path())
                .exit_code,
            0);
  auto r = RunCommand(
      "HOME='" + dir_.path() + "' '" + MMIRAGE_BINARY + "' run --config configs/config_mock_image_gen_local.yaml",
      dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string shard = dir_.Path("tests/output/image_gen/shard_0");
  auto cat = RunMmirage("cat '" + shard + "'");
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  std::vector<Value> rows;
  for (size_t b = 0, e; (e = cat.out.find('\n', b)) != std::string::npos; b = e + 1)
    rows.push_back(*ParseJson(cat.out.substr(b, e - b)));
  ASSERT_EQ(rows.size(), 10u);
  std::string images = dir_.Path("tests/output/image_gen/generated_images");
  for (size_t i = 0; i < rows.size(); ++i) {
    const Value* image = rows[i].Find("image");
    ASSERT_TRUE(image && image->is_object()) << ToJson(rows[i]);
    std::string name = image->Find("path")->as_string();
    EXPECT_EQ(name.rfind("generated_0_" + std::to_string(i) + "_", 0), 0u) << name;
    EXPECT_EQ(name.size() - name.rfind('_') - 1, 8u + 4u) << name;             // 8 hex digits + ".png"
    EXPECT_EQ(image->Find("bytes")->as_string().rfind("iVBORw0KGgo", 0), 0u);  // base64 of a PNG header
    EXPECT_EQ(ReadFile(images + "/" + name).substr(0, 8), "\x89PNG\r\n\x1a\n") << name;
    EXPECT_TRUE(rows[i].Find("prompt_source")->is_string());
  }
  // HF datasets (the oracle) sees an Image feature and decodes the embedded image without the files.
  RunCommand("mv '" + images + "' '" + images + ".away'");
  auto oracle = RunCommand("'" + PythonPath() + "' -c \"import datasets; d = datasets.load_from_disk('" + shard +
                           "'); print(type(d.features['image']).__name__, d[3]['image'].size, d[3]['image'].mode)\"");
  ASSERT_EQ(oracle.exit_code, 0) << oracle.err;
  EXPECT_EQ(oracle.out, "Image (64, 64) RGB\n");
  // The file set is exactly one file per row: no temporary file left.
  EXPECT_EQ(RunCommand("ls '" + images + ".away' | wc -l").out, "10\n");
  auto bodies = Bodies(server);
  ASSERT_EQ(bodies.size(), 10u);
  const Value& b = bodies[0];
  EXPECT_EQ(b.Find("n")->as_int(), 1);
  EXPECT_EQ(b.Find("response_format")->as_string(), "b64_json");
  EXPECT_EQ(b.Find("size")->as_string(), "512x512");
  EXPECT_EQ(b.Find("num_inference_steps")->as_int(), 20);
  EXPECT_EQ(b.Find("guidance_scale")->as_number(), 7.5);
  EXPECT_EQ(b.Find("seed"), nullptr);
  EXPECT_EQ(b.Find("model"), nullptr);
  EXPECT_NE(b.Find("prompt")->as_string().find("Create a clean and detailed illustration for:\n"), std::string::npos);
}

// The original's configs/config_image_gen_external.yaml (mode slurm, 4 shards), run as its array task 1 would be:
// seeds are 42 + shard_id * 1e9 + the row's position in the shard.
TEST_F(ImageGenTest, OriginalExternalConfigShardOneGetsShardAwareSeeds) {
  FakeImagesServer server(dir_.path());
  ASSERT_EQ(server.error(), "");
  ASSERT_EQ(RunCommand("cp -r '" + kFixtures + "/configs' '" + kFixtures + "/tests' '" + dir_.path() + "/'").exit_code,
            0);
  ASSERT_EQ(RunCommand(
                "sed -i 's#http://127.0.0.1:30010/v1#" + server.BaseUrl() + "#' configs/config_image_gen_external.yaml",
                dir_.path())
                .exit_code,
            0);
  auto r = RunCommand("HOME='" + dir_.path() + "' SLURM_ARRAY_TASK_ID=1 '" + MMIRAGE_BINARY +
                          "' run --shard-id 1 --config configs/config_image_gen_external.yaml",
                      dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto cat = RunMmirage("cat '" + dir_.Path("tests/output/image_gen/shard_1") + "'");
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  std::vector<Value> rows;
  for (size_t b = 0, e; (e = cat.out.find('\n', b)) != std::string::npos; b = e + 1)
    rows.push_back(*ParseJson(cat.out.substr(b, e - b)));
  ASSERT_EQ(rows.size(), 3u);  // 10 rows over 4 shards: 3, 3, 2, 2
  std::vector<int64_t> seeds;
  for (const auto& b : Bodies(server)) seeds.push_back(b.Find("seed")->as_int());
  std::sort(seeds.begin(), seeds.end());
  EXPECT_EQ(seeds, (std::vector<int64_t>{1000000042, 1000000043, 1000000044}));
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string name = rows[i].Find("image")->Find("path")->as_string();
    EXPECT_EQ(name.rfind("img_1_" + std::to_string(i) + "_", 0), 0u) << name;
    EXPECT_TRUE(Exists(dir_.Path("tests/output/image_gen/generated_images/" + name))) << name;
    EXPECT_EQ(rows[i].Find("caption")->as_string(), rows[i].Find("text")->as_string());
  }
}

TEST_F(ImageGenTest, CastImagesFalseKeepsPathsInHfOutput) {
  FakeImagesServer server(dir_.path());
  ASSERT_EQ(server.error(), "");
  std::string cfg = Config(server.BaseUrl(), "", 2);
  std::string text = ReadFile(cfg);
  text.replace(text.find("output_format: jsonl"), 20, "output_format: hf");
  text.replace(text.find("  remove_columns: true"), 0, "  cast_images: false\n");
  WriteFile(cfg, text);
  auto r = RunMmirage("run --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto cat = RunMmirage("cat '" + dir_.Path("out/shard_0") + "'");
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  auto first = ParseJson(cat.out.substr(0, cat.out.find('\n')));
  ASSERT_TRUE(first.ok()) << cat.out;
  EXPECT_EQ(first->Find("img")->as_string().rfind(dir_.Path("images/"), 0), 0u) << cat.out;
}

TEST_F(ImageGenTest, HostileFilenameTemplatesStayInsideOutputDir) {
  FakeImagesServer server(dir_.path());
  ASSERT_EQ(server.error(), "");
  struct Case {
    std::string tmpl, want_name;
  } cases[] = {
      {"../../escape_{{ id }}", "escape_0.png"},
      {"/etc/{{ text }}", "etc_thing_0.png"},
      {"{{ '' }}", "image.png"},
      {"..", "image.png"},
      {"a/../../b\\\\c {{ id }}", "a_.._.._b_c_0.png"},
  };
  for (const auto& c : cases) {
    RunCommand("rm -rf '" + dir_.Path("images") + "' '" + dir_.Path("out") + "' '" + dir_.Path("state") + "'");
    auto r = RunMmirage("run --config " + Config(server.BaseUrl(), "      filename_template: \"" + c.tmpl + "\"\n", 2));
    ASSERT_EQ(r.exit_code, 0) << c.tmpl << "\n" << r.err;
    auto rows = Rows();
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].Find("img")->as_string(), dir_.Path("images/" + c.want_name)) << c.tmpl;
    // A name shared by two rows: the later one gets its sample index, nothing is overwritten.
    EXPECT_EQ(RunCommand("ls '" + dir_.Path("images") + "' | wc -l").out, "2\n") << Ls(dir_.Path("images"));
    EXPECT_EQ(Ls(dir_.path()).find("escape"), std::string::npos);
  }
}

TEST_F(ImageGenTest, RetriesOn429And500ThenRowErrorsNamingTheServersAnswer) {
  {
    FakeImagesServer server(dir_.path(), "fail429:3");
    ASSERT_EQ(server.error(), "");
    auto r = RunMmirage("run --config " + Config(server.BaseUrl(), ""));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(Rows().size(), 6u);
    EXPECT_EQ(server.Posts().size(), 9u);  // each failed sample retried alone
  }
  RunCommand("rm -rf '" + dir_.Path("out") + "' '" + dir_.Path("state") + "' '" + dir_.Path("posts.log") + "'");
  {
    FakeImagesServer server(dir_.path(), "failprompt:thing 4");
    ASSERT_EQ(server.error(), "");
    auto r = RunMmirage("run --config " +
                        Config(server.BaseUrl(), "", 6, "", "", "execution_params:\n  max_failed_rows: 1\n"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto rows = Rows();
    ASSERT_EQ(rows.size(), 5u);
    auto errs = JsonLines(dir_.Path("out/shard_0/errors.jsonl"));
    ASSERT_EQ(errs.size(), 1u);
    EXPECT_EQ(errs[0].Find("row_index")->as_int(), 4);
    std::string msg = errs[0].Find("message")->as_string();
    EXPECT_NE(msg.find("HTTP 500"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cannot draw that"), std::string::npos) << msg;
    EXPECT_NE(msg.find("4 attempts"), std::string::npos) << msg;
    EXPECT_EQ(server.Posts().size(), 5u + 4u);
  }
}

TEST_F(ImageGenTest, AtMostMaxConcurrentRequestsAreInFlight) {
  FakeImagesServer server(dir_.path(), "slow:0.3");
  ASSERT_EQ(server.error(), "");
  auto r = RunMmirage("run --config " + Config(server.BaseUrl(), "", 9));  // max_concurrent_requests: 3
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int64_t most = 0;
  for (const auto& l : server.Posts()) most = std::max(most, ParseJson(l)->Find("inflight")->as_int());
  EXPECT_EQ(most, 3);
  // parallel_inference: false sends one at a time.
  RunCommand("rm -rf '" + dir_.Path("out") + "' '" + dir_.Path("state") + "' '" + dir_.Path("posts.log") + "'");
  FakeImagesServer one(dir_.path(), "slow:0.1");
  ASSERT_EQ(one.error(), "");
  r = RunMmirage("run --config " + Config(one.BaseUrl(), "", 4, "    parallel_inference: false\n"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  most = 0;
  for (const auto& l : one.Posts()) most = std::max(most, ParseJson(l)->Find("inflight")->as_int());
  EXPECT_EQ(most, 1);
}

TEST_F(ImageGenTest, AHangingServerTimesOutIntoRowErrors) {
  FakeImagesServer server(dir_.path(), "hang");
  ASSERT_EQ(server.error(), "");
  std::string cfg = Config(server.BaseUrl(), "", 2);
  std::string text = ReadFile(cfg);
  text.replace(text.find("timeout_seconds: 30"), 19, "timeout_seconds: 1");
  WriteFile(cfg, text);
  auto t0 = std::chrono::steady_clock::now();
  auto r = RunMmirage("run --config " + cfg);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.exit_code, 0);  // 2 failed rows > max_failed_rows=0
  EXPECT_LT(secs, 40);
  auto errs = JsonLines(dir_.Path("out/shard_0/errors.jsonl"));
  ASSERT_EQ(errs.size(), 2u) << r.err;
  EXPECT_NE(errs[0].Find("message")->as_string().find("timed out after 1 s"), std::string::npos)
      << errs[0].Find("message")->as_string();
}

TEST_F(ImageGenTest, ARerunOverwritesItsOwnFiles) {
  FakeImagesServer server(dir_.path());
  ASSERT_EQ(server.error(), "");
  std::string cfg = Config(server.BaseUrl(), "      seed: 7\n");
  ASSERT_EQ(RunMmirage("run --config " + cfg).exit_code, 0);
  std::string first = Ls(dir_.Path("images"));
  auto rows1 = Rows();
  RunCommand("rm -rf '" + dir_.Path("out") + "' '" + dir_.Path("state") + "'");
  auto r = RunMmirage("run --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Ls(dir_.Path("images")), first);
  EXPECT_EQ(RunCommand("ls '" + dir_.Path("images") + "' | wc -l").out, "6\n");
  auto rows2 = Rows();
  ASSERT_EQ(rows1.size(), rows2.size());
  for (size_t i = 0; i < rows1.size(); ++i) EXPECT_EQ(ToJson(rows1[i]), ToJson(rows2[i]));
}

TEST_F(ImageGenTest, ASecondOutputDoesNotShiftTheFirstsSeeds) {
  FakeImagesServer server(dir_.path());
  ASSERT_EQ(server.error(), "");
  std::string second =
      "    - name: img2\n      type: image_gen\n      prompt: \"sketch {{ text }}\"\n      seed: 100\n"
      "      filename_template: \"second_{{ __sample_index }}_{{ __output_name }}\"\n";
  auto r = RunMmirage("run --config " + Config(server.BaseUrl(), "      seed: 42\n", 4, "", second));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, int64_t> seed_of;
  for (const auto& b : Bodies(server)) seed_of[b.Find("prompt")->as_string()] = b.Find("seed")->as_int();
  ASSERT_EQ(seed_of.size(), 8u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(seed_of["draw thing " + std::to_string(i)], 42 + i);
    EXPECT_EQ(seed_of["sketch thing " + std::to_string(i)], 100 + i);
  }
  EXPECT_TRUE(Exists(dir_.Path("images/second_3_img2.png")));
}

TEST_F(ImageGenTest, FormatsAreReencodedAndPilModeKeepsBytes) {
  FakeImagesServer server(dir_.path());
  ASSERT_EQ(server.error(), "");
  for (const auto& [fmt, magic] :
       std::vector<std::pair<std::string, std::string>>{{"jpeg", "\xFF\xD8\xFF"}, {"webp", "RIFF"}}) {
    RunCommand("rm -rf '" + dir_.Path("images") + "' '" + dir_.Path("out") + "' '" + dir_.Path("state") + "'");
    auto r = RunMmirage("run --config " + Config(server.BaseUrl(), "", 2, "    file_format: " + fmt + "\n"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string path = Rows()[0].Find("img")->as_string();
    EXPECT_EQ(path.substr(path.size() - fmt.size()), fmt);
    EXPECT_EQ(ReadFile(path).substr(0, magic.size()), magic) << fmt;
  }
  RunCommand("rm -rf '" + dir_.Path("images") + "' '" + dir_.Path("out") + "' '" + dir_.Path("state") + "'");
  auto r = RunMmirage("run --config " + Config(server.BaseUrl(), "      output_mode: pil\n", 2));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = Rows();
  ASSERT_EQ(rows.size(), 2u);
  // An image value {"bytes", "path": null}; JSON output holds the bytes as base64: a PNG starts with iVBORw0KGgo.
  ASSERT_TRUE(rows[0].Find("img")->is_object()) << ToJson(rows[0]);
  EXPECT_EQ(rows[0].Find("img")->Find("bytes")->as_string().rfind("iVBORw0KGgo", 0), 0u);
  EXPECT_TRUE(rows[0].Find("img")->Find("path")->is_null());
  EXPECT_FALSE(Exists(dir_.Path("images")));  // pil mode writes no files
}

TEST_F(ImageGenTest, BadServersAndKeys) {
  // Nothing listening: the start fails with every URL tried.
  auto r = RunMmirage("run --config " + Config("http://127.0.0.1:1/v1", ""));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("Cannot reach SGLang server. Tried:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("http://127.0.0.1:1/models"), std::string::npos) << r.err;
  // An invalid image from the server: a row error naming it.
  {
    FakeImagesServer server(dir_.path(), "badb64");
    ASSERT_EQ(server.error(), "");
    RunCommand("rm -rf '" + dir_.Path("out") + "' '" + dir_.Path("state") + "'");
    r = RunMmirage("run --config " + Config(server.BaseUrl(), "", 1));
    EXPECT_NE(r.exit_code, 0);
    auto errs = JsonLines(dir_.Path("out/shard_0/errors.jsonl"));
    ASSERT_EQ(errs.size(), 1u);
    EXPECT_NE(errs[0].Find("message")->as_string().find("invalid base64"), std::string::npos);
  }
  // api_key_env: the key travels as a bearer token; an unset variable fails the start.
  FakeImagesServer server(dir_.path());
  ASSERT_EQ(server.error(), "");
  std::string cfg = Config(server.BaseUrl(), "", 1);
  std::string text = ReadFile(cfg);
  text.replace(text.find("      timeout_seconds: 30"), 0, "      api_key_env: FAKE_IMAGES_KEY\n");
  WriteFile(cfg, text);
  RunCommand("rm -rf '" + dir_.Path("out") + "' '" + dir_.Path("state") + "'");
  r = RunMmirage("run --config " + cfg);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("api_key_env names 'FAKE_IMAGES_KEY', which is not set"), std::string::npos) << r.err;
  r = RunCommand("FAKE_IMAGES_KEY=s3cret '" + std::string(MMIRAGE_BINARY) + "' run --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto posts = server.Posts();
  ASSERT_FALSE(posts.empty());
  EXPECT_NE(posts.back().find("\"auth\": \"Bearer s3cret\""), std::string::npos) << posts.back();
}

// A generated image is an image variable of later outputs: an llm output on the test VLM (mmirage-make-test-model
// --vlm) receives it, in path and in pil mode. Image tokens are prompt tokens, so the caption's prompt costs at
// least 16 tokens more than the same config with the image output placed after the caption (not visible to it).
TEST_F(ImageGenTest, AGeneratedImageFeedsALaterVlmOutput) {
  FakeImagesServer server(dir_.path());
  ASSERT_EQ(server.error(), "");
  const std::string vlm = dir_.Path("vlm");
  auto made = RunCommand("'" + MakeTestModelTool() + "' --vlm --seed 11 --out '" + vlm + "'");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  // mmproj_path is named: it is looked up by itself only for configs with image inputs.
  const std::string llm = "  - type: llm\n    server_args:\n      model_path: " + vlm +
                          "/model.gguf\n      mmproj_path: " + vlm +
                          "/mmproj-model.gguf\n    default_sampling_params: {temperature: 0, max_new_tokens: 4}\n";
  const std::string caption = "    - name: caption\n      type: llm\n      prompt: \"Describe the picture.\"\n";
  auto prompt_tokens = [&](const std::string& cfg) -> int64_t {
    RunCommand("rm -rf '" + dir_.Path("out") + "' '" + dir_.Path("state") + "' '" + dir_.Path("images") + "'");
    auto r = RunMmirage("run --config " + cfg);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(Rows().size(), 2u) << ReadFile(dir_.Path("out/shard_0/errors.jsonl"));
    auto usage = JsonLines(dir_.Path("out/shard_0/usage.jsonl"));
    return usage.empty() ? -1 : usage[0].Find("prompt_tokens")->as_int();
  };
  for (std::string mode : {"path", "pil"}) {
    const std::string fields = "      output_mode: " + mode + "\n";
    const std::string img = "    - name: img\n      type: image_gen\n      prompt: \"draw {{ text }}\"\n" + fields;
    std::string cfg = Config(server.BaseUrl(), fields, 2, llm, caption);
    int64_t with_image = prompt_tokens(cfg);
    std::string text = ReadFile(cfg);
    ASSERT_NE(text.find(img + caption), std::string::npos) << text;
    text.replace(text.find(img + caption), img.size() + caption.size(), caption + img);
    WriteFile(cfg, text);
    int64_t without = prompt_tokens(cfg);
    ASSERT_GT(without, 0);
    EXPECT_GE(with_image, without + 16) << mode;
  }
}

// backend: sglang starts `sglang serve --model-path M --port P --num-gpus N ...` (here a stand-in on PATH that
// runs the fake server on that port), waits for it, uses it, and stops it.
TEST_F(ImageGenTest, SglangBackendStartsAndStopsTheServer) {
  WriteFile(dir_.Path("bin/sglang"),
            "#!/bin/sh\n"
            "echo \"$@\" >> '" +
                dir_.Path("sglang_args") +
                "'\n"
                "port=''\nprev=''\nfor a in \"$@\"; do [ \"$prev\" = --port ] && port=$a; prev=$a; done\n"
                "exec '" +
                PythonPath() + "' '" + FakeImagesServer::Script() + "' --port \"$port\" --port-file '" +
                dir_.Path("sg_port") + "' --log '" + dir_.Path("sg_posts.log") + "'\n");
  ASSERT_EQ(RunCommand("chmod +x '" + dir_.Path("bin/sglang") + "'").exit_code, 0);
  std::string cfg = Config("unused", "", 3);
  std::string text = ReadFile(cfg);
  size_t b = text.find("    backend: external\n"), e = text.find("    output_dir:");
  text.replace(b, e - b,
               "    backend: sglang\n    sglang:\n      model_path: fake/diffusion\n      num_gpus: 2\n"
               "      startup_timeout_seconds: 60\n      extra_server_args: [--foo, bar]\n");
  WriteFile(cfg, text);
  auto r =
      RunCommand("PATH='" + dir_.Path("bin") + "':$PATH '" + std::string(MMIRAGE_BINARY) + "' run --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Rows().size(), 3u);
  std::string args = ReadFile(dir_.Path("sglang_args"));
  EXPECT_EQ(args.rfind("serve --model-path fake/diffusion --port ", 0), 0u) << args;
  EXPECT_NE(args.find("--num-gpus 2 --foo bar"), std::string::npos) << args;
  EXPECT_EQ(ReadLines(dir_.Path("sg_posts.log")).size(), 3u);
  // The server is gone after the run.
  std::string port = ReadFile(dir_.Path("sg_port"));
  EXPECT_NE(RunCommand("curl -s -m 2 http://127.0.0.1:" + port + "/health").exit_code, 0);

  // `run` with retry over 3 shards, 2 at a time: one server around all the shard processes, as the original.
  RunCommand("rm -rf '" + dir_.Path("out") + "' '" + dir_.Path("state") + "' '" + dir_.Path("sglang_args") + "' '" +
             dir_.Path("sg_posts.log") + "'");
  text = ReadFile(cfg);
  text.replace(text.find("  state_dir:"), 0, "  num_shards: 3\n");
  text += "execution_params:\n  retry: true\n  local_workers: 2\n";
  WriteFile(cfg, text);
  r = RunCommand("PATH='" + dir_.Path("bin") + "':$PATH '" + std::string(MMIRAGE_BINARY) + "' run --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadLines(dir_.Path("sglang_args")).size(), 1u);
  EXPECT_EQ(ReadLines(dir_.Path("sg_posts.log")).size(), 3u);
  for (int shard = 0; shard < 3; ++shard)
    EXPECT_EQ(JsonLines(dir_.Path("out/shard_" + std::to_string(shard) + "/data.jsonl")).size(), 1u);
}

}  // namespace
}  // namespace mmirage::testing
