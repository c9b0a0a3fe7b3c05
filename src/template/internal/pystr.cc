// Python's str()/repr() of values, printf-style `%` formatting, str.format / format() specs, and Jinja's
// htmlsafe tojson.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "data/json.h"
#include "template/internal/runtime.h"
#include "template/template.h"
#include "template/internal/unicode.h"
#include "util/hex.h"
#include "util/parse_int.h"

namespace mmirage::tmpl::internal {
namespace {

// Python's str.isprintable() for the code points we can classify (others count as printable).
bool IsPrintableCp(char32_t c) {
  if (c < 0x20 || c == 0x7F) return false;
  if (c >= 0x80 && c <= 0xA0) return false;
  if (c == 0xAD) return false;
  if ((c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x206F)) return false;
  if (c == 0x1680 || c == 0x3000 || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB)) return false;
  if ((c >= 0xD800 && c <= 0xF8FF) || (c >= 0xF0000)) return false;
  if (c == 0x061C || c == 0x180E) return false;
  return true;
}

void AppendInt(int64_t i, std::string* out) { out->append(std::to_string(i)); }

// Python's repr(bytes): b'...' (or b"..." when the data holds ' and no "), \xNN for non-printable bytes.
void AppendReprBytes(std::string_view s, std::string* out) {
  char q = (s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos) ? '"' : '\'';
  out->push_back('b');
  out->push_back(q);
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(q) || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '\r') {
      out->append("\\r");
    } else if (c == '\t') {
      out->append("\\t");
    } else if (c < 0x20 || c >= 0x7F) {
      out->append("\\x");
      AppendHexDigits(c, 2, out);
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
  out->push_back(q);
}

}  // namespace

void AppendReprString(std::string_view s, std::string* out) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char q = (has_single && !has_double) ? '"' : '\'';
  out->push_back(q);
  size_t i = 0;
  while (i < s.size()) {
    unsigned char b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      if (b == q || b == '\\') {
        out->push_back('\\');
        out->push_back(static_cast<char>(b));
      } else if (b == '\n') {
        out->append("\\n");
      } else if (b == '\r') {
        out->append("\\r");
      } else if (b == '\t') {
        out->append("\\t");
      } else if (b < 0x20 || b == 0x7F) {
        out->append("\\x");
        AppendHexDigits(b, 2, out);
      } else {
        out->push_back(static_cast<char>(b));
      }
      continue;
    }
    size_t st = i;
    char32_t cp = NextCp(s, &i);
    if (IsPrintableCp(cp)) {
      out->append(s.substr(st, i - st));
    } else if (cp < 0x100) {
      out->append("\\x");
      AppendHexDigits(cp, 2, out);
    } else if (cp < 0x10000) {
      out->append("\\u");
      AppendHexDigits(cp, 4, out);
    } else {
      out->append("\\U");
      AppendHexDigits(cp, 8, out);
    }
  }
  out->push_back(q);
}

namespace {
void AppendReprAt(const Value& v, std::string* out, bool tuple, int depth);
}  // namespace

void AppendRepr(const Value& v, std::string* out, bool tuple) { AppendReprAt(v, out, tuple, 0); }

namespace {
// Past kMaxValueDepth levels a container prints as "[...]" / "{...}" (the renderer reports such values as errors
// before printing; this keeps every other path safe).
void AppendReprAt(const Value& v, std::string* out, bool tuple, int depth) {
  if (depth > kMaxValueDepth && (v.is_array() || v.is_object())) {
    out->append(v.is_array() ? "[...]" : "{...}");
    return;
  }
  switch (v.type()) {
    case Value::Type::kNull: out->append("None"); return;
    case Value::Type::kBool: out->append(v.as_bool() ? "True" : "False"); return;
    case Value::Type::kInt: AppendInt(v.as_int(), out); return;
    case Value::Type::kDouble: AppendDouble(v.as_double(), out); return;
    case Value::Type::kString: AppendReprString(v.as_string(), out); return;
    case Value::Type::kBytes: AppendReprBytes(v.as_bytes(), out); return;
    case Value::Type::kArray: {
      out->push_back(tuple ? '(' : '[');
      bool first = true;
      for (const Value& e : v.as_array()) {
        if (!first) out->append(", ");
        first = false;
        AppendReprAt(e, out, false, depth + 1);
      }
      if (tuple && v.as_array().size() == 1) out->push_back(',');
      out->push_back(tuple ? ')' : ']');
      return;
    }
    case Value::Type::kObject: {
      out->push_back('{');
      bool first = true;
      for (const auto& m : v.as_object()) {
        if (!first) out->append(", ");
        first = false;
        AppendReprString(m.first, out);
        out->append(": ");
        AppendReprAt(m.second, out, false, depth + 1);
      }
      out->push_back('}');
      return;
    }
  }
}
}  // namespace

