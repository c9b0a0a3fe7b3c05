// CheckTestModel: the `--check` smoke test (load, tokenize, decode, greedy-generate) and its JSON quoting.
#include <llama.h>
#ifdef MMIRAGE_LLAMA_DYNAMIC_BACKENDS
#include <ggml-backend.h>

#include <string>

#include "engine/llama/llama_backends.h"
#include "util/dl.h"
#endif

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "test_model.h"

namespace mmirage::tools {
namespace {

constexpr char kPrompt[] = "Hello, world";
constexpr uint32_t kCheckContextTokens = 256;

struct ModelDeleter {
  void operator()(llama_model* m) const { llama_model_free(m); }
};
struct ContextDeleter {
  void operator()(llama_context* c) const { llama_free(c); }
};
struct SamplerDeleter {
  void operator()(llama_sampler* s) const { llama_sampler_free(s); }
};

// llama.cpp logs model loading at length; keep only the last error line for our one-line error.
class LlamaLogCapture {
 public:
  LlamaLogCapture() { llama_log_set(&LlamaLogCapture::Callback, this); }
  ~LlamaLogCapture() { llama_log_set(nullptr, nullptr); }
  LlamaLogCapture(const LlamaLogCapture&) = delete;
  LlamaLogCapture& operator=(const LlamaLogCapture&) = delete;
  std::string last_error() const {
    std::string s = last_error_;
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s.empty() ? "no details logged" : s;
  }

 private:
  static void Callback(ggml_log_level level, const char* text, void* user_data) {
    auto* self = static_cast<LlamaLogCapture*>(user_data);
    if (level == GGML_LOG_LEVEL_ERROR) self->last_error_ = text;
  }
  std::string last_error_;
};

Result<std::vector<llama_token>> Tokenize(const llama_vocab* vocab, const std::string& text) {
  std::vector<llama_token> tokens(text.size() + 8);
  int32_t n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), tokens.data(),
                             static_cast<int32_t>(tokens.size()), /*add_special=*/true, /*parse_special=*/true);
  if (n < 0) return Status::Internal("check: tokenization of the prompt failed");
  tokens.resize(static_cast<size_t>(n));
  return tokens;
}

std::string Detokenize(const llama_vocab* vocab, const std::vector<llama_token>& tokens) {
  std::string text(tokens.size() * 16 + 16, '\0');
  auto run = [&] {
    return llama_detokenize(vocab, tokens.data(), static_cast<int32_t>(tokens.size()), text.data(),
                            static_cast<int32_t>(text.size()), /*remove_special=*/false, /*unparse_special=*/false);
  };
  int32_t n = run();
  if (n < 0) {
    text.resize(static_cast<size_t>(-n));
    n = run();
  }
  text.resize(static_cast<size_t>(std::max(n, 0)));
  return text;
}

// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are not one.
size_t Utf8SequenceLength(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return 0;
  }
  return len;
}

}  // namespace

std::string JsonQuote(const std::string& text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t len = Utf8SequenceLength(text, i);
    if (len == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (len > 1) {
      out.append(text, i, len);
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
    i += len;
  }
  out += '"';
  return out;
}

Result<TestModelCheck> CheckTestModel(const std::string& model_path, int n_generate) {
  MMIRAGE_CHECK(n_generate > 0);
  LlamaLogCapture log;
#ifdef MMIRAGE_LLAMA_DYNAMIC_BACKENDS
  {  // llama.cpp's shared build: load the backends that sit beside libggml
    const std::string dir = mmirage::DirectoryOfSymbol(reinterpret_cast<const void*>(&ggml_backend_load_all_from_path));
    mmirage_llama::LoadLlamaBackends(dir);
  }
#endif
  llama_backend_init();
  std::unique_ptr<llama_model, ModelDeleter> model(
      llama_model_load_from_file(model_path.c_str(), llama_model_default_params()));
  if (!model) return Status::Internal("check: cannot load " + model_path + ": " + log.last_error());
  const llama_vocab* vocab = llama_model_get_vocab(model.get());

  llama_context_params cparams = llama_context_default_params();
  cparams.n_ctx = kCheckContextTokens;
  cparams.n_batch = kCheckContextTokens;
  // One thread: the check is tiny, and ggml's spinning thread barrier collapses on a busy machine (several
  // seconds instead of a fraction of one with 2 threads on 2 loaded cores).
  cparams.n_threads = cparams.n_threads_batch = 1;
  cparams.no_perf = true;
  std::unique_ptr<llama_context, ContextDeleter> ctx(llama_init_from_model(model.get(), cparams));
  if (!ctx) return Status::Internal("check: cannot create a context: " + log.last_error());

  TestModelCheck result;
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<llama_token> prompt, Tokenize(vocab, kPrompt));
  result.n_prompt_tokens = static_cast<int>(prompt.size());
  if (llama_decode(ctx.get(), llama_batch_get_one(prompt.data(), static_cast<int32_t>(prompt.size()))) != 0) {
    return Status::Internal("check: llama_decode failed on the prompt: " + log.last_error());
  }
  std::unique_ptr<llama_sampler, SamplerDeleter> sampler(
      llama_sampler_chain_init(llama_sampler_chain_default_params()));
  llama_sampler_chain_add(sampler.get(), llama_sampler_init_greedy());
  std::vector<llama_token> generated;
  for (int i = 0; i < n_generate; ++i) {
    llama_token tok = llama_sampler_sample(sampler.get(), ctx.get(), -1);
    if (llama_vocab_is_eog(vocab, tok)) break;
    generated.push_back(tok);
    if (i + 1 == n_generate) break;  // no need to decode the last token
    if (llama_decode(ctx.get(), llama_batch_get_one(&generated.back(), 1)) != 0) {
      return Status::Internal("check: llama_decode failed at generated token " + std::to_string(i) + ": " +
                              log.last_error());
    }
  }
  result.n_generated = static_cast<int>(generated.size());
  result.text = Detokenize(vocab, generated);
  return result;
}

}  // namespace mmirage::tools
