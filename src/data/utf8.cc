#include "data/utf8.h"

#include <cstdint>
#include <cstring>

namespace mmirage {
namespace {

// Length of the well-formed sequence starting at s[i], or 0 if ill-formed (Unicode Table 3-7).
size_t SequenceLength(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t n = s.size() - i;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return n >= 2 && (b(i + 1) & 0xC0) == 0x80 ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (n < 3) return 0;
    unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    if (b(i + 1) < lo || b(i + 1) > hi || (b(i + 2) & 0xC0) != 0x80) return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (n < 4) return 0;
    unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    if (b(i + 1) < lo || b(i + 1) > hi || (b(i + 2) & 0xC0) != 0x80 || (b(i + 3) & 0xC0) != 0x80) return 0;
    return 4;
  }
  return 0;
}

// Bytes of the longest prefix of a well-formed sequence starting at s[i] (at least 1): the unit that one U+FFFD
// replaces (Unicode's "maximal subpart" practice, as Python's decoder follows).
size_t MaximalInvalidSubpart(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) need = 2;
  else if (c >= 0xE0 && c <= 0xEF) need = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) need = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  else return 1;
  size_t k = 1;
  if (i + k < s.size() && b(i + k) >= lo && b(i + k) <= hi) {
    ++k;
    while (k < need && i + k < s.size() && (b(i + k) & 0xC0) == 0x80) ++k;
  }
  return k;
}

}  // namespace

char32_t DecodeUtf8(std::string_view s, size_t* pos) {
  size_t i = *pos;
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    *pos = i + 1;
    return c;
  }
  size_t n = SequenceLength(s, i);
  if (n == 0) {
    *pos = i + MaximalInvalidSubpart(s, i);
    return kReplacementCharacter;
  }
  auto b = [&](size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k]) & 0x3F); };
  char32_t cp = n == 2   ? (static_cast<char32_t>(c & 0x1F) << 6) | b(1)
                : n == 3 ? (static_cast<char32_t>(c & 0x0F) << 12) | (b(1) << 6) | b(2)
                         : (static_cast<char32_t>(c & 0x07) << 18) | (b(1) << 12) | (b(2) << 6) | b(3);
  *pos = i + n;
  return cp;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = kReplacementCharacter;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t CountCodePoints(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    uint64_t word;  // eight ASCII bytes at a time (a template's `length` of a text is on the per-row path)
    if (s.size() - i >= 8 && (std::memcpy(&word, s.data() + i, 8), (word & 0x8080808080808080ull) == 0)) {
      i += 8;
      n += 8;
      continue;
    }
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
    } else {
      (void)DecodeUtf8(s, &i);
    }
    ++n;
  }
  return n;
}

size_t Utf8CharStart(std::string_view s, size_t pos) {
  size_t start = pos;
  while (start > 0 && pos - start < 3 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  return start;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string ToValidUtf8(std::string_view s) {
  if (IsValidUtf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    size_t n = SequenceLength(s, i);
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    out.append("\xEF\xBF\xBD");
    i += MaximalInvalidSubpart(s, i);
  }
  return out;
}

}  // namespace mmirage
