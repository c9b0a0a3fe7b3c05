// NaN and ±Infinity, which JSON cannot hold, are always written as null — never as `NaN`/`Infinity` (Python's
// default, which strict readers such as Arrow, jq or a provider's API reject): a file or request body we write must
// parse anywhere, and one non-finite number (a `.nan` sampling value, an overflowing computation) should not fail a
// whole row or request.

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
#include <vector>

#include "data/utf8.h"
#include "util/base64.h"
#include "util/hex.h"

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

// Parses `text` with this thread's parser; the element lives until the thread's next parse.
Result<simdjson::dom::element> ParseDom(std::string_view text) {
  thread_local simdjson::dom::parser parser;
  // simdjson needs SIMDJSON_PADDING readable bytes after the text; copy into a padded buffer.
  thread_local simdjson::padded_string buf;
  if (buf.size() < text.size() || buf.size() > text.size() + (1 << 20)) { buf = simdjson::padded_string(text.size()); }
  if (!text.empty()) std::memcpy(buf.data(), text.data(), text.size());  // memcpy(_, nullptr, 0) is UB
  simdjson::dom::element root;
  auto err = parser.parse(buf.data(), text.size(), false).get(root);
  if (err) return Status::Corruption(std::string("invalid JSON: ") + simdjson::error_message(err));
  return root;
}

// The element at the end of `path`, or false when a step finds nothing. A repeated key: the last one (as FromDom).
bool WalkDom(simdjson::dom::element e, const JsonPath& path, simdjson::dom::element* out) {
  using simdjson::dom::element_type;
  for (const JsonPathStep& step : path) {
    if (!step.is_index) {
      if (e.type() != element_type::OBJECT) return false;
      bool found = false;
      simdjson::dom::object o = e.get_object().value_unsafe();
      for (auto field : o) {
        if (field.key == step.key) {
          e = field.value;
          found = true;
        }
      }
      if (!found) return false;
      continue;
    }
    if (e.type() != element_type::ARRAY) return false;
    simdjson::dom::array a = e.get_array().value_unsafe();
    const int64_t size = static_cast<int64_t>(a.size());
    const int64_t i = step.index < 0 ? step.index + size : step.index;
    if (i < 0 || i >= size) return false;
    simdjson::dom::element next;
    if (a.at(static_cast<size_t>(i)).get(next)) return false;
    e = next;
  }
  *out = e;
  return true;
}

const char* DomTypeName(simdjson::dom::element e) {
  using simdjson::dom::element_type;
  switch (e.type()) {
    case element_type::OBJECT: return "object";
    case element_type::ARRAY: return "array";
    case element_type::STRING: return "string";
    case element_type::BOOL: return "boolean";
    case element_type::NULL_VALUE: return "null";
    default: return "number";
  }
}

}  // namespace

Result<Value> ParseJson(std::string_view text) {
  MMIRAGE_ASSIGN_OR_RETURN(simdjson::dom::element root, ParseDom(text));
  Result<Value> out{Value()};
  FromDom(root, &*out);
  return out;
}

Result<std::vector<Value>> ParseJsonPaths(std::string_view text, const std::vector<const JsonPath*>& paths,
                                          const char** root_type) {
  MMIRAGE_ASSIGN_OR_RETURN(simdjson::dom::element root, ParseDom(text));
  *root_type = DomTypeName(root);
  std::vector<Value> values(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    simdjson::dom::element e;
    if (WalkDom(root, *paths[i], &e)) FromDom(e, &values[i]);
  }
  return values;
}

void AppendJsonString(std::string_view s, std::string* out) {
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
      default: out->append("\\u"); AppendHexDigits(c, 4, out);
    }
  }
  out->push_back('"');
}

