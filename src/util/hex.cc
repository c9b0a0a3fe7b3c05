#include "util/hex.h"

namespace mmirage {

std::string HexEncode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) AppendHexDigits(c, 2, &out);
  return out;
}

std::string Hex64(uint64_t v) {
  std::string out;
  out.reserve(16);
  AppendHexDigits(v, 16, &out);
  return out;
}

int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace mmirage
