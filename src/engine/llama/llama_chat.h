// The chat-template step shared by the embedded engine (FormatPrompt) and the vocab-only tokenizer (estimate):
// one user turn holding request.prompt, rendered with the model's own template, so both count the same tokens.
// Errors: kInvalidArgument when the template fails (llama.cpp's exceptions are caught here). Thread-safe for
// concurrent callers on the same (read-only) templates.
#pragma once

#include <string>

#include "engine/engine.h"
#include "util/status.h"

struct common_chat_templates;

namespace mmirage::engine {

// request.prompt as is when request.raw_prompt; otherwise the template applied with add_generation_prompt and
// request.chat_template_kwargs (an object: values passed as JSON texts, as llama-server does; enable_thinking also
// sets the flag). Template errors and a non-object kwargs value are kInvalidArgument.
Result<std::string> ApplyChatTemplate(const common_chat_templates* templates, const Request& request);

}  // namespace mmirage::engine
