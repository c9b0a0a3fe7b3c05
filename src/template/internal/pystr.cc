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
    case 's':
    case 'r':
    case 'a': {
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
    case 'd':
    case 'i':
    case 'u':
    case 'x':
    case 'X':
    case 'o': {
      int64_t i;
      if (is_val && IsIntLike(v)) {
        i = IntOf(v);
      } else if (is_val && v.is_double() && (type == 'd' || type == 'i' || type == 'u')) {
        if (!std::isfinite(v.as_double())) return Err("cannot convert float infinity or NaN to integer");
        if (std::fabs(v.as_double()) >= 9.2e18) return Err("integer overflow");
        i = static_cast<int64_t>(v.as_double());
      } else {
        return Err(std::string("%") + type +
                   " format: " + (type == 'd' || type == 'i' || type == 'u' ? "a real number" : "an integer") +
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
    case 'e':
    case 'E':
    case 'f':
    case 'F':
    case 'g':
    case 'G': {
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
    default: return Err(std::string("unsupported format character '") + type + "'");
  }
}

}  // namespace

Result<std::string> PercentFormat(std::string_view fmt, const Val& args) {
  std::vector<Val> items;
  bool mapping =
      args.kind == Kind::kValue && args.shape != Shape::kTuple && (args.v().is_object() || args.v().is_array());
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

// A parsed format() spec: [[fill]align][sign][#][0][width][grouping][.precision][type].
struct SpecParts {
  char32_t fill = ' ';
  char align = 0;  // 0: the type's default
  char sign = 0;
  bool alt = false;
  int64_t width = 0;
  char grouping = 0;
  int precision = -1;  // -1: none
  char type = 0;
};

// Parses a non-empty spec. Errors: a width or precision above kMaxFormatWidth, characters after the type.
Result<SpecParts> ParseSpec(std::string_view spec) {
  SpecParts p;
  std::u32string s = ToU32(spec);
  size_t i = 0;
  auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '=' || c == '^'; };
  if (s.size() >= 2 && is_align(s[1])) {
    p.fill = s[0];
    p.align = static_cast<char>(s[1]);
    i = 2;
  } else if (!s.empty() && is_align(s[0])) {
    p.align = static_cast<char>(s[0]);
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) p.sign = static_cast<char>(s[i++]);
  if (i < s.size() && s[i] == '#') {
    p.alt = true;
    ++i;
  }
  if (i < s.size() && s[i] == '0') {
    if (!p.align) {
      p.fill = '0';
      p.align = '=';
    }
    ++i;
  }
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    p.width = p.width * 10 + static_cast<int>(s[i++] - '0');
    if (p.width > kMaxFormatWidth) return WidthTooLarge();
  }
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) p.grouping = static_cast<char>(s[i++]);
  if (i < s.size() && s[i] == '.') {
    ++i;
    p.precision = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      p.precision = p.precision * 10 + static_cast<int>(s[i++] - '0');
      if (p.precision > kMaxFormatWidth) return WidthTooLarge();
    }
  }
  if (i < s.size()) p.type = static_cast<char>(s[i++]);
  if (i != s.size()) return Err("Invalid format specifier");
  return p;
}

// A value formatted before padding: its text, its sign (and base prefix), and whether it aligns as a number.
struct Formatted {
  std::string body;
  std::string sign;
  bool numeric = true;
};

// The sign of a number: "-" when negative, else as the spec's sign option says.
std::string SignOf(bool negative, char sign) {
  if (negative) return "-";
  if (sign == '+') return "+";
  if (sign == ' ') return " ";
  return "";
}

// A str under a spec of type s (or none): the precision cuts it. Errors: a sign or '=' alignment.
Result<Formatted> FormatStrSpec(const std::string& s, const SpecParts& p) {
  if (p.sign) return Err("Sign not allowed in string format specifier");
  if (p.align == '=') return Err("'=' alignment not allowed in string format specifier");
  Formatted f;
  f.numeric = false;
  f.body = s;
  if (p.precision >= 0) {
    std::u32string u = ToU32(f.body);
    if (u.size() > static_cast<size_t>(p.precision)) f.body = FromU32(u.substr(0, p.precision));
  }
  return f;
}

