// Internal: UTF-8 and the Unicode character classes and case mappings the template engine needs (Python's
// str.upper/lower/title/isspace and the regex \w). Covers ASCII, Latin-1, Latin Extended-A and Additional,
// Greek and Cyrillic; other scripts are caseless here. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "data/utf8.h"

namespace mmirage::tmpl::internal {

// The engine's short names for the one UTF-8 decoder/encoder (data/utf8.h): ill-formed input decodes as U+FFFD,
// and what is appended is always well-formed.
inline char32_t NextCp(std::string_view s, size_t* pos) { return DecodeUtf8(s, pos); }
inline void AppendCp(char32_t cp, std::string* out) { AppendUtf8(cp, out); }
inline size_t CpCount(std::string_view s) { return CountCodePoints(s); }
std::u32string ToU32(std::string_view s);
std::string FromU32(std::u32string_view s);

void AppendUpper(char32_t cp, std::string* out);
void AppendLower(char32_t cp, std::string* out);
void AppendTitle(char32_t cp, std::string* out);
std::string Upper(std::string_view s);
std::string Lower(std::string_view s);         // with Python's final-sigma rule
std::string CaseFold(std::string_view s);      // str.casefold() (ß -> ss, ς -> σ)
std::string PyTitle(std::string_view s);       // str.title()
std::string PyCapitalize(std::string_view s);  // str.capitalize()
bool IsCased(char32_t cp);
bool IsUpperCp(char32_t cp);
bool IsLowerCp(char32_t cp);
bool IsSpaceCp(char32_t cp);  // str.isspace()
bool IsWordCp(char32_t cp);   // regex \w
bool IsDigitCp(char32_t cp);  // decimal digit
bool IsAlphaCp(char32_t cp);
bool IsLineBreak(char32_t cp);  // str.splitlines() boundaries

}  // namespace mmirage::tmpl::internal