void AppendStrValue(const Value& v, std::string* out) {
  if (v.is_string()) {
    out->append(v.as_string());
  } else {
    AppendRepr(v, out);
  }
}

namespace {
void AppendTupleList(const Value& v, std::string* out) {
  out->push_back('[');
  bool first = true;
  for (const Value& e : v.as_array()) {
    if (!first) out->append(", ");
    first = false;
    AppendRepr(e, out, e.is_array());
  }
  out->push_back(']');
}
}  // namespace

void AppendStr(const Val& val, std::string* out) {
  switch (val.kind) {
    case Kind::kUndefined: return;
    case Kind::kMacro: out->append("<Macro>"); return;
    case Kind::kLoop: out->append("<LoopContext>"); return;
    case Kind::kMethod: out->append("<built-in method " + val.text.str() + ">"); return;
    case Kind::kGlobal: out->append("<function " + val.text.str() + ">"); return;
    case Kind::kValue: break;
  }
  const Value& v = val.v();
  switch (val.shape) {
    case Shape::kTuple:
      if (v.is_array()) {
        AppendRepr(v, out, true);
        return;
      }
      break;
    case Shape::kPairs:
      if (v.is_array()) {
        AppendTupleList(v, out);
        return;
      }
      break;
    case Shape::kDictItems:
      out->append("dict_items(");
      AppendTupleList(v, out);
      out->push_back(')');
      return;
    case Shape::kDictKeys:
    case Shape::kDictValues:
      out->append(val.shape == Shape::kDictKeys ? "dict_keys(" : "dict_values(");
      AppendRepr(v, out);
      out->push_back(')');
      return;
    case Shape::kNamespace:
      out->append("<Namespace ");
      AppendRepr(v, out);
      out->push_back('>');
      return;
    default: break;
  }
  AppendStrValue(v, out);
}

std::string StrOf(const Val& v) {
  std::string s;
  AppendStr(v, &s);
  return s;
}

// ---- printf-style formatting ----