// An int under a spec of type d, n, b, o, x, X, c (or none). Errors: a precision, a code point out of range (c).
Result<Formatted> FormatIntSpec(int64_t n, const SpecParts& p) {
  if (p.precision >= 0) return Err("Precision not allowed in integer format specifier");
  Formatted f;
  if (p.type == 'c') {
    MMIRAGE_TRY(AppendCharArg(n, &f.body));
    f.numeric = false;
    return f;
  }
  uint64_t mag = n < 0 ? static_cast<uint64_t>(0) - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
  int base = p.type == 'b' ? 2 : p.type == 'o' ? 8 : (p.type == 'x' || p.type == 'X') ? 16 : 10;
  f.body = IntDigits(mag, base, p.type == 'X');
  if (p.grouping) Group(&f.body, p.grouping);
  f.sign = SignOf(n < 0, p.sign);
  if (p.alt && base != 10) f.sign += base == 2 ? "0b" : base == 8 ? "0o" : (p.type == 'X' ? "0X" : "0x");
  return f;
}

// A number under a spec of type e, E, f, F, g, G, n, % (or none: Python's repr of a float, or %g with a
// precision). Errors: a result longer than the buffer.
Result<Formatted> FormatFloatSpec(double d, const SpecParts& p) {
  Formatted f;
  bool neg = std::signbit(d) && !std::isnan(d);
  double mag = std::fabs(d);
  if (p.type == 0 && p.precision < 0) {
    f.body = FormatDouble(mag);
  } else {
    char t = p.type == 0 || p.type == 'n' ? 'g' : p.type == '%' ? 'f' : p.type;
    int prec = p.precision >= 0 ? p.precision : 6;
    char fmt[32];
    std::snprintf(fmt, sizeof fmt, "%%%s.%d%c", p.alt ? "#" : "", prec, t);
    char buf[512];
    int n = std::snprintf(buf, sizeof buf, fmt, p.type == '%' ? mag * 100 : mag);
    if (n < 0 || n >= static_cast<int>(sizeof buf)) return Err("formatted number too long");
    f.body.assign(buf, n);
    if (p.type == 0 && f.body.find_first_of(".eni") == std::string::npos) f.body += ".0";
    if (p.type == '%') f.body += "%";
  }
  if (p.grouping) {
    size_t end = f.body.find_first_not_of("0123456789");
    std::string ip = f.body.substr(0, end);
    Group(&ip, p.grouping);
    f.body = ip + (end == std::string::npos ? "" : f.body.substr(end));
  }
  f.sign = SignOf(neg, p.sign);
  return f;
}

// Sign and body padded with the fill to the spec's width, as its alignment (default: numbers right, text left).
std::string PadFormatted(const Formatted& f, const SpecParts& p) {
  char align = p.align ? p.align : f.numeric ? '>' : '<';
  int64_t len = static_cast<int64_t>(CpCount(f.body) + f.sign.size());
  if (p.width <= len) return f.sign + f.body;
  size_t pad = static_cast<size_t>(p.width - len);
  std::string fill_s;
  AppendCp(p.fill, &fill_s);
  auto rep = [&](size_t n) {
    std::string r;
    for (size_t k = 0; k < n; ++k) r += fill_s;
    return r;
  };
  switch (align) {
    case '<': return f.sign + f.body + rep(pad);
    case '>': return rep(pad) + f.sign + f.body;
    case '=': return f.sign + rep(pad) + f.body;
    default: return rep(pad / 2) + f.sign + f.body + rep(pad - pad / 2);
  }
}

// The parts of a replacement field's text (between its braces): "name.attr[key]!conv:spec".
struct FieldParts {
  std::string_view name;  // "" (automatic numbering), digits, or a keyword
  std::string_view path;  // ".attr" and "[key]" parts
  std::string_view conv;
  std::string_view spec;
};

FieldParts SplitField(std::string_view field) {
  FieldParts f;
  size_t colon = field.find(':');
  if (colon != std::string_view::npos) {
    f.spec = field.substr(colon + 1);
    field = field.substr(0, colon);
  }
  size_t bang = field.find('!');
  if (bang != std::string_view::npos) {
    f.conv = field.substr(bang + 1);
    field = field.substr(0, bang);
  }
  size_t name_end = field.find_first_of(".[");
  f.name = field.substr(0, name_end);
  if (name_end != std::string_view::npos) f.path = field.substr(name_end);
  return f;
}

