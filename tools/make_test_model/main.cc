// mmirage-make-test-model: writes a qwen2 GGUF with random weights (see test_model.h), optionally smoke-tests it.
//
// Exit codes: 0 success, 1 error (one `error: ...` line on stderr, no output file), 2 usage error.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "test_model.h"
#include "test_vlm.h"

namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kCheckTokens = 16;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string HumanCount(uint64_t n) {
  char buf[32];
  if (n >= 1000000000) {
    std::snprintf(buf, sizeof(buf), "%.2fB", n / 1e9);
  } else if (n >= 1000000) {
    std::snprintf(buf, sizeof(buf), "%.2fM", n / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(n));
  }
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mmirage::tools;
  const std::string llama_src = MMIRAGE_LLAMA_SRC;
  TestModelOptions options;
  options.vocab_path = llama_src + "/models/ggml-vocab-qwen2.gguf";
  options.chat_template_path = llama_src + "/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja";
  bool check = false;
  bool vlm = false;
  std::string png_path;
  int png_size = 32;

  CLI::App app{"Write a qwen2 GGUF model with random weights (deterministic per seed) for tests and benchmarks"};
  app.add_option("--out", options.out_path, "Output GGUF file (with --vlm: output directory)");
  app.add_flag("--vlm", vlm,
               "Write a vision-language pair into the --out directory: model.gguf (tiny preset) and "
               "mmproj-model.gguf (LLaVA MLP projector over a tiny CLIP, 16 image tokens per image)");
  app.add_option("--png", png_path, "Instead of a model, write a deterministic RGB PNG test image (per --seed)");
  app.add_option("--png-size", png_size, "Width and height of the --png image")->capture_default_str();
  app.add_option("--seed", options.seed, "Weight seed")->capture_default_str();
  app.add_option("--preset", options.preset,
                 "tiny (2 layers, n_embd 64, F32), small (Qwen2.5-0.5B shape, F16), medium (~4B shape, F16)")
      ->check(CLI::IsMember({"tiny", "small", "medium"}))
      ->capture_default_str();
  app.add_option("--vocab", options.vocab_path, "Vocab-only GGUF whose tokenizer.* keys are copied")
      ->capture_default_str();
  app.add_option("--chat-template", options.chat_template_path, "Jinja chat template file")->capture_default_str();
  app.add_option("--eos-bias", options.eos_bias,
                 "Logit bias of end-of-generation tokens (about +0.2 gives varied greedy output lengths)")
      ->capture_default_str();
  app.add_flag(
      "--check", check,
      "After writing, load the model with llama.cpp and greedy-generate " + std::to_string(kCheckTokens) + " tokens");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) { return app.exit(e); } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }

  if (!png_path.empty()) {
    mmirage::Status s = mmirage::Env::Default()->CreateDirs(mmirage::Dirname(png_path));
    if (s.ok()) s = WriteTestPng(mmirage::Env::Default(), png_path, png_size, png_size, options.seed);
    if (!s.ok()) {
      std::cerr << "error: " << s.ToString() << "\n";
      return kExitError;
    }
    std::printf("wrote %s: %dx%d PNG seed=%llu\n", png_path.c_str(), png_size, png_size,
                static_cast<unsigned long long>(options.seed));
    return 0;
  }
  if (options.out_path.empty()) {
    std::cerr << "error: --out is required\n";
    return kExitUsage;
  }
  std::string mmproj_path;
  if (vlm) {
    if (options.preset != "tiny") {
      std::cerr << "error: --vlm writes the tiny preset only\n";
      return kExitUsage;
    }
    mmirage::Status d = mmirage::Env::Default()->CreateDirs(options.out_path);
    if (!d.ok()) {
      std::cerr << "error: " << d.ToString() << "\n";
      return kExitError;
    }
    mmproj_path = mmirage::JoinPath(options.out_path, "mmproj-model.gguf");
    options.out_path = mmirage::JoinPath(options.out_path, "model.gguf");
  }

  const auto start = std::chrono::steady_clock::now();
  auto stats = WriteTestModel(mmirage::Env::Default(), options);
  if (!stats.ok()) {
    std::cerr << "error: " << stats.status().ToString() << "\n";
    return kExitError;
  }
  std::printf("wrote %s: preset=%s params=%s (n_vocab %u) size=%.1f MiB seed=%llu in %.2f s\n",
              options.out_path.c_str(), options.preset.c_str(), HumanCount(stats->n_params).c_str(), stats->n_vocab,
              stats->bytes_written / (1024.0 * 1024.0), static_cast<unsigned long long>(options.seed),
              SecondsSince(start));
  std::fflush(stdout);
  if (vlm) {
    TestMmprojOptions mo;
    mo.out_path = mmproj_path;
    mo.seed = options.seed;
    mo.text_n_embd = 64;  // the tiny preset's n_embd
    mmirage::Status s = WriteTestMmproj(mmirage::Env::Default(), mo);
    if (!s.ok()) {
      std::cerr << "error: " << s.ToString() << "\n";
      (void)mmirage::Env::Default()->RemoveFile(options.out_path);
      return kExitError;
    }
    std::printf("wrote %s: LLaVA MLP projector, %d image tokens per image\n", mmproj_path.c_str(),
                kTestMmprojImageTokens);
  }

  if (check) {
    auto result = CheckTestModel(options.out_path, kCheckTokens);
    if (!result.ok()) {
      std::cerr << "error: " << result.status().ToString() << "\n";
      return kExitError;
    }
    // Exactly this line is what tests and scripts match; the text stays last so it needs no delimiter.
    std::printf("check: ok generated=%d tokens text=%s\n", result->n_generated, JsonQuote(result->text).c_str());
  }
  return 0;
}
