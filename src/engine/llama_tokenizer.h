// PromptTokenizer: counts the tokens a request's prompt becomes on a model, as the embedded engine would feed it
// (the model's chat template, or the override, with the generation prompt; BOS when the model wants one), from a
// vocab-only load of the GGUF — no weights are read, so it is cheap even for a large model.
//
// Thread-safety: CountPromptTokens may be called from several threads. No llama.h here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/engine.h"

namespace mmirage::engine {

class PromptTokenizer {
 public:
  virtual ~PromptTokenizer() = default;
  // Errors: kInvalidArgument for a chat template that fails on this request.
  virtual Result<int64_t> CountPromptTokens(const Request& request) const = 0;
};

// Errors: kNotFound (no model file / template file), kInvalidArgument (not a GGUF file, template does not parse).
Result<std::unique_ptr<PromptTokenizer>> CreateLlamaTokenizer(const std::string& model_path,
                                                              const std::string& chat_template_file);

}  // namespace mmirage::engine
