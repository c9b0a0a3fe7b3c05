#include "data/json.h"

#include <simdjson.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <unordered_map>

namespace mmirage {
namespace {

// Builds the Value of `e` in place in *out (no intermediate Values are moved: this is the per-row hot path).
void FromDom(simdjson::dom::element e, Value* out) {
  using simdjson::dom::element_type;
  switch (e.type()) {
    case element_type::NULL_VALUE: *out = Value(); return;
    case element_type::BOOL: *out = Value(bool(e.get_bool().value_unsafe())); return;
    case element_type::INT64: *out = Value(int64_t(e.get_int64().value_unsafe())); return;
    case element_type::UINT64: *out = Value(double(e.get_uint64().value_unsafe())); return;
    case element_type::DOUBLE: *out = Value(double(e.get_double().value_unsafe())); return;
    case element_type::STRING: *out = Value(std::string_view(e.get_string().value_unsafe())); return;
    case element_type::ARRAY: {
      simdjson::dom::array a = e.get_array().value_unsafe();
      *out = Value(Value::Array(a.size()));
      Value::Array& arr = out->mutable_array();
      size_t i = 0;
      for (simdjson::dom::element child : a) FromDom(child, &arr[i++]);
      return;
    }
    case element_type::OBJECT: {
      simdjson::dom::object o = e.get_object().value_unsafe();
      *out = Value(Value::Object{});
      Value::Object& obj = out->mutable_object();
      obj.reserve(o.size());  // no reallocation below: `index` points into the members' keys
      // JSON allows duplicate keys; like Python's json, the last one wins (at the first one's position). Small
      // objects are searched linearly; wide ones (a 300k-key row) through a hash index, so parsing stays linear.
      constexpr size_t kIndexFrom = 32;
      std::unordered_map<std::string_view, size_t> index;
      for (auto field : o) {
        std::string_view k = field.key;
        Value* slot = nullptr;
        if (obj.size() < kIndexFrom) {
          for (auto& m : obj) {
            if (m.first.size() == k.size() && m.first == k) {
              slot = &m.second;
              break;
            }
          }
        } else {
          if (index.empty()) {
            for (size_t i = 0; i < obj.size(); ++i) index.emplace(obj[i].first, i);
          }
          auto it = index.find(k);
          if (it != index.end()) slot = &obj[it->second].second;
        }
        if (slot == nullptr) {
          obj.emplace_back(std::piecewise_construct, std::forward_as_tuple(k), std::forward_as_tuple());
          slot = &obj.back().second;
          if (!index.empty()) index.emplace(obj.back().first, obj.size() - 1);
        }
        FromDom(field.value, slot);
      }
      return;
    }
  }
  *out = Value();
}

void AppendJsonPretty(const Value& v, int indent, int depth, bool sort_keys, std::string* out) {
  auto newline = [&](int d) {
    out->push_back('\n');
    out->append(static_cast<size_t>(indent * d), ' ');
  };
  if (v.is_array() && v.size() > 0) {
    out->push_back('[');
    bool first = true;
    for (const Value& e : v.as_array()) {
      if (!first) out->push_back(',');
      first = false;
      newline(depth + 1);
      AppendJsonPretty(e, indent, depth + 1, sort_keys, out);
    }
    newline(depth);
    out->push_back(']');
  } else if (v.is_object() && v.size() > 0) {
    std::vector<const Value::Member*> members;
    for (const auto& m : v.as_object()) members.push_back(&m);
    if (sort_keys) {
      std::stable_sort(members.begin(), members.end(),
                       [](const Value::Member* a, const Value::Member* b) { return a->first < b->first; });
    }
    out->push_back('{');
    bool first = true;
    for (const auto* m : members) {
      if (!first) out->push_back(',');
      first = false;
      newline(depth + 1);
      AppendJsonString(m->first, out);
      out->append(": ");
      AppendJsonPretty(m->second, indent, depth + 1, sort_keys, out);
    }
    newline(depth);
    out->push_back('}');
  } else {
    AppendJson(v, out);
  }
}

}  // namespace

Result<Value> ParseJson(std::string_view text) {
  thread_local simdjson::dom::parser parser;
  // simdjson needs SIMDJSON_PADDING readable bytes after the text; copy into a padded buffer.
  thread_local simdjson::padded_string buf;
  if (buf.size() < text.size() || buf.size() > text.size() + (1 << 20)) {
    buf = simdjson::padded_string(text.size());
  }
  if (!text.empty()) std::memcpy(buf.data(), text.data(), text.size());  // memcpy(_, nullptr, 0) is UB
  simdjson::dom::element root;
  auto err = parser.parse(buf.data(), text.size(), false).get(root);
  if (err) return Status::Corruption(std::string("invalid JSON: ") + simdjson::error_message(err));
  Result<Value> out{Value()};
  FromDom(root, &*out);
  return out;
}

void AppendJsonString(std::string_view s, std::string* out) {
  static const char kHex[] = "0123456789abcdef";
  // 1 for bytes that need escaping: control characters, '"' and '\\'.
  static const auto kEscape = [] {
    std::array<uint8_t, 256> t{};
    for (int c = 0; c < 0x20; ++c) t[c] = 1;
    t['"'] = 1;
    t['\\'] = 1;
    return t;
  }();
  out->reserve(out->size() + s.size() + 2);
  out->push_back('"');
  const char* p = s.data();
  const char* end = p + s.size();
  while (p < end) {
    const char* run = p;
#if defined(__SSE2__)
    // 16 bytes at a time: find the first control character, '"' or '\\' (SSE2 is baseline on x86-64).
    while (p + 16 <= end) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      __m128i ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1F)), _mm_set1_epi8(0x1F));
      __m128i special = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
      int mask = _mm_movemask_epi8(_mm_or_si128(ctl, special));
      if (mask != 0) {
        p += __builtin_ctz(static_cast<unsigned>(mask));
        break;
      }
      p += 16;
    }
