#include "process/llm/image_inputs.h"

#include <algorithm>
#include <cstdlib>

#include "util/base64.h"
#include "util/hex.h"

namespace mmirage::process::llm {
namespace {

constexpr std::string_view kPlaceholderOpen = "<__mmirage_image:";
constexpr std::string_view kPlaceholderClose = "__>";

bool IsNullImage(const Value* v) {
  if (v == nullptr || v->is_null()) return true;
  if (v->is_object()) {  // an HF Image struct with neither bytes nor path is a null image
    const Value* b = v->Find("bytes");
    const Value* p = v->Find("path");
    return (b == nullptr || b->is_null()) && (p == nullptr || p->is_null());
  }
  return false;
}

}  // namespace

std::vector<std::string> ImageVariableNames(const config::Config& config) {
  std::vector<std::string> names;
  for (const auto& in : config.processing.inputs) {
    if (in.image) names.push_back(in.name);
  }
  // image_gen outputs are image variables too: a later llm output sends their images.
  for (const auto& o : config.processing.outputs) {
    if (o.type == "image_gen") names.push_back(o.name);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::string ImagePlaceholder(const std::string& name) {
  return std::string(kPlaceholderOpen) + name + std::string(kPlaceholderClose);
}

Value WithImagePlaceholders(const Value& vars, const std::vector<std::string>& image_names) {
  if (!vars.is_object()) return vars;
  Value out = vars;
  bool changed = false;
  for (const std::string& name : image_names) {
    if (IsNullImage(vars.Find(name))) continue;
    out.Set(name, Value(ImagePlaceholder(name)));
    changed = true;
  }
  return changed ? out : vars;
}

ImageSize SniffImageSize(std::string_view b) {
  auto u8 = [&](size_t i) { return i < b.size() ? static_cast<uint32_t>(static_cast<unsigned char>(b[i])) : 0u; };
  auto be16 = [&](size_t i) { return static_cast<int>((u8(i) << 8) | u8(i + 1)); };
  auto le16 = [&](size_t i) { return static_cast<int>(u8(i) | (u8(i + 1) << 8)); };
  auto be32 = [&](size_t i) {
    return static_cast<int>((u8(i) << 24) | (u8(i + 1) << 16) | (u8(i + 2) << 8) | u8(i + 3));
  };
  auto le32 = [&](size_t i) {
    return static_cast<int>(u8(i) | (u8(i + 1) << 8) | (u8(i + 2) << 16) | (u8(i + 3) << 24));
  };
  const std::string mime = engine::SniffImageMime(b);
  if (mime == "image/png" && b.size() >= 24) return {be32(16), be32(20)};
  if (mime == "image/gif" && b.size() >= 10) return {le16(6), le16(8)};
  if (mime == "image/bmp" && b.size() >= 26) return {le32(18), std::abs(le32(22))};
  if (mime == "image/jpeg") {
    size_t i = 2;
    while (i + 9 < b.size()) {
      if (u8(i) != 0xFF) return {};
      const uint32_t marker = u8(i + 1);
      if (marker == 0xFF) {
        ++i;
        continue;
      }
      // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size.
      if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC)
        return {be16(i + 7), be16(i + 5)};
      i += 2 + static_cast<size_t>(be16(i + 2));
    }
  }
  return {};
}

Result<std::string> DecodeDataUri(std::string_view uri) {
  if (uri.substr(0, 5) != "data:") return Status::InvalidArgument("not a data: URI");
  const size_t comma = uri.find(',');
  if (comma == std::string_view::npos) return Status::InvalidArgument("malformed data: URI (no ',')");
  const std::string_view meta = uri.substr(5, comma - 5);
  const std::string_view payload = uri.substr(comma + 1);
  const bool base64 = meta.size() >= 7 && meta.substr(meta.size() - 7) == ";base64";
  if (base64) {
    Result<std::string> bytes = DecodeBase64(payload, Base64Syntax::kLenient);
    if (!bytes.ok()) return Status::InvalidArgument("malformed data: URI (" + bytes.status().message() + ")");
    return bytes;
  }
  std::string out;
  for (size_t i = 0; i < payload.size(); ++i) {
    if (payload[i] == '%' && i + 2 < payload.size() && HexDigitValue(payload[i + 1]) >= 0 &&
        HexDigitValue(payload[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexDigitValue(payload[i + 1]) * 16 + HexDigitValue(payload[i + 2])));
      i += 2;
    } else if (payload[i] == '%') {
      return Status::InvalidArgument("malformed data: URI (bad percent escape)");
    } else {
      out.push_back(payload[i]);
    }
  }
  return out;
}

Result<engine::ImageInput> ToImageInput(const std::string& name, const Value& value) {
  engine::ImageInput im;
  const std::string where = "image input '" + name + "'";
  if (value.is_bytes()) {
    im.kind = engine::ImageInput::Kind::kBytes;
    im.source = "bytes of " + where;
    im.bytes = value.as_bytes();
    return im;
  }
  if (value.is_string()) {
    const std::string& s = value.as_string();
    if (s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0) {
      im.kind = engine::ImageInput::Kind::kUrl;
      im.source = s;
      return im;
    }
    if (s.rfind("data:", 0) == 0) {
      Result<std::string> bytes = DecodeDataUri(s);
      if (!bytes.ok()) return Status::InvalidArgument(where + ": " + bytes.status().message());
      im.kind = engine::ImageInput::Kind::kBytes;
      im.source = "data: URI of " + where;
      im.bytes = std::move(*bytes);
      return im;
    }
    im.kind = engine::ImageInput::Kind::kFile;
    im.source = s;
    return im;
  }
  if (value.is_object()) {
    const Value* b = value.Find("bytes");
    const Value* p = value.Find("path");
    if (b != nullptr && !b->is_null()) {
      im.kind = engine::ImageInput::Kind::kBytes;
      im.source = "bytes of " + where;
      if (b->is_bytes()) {
        im.bytes = b->as_bytes();
      } else if (b->is_string()) {  // JSON holds bytes as base64 text
        Result<std::string> bytes = DecodeBase64(b->as_string(), Base64Syntax::kLenient);
        if (!bytes.ok()) return Status::InvalidArgument(where + ": 'bytes' is a string but not base64");
        im.bytes = std::move(*bytes);
      } else {
        return Status::InvalidArgument(where + ": 'bytes' must be bytes, got " + b->TypeName());
      }
      return im;
    }
    if (p != nullptr && p->is_string()) return ToImageInput(name, *p);
    return Status::InvalidArgument(where + ": an image struct needs 'bytes' or a 'path' string");
  }
  return Status::InvalidArgument(where + ": expected a path, URL, data: URI, bytes or an {bytes, path} struct, got " +
                                 value.TypeName());
}

Result<PlacedImages> PlaceImages(std::string prompt, const Value& vars, const std::vector<std::string>& image_names) {
  PlacedImages out;
  std::vector<bool> placed(image_names.size(), false);
  std::vector<engine::ImageInput> converted(image_names.size());
  std::vector<bool> present(image_names.size(), false);
  for (size_t i = 0; i < image_names.size(); ++i) {
    const Value* v = vars.is_object() ? vars.Find(image_names[i]) : nullptr;
    if (IsNullImage(v)) continue;
    MMIRAGE_ASSIGN_OR_RETURN(converted[i], ToImageInput(image_names[i], *v));
    present[i] = true;
  }
  // Placed images, in prompt order.
  std::string body;
  std::vector<engine::ImageInput> placed_images;
  std::vector<std::string> placed_vars;
  size_t from = 0;
  while (true) {
    const size_t open = prompt.find(kPlaceholderOpen, from);
    if (open == std::string::npos) break;
    const size_t name_at = open + kPlaceholderOpen.size();
    const size_t close = prompt.find(kPlaceholderClose, name_at);
    if (close == std::string::npos) break;
    const std::string name = prompt.substr(name_at, close - name_at);
    auto it = std::find(image_names.begin(), image_names.end(), name);
    const size_t end = close + kPlaceholderClose.size();
    body.append(prompt, from, open - from);
    if (it != image_names.end() && present[static_cast<size_t>(it - image_names.begin())]) {
      const size_t i = static_cast<size_t>(it - image_names.begin());
      body += engine::kImageMarker;
      placed_images.push_back(converted[i]);
      placed_vars.push_back(name);
      placed[i] = true;
    } else {
      body.append(prompt, open, end - open);  // not one of ours: the text stays
    }
    from = end;
  }
  body.append(prompt, from, std::string::npos);
  for (size_t i = 0; i < image_names.size(); ++i) {
    if (!present[i] || placed[i]) continue;
    out.prompt += engine::kImageMarker;
    out.prompt += '\n';
    out.images.push_back(converted[i]);
    out.variables.push_back(image_names[i]);
  }
  out.prompt += body;
  for (auto& im : placed_images) out.images.push_back(std::move(im));
  for (auto& v : placed_vars) out.variables.push_back(std::move(v));
  return out;
}

}  // namespace mmirage::process::llm
