// The vocab-only tokenizer. Formatting follows LlamaEngine::FormatPrompt (llama_engine.cc): keep them in step.
#include "engine/llama_tokenizer.h"

#include <mutex>
#include <stdexcept>

#include "chat.h"
#include "common.h"
#include "engine/llama/llama_chat.h"
#include "engine/llama/llama_module_impl.h"
#include "jinja/runtime.h"
#include "llama.h"
#include "util/env.h"
#include "util/log.h"

namespace mmirage::engine {
namespace {

struct ModelDeleter {
  void operator()(llama_model* m) const { llama_model_free(m); }
};

class LlamaTokenizer final : public PromptTokenizer {
 public:
  LlamaTokenizer(std::unique_ptr<llama_model, ModelDeleter> model, common_chat_templates_ptr templates)
      : model_(std::move(model)), templates_(std::move(templates)), vocab_(llama_model_get_vocab(model_.get())) {}

  Result<int64_t> CountPromptTokens(const Request& request) const override {
    auto text = ApplyChatTemplate(templates_.get(), request);
    if (!text.ok()) return text.status();
    return static_cast<int64_t>(common_tokenize(vocab_, *text, /*add_special=*/true, /*parse_special=*/true).size());
  }

 private:
  std::unique_ptr<llama_model, ModelDeleter> model_;
  common_chat_templates_ptr templates_;
  const llama_vocab* vocab_;
};

}  // namespace

Result<std::unique_ptr<PromptTokenizer>> llama_module::CreateTokenizer(const std::string& model_path,
                                                                       const std::string& chat_template_file) {
  Env* env = Env::Default();
  if (!env->FileExists(model_path)) return Status::NotFound("model file '" + model_path + "' does not exist");
  static std::once_flag once;
  std::call_once(once, [] {
    // Quiet unless an error (the engine installs its own logger when it loads, after this).
    llama_log_set(
        [](ggml_log_level level, const char* text, void*) {
          if (level == GGML_LOG_LEVEL_ERROR) LOG_ERROR("llama.cpp: " << text);
        },
        nullptr);
    llama_backend_init();
  });
  llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  mp.n_gpu_layers = 0;
  std::unique_ptr<llama_model, ModelDeleter> model(llama_model_load_from_file(model_path.c_str(), mp));
  if (!model) return Status::InvalidArgument("cannot load the vocabulary of '" + model_path + "' (not a GGUF file?)");
  std::string override_text;
  if (!chat_template_file.empty()) {
    Result<std::string> text = env->ReadFileToString(chat_template_file);
    if (!text.ok()) return text.status().WithContext("chat_template_file");
    override_text = std::move(*text);
  }
  common_chat_templates_ptr templates;
  try {
    templates = common_chat_templates_init(model.get(), override_text);
  } catch (const std::runtime_error& e) {
    return Status::InvalidArgument(std::string("cannot parse the chat template: ") + e.what());
  } catch (const std::invalid_argument& e) {
    return Status::InvalidArgument(std::string("cannot parse the chat template: ") + e.what());
  }
  if (!templates) return Status::InvalidArgument("cannot parse the chat template");
  return std::unique_ptr<PromptTokenizer>(new LlamaTokenizer(std::move(model), std::move(templates)));
}

}  // namespace mmirage::engine
