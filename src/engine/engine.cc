#include "engine/engine.h"

namespace mmirage::engine {

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kError: return "error";
  }
  return "error";
}

}  // namespace mmirage::engine

namespace mmirage::engine {

size_t CountImageMarkers(const std::string& text) {
  size_t n = 0;
  const std::string_view marker(kImageMarker);
  for (size_t pos = text.find(marker); pos != std::string::npos; pos = text.find(marker, pos + marker.size())) ++n;
  return n;
}

std::string SniffImageMime(std::string_view b) {
  auto starts = [&](std::string_view magic, size_t at = 0) {
    return b.size() >= at + magic.size() && b.substr(at, magic.size()) == magic;
  };
  if (starts("\x89PNG\r\n\x1a\n")) return "image/png";
  if (starts("\xFF\xD8\xFF")) return "image/jpeg";
  if (starts("GIF87a") || starts("GIF89a")) return "image/gif";
  if (starts("RIFF") && starts("WEBP", 8)) return "image/webp";
  if (starts("BM")) return "image/bmp";
  return "";
}

}  // namespace mmirage::engine