bool AllDigits(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

// The argument a field's name refers to: the next automatic index (""), a position, or a keyword. Errors: mixed
// numbering, an index out of range, an unknown keyword.
Result<Val> FieldArgument(std::string_view name, const std::vector<Val>& args,
                          const std::vector<std::pair<std::string, Val>>& kwargs, int* auto_idx, bool* manual) {
  if (name.empty()) {
    if (*manual) return Err("cannot switch from manual field specification to automatic field numbering");
    if (*auto_idx >= static_cast<int>(args.size())) {
      return Err("Replacement index " + std::to_string(*auto_idx) + " out of range for positional args tuple");
    }
    return args[(*auto_idx)++].Alias();
  }
  if (AllDigits(name)) {
    *manual = true;
    std::optional<int64_t> idx = ParseNonNegativeInt64(name);
    if (!idx) return Err("Too many decimal digits in format string");
    if (static_cast<uint64_t>(*idx) >= args.size()) {
      return Err("Replacement index " + std::string(name) + " out of range for positional args tuple");
    }
    return args[static_cast<size_t>(*idx)].Alias();
  }
  const Val* found = nullptr;
  for (const auto& kv : kwargs) {
    if (kv.first == name) found = &kv.second;
  }
  if (found == nullptr) return Err("KeyError: '" + std::string(name) + "'");
  return found->Alias();
}

// `cur` followed through a field's ".attr" and "[key]" parts ([digits] indexes a list). Errors: a missing
// attribute, key or index, an unclosed '['.
Result<Val> FollowFieldPath(Val cur, std::string_view rest) {
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
      bool digits = !key.empty() && AllDigits(key);
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
  return cur;
}

// A field's conversion: !r and !a (repr), !s (str), none. Errors: another conversion.
Result<Val> ConvertField(Val cur, std::string_view conv) {
  if (conv == "r" || conv == "a") {
    std::string r;
    AppendRepr(cur.v(), &r, cur.shape == Shape::kTuple);
    return Val(Value(std::move(r)));
  }
  if (conv == "s") return Val(Value(StrOf(cur)));
  if (!conv.empty()) return Err("Unknown conversion specifier " + std::string(conv));
  return cur;
}

// A spec with its nested fields ("{0:>{1}}") replaced; they take the next automatic index or their own, like
// Python. Errors: an unclosed '{', those of the nested fields.
Result<std::string> ExpandNestedSpec(const std::string& spec, const std::vector<Val>& args,
                                     const std::vector<std::pair<std::string, Val>>& kwargs, int* auto_idx) {
  if (spec.find('{') == std::string::npos) return spec;
  std::vector<Val> nested_args;
  for (const Val& a : args) nested_args.push_back(a.Alias());
  std::string expanded;
  for (size_t k = 0; k < spec.size(); ++k) {
    if (spec[k] != '{') {
      expanded.push_back(spec[k]);
      continue;
    }
    size_t e = spec.find('}', k);
    if (e == std::string::npos) return Err("unmatched '{' in format spec");
    std::string inner = spec.substr(k, e - k + 1);
    if (inner == "{}") inner = "{" + std::to_string((*auto_idx)++) + "}";
    MMIRAGE_ASSIGN_OR_RETURN(std::string part, StrFormat(inner, nested_args, kwargs));
    expanded += part;
    k = e;
  }
  return expanded;
}

}  // namespace

Result<std::string> FormatSpec(const Val& val, std::string_view spec) {
  if (spec.empty()) return StrOf(val);
  MMIRAGE_ASSIGN_OR_RETURN(SpecParts p, ParseSpec(spec));
  const Value& v = val.v();
  Formatted f;
  if (val.kind == Kind::kValue && v.is_string() && (p.type == 0 || p.type == 's')) {
    MMIRAGE_ASSIGN_OR_RETURN(f, FormatStrSpec(v.as_string(), p));
  } else if (val.kind == Kind::kValue && IsIntLike(v) &&
             (p.type == 0 || std::string_view("dnboxXc").find(p.type) != std::string_view::npos)) {
    MMIRAGE_ASSIGN_OR_RETURN(f, FormatIntSpec(IntOf(v), p));
  } else if (val.kind == Kind::kValue && IsNumLike(v) &&
             (p.type == 0 || std::string_view("eEfFgGn%").find(p.type) != std::string_view::npos)) {
    MMIRAGE_ASSIGN_OR_RETURN(f, FormatFloatSpec(NumOf(v), p));
  } else {
    return Err("unsupported format string passed to " + PyTypeName(val) + ".__format__");
  }
  return PadFormatted(f, p);
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
    FieldParts field = SplitField(fmt.substr(i + 1, close - i - 1));
    i = close;
    MMIRAGE_ASSIGN_OR_RETURN(Val arg, FieldArgument(field.name, args, kwargs, &auto_idx, &manual));
    MMIRAGE_ASSIGN_OR_RETURN(Val cur, FollowFieldPath(std::move(arg), field.path));
    MMIRAGE_ASSIGN_OR_RETURN(cur, ConvertField(std::move(cur), field.conv));
    MMIRAGE_ASSIGN_OR_RETURN(std::string spec, ExpandNestedSpec(std::string(field.spec), args, kwargs, &auto_idx));
    MMIRAGE_ASSIGN_OR_RETURN(std::string piece, FormatSpec(cur, spec));
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