#endif
    while (p < end && !kEscape[static_cast<unsigned char>(*p)]) ++p;
    out->append(run, static_cast<size_t>(p - run));
    if (p == end) break;
    unsigned char c = static_cast<unsigned char>(*p++);
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      default:
        out->append("\\u00");
        out->push_back(kHex[c >> 4]);
        out->push_back(kHex[c & 15]);
    }
  }
  out->push_back('"');
}

void AppendDouble(double d, std::string* out) {
  if (std::isnan(d)) { out->append("nan"); return; }
  if (std::isinf(d)) { out->append(d < 0 ? "-inf" : "inf"); return; }
  if (d == 0) { out->append(std::signbit(d) ? "-0.0" : "0.0"); return; }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  // buf = [-]D[.DDDD]e[+-]XX
  std::string_view sci(buf, static_cast<size_t>(r.ptr - buf));
  bool neg = sci[0] == '-';
  if (neg) sci.remove_prefix(1);
  size_t epos = sci.find('e');
  std::string digits;
  for (size_t i = 0; i < epos; ++i) if (sci[i] != '.') digits.push_back(sci[i]);
  int exp10 = std::atoi(std::string(sci.substr(epos + 1)).c_str());
  if (neg) out->push_back('-');
  if (exp10 >= -5 + 1 && exp10 < 16) {  // Python: fixed when -4 <= exp < 16
    if (exp10 >= 0) {
      if (static_cast<int>(digits.size()) <= exp10 + 1) {
        out->append(digits);
        out->append(static_cast<size_t>(exp10 + 1 - static_cast<int>(digits.size())), '0');
        out->append(".0");
      } else {
        out->append(digits, 0, static_cast<size_t>(exp10 + 1));
        out->push_back('.');
        out->append(digits, static_cast<size_t>(exp10 + 1), std::string::npos);
      }
    } else {
      out->append("0.");
      out->append(static_cast<size_t>(-exp10 - 1), '0');
      out->append(digits);
    }
  } else {
    out->push_back(digits[0]);
    if (digits.size() > 1) {
      out->push_back('.');
      out->append(digits, 1, std::string::npos);
    }
    out->push_back('e');
    out->push_back(exp10 < 0 ? '-' : '+');
    int a = exp10 < 0 ? -exp10 : exp10;
    if (a < 10) out->push_back('0');
    out->append(std::to_string(a));
  }
}

std::string FormatDouble(double d) {
  std::string s;
  AppendDouble(d, &s);
  return s;
}

void AppendJson(const Value& v, std::string* out) {
  switch (v.type()) {
    case Value::Type::kNull: out->append("null"); break;
    case Value::Type::kBool: out->append(v.as_bool() ? "true" : "false"); break;
    case Value::Type::kInt: {
      char buf[24];
      auto r = std::to_chars(buf, buf + sizeof buf, v.as_int());
      out->append(buf, r.ptr);
      break;
    }
    case Value::Type::kDouble:
      if (!std::isfinite(v.as_double())) out->append("null");
      else AppendDouble(v.as_double(), out);
      break;
    case Value::Type::kString: AppendJsonString(v.as_string(), out); break;
    case Value::Type::kBytes: {
      out->push_back('"');
      AppendBase64(v.as_bytes(), out);
      out->push_back('"');
      break;
    }
    case Value::Type::kArray: {
      out->push_back('[');
      bool first = true;
      for (const Value& e : v.as_array()) {
        if (!first) out->push_back(',');
        first = false;
        AppendJson(e, out);
      }
      out->push_back(']');
      break;
    }
    case Value::Type::kObject: {
      out->push_back('{');
      bool first = true;
      for (const auto& m : v.as_object()) {
        if (!first) out->push_back(',');
        first = false;
        AppendJsonString(m.first, out);
        out->push_back(':');
        AppendJson(m.second, out);
      }
      out->push_back('}');
      break;
    }
  }
}

void AppendBase64(std::string_view data, std::string* out) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    uint32_t n = (uint32_t(uint8_t(data[i])) << 16) | (uint32_t(uint8_t(data[i + 1])) << 8) | uint8_t(data[i + 2]);
    out->push_back(kAlphabet[n >> 18]);
    out->push_back(kAlphabet[(n >> 12) & 63]);
    out->push_back(kAlphabet[(n >> 6) & 63]);
    out->push_back(kAlphabet[n & 63]);
  }
  if (size_t rest = data.size() - i; rest > 0) {
    uint32_t n = uint32_t(uint8_t(data[i])) << 16;
    if (rest == 2) n |= uint32_t(uint8_t(data[i + 1])) << 8;
    out->push_back(kAlphabet[n >> 18]);
    out->push_back(kAlphabet[(n >> 12) & 63]);
    out->push_back(rest == 2 ? kAlphabet[(n >> 6) & 63] : '=');
    out->push_back('=');
  }
}

std::string ToJson(const Value& v) {
  std::string s;
  AppendJson(v, &s);
  return s;
}

std::string ToJsonPretty(const Value& v, int indent, bool sort_keys) {
  std::string s;
  AppendJsonPretty(v, indent, 0, sort_keys, &s);
  return s;
}

}  // namespace mmirage
