// Integer parsing that never throws and never accepts a partial parse: the one integer parser for user data,
// file and directory names, environment values and command output. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mmirage {

// An optional '+' or '-' then one or more ASCII digits, nothing else (no space); nullopt for any other text and
// for a value outside int64.
std::optional<int64_t> ParseInt64(std::string_view text);

// One or more ASCII digits, nothing else (no sign, no space): ids, counts and numbers in names. nullopt for any
// other text and for a value above INT64_MAX.
std::optional<int64_t> ParseNonNegativeInt64(std::string_view text);

// One or more digits of `base` (10, or 16 with either case), nothing else (no sign, no prefix, no space); nullopt
// for any other text and for a value above UINT64_MAX.
std::optional<uint64_t> ParseUint64(std::string_view text, int base = 10);

}  // namespace mmirage
