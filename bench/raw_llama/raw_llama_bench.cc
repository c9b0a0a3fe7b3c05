// The baseline of bench/engine_bench.py: raw libllama batched greedy decoding, no mmirage in the way.
//
// Reads prompts (one JSON string per line, the user message), formats each with the model's chat template
// (llama.cpp common_chat_templates_apply, generation prompt added — exactly what mmirage does; timed), and generates
// `--max-new-tokens` tokens for each (EOS ignored, so every request does the same work), `--parallel` sequences at
// a time in one unified-KV context: waves of P prompts prefilled in one batch, then decoded together.
// Prints one JSON line: {"requests", "output_tokens", "seconds", "output_tok_per_s"} (model load excluded).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "chat.h"
#include "llama.h"
#include "raw_common/raw_decode.h"

namespace {

std::string UnquoteJsonString(const std::string& line) { return common_json::parse(line).get<std::string>(); }

}  // namespace

int main(int argc, char** argv) {
  std::string model_path, prompts_path;
  int parallel = 8, max_new = 64, n_ctx_seq = 1024, n_batch = 2048, n_threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") model_path = v;
    else if (k == "--prompts") prompts_path = v;
    else if (k == "--parallel") parallel = std::stoi(v);
    else if (k == "--max-new-tokens") max_new = std::stoi(v);
    else if (k == "--ctx-seq") n_ctx_seq = std::stoi(v);
    else if (k == "--batch") n_batch = std::stoi(v);
    else if (k == "--threads") n_threads = std::stoi(v);
    else {
      std::cerr << "unknown option " << k << "\n";
      return 2;
    }
  }
  if (model_path.empty() || prompts_path.empty()) {
    std::cerr << "usage: mmirage-bench-raw-llama --model M --prompts P [--parallel N] [--max-new-tokens N]\n";
    return 2;
  }
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  raw_bench::LoadBackends();
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(model_path.c_str(), llama_model_default_params());
  if (model == nullptr) {
    std::cerr << "error: cannot load " << model_path << "\n";
    return 1;
  }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n_ctx_seq * parallel);
  cp.n_batch = static_cast<uint32_t>(n_batch);
  cp.n_seq_max = static_cast<uint32_t>(parallel);
  cp.kv_unified = true;
  if (n_threads > 0) cp.n_threads = cp.n_threads_batch = n_threads;
  llama_context* ctx = llama_init_from_model(model, cp);
  llama_memory_t mem = llama_get_memory(ctx);
  auto tmpls = common_chat_templates_init(model, "");

  // Timed from here: formatting and tokenizing the prompts is part of the job for both (mmirage does it on the
  // submitting thread, beside the decode loop).
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<llama_token>> prompts;
  std::ifstream in(prompts_path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    common_chat_templates_inputs inputs;
    common_chat_msg msg;
    msg.role = "user";
    msg.content = UnquoteJsonString(line);
    inputs.messages = {msg};
    inputs.add_generation_prompt = true;
    std::string text = common_chat_templates_apply(tmpls.get(), inputs).prompt;
    std::vector<llama_token> toks(text.size() + 8);
    int n = llama_tokenize(vocab, text.c_str(), static_cast<int32_t>(text.size()), toks.data(),
                           static_cast<int32_t>(toks.size()), true, true);
    toks.resize(static_cast<size_t>(std::max(n, 0)));
    prompts.push_back(std::move(toks));
  }

  llama_batch batch = llama_batch_init(std::max(n_batch, parallel), 0, 1);
  int64_t generated = 0;
  const int n_vocab = llama_vocab_n_tokens(vocab);
  for (size_t wave = 0; wave < prompts.size(); wave += static_cast<size_t>(parallel)) {
    size_t n_seq = std::min(prompts.size() - wave, static_cast<size_t>(parallel));
    llama_memory_clear(mem, true);
    std::vector<llama_pos> pos(n_seq, 0);
    std::vector<llama_token> next(n_seq);
    // Prefill every prompt but its last token (no logits needed), in chunks of n_batch tokens.
    batch.n_tokens = 0;
    for (size_t s = 0; s < n_seq; ++s) {
      const auto& p = prompts[wave + s];
      for (size_t i = 0; i + 1 < p.size(); ++i) {
        if (batch.n_tokens == n_batch) {
          if (llama_decode(ctx, batch) != 0) return 1;
          batch.n_tokens = 0;
        }
        int j = batch.n_tokens++;
        batch.token[j] = p[i];
        batch.pos[j] = pos[s]++;
        batch.n_seq_id[j] = 1;
        batch.seq_id[j][0] = static_cast<llama_seq_id>(s);
        batch.logits[j] = false;
      }
      next[s] = p.back();
    }
    if (batch.n_tokens > 0 && llama_decode(ctx, batch) != 0) return 1;
    // Decode: one token per sequence per step; the first step feeds each prompt's last token.
    for (int step = 0; step < max_new; ++step) {
      if (!raw_bench::DecodeStep(ctx, batch, next, pos, n_vocab)) {
        std::cerr << "error: decode failed\n";
        return 1;
      }
      generated += static_cast<int64_t>(n_seq);
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"requests\": %zu, \"output_tokens\": %lld, \"seconds\": %.3f, \"output_tok_per_s\": %.1f}\n",
              prompts.size(), static_cast<long long>(generated), secs, static_cast<double>(generated) / secs);
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