namespace {

struct Spec {
  bool left = false, plus = false, space = false, alt = false, zero = false;
  int width = -1, precision = -1;
};

// Field widths and precisions past kMaxWidth are a render error, not a giant allocation (Python would try).
constexpr int64_t kMaxFormatWidth = kMaxWidth;

// Appends code point `n` as UTF-8 for %c / {:c}; Python's range check, and surrogates (which Python keeps in a
// str but UTF-8 cannot encode) are an error instead of invalid UTF-8.
Status AppendCharArg(int64_t n, std::string* out) {
  if (n < 0 || n > 0x10FFFF) return Err("%c arg not in range(0x110000)");
  if (n >= 0xD800 && n <= 0xDFFF) return Err("%c arg is a surrogate code point, which UTF-8 cannot encode");
  AppendCp(static_cast<char32_t>(n), out);
  return Status::OK();
}

std::string Pad(std::string body, const Spec& sp, bool numeric, size_t sign_len) {
  int64_t len = static_cast<int64_t>(CpCount(body));
  if (sp.width <= len) return body;
  size_t pad = static_cast<size_t>(sp.width - len);
  if (sp.left) return body + std::string(pad, ' ');
  if (numeric && sp.zero) return body.substr(0, sign_len) + std::string(pad, '0') + body.substr(sign_len);
  return std::string(pad, ' ') + body;
}

std::string IntDigits(uint64_t mag, int base, bool upper) {
  if (mag == 0) return "0";
  std::string d;
  // Digits of any base up to 16 (Python's 'b', 'o', 'x' and 'X'), least significant first: not util/hex.h's job.
  const char* digs = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  while (mag) {
    d.push_back(digs[mag % base]);
    mag /= base;
  }
  std::reverse(d.begin(), d.end());
  return d;
}

Result<std::string> FormatPercentOne(char type, const Val& arg, const Spec& sp) {
  const Value& v = arg.v();
  bool is_val = arg.kind == Kind::kValue;
  switch (type) {
    case 's': case 'r': case 'a': {
      std::string s;
      if (type == 's') {
        AppendStr(arg, &s);
      } else if (is_val) {
        AppendRepr(v, &s, arg.shape == Shape::kTuple);
      } else {
        s = "Undefined";
      }
      if (sp.precision >= 0) {
        std::u32string u = ToU32(s);
        if (u.size() > static_cast<size_t>(sp.precision)) s = FromU32(u.substr(0, sp.precision));
      }
      Spec p = sp;
      p.zero = false;
      return Pad(s, p, false, 0);
    }
    case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': {
      int64_t i;
      if (is_val && IsIntLike(v)) {
        i = IntOf(v);
      } else if (is_val && v.is_double() && (type == 'd' || type == 'i' || type == 'u')) {
        if (!std::isfinite(v.as_double())) return Err("cannot convert float infinity or NaN to integer");
        if (std::fabs(v.as_double()) >= 9.2e18) return Err("integer overflow");
        i = static_cast<int64_t>(v.as_double());
      } else {
        return Err(std::string("%") + type + " format: " +
                   (type == 'd' || type == 'i' || type == 'u' ? "a real number" : "an integer") +
                   " is required, not " + PyTypeName(arg));
      }
      uint64_t mag = i < 0 ? static_cast<uint64_t>(0) - static_cast<uint64_t>(i) : static_cast<uint64_t>(i);
      int base = (type == 'x' || type == 'X') ? 16 : type == 'o' ? 8 : 10;
      std::string digits = IntDigits(mag, base, type == 'X');
      if (sp.precision > static_cast<int>(digits.size())) digits.insert(0, sp.precision - digits.size(), '0');
      std::string sign = i < 0 ? "-" : sp.plus ? "+" : sp.space ? " " : "";
      if (sp.alt && base != 10) sign += base == 16 ? (type == 'X' ? "0X" : "0x") : "0o";
      return Pad(sign + digits, sp, true, sign.size());
    }
    case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': {
      if (!is_val || !IsNumLike(v)) return Err("must be real number, not " + PyTypeName(arg));
      std::string f = "%";
      if (sp.left) f += '-';
      if (sp.plus) f += '+';
      if (sp.space) f += ' ';
      if (sp.alt) f += '#';
      if (sp.zero) f += '0';
      if (sp.width >= 0) f += std::to_string(sp.width);
      f += "." + std::to_string(sp.precision >= 0 ? sp.precision : 6);
      f += type;
      char buf[512];
      int n = std::snprintf(buf, sizeof buf, f.c_str(), NumOf(v));
      if (n < 0 || n >= static_cast<int>(sizeof buf)) return Err("formatted number too long");
      return std::string(buf, n);
    }
    case 'c': {
      if (is_val && IsIntLike(v)) {
        std::string s;
        MMIRAGE_TRY(AppendCharArg(IntOf(v), &s));
        return Pad(s, sp, false, 0);
      }
      if (is_val && v.is_string() && CpCount(v.as_string()) == 1) return Pad(v.as_string(), sp, false, 0);
      return Err("%c requires int or char");
    }
    default:
      return Err(std::string("unsupported format character '") + type + "'");
  }
}

}  // namespace

