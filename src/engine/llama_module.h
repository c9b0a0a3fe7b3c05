// The embedded llama.cpp engine is a shared module (engine/llama/, libmmirage_llama.so, util/module.h): llama.cpp's
// libraries load only when a run uses the embedded engine or counts prompt tokens. This is the module's interface,
// in our own types; engine/llama_engine.h and engine/llama_tokenizer.h keep their functions and forward to it.
// A build links the module in instead when llama.cpp is built from source (MMIRAGE_LLAMA_MODULE_LINKED: its static
// libraries cannot go into a shared library), as on GPU machines.
//
// Thread-safety: LoadLlamaModule may be called from several threads; the functions of the table are as
// thread-safe as the ones they implement.
#pragma once

#include <memory>
#include <string>

#include "engine/engine.h"
#include "engine/llama_engine.h"
#include "engine/llama_tokenizer.h"
#include "util/status.h"

namespace mmirage::engine::llama_module {

// What the module offers; each member implements the function of llama_engine.h / llama_tokenizer.h it names.
struct Api {
  int abi;              // kAbi of the build that made the module
  const char* version;  // MMIRAGE_VERSION of that build
  Result<std::unique_ptr<Engine>> (*create_engine)(const LlamaEngineOptions& options);         // CreateLlamaEngine
  EngineCounters (*engine_counters)(const Engine& engine);                                     // GetEngineCounters
  Result<std::unique_ptr<PromptTokenizer>> (*create_tokenizer)(const std::string& model_path,  // CreateLlamaTokenizer
                                                               const std::string& chat_template_file);
};
inline constexpr int kAbi = 1;  // bump when Api or a type it passes changes

// The module's table, loaded on the first call. Errors: kNotFound, one line (util/module.h), also when the module
// found belongs to another build.
Result<const Api*> LoadLlamaModule();

}  // namespace mmirage::engine::llama_module

// The module's entry point (engine/llama/llama_module.cc).
extern "C" const mmirage::engine::llama_module::Api* mmirage_llama_module_v1();
