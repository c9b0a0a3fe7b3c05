#include "template/internal/unicode.h"

namespace mmirage::tmpl::internal {

std::u32string ToU32(std::string_view s) {
  std::u32string r;
  r.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) r.push_back(NextCp(s, &i));
  return r;
}

std::string FromU32(std::u32string_view s) {
  std::string r;
  r.reserve(s.size());
  for (char32_t c : s) AppendCp(c, &r);
  return r;
}

namespace {

// Simple one-to-one lowercase mapping (0 when the code point has none).
char32_t LowerMap(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0xC0) return 0;
  if (c <= 0xDE) return c == 0xD7 ? 0 : c + 32;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x130 || c == 0x138 || c == 0x149) return 0;
    if (c == 0x178) return 0xFF;
    bool even_upper = (c < 0x138) || (c >= 0x14A && c <= 0x177);
    if (even_upper) return (c % 2 == 0) ? c + 1 : 0;
    return (c % 2 == 1 && c != 0x17F) ? c + 1 : 0;
  }
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 63;
  if ((c >= 0x391 && c <= 0x3A1) || (c >= 0x3A3 && c <= 0x3AB)) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if ((c >= 0x1E00 && c <= 0x1E95) || (c >= 0x1EA0 && c <= 0x1EFF)) return c % 2 == 0 ? c + 1 : 0;
  if (c == 0x1C4 || c == 0x1C7 || c == 0x1CA || c == 0x1F1) return c + 2;
  if (c == 0x1C5 || c == 0x1C8 || c == 0x1CB || c == 0x1F2) return c + 1;
  if (c >= 0x1CD && c <= 0x1DC) return c % 2 == 1 ? c + 1 : 0;
  if ((c >= 0x1DE && c <= 0x1EF) || (c >= 0x1F8 && c <= 0x21F) || (c >= 0x222 && c <= 0x233) ||
      (c >= 0x246 && c <= 0x24F) || (c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) ||
      (c >= 0x4D0 && c <= 0x52F)) {
    return c % 2 == 0 ? c + 1 : 0;
  }
  if (c >= 0x531 && c <= 0x556) return c + 48;
  if (c >= 0x2160 && c <= 0x216F) return c + 16;
  if (c >= 0x24B6 && c <= 0x24CF) return c + 26;
  if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;
  return 0;
}

char32_t UpperMap(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0xB5) return 0;
  if (c == 0xB5) return 0x39C;
  if (c >= 0xE0 && c <= 0xFE) return c == 0xF7 ? 0 : c - 32;
  if (c == 0xFF) return 0x178;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x131) return 'I';
    if (c == 0x17F) return 'S';
    if (c == 0x138 || c == 0x149) return 0;
    bool even_upper = (c < 0x138) || (c >= 0x14A && c <= 0x177);
    if (even_upper) return (c % 2 == 1) ? c - 1 : 0;
    return (c % 2 == 0 && c != 0x178) ? c - 1 : 0;
  }
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 37;
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 63;
  if (c == 0x3C2) return 0x3A3;
  if ((c >= 0x3B1 && c <= 0x3C1) || (c >= 0x3C3 && c <= 0x3CB)) return c - 32;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if ((c >= 0x1E01 && c <= 0x1E95) || (c >= 0x1EA1 && c <= 0x1EFF)) return c % 2 == 1 ? c - 1 : 0;
  if (c == 0x1C6 || c == 0x1C9 || c == 0x1CC || c == 0x1F3) return c - 2;
  if (c == 0x1C5 || c == 0x1C8 || c == 0x1CB || c == 0x1F2) return c - 1;
  if (c >= 0x1CE && c <= 0x1DC) return c % 2 == 0 ? c - 1 : 0;
  if ((c >= 0x1DF && c <= 0x1EF) || (c >= 0x1F9 && c <= 0x21F) || (c >= 0x223 && c <= 0x233) ||
      (c >= 0x247 && c <= 0x24F) || (c >= 0x461 && c <= 0x481) || (c >= 0x48B && c <= 0x4BF) ||
      (c >= 0x4D1 && c <= 0x52F)) {
    return c % 2 == 1 ? c - 1 : 0;
  }
  if (c >= 0x561 && c <= 0x586) return c - 48;
  if (c >= 0x2170 && c <= 0x217F) return c - 16;
  if (c >= 0x24D0 && c <= 0x24E9) return c - 26;
  if (c >= 0xFF41 && c <= 0xFF5A) return c - 32;
  return 0;
}

}  // namespace

