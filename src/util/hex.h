// Hexadecimal digits: the one hex encoder of the tree (digests, fingerprints, JSON and Python escapes, percent
// encoding). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mmirage {

enum class HexCase { kLower, kUpper };

// Appends the low `digits` hex digits of `v`, most significant first, zero-padded: (0x2a, 4) → "002a".
// REQUIRES: 0 <= digits <= 16.
inline void AppendHexDigits(uint64_t v, int digits, std::string* out, HexCase hex_case = HexCase::kLower) {
  const char* table = hex_case == HexCase::kLower ? "0123456789abcdef" : "0123456789ABCDEF";
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out->push_back(table[(v >> shift) & 15]);
}

// Two lower-case hex digits a byte: "\x01\xab" → "01ab".
std::string HexEncode(std::string_view bytes);

// The 16 lower-case hex digits of `v` (fingerprints and checks in our state files).
std::string Hex64(uint64_t v);

// The value of the hex digit `c` (either case), or -1.
int HexDigitValue(char c);

}  // namespace mmirage