Result<std::string> PercentFormat(std::string_view fmt, const Val& args) {
  std::vector<Val> items;
  bool mapping = args.kind == Kind::kValue && args.shape != Shape::kTuple &&
                 (args.v().is_object() || args.v().is_array());
  if (args.kind == Kind::kValue && args.shape == Shape::kTuple && args.v().is_array()) {
    for (const Value& e : args.v().as_array()) items.push_back(Val::Borrow(e));
  } else {
    items.push_back(args.Alias());
  }
  size_t argi = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out.push_back(fmt[i]);
      continue;
    }
    if (++i >= fmt.size()) return Err("incomplete format");
    Val keyed;
    bool has_key = false;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string_view::npos) return Err("incomplete format key");
      std::string key(fmt.substr(i + 1, close - i - 1));
      if (!(args.kind == Kind::kValue && args.v().is_object())) return Err("format requires a mapping");
      const Value* m = args.v().Find(key);
      if (m == nullptr) return Err("KeyError: '" + key + "'");
      keyed = Val::Borrow(*m);
      has_key = true;
      i = close + 1;
    }
    Spec sp;
    for (; i < fmt.size(); ++i) {
      char c = fmt[i];
      if (c == '-') sp.left = true;
      else if (c == '+') sp.plus = true;
      else if (c == ' ') sp.space = true;
      else if (c == '#') sp.alt = true;
      else if (c == '0') sp.zero = true;
      else break;
    }
    auto read_num = [&](int* out_num) -> Status {
      if (i < fmt.size() && fmt[i] == '*') {
        ++i;
        if (argi >= items.size()) return Err("not enough arguments for format string");
        const Val& a = items[argi++];
        if (!IsIntLike(a.v())) return Err("* wants int");
        int64_t w = IntOf(a.v());
        if (w > kMaxFormatWidth || w < -kMaxFormatWidth) return WidthTooLarge();
        *out_num = static_cast<int>(w);
        return Status::OK();
      }
      int64_t n = 0;
      bool any = false;
      while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
        n = n * 10 + (fmt[i++] - '0');
        if (n > kMaxFormatWidth) return WidthTooLarge();
        any = true;
      }
      if (any) *out_num = static_cast<int>(n);
      return Status::OK();
    };
    MMIRAGE_TRY(read_num(&sp.width));
    if (sp.width < -1) {
      sp.left = true;
      sp.width = -sp.width;
    }
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      sp.precision = 0;
      MMIRAGE_TRY(read_num(&sp.precision));
    }
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) return Err("incomplete format");
    char type = fmt[i];
    if (type == '%') {
      out.push_back('%');
      continue;
    }
    const Val* arg;
    if (has_key) {
      arg = &keyed;
    } else {
      if (argi >= items.size()) return Err("not enough arguments for format string");
      arg = &items[argi++];
    }
    MMIRAGE_ASSIGN_OR_RETURN(std::string piece, FormatPercentOne(type, *arg, sp));
    out += piece;
  }
  if (argi < items.size() && !mapping) return Err("not all arguments converted during string formatting");
  return out;
}

// ---- format() specs and str.format ----

namespace {

void Group(std::string* digits, char sep) {
  std::string r;
  int n = static_cast<int>(digits->size());
  for (int i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) r.push_back(sep);
    r.push_back((*digits)[i]);
  }
  *digits = r;
}

}  // namespace