bool IsUpperCp(char32_t cp) {
  return (LowerMap(cp) != 0 && UpperMap(cp) == 0) || cp == 0x130;  // titlecase digraphs are neither
}
bool IsLowerCp(char32_t cp) {
  return (UpperMap(cp) != 0 && LowerMap(cp) == 0) || cp == 0xDF || cp == 0x138 || cp == 0x149 || cp == 0xAA ||
         cp == 0xBA;
}
bool IsCased(char32_t cp) { return IsUpperCp(cp) || IsLowerCp(cp) || LowerMap(cp) != 0; }

void AppendUpper(char32_t cp, std::string* out) {
  if (cp == 0xDF) {
    out->append("SS");
    return;
  }
  if (cp == 0x149) {
    AppendCp(0x2BC, out);
    out->push_back('N');
    return;
  }
  char32_t u = UpperMap(cp);
  AppendCp(u ? u : cp, out);
}

void AppendLower(char32_t cp, std::string* out) {
  if (cp == 0x130) {
    out->push_back('i');
    AppendCp(0x307, out);
    return;
  }
  char32_t l = LowerMap(cp);
  AppendCp(l ? l : cp, out);
}

void AppendTitle(char32_t cp, std::string* out) {
  if (cp == 0x1C4 || cp == 0x1C6 || cp == 0x1C7 || cp == 0x1C9 || cp == 0x1CA || cp == 0x1CC || cp == 0x1F1 ||
      cp == 0x1F3) {
    char32_t base = cp <= 0x1C6 ? 0x1C5 : cp <= 0x1C9 ? 0x1C8 : cp <= 0x1CC ? 0x1CB : 0x1F2;
    AppendCp(base, out);
    return;
  }
  if (cp == 0x1C5 || cp == 0x1C8 || cp == 0x1CB || cp == 0x1F2) {
    AppendCp(cp, out);
    return;
  }
  if (cp == 0xDF) {
    out->append("Ss");
    return;
  }
  AppendUpper(cp, out);
}

std::string Upper(std::string_view s) {
  std::string r;
  r.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      r.push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : static_cast<char>(c));
      ++i;
    } else {
      AppendUpper(NextCp(s, &i), &r);
    }
  }
  return r;
}

namespace {
// Lowercases the code point at s[start, *end) given the previous code point, applying the final-sigma rule.
void AppendLowerAt(std::string_view s, char32_t cp, char32_t prev, size_t next_pos, std::string* out) {
  if (cp == 0x3A3) {
    size_t j = next_pos;
    bool next_cased = j < s.size() && IsCased(NextCp(s, &j));
    if (IsCased(prev) && !next_cased) {
      AppendCp(0x3C2, out);
      return;
    }
  }
  AppendLower(cp, out);
}
}  // namespace

std::string CaseFold(std::string_view s) {
  std::string r;
  size_t i = 0;
  while (i < s.size()) {
    char32_t cp = NextCp(s, &i);
    if (cp == 0xDF) {
      r += "ss";
    } else if (cp == 0x3C2) {
      AppendCp(0x3C3, &r);
    } else {
      AppendLower(cp, &r);
    }
  }
  return r;
}

std::string Lower(std::string_view s) {
  std::string r;
  r.reserve(s.size());
  size_t i = 0;
  char32_t prev = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      r.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : static_cast<char>(c));
      prev = c;
      ++i;
      continue;
    }
    char32_t cp = NextCp(s, &i);
    if (cp == 0x3A3) {  // final sigma: preceded by a cased letter and not followed by one
      size_t j = i;
      bool next_cased = j < s.size() && IsCased(NextCp(s, &j));
      if (IsCased(prev) && !next_cased) {
        AppendCp(0x3C2, &r);
        prev = cp;
        continue;
      }
    }
    AppendLower(cp, &r);
    prev = cp;
  }
  return r;
}

