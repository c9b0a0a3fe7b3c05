// UTF-8 hygiene for text that comes from outside JSON parsing (model outputs cut at a token boundary can end in
// the middle of a character). Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace mmirage {

// True if `s` is well-formed UTF-8 (no overlongs, no surrogates, at most U+10FFFF).
bool IsValidUtf8(std::string_view s);
// `s` with every ill-formed sequence replaced by U+FFFD (one per maximal invalid subpart, as Python's
// decode(errors="replace") does). Returns `s` unchanged when it is valid.
std::string ToValidUtf8(std::string_view s);

}  // namespace mmirage