Result<std::string> FormatSpec(const Val& val, std::string_view spec) {
  if (spec.empty()) return StrOf(val);
  std::u32string s = ToU32(spec);
  size_t i = 0;
  char32_t fill = ' ';
  char align = 0;
  auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '=' || c == '^'; };
  if (s.size() >= 2 && is_align(s[1])) {
    fill = s[0];
    align = static_cast<char>(s[1]);
    i = 2;
  } else if (!s.empty() && is_align(s[0])) {
    align = static_cast<char>(s[0]);
    i = 1;
  }
  char sign = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) sign = static_cast<char>(s[i++]);
  bool alt = false;
  if (i < s.size() && s[i] == '#') {
    alt = true;
    ++i;
  }
  if (i < s.size() && s[i] == '0') {
    if (!align) {
      fill = '0';
      align = '=';
    }
    ++i;
  }
  int64_t width = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    width = width * 10 + static_cast<int>(s[i++] - '0');
    if (width > kMaxFormatWidth) return WidthTooLarge();
  }
  char grouping = 0;
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) grouping = static_cast<char>(s[i++]);
  int precision = -1;
  if (i < s.size() && s[i] == '.') {
    ++i;
    precision = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      precision = precision * 10 + static_cast<int>(s[i++] - '0');
      if (precision > kMaxFormatWidth) return WidthTooLarge();
    }
  }
  char type = 0;
  if (i < s.size()) type = static_cast<char>(s[i++]);
  if (i != s.size()) return Err("Invalid format specifier");

  const Value& v = val.v();
  std::string body;
  std::string sign_str;
  bool numeric = true;
  if (val.kind == Kind::kValue && v.is_string() && (type == 0 || type == 's')) {
    numeric = false;
    if (sign) return Err("Sign not allowed in string format specifier");
    if (align == '=') return Err("'=' alignment not allowed in string format specifier");
    body = v.as_string();
    if (precision >= 0) {
      std::u32string u = ToU32(body);
      if (u.size() > static_cast<size_t>(precision)) body = FromU32(u.substr(0, precision));
    }
  } else if (val.kind == Kind::kValue && IsIntLike(v) && (type == 0 || std::string_view("dnboxXc").find(type) != std::string_view::npos)) {
    if (precision >= 0) return Err("Precision not allowed in integer format specifier");
    int64_t n = IntOf(v);
    if (type == 'c') {
      MMIRAGE_TRY(AppendCharArg(n, &body));
      numeric = false;
    } else {
      uint64_t mag = n < 0 ? static_cast<uint64_t>(0) - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
      int base = type == 'b' ? 2 : type == 'o' ? 8 : (type == 'x' || type == 'X') ? 16 : 10;
      body = IntDigits(mag, base, type == 'X');
      if (grouping) Group(&body, grouping);
      if (n < 0) sign_str = "-";
      else if (sign == '+') sign_str = "+";
      else if (sign == ' ') sign_str = " ";
      if (alt && base != 10) sign_str += base == 2 ? "0b" : base == 8 ? "0o" : (type == 'X' ? "0X" : "0x");
    }
  } else if (val.kind == Kind::kValue && IsNumLike(v) &&
             (type == 0 || std::string_view("eEfFgGn%").find(type) != std::string_view::npos)) {
    double d = NumOf(v);
    bool neg = std::signbit(d) && !std::isnan(d);
    double mag = std::fabs(d);
    if (type == 0 && precision < 0) {
      body = FormatDouble(mag);
    } else {
      char t = type == 0 || type == 'n' ? 'g' : type == '%' ? 'f' : type;
      int p = precision >= 0 ? precision : 6;
      char f[32];
      std::snprintf(f, sizeof f, "%%%s.%d%c", alt ? "#" : "", p, t);
      char buf[512];
      int n = std::snprintf(buf, sizeof buf, f, type == '%' ? mag * 100 : mag);
      if (n < 0 || n >= static_cast<int>(sizeof buf)) return Err("formatted number too long");
      body.assign(buf, n);
      if (type == 0 && body.find_first_of(".eni") == std::string::npos) body += ".0";
      if (type == '%') body += "%";
    }
    if (grouping) {
      size_t end = body.find_first_not_of("0123456789");
      std::string ip = body.substr(0, end);
      Group(&ip, grouping);
      body = ip + (end == std::string::npos ? "" : body.substr(end));
    }
    if (neg) sign_str = "-";
    else if (sign == '+') sign_str = "+";
    else if (sign == ' ') sign_str = " ";
  } else {
    return Err("unsupported format string passed to " + PyTypeName(val) + ".__format__");
  }
  if (!align) align = numeric ? '>' : '<';
  int64_t len = static_cast<int64_t>(CpCount(body) + sign_str.size());
  if (width <= len) return sign_str + body;
  size_t pad = static_cast<size_t>(width - len);
  std::string fill_s;
  AppendCp(fill, &fill_s);
  auto rep = [&](size_t n) {
    std::string r;
    for (size_t k = 0; k < n; ++k) r += fill_s;
    return r;
  };
  switch (align) {
    case '<': return sign_str + body + rep(pad);
    case '>': return rep(pad) + sign_str + body;
    case '=': return sign_str + rep(pad) + body;
    default: return rep(pad / 2) + sign_str + body + rep(pad - pad / 2);
  }
}

