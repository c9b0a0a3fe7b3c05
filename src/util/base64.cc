#include "util/base64.h"

#include <cstdint>

namespace mmirage {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The 6-bit value of `c`, or -1; `url_safe` also accepts '-' and '_'.
int Sextet(char c, bool url_safe) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || (url_safe && c == '-')) return 62;
  if (c == '/' || (url_safe && c == '_')) return 63;
  return -1;
}

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace

void AppendBase64(std::string_view data, std::string* out) {
  out->reserve(out->size() + (data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    uint32_t n = (uint32_t(uint8_t(data[i])) << 16) | (uint32_t(uint8_t(data[i + 1])) << 8) | uint8_t(data[i + 2]);
    out->push_back(kAlphabet[n >> 18]);
    out->push_back(kAlphabet[(n >> 12) & 63]);
    out->push_back(kAlphabet[(n >> 6) & 63]);
    out->push_back(kAlphabet[n & 63]);
  }
  if (size_t rest = data.size() - i; rest > 0) {
    uint32_t n = uint32_t(uint8_t(data[i])) << 16;
    if (rest == 2) n |= uint32_t(uint8_t(data[i + 1])) << 8;
    out->push_back(kAlphabet[n >> 18]);
    out->push_back(kAlphabet[(n >> 12) & 63]);
    out->push_back(rest == 2 ? kAlphabet[(n >> 6) & 63] : '=');
    out->push_back('=');
  }
}

std::string EncodeBase64(std::string_view data) {
  std::string out;
  AppendBase64(data, &out);
  return out;
}

Result<std::string> DecodeBase64(std::string_view text, Base64Syntax syntax) {
  const bool strict = syntax == Base64Syntax::kStrict;
  if (strict && text.size() % 4 != 0) {
    return Status::InvalidArgument("base64 length " + std::to_string(text.size()) + " is not a multiple of 4");
  }
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  bool padding = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!strict && IsSpace(c)) continue;
    // Strict: '=' only in the last two places (the length is a multiple of 4, so that is the last group).
    if (c == '=' && (!strict || i + 2 >= text.size())) {
      padding = true;
      continue;
    }
    const int v = Sextet(c, /*url_safe=*/!strict);
    if (v < 0 || padding) {
      if (strict) return Status::InvalidArgument("invalid base64 character at position " + std::to_string(i));
      return Status::InvalidArgument("invalid base64 text");
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  // One character left over holds only 6 bits: not a whole byte (strict text never gets here, its groups are whole).
  if (bits >= 6) return Status::InvalidArgument("invalid base64 text (truncated)");
  return out;
}

}  // namespace mmirage
