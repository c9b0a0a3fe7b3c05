#include "util/parse_int.h"

#include <charconv>
#include <limits>

namespace mmirage {

std::optional<int64_t> ParseInt64(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  std::optional<uint64_t> magnitude = ParseUint64(text);
  if (!magnitude) return std::nullopt;
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (negative) {
    if (*magnitude > kMax + 1) return std::nullopt;
    return static_cast<int64_t>(0 - *magnitude);  // two's complement: kMax + 1 is INT64_MIN
  }
  if (*magnitude > kMax) return std::nullopt;
  return static_cast<int64_t>(*magnitude);
}

std::optional<int64_t> ParseNonNegativeInt64(std::string_view text) {
  std::optional<uint64_t> v = ParseUint64(text);
  if (!v || *v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return static_cast<int64_t>(*v);
}

std::optional<uint64_t> ParseUint64(std::string_view text, int base) {
  // from_chars takes no sign, space or base prefix for an unsigned type; the whole text must be digits.
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace mmirage
