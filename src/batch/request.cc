#include "batch/request.h"

#include <algorithm>
#include <cctype>

#include "batch/provider.h"
#include "cache/hash.h"
#include "data/json.h"
#include "util/base64.h"
#include "util/sha.h"

namespace mmirage::batch {
namespace {

void AppendPyJson(const Value& v, bool compact, bool sort_keys, std::string* out) {
  const char* item_sep = compact ? "," : ", ";
  const char* key_sep = compact ? ":" : ": ";
  if (v.is_array()) {
    out->push_back('[');
    bool first = true;
    for (const Value& e : v.as_array()) {
      if (!first) out->append(item_sep);
      first = false;
      AppendPyJson(e, compact, sort_keys, out);
    }
    out->push_back(']');
  } else if (v.is_object()) {
    std::vector<const Value::Member*> members;
    for (const auto& m : v.as_object()) members.push_back(&m);
    if (sort_keys) {
      std::stable_sort(members.begin(), members.end(),
                       [](const Value::Member* a, const Value::Member* b) { return a->first < b->first; });
    }
    out->push_back('{');
    bool first = true;
    for (const auto* m : members) {
      if (!first) out->append(item_sep);
      first = false;
      AppendJsonString(m->first, out);
      out->append(key_sep);
      AppendPyJson(m->second, compact, sort_keys, out);
    }
    out->push_back('}');
  } else {
    AppendJson(v, out);
  }
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// {"type":"object","properties":{f:{"type":"string"}…},"required":[…],"additionalProperties":false}
Value ObjectSchema(const std::vector<std::string>& fields) {
  Value props = Value::EmptyObject(), req = Value::EmptyArray();
  for (const auto& f : fields) {
    Value t = Value::EmptyObject();
    t.Set("type", "string");
    props.Set(f, t);
    req.Push(Value(f));
  }
  Value s = Value::EmptyObject();
  s.Set("type", "object");
  s.Set("properties", props);
  s.Set("required", req);
  s.Set("additionalProperties", false);
  return s;
}

// Python's str.strip() of whitespace (ASCII subset, what ids are made of).
std::string_view Strip(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

Result<std::string> FileAsBase64(Env* env, const std::string& path) {
  auto data = env->ReadFileToString(path);
  if (!data.ok()) return data.status();
  std::string out;
  AppendBase64(*data, &out);
  return out;
}

Result<Value> AnthropicImageSource(Env* env, const std::string& url) {
  Value src = Value::EmptyObject();
  if (StartsWith(url, "http://") || StartsWith(url, "https://")) {
    src.Set("type", "url");
    src.Set("url", url);
    return src;
  }
  std::string media, data;
  if (StartsWith(url, "data:")) {
    size_t comma = url.find(',');
    if (comma == std::string::npos) return Status::InvalidArgument("Invalid data URI format");
    std::string header = url.substr(0, comma);
    if (header.find(";base64") == std::string::npos) return Status::InvalidArgument("Data URI must be base64 encoded");
    std::string rest = header.substr(5);
    media = rest.substr(0, rest.find(';'));
    if (media.empty()) media = "application/octet-stream";
    data = url.substr(comma + 1);
  } else {
    if (!env->FileExists(url)) return Status::InvalidArgument("Image path does not exist: " + url);
    media = GuessImageMimeType(url);
    MMIRAGE_ASSIGN_OR_RETURN(data, FileAsBase64(env, url));
  }
  if (media != "image/jpeg" && media != "image/png" && media != "image/gif" && media != "image/webp") {
    return Status::InvalidArgument("Unsupported image media type '" + media + "' for '" + url.substr(0, 80) +
                                   "', anthropic accepts image/gif, image/jpeg, image/png, image/webp.");
  }
  src.Set("type", "base64");
  src.Set("media_type", media);
  src.Set("data", data);
  return src;
}

}  // namespace

std::string PyJson(const Value& v, bool compact, bool sort_keys) {
  std::string out;
  AppendPyJson(v, compact, sort_keys, &out);
  return out;
}

std::string GuessImageMimeType(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return "";
  std::string ext(name.substr(dot));
  static const std::vector<std::pair<const char*, const char*>> kTypes = {{".avif", "image/avif"},
                                                                          {".bmp", "image/bmp"},
                                                                          {".gif", "image/gif"},
                                                                          {".ief", "image/ief"},
                                                                          {".jpg", "image/jpeg"},
                                                                          {".jpe", "image/jpeg"},
                                                                          {".jpeg", "image/jpeg"},
                                                                          {".heic", "image/heic"},
                                                                          {".heif", "image/heif"},
                                                                          {".png", "image/png"},
                                                                          {".svg", "image/svg+xml"},
                                                                          {".tiff", "image/tiff"},
                                                                          {".tif", "image/tiff"},
                                                                          {".ico", "image/vnd.microsoft.icon"},
                                                                          {".ras", "image/x-cmu-raster"},
                                                                          {".pnm", "image/x-portable-anymap"},
                                                                          {".pbm", "image/x-portable-bitmap"},
                                                                          {".pgm", "image/x-portable-graymap"},
                                                                          {".ppm", "image/x-portable-pixmap"},
                                                                          {".rgb", "image/x-rgb"},
                                                                          {".xbm", "image/x-xbitmap"},
                                                                          {".xpm", "image/x-xpixmap"},
                                                                          {".xwd", "image/x-xwindowdump"},
                                                                          {".webp", "image/webp"}};
  for (int pass = 0; pass < 2; ++pass) {  // exact extension first, then lower-cased (as mimetypes does)
    for (const auto& [e, t] : kTypes)
      if (ext == e) return t;
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return "";
}

Result<std::string> NormalizeAnthropicCustomId(std::string_view raw_in) {
  std::string_view raw = Strip(raw_in);
  if (raw.empty()) return Status::InvalidArgument("custom_id must be a non-empty string");
  std::string safe;
  for (char c : raw) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    safe.push_back(ok ? c : '_');
  }
  if (safe == raw && safe.size() <= 64) return safe;
  // A multi-byte character became several '_': cut on bytes, the result is ASCII.
  return safe.substr(0, 55) + "-" + Sha1Hex(raw).substr(0, 8);
}

Result<Value> BuildBatchRequest(const config::BatchApiProcessor& p, Env* env, const BatchPrompt& in) {
  // The neutral payload: a text message, or a text part followed by one image part per image.
  Value message = Value::EmptyObject();
  message.Set("role", "user");
  if (in.images.empty()) {
    message.Set("content", in.prompt);
  } else {
    Value content = Value::EmptyArray();
    Value text = Value::EmptyObject();
    text.Set("type", "text");
    text.Set("text", in.prompt);
    content.Push(text);
    for (const auto& img : in.images) {
      Value part = Value::EmptyObject(), url = Value::EmptyObject();
      part.Set("type", "image_url");
      url.Set("url", img);
      part.Set("image_url", url);
      content.Push(part);
    }
    message.Set("content", content);
  }
  if (p.provider == "openai") {
    Value body = Value::EmptyObject();
    Value messages = Value::EmptyArray();
    if (!in.images.empty()) {
      // Local files that exist become data: URIs; URLs, data: URIs and missing paths stay as they are.
      Value content = Value::EmptyArray();
      for (const Value& part : message.Find("content")->as_array()) {
        const Value* u = part.Find("image_url");
        if (u == nullptr) {
          content.Push(part);
          continue;
        }
        std::string url = u->Find("url")->as_string();
        if (!StartsWith(url, "http://") && !StartsWith(url, "https://") && !StartsWith(url, "data:") &&
            env->FileExists(url)) {
          std::string mime = GuessImageMimeType(url);
          if (mime.empty()) mime = "image/jpeg";
          MMIRAGE_ASSIGN_OR_RETURN(std::string b64, FileAsBase64(env, url));
          url = "data:" + mime + ";base64," + b64;
        }
        Value np = Value::EmptyObject(), nu = Value::EmptyObject();
        np.Set("type", "image_url");
        nu.Set("url", url);
        np.Set("image_url", nu);
        content.Push(np);
      }
      message.Set("content", content);
    }
    messages.Push(message);
    body.Set("messages", messages);
    body.Set("model", p.model);
    if (p.temperature) body.Set("temperature", Value(*p.temperature));  // extensions (MMIRAGE sends neither)
    if (p.seed) body.Set("seed", Value(*p.seed));
    if (!in.expected_schema.empty()) {
      Value js = Value::EmptyObject();
      js.Set("name", "structured_output");
      js.Set("strict", true);
      js.Set("schema", ObjectSchema(in.expected_schema));
      Value rf = Value::EmptyObject();
      rf.Set("type", "json_schema");
      rf.Set("json_schema", js);
      body.Set("response_format", rf);
    }
    Value req = Value::EmptyObject();
    req.Set("custom_id", in.custom_id);
    req.Set("method", "POST");
    req.Set("url", p.batch_endpoint);
    req.Set("body", body);
    return req;
  }
  // Anthropic: model, max_tokens, temperature (else top_p) after the messages; then the messages normalised to
  // content blocks.
  MMIRAGE_ASSIGN_OR_RETURN(std::string id, NormalizeAnthropicCustomId(in.custom_id));
  Value params = Value::EmptyObject();
  params.Set("messages", Value());  // keeps its first position
  params.Set("model", p.model);
  params.Set("max_tokens", p.max_tokens);
  // A YAML int stays an int in Python's json.dumps ("1", not "1.0").
  auto num = [](double v, bool as_int) { return as_int ? Value(static_cast<int64_t>(v)) : Value(v); };
  if (p.temperature) params.Set("temperature", num(*p.temperature, p.temperature_is_int));
  else if (p.top_p) params.Set("top_p", num(*p.top_p, p.top_p_is_int));
  Value blocks = Value::EmptyArray();
  if (in.images.empty()) {
    Value b = Value::EmptyObject();
    b.Set("type", "text");
    b.Set("text", in.prompt);
    blocks.Push(b);
  } else {
    Value b = Value::EmptyObject();
    b.Set("type", "text");
    b.Set("text", in.prompt);
    blocks.Push(b);
    for (const auto& img : in.images) {
      MMIRAGE_ASSIGN_OR_RETURN(Value src, AnthropicImageSource(env, img));
      Value ib = Value::EmptyObject();
      ib.Set("type", "image");
      ib.Set("source", src);
      blocks.Push(ib);
    }
  }
  Value nm = Value::EmptyObject();
  nm.Set("role", "user");
  nm.Set("content", blocks);
  Value messages = Value::EmptyArray();
  messages.Push(nm);
  params.Set("messages", messages);
  if (!in.expected_schema.empty()) {
    Value fmt = Value::EmptyObject();
    fmt.Set("type", "json_schema");
    fmt.Set("schema", ObjectSchema(in.expected_schema));
    Value oc = Value::EmptyObject();
    oc.Set("format", fmt);
    params.Set("output_config", oc);
  }
  Value req = Value::EmptyObject();
  req.Set("custom_id", id);
  req.Set("params", params);
  return req;
}

bool IsBatchDeterministic(const config::BatchApiProcessor& p) {
  return (p.temperature && *p.temperature <= 0) || (p.provider == "openai" && p.seed.has_value());
}

std::string BatchRequestKey(const config::BatchApiProcessor& p, const Value& request) {
  const Value* payload = request.Find(p.provider == "openai" ? "body" : "params");
  if (payload == nullptr || !payload->is_object()) return "";
  cache::Hasher h;
  h.AddString("mmirage-batch-request-1").AddString("batch_api").AddString(p.provider).AddString(BatchBaseUrl(p));
  h.AddString(p.provider == "openai" ? p.batch_endpoint : "/v1/messages");
  h.AddString(PyJson(*payload, /*compact=*/true, /*sort_keys=*/true));
  return h.Finish();
}

}  // namespace mmirage::batch