void AppendDouble(double d, std::string* out) {
  if (std::isnan(d)) {
    out->append("nan");
    return;
  }
  if (std::isinf(d)) {
    out->append(d < 0 ? "-inf" : "inf");
    return;
  }
  if (d == 0) {
    out->append(std::signbit(d) ? "-0.0" : "0.0");
    return;
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  // buf = [-]D[.DDDD]e[+-]XX
  std::string_view sci(buf, static_cast<size_t>(r.ptr - buf));
  bool neg = sci[0] == '-';
  if (neg) sci.remove_prefix(1);
  size_t epos = sci.find('e');
  std::string digits;
  for (size_t i = 0; i < epos; ++i)
    if (sci[i] != '.') digits.push_back(sci[i]);
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

namespace {

void AppendU16Escape(uint32_t unit, std::string* out) {
  out->append("\\u");
  AppendHexDigits(unit, 4, out);
}

// The string escaper for ensure_ascii / html_safe (AppendJsonString is the fast one for plain UTF-8 output).
void AppendJsonStringEscaped(std::string_view s, bool ascii, bool html, std::string* out) {
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      if (!ascii) {  // html_safe alone: non-ASCII bytes pass through (they hold none of < > & ')
        out->push_back(static_cast<char>(c));
        ++i;
        continue;
      }
      char32_t cp = DecodeUtf8(s, &i);
      if (cp > 0xFFFF) {
        cp -= 0x10000;
        AppendU16Escape(0xD800 + (cp >> 10), out);
        AppendU16Escape(0xDC00 + (cp & 0x3FF), out);
      } else {
        AppendU16Escape(cp, out);
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '<':
      case '>':
      case '&':
      case '\'':
        if (html) AppendU16Escape(c, out);
        else out->push_back(static_cast<char>(c));
        break;
      default:
        if (c < 0x20 || (c == 0x7F && ascii)) AppendU16Escape(c, out);
        else out->push_back(static_cast<char>(c));
    }
  }
  out->push_back('"');
}

// One recursive pass over the value; false (with *error set) when an option fails it.
class JsonWriter {
 public:
  JsonWriter(const JsonWriteOptions& o, std::string* out)
      : o_(o), out_(out), start_(out->size()), plain_strings_(!o.ensure_ascii && !o.html_safe) {}

  bool Write(const Value& v, int depth) {
    if (o_.max_depth > 0 && depth > o_.max_depth) {
      return Fail("value nested too deeply to serialise (the limit is " + std::to_string(o_.max_depth) + " levels)");
    }
    if (o_.max_bytes > 0 && out_->size() - start_ > o_.max_bytes) {
      return Fail("JSON text too large (the limit is " + std::to_string(o_.max_bytes) + " bytes)");
    }
    switch (v.type()) {
      case Value::Type::kNull: out_->append("null"); return true;
      case Value::Type::kBool: out_->append(v.as_bool() ? "true" : "false"); return true;
      case Value::Type::kInt: {
        char buf[24];
        auto r = std::to_chars(buf, buf + sizeof buf, v.as_int());
        out_->append(buf, r.ptr);
        return true;
      }
      case Value::Type::kDouble:
        if (!std::isfinite(v.as_double())) out_->append("null");  // never NaN/Infinity (see json.h)
        else AppendDouble(v.as_double(), out_);
        return true;
      case Value::Type::kString: String(v.as_string()); return true;
      case Value::Type::kBytes: return Bytes(v.as_bytes());
      case Value::Type::kArray: return Array(v.as_array(), depth);
      case Value::Type::kObject: return Object(v.as_object(), depth);
    }
    return true;
  }

  Status status() const { return error_.empty() ? Status::OK() : Status::InvalidArgument(error_); }

 private:
  bool Fail(std::string message) {
    error_ = std::move(message);
    return false;
  }
  void String(std::string_view s) {
    if (plain_strings_) AppendJsonString(s, out_);
    else AppendJsonStringEscaped(s, o_.ensure_ascii, o_.html_safe, out_);
  }
  bool Bytes(std::string_view data) {
    switch (o_.bytes) {
      case JsonWriteOptions::Bytes::kBase64: break;
      case JsonWriteOptions::Bytes::kTagged:
        out_->append("\"\\u0000b64:");  // the tag "\0b64:" (tagged_json.h); base64 needs no escaping
        AppendBase64(data, out_);
        out_->push_back('"');
        return true;
      case JsonWriteOptions::Bytes::kError: return Fail("Object of type bytes is not JSON serializable");
    }
    out_->push_back('"');
    AppendBase64(data, out_);
    out_->push_back('"');
    return true;
  }
  // Between items: "," / ", " on one line, or "," and a new line; before the first item only the new line.
  void Separator(bool first, int depth) {
    if (!first) {
      out_->push_back(',');
      if (o_.indent < 0 && o_.python_separators) out_->push_back(' ');
    }
    if (o_.indent >= 0) Newline(depth);
  }
  void Newline(int depth) {
    out_->push_back('\n');
    out_->append(static_cast<size_t>(o_.indent) * static_cast<size_t>(depth), ' ');
  }
  bool Array(const Value::Array& a, int depth) {
    if (a.empty()) {
      out_->append("[]");
      return true;
    }
    out_->push_back('[');
    for (size_t i = 0; i < a.size(); ++i) {
      Separator(i == 0, depth + 1);
      if (!Write(a[i], depth + 1)) return false;
    }
    if (o_.indent >= 0) Newline(depth);
    out_->push_back(']');
    return true;
  }
  bool Object(const Value::Object& obj, int depth) {
    if (obj.empty()) {
      out_->append("{}");
      return true;
    }
    const char* colon = o_.indent >= 0 || o_.python_separators ? ": " : ":";
    out_->push_back('{');
    auto member = [&](const Value::Member& m, bool first) {
      Separator(first, depth + 1);
      String(m.first);
      out_->append(colon);
      return Write(m.second, depth + 1);
    };
    if (o_.sort_keys && obj.size() > 1) {
      std::vector<const Value::Member*> members;
      members.reserve(obj.size());
      for (const auto& m : obj) members.push_back(&m);
      std::stable_sort(members.begin(), members.end(),
                       [](const Value::Member* a, const Value::Member* b) { return a->first < b->first; });
      for (size_t i = 0; i < members.size(); ++i)
        if (!member(*members[i], i == 0)) return false;
    } else {
      bool first = true;
      for (const auto& m : obj) {
        if (!member(m, first)) return false;
        first = false;
      }
    }
    if (o_.indent >= 0) Newline(depth);
    out_->push_back('}');
    return true;
  }

  const JsonWriteOptions& o_;
  std::string* out_;
  size_t start_;
  bool plain_strings_;
  std::string error_;
};

}  // namespace

Status AppendJson(const Value& v, const JsonWriteOptions& options, std::string* out) {
  JsonWriter w(options, out);
  if (w.Write(v, 0)) return Status::OK();
  return w.status();
}

void AppendJson(const Value& v, std::string* out) {
  static const JsonWriteOptions kCompact;
  JsonWriter w(kCompact, out);
  (void)w.Write(v, 0);  // cannot fail: no limits, bytes as base64
}

std::string ToJson(const Value& v) {
  std::string s;
  AppendJson(v, &s);
  return s;
}

std::string ToJsonPretty(const Value& v, int indent, bool sort_keys) {
  JsonWriteOptions o;
  o.indent = std::max(0, indent);
  o.sort_keys = sort_keys;
  std::string s;
  (void)AppendJson(v, o, &s);  // cannot fail: no limits, bytes as base64
  return s;
}

}  // namespace mmirage
