// JSON text <-> Value.
//
// ParseJson accepts one JSON document (RFC 8259, UTF-8 validated) and returns the Value; object key order is
// kept. Integers that fit int64 stay ints, larger ones become doubles. On failure the Status is
// kCorruption with a short reason (the caller adds the file:line).
// AppendJson writes compact JSON (`{"a":1,"b":[true,null]}`), UTF-8 unescaped, doubles in Python's repr form
// (`0.1`, `1.0`, `1e+20`); NaN/Infinity, which JSON cannot hold, are written as null; bytes as a base64 string.
// Thread-safety: ParseJson uses a thread-local parser; all functions are safe to call concurrently.
#pragma once

#include <string>
#include <string_view>

#include "data/value.h"
#include "util/status.h"

namespace mmirage {

Result<Value> ParseJson(std::string_view text);

void AppendJson(const Value& v, std::string* out);
std::string ToJson(const Value& v);
// Pretty form with `indent` spaces, keys in stored order (sort_keys sorts object keys, as Python's sort_keys).
std::string ToJsonPretty(const Value& v, int indent = 2, bool sort_keys = false);

// Appends `data` in standard base64 (RFC 4648, with padding). Bytes values are written to JSON this way.
void AppendBase64(std::string_view data, std::string* out);

// Appends `s` as a JSON string literal (quotes included).
void AppendJsonString(std::string_view s, std::string* out);

// Python's repr(float): shortest round-trip digits; fixed notation when 1e-4 <= |d| < 1e16 (with ".0" when
// integral), else `1e+20` / `1.5e-07`; `inf`, `-inf`, `nan`.
std::string FormatDouble(double d);
void AppendDouble(double d, std::string* out);

}  // namespace mmirage
