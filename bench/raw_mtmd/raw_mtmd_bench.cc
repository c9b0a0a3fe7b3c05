// The baseline of bench/vision_bench.py: a raw libmtmd loop, no mmirage in the way.
//
// Reads requests (one JSON object per line: {"image": "<path>", "text": "<question>"}), and for each: formats the
// user message "<image>\n<question>" with the model's chat template (generation prompt added — what mmirage
// does), loads and preprocesses the image, encodes it with the vision tower and decodes the text and image chunks
// into its sequence (mtmd_helper_eval_chunks), then generates `--max-new-tokens` tokens (EOS ignored), `--parallel`
// sequences at a time: waves of P requests prefilled one after the other, then decoded together. Every image is
// encoded (no reuse). Prints one JSON line: {"requests", "images_encoded", "output_tokens", "seconds",
// "images_per_s", "output_tok_per_s"} (model load excluded; reading, formatting and encoding included).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "chat.h"
#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"
#include "raw_common/raw_decode.h"

int main(int argc, char** argv) {
  std::string model_path, mmproj_path, requests_path;
  int parallel = 8, max_new = 32, n_ctx_seq = 1024, n_batch = 2048, n_threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") model_path = v;
    else if (k == "--mmproj") mmproj_path = v;
    else if (k == "--requests") requests_path = v;
    else if (k == "--parallel") parallel = std::stoi(v);
    else if (k == "--max-new-tokens") max_new = std::stoi(v);
    else if (k == "--ctx-seq") n_ctx_seq = std::stoi(v);
    else if (k == "--threads") n_threads = std::stoi(v);
    else {
      std::cerr << "unknown option " << k << "\n";
      return 2;
    }
  }
  if (model_path.empty() || mmproj_path.empty() || requests_path.empty()) {
    std::cerr << "usage: mmirage-bench-raw-mtmd --model M --mmproj P --requests R [--parallel N] "
                 "[--max-new-tokens N] [--threads N]\n";
    return 2;
  }
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  raw_bench::LoadBackends();
  mtmd_helper_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
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
  cp.n_threads = cp.n_threads_batch = n_threads;
  llama_context* ctx = llama_init_from_model(model, cp);
  llama_memory_t mem = llama_get_memory(ctx);
  auto tmpls = common_chat_templates_init(model, "");
  mtmd_context_params mp = mtmd_context_params_default();
  mp.use_gpu = false;
  mp.print_timings = false;
  mp.n_threads = n_threads;
  mtmd_context* mctx = mtmd_init_from_file(mmproj_path.c_str(), model, mp);
  if (mctx == nullptr) {
    std::cerr << "error: cannot load " << mmproj_path << "\n";
    return 1;
  }
  struct Req {
    std::string image, text;
  };
  std::vector<Req> reqs;
  {
    std::ifstream in(requests_path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      auto j = common_json::parse(line);
      reqs.push_back({j["image"].get<std::string>(), j["text"].get<std::string>()});
    }
  }

  auto t0 = std::chrono::steady_clock::now();
  llama_batch batch = llama_batch_init(std::max(n_batch, parallel), 0, 1);
  const int n_vocab = llama_vocab_n_tokens(vocab);
  int64_t generated = 0, encoded = 0;
  auto argmax = [&](int idx) { return raw_bench::Greedy(ctx, idx, n_vocab); };
  for (size_t wave = 0; wave < reqs.size(); wave += static_cast<size_t>(parallel)) {
    const size_t n_seq = std::min(reqs.size() - wave, static_cast<size_t>(parallel));
    llama_memory_clear(mem, true);
    std::vector<llama_pos> pos(n_seq, 0);
    std::vector<llama_token> next(n_seq);
    for (size_t s = 0; s < n_seq; ++s) {
      const Req& r = reqs[wave + s];
      common_chat_templates_inputs inputs;
      common_chat_msg msg;
      msg.role = "user";
      msg.content = std::string(mtmd_default_marker()) + "\n" + r.text;
      inputs.messages = {msg};
      inputs.add_generation_prompt = true;
      const std::string text = common_chat_templates_apply(tmpls.get(), inputs).prompt;
      mtmd_helper_bitmap_wrapper w =
          mtmd_helper_bitmap_init_from_file(mctx, r.image.c_str(), false, mtmd_helper_init_opt_default());
      if (w.bitmap == nullptr) {
        std::cerr << "error: cannot load image " << r.image << "\n";
        return 1;
      }
      mtmd_input_chunks* chunks = mtmd_input_chunks_init();
      mtmd_input_text it{text.c_str(), text.size(), true, true};
      const mtmd_bitmap* bm = w.bitmap;
      if (mtmd_tokenize(mctx, chunks, &it, &bm, 1) != 0) {
        std::cerr << "error: mtmd_tokenize failed\n";
        return 1;
      }
      llama_pos new_pos = 0;
      if (mtmd_helper_eval_chunks(mctx, ctx, chunks, 0, static_cast<llama_seq_id>(s), n_batch, true, &new_pos) != 0) {
        std::cerr << "error: mtmd_helper_eval_chunks failed\n";
        return 1;
      }
      ++encoded;
      pos[s] = new_pos;
      next[s] = argmax(-1);  // the first generated token, from the prompt's last logits
      ++generated;
      mtmd_input_chunks_free(chunks);
      mtmd_bitmap_free(w.bitmap);
    }
    for (int step = 1; step < max_new; ++step) {
      if (!raw_bench::DecodeStep(ctx, batch, next, pos, n_vocab)) {
        std::cerr << "error: decode failed\n";
        return 1;
      }
      generated += static_cast<int64_t>(n_seq);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "{\"requests\": %zu, \"images_encoded\": %lld, \"output_tokens\": %lld, \"seconds\": %.3f, "
      "\"images_per_s\": %.2f, \"output_tok_per_s\": %.1f}\n",
      reqs.size(), static_cast<long long>(encoded), static_cast<long long>(generated), secs,
      static_cast<double>(reqs.size()) / secs, static_cast<double>(generated) / secs);
  llama_batch_free(batch);
  mtmd_free(mctx);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
