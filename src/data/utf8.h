// UTF-8: the one decoder and encoder of the code base (data/, query/, template/ and engine/ use these), and hygiene
// for text that comes from outside JSON parsing (model outputs cut at a token boundary can end in the middle of a
// character). Ill-formed input is handled one way everywhere: each maximal invalid subpart is one U+FFFD, as
// Python's decode(errors="replace") does. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mmirage {

constexpr char32_t kReplacementCharacter = 0xFFFD;

// Decodes the code point at s[*pos] and advances *pos past it. REQUIRES: *pos < s.size(). An ill-formed sequence
// (bad lead byte, overlong, surrogate, beyond U+10FFFF, truncated) decodes as U+FFFD and advances over its maximal
// invalid subpart (at least one byte).
char32_t DecodeUtf8(std::string_view s, size_t* pos);
// Appends `cp` in UTF-8. A surrogate or a value above U+10FFFF is written as U+FFFD: the output is always
// well-formed.
void AppendUtf8(char32_t cp, std::string* out);
// The number of code points DecodeUtf8 finds in `s` (ASCII is counted without decoding).
size_t CountCodePoints(std::string_view s);
// The start of the character that byte `pos` belongs to: `pos` moved back over at most 3 continuation bytes (never
// below 0). REQUIRES: pos < s.size(). For cutting text at a character boundary.
size_t Utf8CharStart(std::string_view s, size_t pos);

// True if `s` is well-formed UTF-8 (no overlongs, no surrogates, at most U+10FFFF).
bool IsValidUtf8(std::string_view s);
// `s` with every ill-formed sequence replaced by U+FFFD (one per maximal invalid subpart, as Python's
// decode(errors="replace") does). Returns `s` unchanged when it is valid.
std::string ToValidUtf8(std::string_view s);

}  // namespace mmirage
