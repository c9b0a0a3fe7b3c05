// Private to the llama module (engine/llama/): its implementations of the engine/llama_module.h table.
#pragma once

#include "engine/llama_module.h"

namespace mmirage::engine::llama_module {

Result<std::unique_ptr<Engine>> CreateEngine(const LlamaEngineOptions& options);  // llama_engine.cc
EngineCounters CountersOf(const Engine& engine);                                  // llama_engine.cc
Result<std::unique_ptr<PromptTokenizer>> CreateTokenizer(const std::string& model_path,
                                                         const std::string& chat_template_file);  // llama_tokenizer.cc

}  // namespace mmirage::engine::llama_module
