#include "engine/openai_protocol.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>

#include "data/json.h"
#include "data/utf8.h"
#include "util/base64.h"

namespace mmirage::engine {
namespace {

void Key(const char* k, std::string* out) {
  out->push_back(',');
  out->push_back('"');
  out->append(k);
  out->append("\":");
}

void NumberField(const char* k, double v, std::string* out) {
  Key(k, out);
  if (!std::isfinite(v)) {
    out->append("null");  // NaN / inf (e.g. `.nan` in YAML) have no JSON form: the body must stay valid JSON
    return;
  }
  AppendDouble(v, out);
}

int64_t IntOr0(const Value* v) {
  if (v == nullptr) return 0;
  if (v->is_int()) return v->as_int();
  if (v->is_double()) return static_cast<int64_t>(v->as_double());
  return 0;
}

std::string_view Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// The user message as content parts: text between the image markers, each image as an image_url part.
Status AppendContentParts(const Request& r, std::string* b) {
  const size_t n_markers = CountImageMarkers(r.prompt);
  if (n_markers != r.images.size()) {
    return Status::InvalidArgument("the prompt has " + std::to_string(n_markers) + " image marker(s) for " +
                                   std::to_string(r.images.size()) + " image(s)");
  }
  const std::string_view marker(kImageMarker);
  b->push_back('[');
  bool first = true;
  auto text_part = [&](std::string_view text) {
    if (text.empty()) return;
    if (!first) b->push_back(',');
    first = false;
    b->append("{\"type\":\"text\",\"text\":");
    AppendJsonString(text, b);
    b->push_back('}');
  };
  size_t from = 0;
  for (const ImageInput& im : r.images) {
    const size_t at = r.prompt.find(marker, from);
    text_part(std::string_view(r.prompt).substr(from, at - from));
    from = at + marker.size();
    std::string url;
    if (im.kind == ImageInput::Kind::kUrl) {
      url = im.source;
    } else if (im.kind == ImageInput::Kind::kBytes) {
      const std::string mime = SniffImageMime(im.bytes);
      if (mime.empty()) {
        return Status::InvalidArgument("image " + im.source + " is not a known image format (" +
                                       std::to_string(im.bytes.size()) + " bytes; PNG, JPEG, GIF, WebP and BMP are)");
      }
      url = "data:" + mime + ";base64,";
      AppendBase64(im.bytes, &url);
    } else {
      return Status::InvalidArgument("image '" + im.source + "' was not read");
    }
    if (!first) b->push_back(',');
    first = false;
    b->append("{\"type\":\"image_url\",\"image_url\":{\"url\":");
    AppendJsonString(url, b);
    b->append("}}");
  }
  text_part(std::string_view(r.prompt).substr(from));
  b->push_back(']');
  return Status::OK();
}

}  // namespace

Result<OpenAiCall> BuildOpenAiCall(const Request& r, OpenAiMode mode, const std::string& model) {
  OpenAiCall call;
  call.chat = mode == OpenAiMode::kChat && !r.raw_prompt;
  call.path = call.chat ? "/chat/completions" : "/completions";
  std::string& b = call.body;
  b.reserve(r.prompt.size() + r.json_schema.size() + 256);
  b.append("{\"stream\":false");
  if (!model.empty()) {
    Key("model", &b);
    AppendJsonString(model, &b);
  }
  if (!r.images.empty() && !call.chat) {
    return Status::InvalidArgument("images need the chat API (endpoint.mode: chat), not raw completions");
  }
  if (call.chat && !r.images.empty()) {
    Key("messages", &b);
    b.append("[{\"role\":\"user\",\"content\":");
    MMIRAGE_TRY(AppendContentParts(r, &b));
    b.append("}]");
  } else if (call.chat) {
    Key("messages", &b);
    b.append("[{\"role\":\"user\",\"content\":");
    AppendJsonString(r.prompt, &b);
    b.append("}]");
  } else {
    Key("prompt", &b);
    AppendJsonString(r.prompt, &b);
  }
  const SamplingParams& s = r.sampling;
  Key("max_tokens", &b);
  b.append(std::to_string(s.max_new_tokens));
  NumberField("temperature", s.temperature, &b);
  NumberField("top_p", s.top_p, &b);
  if (s.top_k > 0) {
    Key("top_k", &b);
    b.append(std::to_string(s.top_k));
  }
  if (s.min_p > 0) NumberField("min_p", s.min_p, &b);
  if (!s.stop.empty()) {
    Key("stop", &b);
    b.push_back('[');
    for (size_t i = 0; i < s.stop.size(); ++i) {
      if (i) b.push_back(',');
      AppendJsonString(s.stop[i], &b);
    }
    b.push_back(']');
  }
  if (s.seed) {
    Key("seed", &b);
    b.append(std::to_string(*s.seed));
  }
  if (s.frequency_penalty != 0) NumberField("frequency_penalty", s.frequency_penalty, &b);
  if (s.presence_penalty != 0) NumberField("presence_penalty", s.presence_penalty, &b);
  if (s.repetition_penalty != 1) {
    NumberField("repetition_penalty", s.repetition_penalty, &b);  // SGLang, vLLM
    NumberField("repeat_penalty", s.repetition_penalty, &b);      // llama-server
  }
  if (s.ignore_eos) {
    Key("ignore_eos", &b);
    b.append("true");
  }
  if (r.chat_template_kwargs.is_object() && r.chat_template_kwargs.size() > 0) {
    Key("chat_template_kwargs", &b);
    AppendJson(r.chat_template_kwargs, &b);
  }
  if (!r.json_schema.empty()) {
    auto schema = ParseJson(r.json_schema);
    if (!schema.ok())
      return Status::InvalidArgument("the output's JSON schema is not valid JSON: " + schema.status().message());
    Key("response_format", &b);
    b.append("{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"output\",\"schema\":");
    AppendJson(*schema, &b);
    b.append(",\"strict\":true}}");
  }
  b.push_back('}');
  return call;
}

Result<Completion> ParseOpenAiResponse(std::string_view body, bool chat) {
  auto v = ParseJson(body);
  if (!v.ok()) return Status::Unavailable("malformed response: " + v.status().message());
  const Value* choices = v->Find("choices");
  if (choices == nullptr || !choices->is_array() || choices->size() == 0 || !choices->as_array()[0].is_object())
    return Status::Unavailable("malformed response: no choices");
  const Value& choice = choices->as_array()[0];
  Completion c;
  const Value* text = nullptr;
  if (chat) {
    const Value* msg = choice.Find("message");
    if (msg == nullptr || !msg->is_object()) return Status::Unavailable("malformed response: no message");
    text = msg->Find("content");
  } else {
    text = choice.Find("text");
  }
  if (text != nullptr && text->is_string()) {
    c.text = text->as_string();
  } else if (text != nullptr && !text->is_null()) {
    return Status::Unavailable(std::string("malformed response: the text is a ") + text->TypeName());
  }
  const Value* fr = choice.Find("finish_reason");
  c.finish =
      fr != nullptr && fr->is_string() && fr->as_string() == "length" ? FinishReason::kLength : FinishReason::kStop;
  if (const Value* u = v->Find("usage"); u != nullptr && u->is_object()) {
    c.prompt_tokens = IntOr0(u->Find("prompt_tokens"));
    c.completion_tokens = IntOr0(u->Find("completion_tokens"));
    if (const Value* d = u->Find("prompt_tokens_details"); d != nullptr && d->is_object())
      c.cached_prompt_tokens = IntOr0(d->Find("cached_tokens"));
  }
  return c;
}

std::optional<double> ParseRetryAfterSeconds(std::string_view value, int64_t now_unix_seconds) {
  std::string v(Trim(value));
  if (v.empty()) return std::nullopt;
  if (std::isdigit(static_cast<unsigned char>(v[0]))) {
    char* end = nullptr;
    double s = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || !std::isfinite(s) || s < 0) return std::nullopt;
    return s;
  }
  // IMF-fixdate, e.g. "Wed, 21 Oct 2015 07:28:00 GMT" (the obsolete forms are not worth supporting).
  std::tm tm{};
  const char* end = strptime(v.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  int64_t at = static_cast<int64_t>(timegm(&tm));
  return static_cast<double>(std::max<int64_t>(0, at - now_unix_seconds));
}

uint64_t BackoffDelayMicros(int retry, uint64_t base_micros, uint64_t cap_micros, double uniform01) {
  double ceiling = static_cast<double>(base_micros) * std::ldexp(1.0, std::clamp(retry - 1, 0, 62));
  ceiling = std::min(ceiling, static_cast<double>(cap_micros));
  return static_cast<uint64_t>(ceiling * std::clamp(uniform01, 0.0, 1.0));
}

bool IsRetryableHttpStatus(int code) { return code == 408 || code == 409 || code == 429 || code >= 500; }
bool IsOverloadHttpStatus(int code) { return code == 429 || code == 503 || code == 529; }

std::string DescribeHttpError(int status_code, std::string_view body) {
  std::string detail;
  auto v = ParseJson(body);
  if (v.ok() && v->is_object()) {
    const Value* e = v->Find("error");
    if (e != nullptr && e->is_object()) e = e->Find("message");
    if (e == nullptr) e = v->Find("message");
    if (e == nullptr) e = v->Find("detail");
    if (e != nullptr && e->is_string()) detail = e->as_string();
  }
  if (detail.empty()) detail = std::string(Trim(body));
  constexpr size_t kMax = 280;
  if (detail.size() > kMax) {
    size_t cut = Utf8CharStart(detail, kMax);  // whole characters
    detail = detail.substr(0, cut) + "…";
  }
  for (char& ch : detail)
    if (ch == '\n' || ch == '\r') ch = ' ';
  std::string s = "HTTP " + std::to_string(status_code);
  if (!detail.empty()) s += ": " + detail;
  return s;
}

}  // namespace mmirage::engine