std::string PyTitle(std::string_view s) {
  std::string r;
  size_t i = 0;
  bool prev_cased = false;
  char32_t prev = 0;
  while (i < s.size()) {
    char32_t cp = NextCp(s, &i);
    if (prev_cased) {
      AppendLowerAt(s, cp, prev, i, &r);
    } else {
      AppendTitle(cp, &r);
    }
    prev_cased = IsCased(cp);
    prev = cp;
  }
  return r;
}

std::string PyCapitalize(std::string_view s) {
  std::string r;
  size_t i = 0;
  bool first = true;
  char32_t prev = 0;
  while (i < s.size()) {
    char32_t cp = NextCp(s, &i);
    if (first) {
      AppendTitle(cp, &r);
    } else {
      AppendLowerAt(s, cp, prev, i, &r);
    }
    first = false;
    prev = cp;
  }
  return r;
}

bool IsSpaceCp(char32_t c) {
  return (c >= 9 && c <= 13) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool IsDigitCp(char32_t c) {
  return (c >= '0' && c <= '9') || (c >= 0xFF10 && c <= 0xFF19) || (c >= 0x660 && c <= 0x669);
}

bool IsAlphaCp(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (IsCased(c)) return true;
  if (!IsWordCp(c)) return false;
  return !IsDigitCp(c) && !(c >= 0xB2 && c <= 0xBE && c != 0xBA) && !(c >= 0x2070 && c <= 0x2189);
}

bool IsWordCp(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  if (c < 0xC0)
    return c == 0xAA || c == 0xB2 || c == 0xB3 || c == 0xB5 || c == 0xB9 || c == 0xBA || (c >= 0xBC && c <= 0xBE);
  if (c == 0xD7 || c == 0xF7) return false;
  if (c >= 0x2B9 && c <= 0x36F)
    return c <= 0x2C1 || (c >= 0x2C6 && c <= 0x2D1) || (c >= 0x2E0 && c <= 0x2E4) || c == 0x2EC || c == 0x2EE;
  if (c == 0x37E || c == 0x387) return false;
  if (c >= 0x2000 && c <= 0x2BFF) {
    return (c >= 0x2070 && c <= 0x2079 && c != 0x2072 && c != 0x2073) || (c >= 0x207F && c <= 0x2089) ||
           (c >= 0x2090 && c <= 0x209C) || (c >= 0x2150 && c <= 0x2189) || c == 0x2102 || c == 0x2107 ||
           (c >= 0x210A && c <= 0x2113) || c == 0x2115 || (c >= 0x2119 && c <= 0x211D) || c == 0x2124 || c == 0x2126 ||
           c == 0x2128 || (c >= 0x212A && c <= 0x212D) || (c >= 0x212F && c <= 0x2139) ||
           (c >= 0x2460 && c <= 0x249B) || (c >= 0x24EA && c <= 0x24FF) || (c >= 0x2776 && c <= 0x2793);
  }
  if (c >= 0x3000 && c <= 0x303F) {
    return (c >= 0x3005 && c <= 0x3007) || (c >= 0x3021 && c <= 0x3029) || (c >= 0x3031 && c <= 0x3035) ||
           (c >= 0x3038 && c <= 0x303C);
  }
  if (c >= 0xFE00 && c <= 0xFE0F) return false;
  if (c == 0xFEFF) return false;
  if (c >= 0xFF00 && c <= 0xFF65) {
    return (c >= 0xFF10 && c <= 0xFF19) || (c >= 0xFF21 && c <= 0xFF3A) || (c >= 0xFF41 && c <= 0xFF5A);
  }
  if (c >= 0x1F000 && c <= 0x1FAFF) return (c >= 0x1F100 && c <= 0x1F10C);
  if (c >= 0xE000 && c <= 0xF8FF) return false;
  if (c == 0x200B || c == 0x200C || c == 0x200D) return false;
  return true;
}

bool IsLineBreak(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
         c == 0x2028 || c == 0x2029;
}

}  // namespace mmirage::tmpl::internal
