#include "engine/llama/llama_chat.h"

#include <stdexcept>

#include "chat.h"
#include "data/json.h"
#include "jinja/runtime.h"

namespace mmirage::engine {

Result<std::string> ApplyChatTemplate(const common_chat_templates* templates, const Request& request) {
  if (request.raw_prompt) return request.prompt;
  common_chat_templates_inputs inputs;
  common_chat_msg message;
  message.role = "user";
  message.content = request.prompt;
  inputs.messages.push_back(std::move(message));
  inputs.add_generation_prompt = true;
  inputs.use_jinja = true;
  const Value& kwargs = request.chat_template_kwargs;
  if (kwargs.is_object()) {
    for (const auto& [key, value] : kwargs.as_object()) {
      inputs.chat_template_kwargs[key] = ToJson(value);  // values are JSON texts, as llama-server passes them
      if (key == "enable_thinking" && value.is_bool()) inputs.enable_thinking = value.as_bool();
    }
  } else if (!kwargs.is_null()) {
    return Status::InvalidArgument(std::string("chat_template_kwargs must be an object, got ") + kwargs.TypeName());
  }
  try {
    return common_chat_templates_apply(templates, inputs).prompt;
  } catch (const jinja::raised_exception& e) {  // raise_exception() in the template
    return Status::InvalidArgument(std::string("chat template raised an error: ") + e.what());
  } catch (const jinja::rethrown_exception& e) {
    return Status::InvalidArgument(std::string("chat template failed: ") + e.what());
  } catch (const std::invalid_argument& e) {
    return Status::InvalidArgument(std::string("chat template failed: ") + e.what());
  } catch (const std::runtime_error& e) {  // jinja lexer/parser/runtime errors, common_json_error
    return Status::InvalidArgument(std::string("chat template failed: ") + e.what());
  }
}

}  // namespace mmirage::engine