Result<std::string> StrFormat(std::string_view fmt, const std::vector<Val>& args,
                              const std::vector<std::pair<std::string, Val>>& kwargs) {
  std::string out;
  int auto_idx = 0;
  bool manual = false;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out.push_back('}');
        ++i;
        continue;
      }
      return Err("Single '}' encountered in format string");
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    size_t close = i + 1;
    for (int depth = 1; close < fmt.size(); ++close) {
      if (fmt[close] == '{') ++depth;
      if (fmt[close] == '}' && --depth == 0) break;
    }
    if (close >= fmt.size()) return Err("expected '}' before end of string");
    std::string_view field = fmt.substr(i + 1, close - i - 1);
    i = close;
    std::string_view spec, conv;
    size_t colon = field.find(':');
    if (colon != std::string_view::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    size_t bang = field.find('!');
    if (bang != std::string_view::npos) {
      conv = field.substr(bang + 1);
      field = field.substr(0, bang);
    }
    size_t name_end = field.find_first_of(".[");
    std::string_view name = field.substr(0, name_end);
    Val cur;
    if (name.empty()) {
      if (manual) return Err("cannot switch from manual field specification to automatic field numbering");
      if (auto_idx >= static_cast<int>(args.size())) return Err("Replacement index " + std::to_string(auto_idx) + " out of range for positional args tuple");
      cur = args[auto_idx++].Alias();
    } else if (std::all_of(name.begin(), name.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      manual = true;
      std::optional<int64_t> idx = ParseNonNegativeInt64(name);
      if (!idx) return Err("Too many decimal digits in format string");
      if (static_cast<uint64_t>(*idx) >= args.size()) return Err("Replacement index " + std::string(name) + " out of range for positional args tuple");
      cur = args[static_cast<size_t>(*idx)].Alias();
    } else {
      const Val* found = nullptr;
      for (const auto& kv : kwargs) {
        if (kv.first == name) found = &kv.second;
      }
      if (found == nullptr) return Err("KeyError: '" + std::string(name) + "'");
      cur = found->Alias();
    }
    std::string_view rest = name_end == std::string_view::npos ? std::string_view() : field.substr(name_end);
    while (!rest.empty()) {
      Val next;
      if (rest[0] == '.') {
        size_t e = rest.find_first_of(".[", 1);
        std::string attr(rest.substr(1, e == std::string_view::npos ? std::string_view::npos : e - 1));
        const Value* m = cur.v().Find(attr);
        if (m == nullptr) return Err("AttributeError: '" + attr + "'");
        next = Val::Borrow(*m);
        rest = e == std::string_view::npos ? std::string_view() : rest.substr(e);
      } else {
        size_t e = rest.find(']');
        if (e == std::string_view::npos) return Err("Missing ']' in format string");
        std::string key(rest.substr(1, e - 1));
        bool digits = !key.empty() && std::all_of(key.begin(), key.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
        const Value* m = nullptr;
        std::optional<int64_t> k = digits ? ParseNonNegativeInt64(key) : std::nullopt;
        if (digits && !k) return Err("Too many decimal digits in format string");
        if (digits && cur.v().is_array()) {
          if (static_cast<uint64_t>(*k) < cur.v().as_array().size()) m = &cur.v().as_array()[static_cast<size_t>(*k)];
        } else {
          m = cur.v().Find(key);
        }
        if (m == nullptr) return Err("KeyError/IndexError: '" + key + "'");
        next = Val::Borrow(*m);
        rest = rest.substr(e + 1);
      }
      cur = std::move(next);
    }
    if (conv == "r" || conv == "a") {
      std::string r;
      AppendRepr(cur.v(), &r, cur.shape == Shape::kTuple);
      cur = Val(Value(std::move(r)));
    } else if (conv == "s") {
      cur = Val(Value(StrOf(cur)));
    } else if (!conv.empty()) {
      return Err("Unknown conversion specifier " + std::string(conv));
    }
    std::string spec_text(spec);
    if (spec_text.find('{') != std::string::npos) {
      // Nested fields ("{0:>{1}}") take the next automatic index or their own, like Python.
      std::vector<Val> nested_args;
      for (const Val& a : args) nested_args.push_back(a.Alias());
      std::string expanded;
      for (size_t k = 0; k < spec_text.size(); ++k) {
        if (spec_text[k] != '{') {
          expanded.push_back(spec_text[k]);
          continue;
        }
        size_t e = spec_text.find('}', k);
        if (e == std::string::npos) return Err("unmatched '{' in format spec");
        std::string inner = spec_text.substr(k, e - k + 1);
        if (inner == "{}") inner = "{" + std::to_string(auto_idx++) + "}";
        MMIRAGE_ASSIGN_OR_RETURN(std::string part, StrFormat(inner, nested_args, kwargs));
        expanded += part;
        k = e;
      }
      spec_text = expanded;
    }
    MMIRAGE_ASSIGN_OR_RETURN(std::string piece, FormatSpec(cur, spec_text));
    out += piece;
  }
  return out;
}

// ---- tojson ----

Result<std::string> HtmlSafeJson(const Val& v, int indent) {
  if (v.kind != Kind::kValue || v.shape == Shape::kNamespace) {
    return Err("Object of type " + PyTypeName(v) + " is not JSON serializable");
  }
  // Jinja's tojson: json.dumps(sort_keys=True, indent=...) made HTML-safe. NaN/Infinity are written as null
  // (data/json.h: the writer never emits them), where Python would write NaN.
  JsonWriteOptions o;
  o.indent = indent > 0 ? indent : -1;
  o.sort_keys = true;
  o.python_separators = true;
  o.ensure_ascii = true;
  o.html_safe = true;
  o.bytes = JsonWriteOptions::Bytes::kError;
  o.max_depth = kMaxValueDepth;
  o.max_bytes = kMaxStringBytes;
  std::string out;
  Status s = AppendJson(v.v(), o, &out);
  if (!s.ok()) return out.size() > kMaxStringBytes ? StringTooLarge() : s;
  return out;
}

}  // namespace mmirage::tmpl::internal

namespace mmirage::tmpl {
std::string PyStr(const Value& v) {
  std::string s;
  internal::AppendStrValue(v, &s);
  return s;
}
}  // namespace mmirage::tmpl
