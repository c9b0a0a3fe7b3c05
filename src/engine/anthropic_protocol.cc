// Anthropic Messages bodies (contract: anthropic_protocol.h).
#include "engine/anthropic_protocol.h"

#include "data/json.h"
#include "util/base64.h"

namespace mmirage::engine {
namespace {

Value TextBlock(std::string_view text) {
  Value b = Value::EmptyObject();
  b.Set("type", "text");
  b.Set("text", std::string(text));
  return b;
}

Result<Value> ImageBlock(const ImageInput& im) {
  Value src = Value::EmptyObject();
  if (im.kind == ImageInput::Kind::kUrl) {
    src.Set("type", "url");
    src.Set("url", im.source);
  } else if (im.kind == ImageInput::Kind::kBytes) {
    const std::string mime = SniffImageMime(im.bytes);
    if (mime != "image/jpeg" && mime != "image/png" && mime != "image/gif" && mime != "image/webp") {
      return Status::InvalidArgument("image " + im.source + " is " + (mime.empty() ? "of no known type" : mime) +
                                     "; Anthropic takes JPEG, PNG, GIF and WebP");
    }
    std::string data;
    AppendBase64(im.bytes, &data);
    src.Set("type", "base64");
    src.Set("media_type", mime);
    src.Set("data", std::move(data));
  } else {
    return Status::InvalidArgument("image '" + im.source + "' was not read");
  }
  Value b = Value::EmptyObject();
  b.Set("type", "image");
  b.Set("source", std::move(src));
  return b;
}

Result<Value> UserContent(const Request& r) {
  const size_t n_markers = CountImageMarkers(r.prompt);
  if (n_markers != r.images.size()) {
    return Status::InvalidArgument("the prompt has " + std::to_string(n_markers) + " image marker(s) for " +
                                   std::to_string(r.images.size()) + " image(s)");
  }
  if (r.images.empty()) return Value(r.prompt);
  Value blocks = Value::EmptyArray();
  const std::string_view marker(kImageMarker), prompt(r.prompt);
  size_t from = 0;
  for (const ImageInput& im : r.images) {
    const size_t at = prompt.find(marker, from);
    if (at > from) blocks.Push(TextBlock(prompt.substr(from, at - from)));
    from = at + marker.size();
    MMIRAGE_ASSIGN_OR_RETURN(Value image, ImageBlock(im));
    blocks.Push(std::move(image));
  }
  if (from < prompt.size()) blocks.Push(TextBlock(prompt.substr(from)));
  return blocks;
}

int64_t IntOr0(const Value* v) {
  if (v == nullptr) return 0;
  if (v->is_int()) return v->as_int();
  if (v->is_double()) return static_cast<int64_t>(v->as_double());
  return 0;
}

}  // namespace

Result<OpenAiCall> BuildAnthropicCall(const Request& r, const std::string& model, const std::string& system) {
  if (model.empty()) return Status::InvalidArgument("the Anthropic API needs a model (endpoint.model)");
  if (r.raw_prompt) return Status::InvalidArgument("the Anthropic API has no raw completions");
  Value body = Value::EmptyObject();
  body.Set("model", model);
  body.Set("max_tokens", static_cast<int64_t>(r.sampling.max_new_tokens));
  if (!system.empty()) body.Set("system", system);
  Value msg = Value::EmptyObject();
  msg.Set("role", "user");
  MMIRAGE_ASSIGN_OR_RETURN(Value content, UserContent(r));
  msg.Set("content", std::move(content));
  Value messages = Value::EmptyArray();
  messages.Push(std::move(msg));
  body.Set("messages", std::move(messages));
  const SamplingParams& s = r.sampling;
  body.Set("temperature", s.temperature);
  if (s.top_p != 1) body.Set("top_p", s.top_p);
  if (s.top_k > 0) body.Set("top_k", static_cast<int64_t>(s.top_k));
  if (!s.stop.empty()) {
    Value stops = Value::EmptyArray();
    for (const auto& st : s.stop) stops.Push(Value(st));
    body.Set("stop_sequences", std::move(stops));
  }
  if (!r.json_schema.empty()) {
    auto schema = ParseJson(r.json_schema);
    if (!schema.ok())
      return Status::InvalidArgument("the output's JSON schema is not valid JSON: " + schema.status().message());
    Value tool = Value::EmptyObject();
    tool.Set("name", kAnthropicJsonTool);
    tool.Set("description", "Record the answer in the required JSON shape.");
    tool.Set("input_schema", std::move(*schema));
    Value tools = Value::EmptyArray();
    tools.Push(std::move(tool));
    body.Set("tools", std::move(tools));
    Value choice = Value::EmptyObject();
    choice.Set("type", "tool");
    choice.Set("name", kAnthropicJsonTool);
    body.Set("tool_choice", std::move(choice));
  }
  OpenAiCall call;
  call.path = "/messages";
  call.body = ToJson(body);
  return call;
}

Result<Completion> ParseAnthropicResponse(std::string_view body) {
  auto v = ParseJson(body);
  if (!v.ok()) return Status::Unavailable("malformed response: " + v.status().message());
  const Value* content = v->is_object() ? v->Find("content") : nullptr;
  if (content == nullptr || !content->is_array()) return Status::Unavailable("malformed response: no content");
  Completion c;
  bool tool = false;
  for (const Value& b : content->as_array()) {
    const Value* type = b.is_object() ? b.Find("type") : nullptr;
    if (type == nullptr || !type->is_string()) continue;
    if (type->as_string() == "text" && !tool) {
      const Value* t = b.Find("text");
      if (t != nullptr && t->is_string()) c.text += t->as_string();
    } else if (type->as_string() == "tool_use") {
      const Value* name = b.Find("name");
      const Value* input = b.Find("input");
      if (name == nullptr || !name->is_string() || name->as_string() != kAnthropicJsonTool || input == nullptr)
        continue;
      c.text = ToJson(*input);
      tool = true;
    }
  }
  const Value* stop = v->Find("stop_reason");
  c.finish = stop != nullptr && stop->is_string() && stop->as_string() == "max_tokens" ? FinishReason::kLength
                                                                                       : FinishReason::kStop;
  if (const Value* u = v->Find("usage"); u != nullptr && u->is_object()) {
    c.cached_prompt_tokens = IntOr0(u->Find("cache_read_input_tokens"));
    c.prompt_tokens =
        IntOr0(u->Find("input_tokens")) + IntOr0(u->Find("cache_creation_input_tokens")) + c.cached_prompt_tokens;
    c.completion_tokens = IntOr0(u->Find("output_tokens"));
  }
  return c;
}

}  // namespace mmirage::engine
