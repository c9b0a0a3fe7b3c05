// JSON text <-> Value.
//
// ParseJson accepts one JSON document (RFC 8259, UTF-8 validated) and returns the Value; object key order is
// kept. Integers that fit int64 stay ints, larger ones become doubles. On failure the Status is
// kCorruption with a short reason (the caller adds the file:line).
//
// The one JSON writer is AppendJson(v, options, out); the other writers are its presets:
//   AppendJson(v, out) / ToJson     compact (`{"a":1,"b":[true,null]}`), UTF-8 unescaped, bytes as a base64 string:
//                                   every file, journal line and HTTP body we write
//   ToJsonPretty                    `indent` spaces per level, "," and ": " (Python's json.dumps(indent=N))
//   AppendJsonTagged (tagged_json.h) bytes as "\u0000b64:<base64>" (the Arrow journal)
//   the template engine's tojson    sort_keys, ", " / ": ", ensure_ascii, html_safe, bytes an error, bounded
//   JMESPath's to_string            compact + ensure_ascii (Python's json.dumps(separators=(",", ":")))
// Doubles are written in Python's repr form (`0.1`, `1.0`, `1e+20`); NaN and ±Infinity always as null.
// Thread-safety: ParseJson uses a thread-local parser; all functions are safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/value.h"
#include "util/status.h"

namespace mmirage {

Result<Value> ParseJson(std::string_view text);

// One step of a field path: an object member by name, or an array element by index (negative counts from the end).
struct JsonPathStep {
  bool is_index = false;
  std::string key;
  int64_t index = 0;
};
using JsonPath = std::vector<JsonPathStep>;

// ParseJson for a caller that needs only some fields: validates the whole document exactly as ParseJson does (same
// errors), but builds only the Value at the end of each path — the Value ParseJson's tree holds there, or null
// when a step finds no such member/element or a value of the wrong kind (a JMESPath field/index chain's result).
// Returns the values in the order of `paths`; *root_type is the document's Value::TypeName ("object", "array"...).
Result<std::vector<Value>> ParseJsonPaths(std::string_view text, const std::vector<const JsonPath*>& paths,
                                          const char** root_type);

struct JsonWriteOptions {
  int indent = -1;                 // < 0: one line; >= 0: a newline and `indent` spaces per level inside non-empty
                                   // containers, items separated by ",", keys by ": "
  bool sort_keys = false;          // object keys in byte (= code point) order, stable; else in stored order
  bool python_separators = false;  // one-line form: ", " and ": " (json.dumps' defaults) instead of "," and ":"
  bool ensure_ascii = false;       // code points >= U+007F as \uXXXX (UTF-16 surrogate pairs above U+FFFF); an
                                   // ill-formed UTF-8 sequence as \ufffd
  bool html_safe = false;          // also < > & ' as \u003c \u003e \u0026 \u0027 (Jinja's tojson)
  enum class Bytes { kBase64, kTagged, kError };
  Bytes bytes = Bytes::kBase64;  // a bytes value: a base64 string, "\u0000b64:" + base64, or an error
  int max_depth = 0;             // > 0: a value nested deeper than this fails
  size_t max_bytes = 0;          // > 0: fails once more than this many bytes are written
};

// Appends `v` to *out as JSON. OK unless an option fails it (kInvalidArgument: "Object of type bytes is not JSON
// serializable", "value nested too deeply to serialise (the limit is N levels)", "JSON text too large (the limit
// is N bytes)"); then *out holds a partial text.
Status AppendJson(const Value& v, const JsonWriteOptions& options, std::string* out);

// The compact preset (never fails).
void AppendJson(const Value& v, std::string* out);
std::string ToJson(const Value& v);
// Pretty form with `indent` spaces, keys in stored order (sort_keys sorts object keys, as Python's sort_keys).
std::string ToJsonPretty(const Value& v, int indent = 2, bool sort_keys = false);

// Appends `s` as a JSON string literal (quotes included).
void AppendJsonString(std::string_view s, std::string* out);

// Python's repr(float): shortest round-trip digits; fixed notation when 1e-4 <= |d| < 1e16 (with ".0" when
// integral), else `1e+20` / `1.5e-07`; `inf`, `-inf`, `nan`.
std::string FormatDouble(double d);
void AppendDouble(double d, std::string* out);

}  // namespace mmirage
