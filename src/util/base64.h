// Base64 (the standard alphabet of RFC 4648, with '=' padding): the one encoder and decoder of the tree. Pure
// functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace mmirage {

// Appends the padded base64 text of `data` to *out.
void AppendBase64(std::string_view data, std::string* out);
std::string EncodeBase64(std::string_view data);

enum class Base64Syntax {
  // Length a multiple of 4, the standard alphabet only, '=' only as the last one or two characters (what our own
  // writers and servers produce).
  kStrict,
  // What users paste: ASCII whitespace is skipped, the URL-safe '-' and '_' stand for '+' and '/', padding may be
  // missing, though nothing but '=' and whitespace may follow a '='.
  kLenient,
};

// The bytes that `text` encodes. Errors (kInvalidArgument): kStrict: "base64 length N is not a multiple of 4",
// "invalid base64 character at position N"; kLenient: "invalid base64 text", "invalid base64 text (truncated)".
Result<std::string> DecodeBase64(std::string_view text, Base64Syntax syntax = Base64Syntax::kStrict);

}  // namespace mmirage
