// The functions of engine/llama_engine.h and engine/llama_tokenizer.h, forwarded to the llama module
// (engine/llama_module.h), which is loaded the first time one of them runs.
#include "engine/llama_module.h"

#include <atomic>
#include <mutex>

#include "util/module.h"

namespace mmirage::engine {
namespace llama_module {
namespace {
std::atomic<const Api*> g_loaded{nullptr};  // set once the module is loaded
}  // namespace

Result<const Api*> LoadLlamaModule() {
  static Result<const Api*> api = Status::Internal("not loaded");
  static std::once_flag once;
  std::call_once(once, [] {
#ifdef MMIRAGE_LLAMA_MODULE_LINKED
    api = mmirage_llama_module_v1();
#else
    api = LoadModuleApi<Api>("libmmirage_llama.so", "the embedded llama.cpp engine",
                             "mmirage_llama_module_v1", kAbi, MMIRAGE_VERSION);
#endif
    if (api.ok()) g_loaded.store(*api, std::memory_order_release);
  });
  return api;
}

}  // namespace llama_module

Result<std::unique_ptr<Engine>> CreateLlamaEngine(const LlamaEngineOptions& options) {
  MMIRAGE_ASSIGN_OR_RETURN(const llama_module::Api* api, llama_module::LoadLlamaModule());
  return api->create_engine(options);
}

EngineCounters GetEngineCounters(const Engine& engine) {
  // A llama engine exists only once the module is loaded: never load it just to be asked about another engine.
  const llama_module::Api* api = llama_module::g_loaded.load(std::memory_order_acquire);
  return api != nullptr ? api->engine_counters(engine) : EngineCounters{};
}

Result<std::unique_ptr<PromptTokenizer>> CreateLlamaTokenizer(const std::string& model_path,
                                                              const std::string& chat_template_file) {
  MMIRAGE_ASSIGN_OR_RETURN(const llama_module::Api* api, llama_module::LoadLlamaModule());
  return api->create_tokenizer(model_path, chat_template_file);
}

}  // namespace mmirage::engine
