// String and number filters (upper, replace, truncate, indent, wordwrap, int, round, tojson, ...), the tests
// (defined, number, divisibleby, ...), and the filter/test lookup tables.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "template/internal/ast.h"
#include "template/internal/filters.h"
#include "template/internal/unicode.h"
#include "util/hex.h"
#include "util/parse_int.h"

namespace mmirage::tmpl::internal {

const Val* Arg(const CallArgs& args, size_t index, std::string_view name) {
  if (index < args.pos.size()) return &args.pos[index];
  for (const auto& kv : args.kw) {
    if (kv.first == name) return &kv.second;
  }
  return nullptr;
}

Status CheckArgs(const CallArgs& args, std::string_view fn, size_t max_pos,
                 std::initializer_list<std::string_view> keywords) {
  if (args.pos.size() > max_pos) {
    return Err(std::string(fn) + "() takes at most " + std::to_string(max_pos + 1) + " positional arguments");
  }
  for (const auto& kv : args.kw) {
    size_t idx = 0;
    bool ok = false;
    for (auto k : keywords) {
      if (k == kv.first) {
        ok = true;
        if (idx < args.pos.size())
          return Err(std::string(fn) + "() got multiple values for argument '" + kv.first + "'");
      }
      ++idx;
    }
    if (!ok) return Err(std::string(fn) + "() got an unexpected keyword argument '" + kv.first + "'");
  }
  return Status::OK();
}

namespace {

Val Str(std::string s) { return Val(Value(std::move(s))); }
bool IsNone(const Val* v) { return v == nullptr || (v->kind == Kind::kValue && v->v().is_null()); }

Result<int64_t> IntArg(const Val* v, int64_t dflt, std::string_view what) {
  if (v == nullptr) return dflt;
  if (v->kind != Kind::kValue || !IsIntLike(v->v())) {
    return Err("'" + PyTypeName(*v) + "' object cannot be interpreted as an integer (" + std::string(what) + ")");
  }
  return IntOf(v->v());
}

Result<std::string> StrParam(const Val* v, std::string dflt) {
  if (v == nullptr) return dflt;
  return StrOf(*v);
}

// The subject as text (Python's soft_str): a string Val is used in place, anything else printed.
std::string_view TextOf(const Val& s, std::string* scratch) {
  if (s.kind == Kind::kValue && s.v().is_string()) return s.v().as_string();
  *scratch = StrOf(s);
  return *scratch;
}

Result<Val> FUpper(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "upper", 0, {}));
  std::string scratch;
  return Str(Upper(TextOf(s, &scratch)));
}
Result<Val> FLower(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "lower", 0, {}));
  std::string scratch;
  return Str(Lower(TextOf(s, &scratch)));
}
Result<Val> FCapitalize(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "capitalize", 0, {}));
  return Str(PyCapitalize(StrOf(s)));
}

// Jinja's title: split on runs of [-\s({\[<] and upper-case the first character of each piece.
Result<Val> FTitle(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "title", 0, {}));
  std::u32string u = ToU32(StrOf(s));
  auto is_sep = [](char32_t c) { return IsSpaceCp(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<'; };
  std::string out;
  size_t i = 0;
  while (i < u.size()) {
    size_t j = i;
    bool sep = is_sep(u[i]);
    while (j < u.size() && is_sep(u[j]) == sep) ++j;
    if (sep) {
      out += FromU32(u.substr(i, j - i));
    } else {
      AppendUpper(u[i], &out);
      out += Lower(FromU32(u.substr(i + 1, j - i - 1)));
    }
    i = j;
  }
  return Str(out);
}

Result<Val> CallStrMethod(const std::string& s, std::string_view m, std::vector<Val> args) {
  bool found;
  return CallMethod(Val(Value(s)), m, args, {}, &found);
}

Result<Val> FTrim(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "trim", 1, {"chars"}));
  std::vector<Val> args;
  const Val* c = Arg(a, 0, "chars");
  if (c == nullptr || IsNone(c)) {
    // Fast path: whitespace strip by code point without re-encoding the whole string.
    std::string scratch;
    std::string_view t = TextOf(s, &scratch);
    size_t b = 0, e = t.size();
    while (b < e) {
      size_t p = b;
      if (!IsSpaceCp(NextCp(t, &p))) break;
      b = p;
    }
    while (e > b) {
      size_t st = std::max(b, Utf8CharStart(t, e - 1));
      size_t p = st;
      if (!IsSpaceCp(NextCp(t, &p))) break;
      e = st;
    }
    return Str(std::string(t.substr(b, e - b)));
  }
  if (c != nullptr) args.push_back(c->Alias());
  return CallStrMethod(StrOf(s), "strip", std::move(args));
}

Result<Val> FReplace(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "replace", 3, {"old", "new", "count"}));
  const Val* old = Arg(a, 0, "old");
  const Val* nw = Arg(a, 1, "new");
  if (old == nullptr || nw == nullptr) return Err("replace() missing required argument");
  std::vector<Val> args{Str(StrOf(*old)), Str(StrOf(*nw))};
  const Val* count = Arg(a, 2, "count");
  if (!IsNone(count)) args.push_back(count->Alias());
  return CallStrMethod(StrOf(s), "replace", std::move(args));
}

Result<Val> FCenter(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "center", 1, {"width"}));
  const Val* w = Arg(a, 0, "width");
  std::vector<Val> args{w ? w->Alias() : Val(Value(int64_t{80}))};
  return CallStrMethod(StrOf(s), "center", std::move(args));
}

Result<Val> FWordcount(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "wordcount", 0, {}));
  std::string str = StrOf(s);
  int64_t n = 0;
  bool in_word = false;
  size_t i = 0;
  while (i < str.size()) {
    bool w = IsWordCp(NextCp(str, &i));
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Val(Value(n));
}

Result<Val> FTruncate(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "truncate", 4, {"length", "killwords", "end", "leeway"}));
  if (s.is_undefined()) return s;
  MMIRAGE_ASSIGN_OR_RETURN(int64_t length, IntArg(Arg(a, 0, "length"), 255, "length"));
  const Val* kw = Arg(a, 1, "killwords");
  bool killwords = kw != nullptr && Truthy(*kw);
  MMIRAGE_ASSIGN_OR_RETURN(std::string end, StrParam(Arg(a, 2, "end"), "..."));
  const Val* lw = Arg(a, 3, "leeway");
  MMIRAGE_ASSIGN_OR_RETURN(int64_t leeway, IntArg(IsNone(lw) ? nullptr : lw, 5, "leeway"));
  int64_t end_len = static_cast<int64_t>(CpCount(end));
  if (length < end_len) return Err("expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
  if (leeway < 0) return Err("expected leeway >= 0, got " + std::to_string(leeway));
  if (s.kind != Kind::kValue || !s.v().is_string()) {
    // Python checks len() first: a short enough list/dict comes back unchanged, anything else fails.
    const Value& v = s.v();
    bool sized = s.kind == Kind::kValue && (v.is_array() || (v.is_object() && s.shape != Shape::kNamespace));
    if (sized && (length > INT64_MAX - leeway || static_cast<int64_t>(v.size()) <= length + leeway)) return s;
    return Err("object of type '" + PyTypeName(s) + "' cannot be truncated");
  }
  std::u32string u = ToU32(s.v().as_string());
  int64_t n = static_cast<int64_t>(u.size());
  int64_t allowed;
  if (__builtin_add_overflow(length, leeway, &allowed)) allowed = INT64_MAX;
  if (n <= allowed) return s;
  std::u32string head = u.substr(0, static_cast<size_t>(length - end_len));
  if (killwords) return Str(FromU32(head) + end);
  size_t sp = head.rfind(U' ');
  if (sp != std::u32string::npos) head = head.substr(0, sp);
  return Str(FromU32(head) + end);
}

Result<Val> FIndent(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "indent", 3, {"width", "first", "blank"}));
  if (s.kind != Kind::kValue || !s.v().is_string()) {
    if (s.is_undefined()) return UndefinedErr(s);
    return Err("unsupported operand type(s) for +: '" + PyTypeName(s) + "' and 'str'");
  }
  const Val* w = Arg(a, 0, "width");
  std::string ind;
  if (w != nullptr && w->v().is_string()) {
    ind = w->v().as_string();
  } else {
    MMIRAGE_ASSIGN_OR_RETURN(int64_t width, IntArg(w, 4, "width"));
    if (width > kMaxWidth) return WidthTooLarge();
    ind.assign(static_cast<size_t>(std::max<int64_t>(0, width)), ' ');
  }
  const Val* first = Arg(a, 1, "first");
  const Val* blank = Arg(a, 2, "blank");
  MMIRAGE_ASSIGN_OR_RETURN(Val lines_v, CallStrMethod(s.v().as_string() + "\n", "splitlines", {}));
  std::vector<std::string> lines;
  for (const Value& l : lines_v.v().as_array()) lines.push_back(l.as_string());
  std::string rv;
  if (blank != nullptr && Truthy(*blank)) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) rv += "\n" + ind;
      rv += lines[i];
      if (rv.size() > kMaxStringBytes) return StringTooLarge();
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += "\n";
      if (!lines[i].empty()) rv += ind;
      rv += lines[i];
      if (rv.size() > kMaxStringBytes) return StringTooLarge();
    }
  }
  if (first != nullptr && Truthy(*first)) rv = ind + rv;
  return Str(rv);
}

// textwrap.wrap(line, width, expand_tabs=False, replace_whitespace=False, break_long_words, break_on_hyphens).
std::vector<std::u32string> Wrap(const std::u32string& text, int64_t width, bool break_long, bool hyphens) {
  std::vector<std::u32string> chunks;
  auto letter = [&](size_t k) { return k < text.size() && IsAlphaCp(text[k]); };
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    bool ws = IsSpaceCp(text[i]);
    while (j < text.size() && IsSpaceCp(text[j]) == ws) {
      if (!ws && hyphens && text[j] == '-' && j > i &&
          ((letter(j - 1) && j >= 2 && letter(j - 2)) ||
           (letter(j - 1) && j >= 3 && text[j - 2] == '-' && letter(j - 3))) &&
          letter(j + 1) && (letter(j + 2) || (j + 3 < text.size() && text[j + 2] == '-' && letter(j + 3)))) {
        ++j;
        break;
      }
      ++j;
    }
    chunks.push_back(text.substr(i, j - i));
    i = j;
  }
  std::vector<std::u32string> lines;
  std::reverse(chunks.begin(), chunks.end());
  auto blank = [](const std::u32string& c) {
    for (char32_t ch : c) {
      if (!IsSpaceCp(ch)) return false;
    }
    return true;
  };
  while (!chunks.empty()) {
    std::vector<std::u32string> cur;
    int64_t cur_len = 0;
    if (blank(chunks.back()) && !lines.empty()) chunks.pop_back();
    while (!chunks.empty()) {
      int64_t l = static_cast<int64_t>(chunks.back().size());
      if (cur_len + l <= width) {
        cur.push_back(chunks.back());
        chunks.pop_back();
        cur_len += l;
      } else {
        break;
      }
    }
    if (!chunks.empty() && static_cast<int64_t>(chunks.back().size()) > width) {
      int64_t space_left = width < 1 ? 1 : width - cur_len;
      if (break_long) {
        std::u32string& chunk = chunks.back();
        int64_t end = space_left;
        if (hyphens && static_cast<int64_t>(chunk.size()) > space_left) {
          size_t h = chunk.rfind(U'-', static_cast<size_t>(space_left > 0 ? space_left - 1 : 0));
          if (space_left > 0 && h != std::u32string::npos && h > 0 && static_cast<int64_t>(h) < space_left) {
            bool non_hyphen = false;
            for (size_t k = 0; k < h; ++k) non_hyphen = non_hyphen || chunk[k] != '-';
            if (non_hyphen) end = static_cast<int64_t>(h) + 1;
          }
        }
        cur.push_back(chunk.substr(0, end));
        chunk = chunk.substr(end);
      } else if (cur.empty()) {
        cur.push_back(chunks.back());
        chunks.pop_back();
      }
    }
    if (!cur.empty() && blank(cur.back())) cur.pop_back();
    if (!cur.empty()) {
      std::u32string line;
      for (const auto& c : cur) line += c;
      lines.push_back(line);
    }
  }
  return lines;
}

Result<Val> FWordwrap(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "wordwrap", 4, {"width", "break_long_words", "wrapstring", "break_on_hyphens"}));
  if (s.kind != Kind::kValue || !s.v().is_string()) return Err("wordwrap expects a string");
  MMIRAGE_ASSIGN_OR_RETURN(int64_t width, IntArg(Arg(a, 0, "width"), 79, "width"));
  if (width <= 0) return Err("invalid width " + std::to_string(width) + " (must be > 0)");
  const Val* bl = Arg(a, 1, "break_long_words");
  const Val* ws = Arg(a, 2, "wrapstring");
  const Val* bh = Arg(a, 3, "break_on_hyphens");
  std::string wrapstring = IsNone(ws) ? "\n" : StrOf(*ws);
  MMIRAGE_ASSIGN_OR_RETURN(Val lines_v, CallStrMethod(s.v().as_string(), "splitlines", {}));
  std::string out;
  bool first = true;
  for (const Value& l : lines_v.v().as_array()) {
    if (!first) out += wrapstring;
    first = false;
    if (out.size() > kMaxStringBytes) return StringTooLarge();
    auto wrapped = Wrap(ToU32(l.as_string()), width, bl == nullptr || Truthy(*bl), bh == nullptr || Truthy(*bh));
    for (size_t i = 0; i < wrapped.size(); ++i) {
      if (i) out += wrapstring;
      out += FromU32(wrapped[i]);
    }
  }
  return Str(out);
}

Result<Val> FFormat(Val s, CallArgs& a) {
  if (!a.pos.empty() && !a.kw.empty()) return Err("can't handle positional and keyword arguments at the same time");
  Val args;
  if (!a.kw.empty()) {
    Value obj = Value::EmptyObject();
    for (const auto& kv : a.kw) obj.Set(kv.first, kv.second.v());
    args = Val(std::move(obj));
  } else {
    args = MakeList(a.pos, Shape::kTuple);
  }
  MMIRAGE_ASSIGN_OR_RETURN(std::string r, PercentFormat(StrOf(s), args));
  return Str(r);
}

Result<Val> FString(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "string", 0, {}));
  if (s.kind == Kind::kValue && s.v().is_string()) return s;
  return Str(StrOf(s));
}

std::string HtmlEscape(std::string_view s) {
  std::string r;
  r.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': r += "&amp;"; break;
      case '<': r += "&lt;"; break;
      case '>': r += "&gt;"; break;
      case '\'': r += "&#39;"; break;
      case '"': r += "&#34;"; break;
      default: r.push_back(c);
    }
  }
  return r;
}

Result<Val> FEscape(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "escape", 0, {}));
  if (s.shape == Shape::kMarkup) return s;
  Val r = Str(HtmlEscape(StrOf(s)));
  r.shape = Shape::kMarkup;
  return r;
}

Result<Val> FForceEscape(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "forceescape", 0, {}));
  Val r = Str(HtmlEscape(StrOf(s)));
  r.shape = Shape::kMarkup;
  return r;
}

Result<Val> FSafe(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "safe", 0, {}));
  Val r = Str(StrOf(s));
  r.shape = Shape::kMarkup;
  return r;
}

std::string HtmlUnescape(const std::string& s) {
  static const std::pair<const char*, const char*> kEntities[] = {{"amp", "&"},
                                                                  {"lt", "<"},
                                                                  {"gt", ">"},
                                                                  {"quot", "\""},
                                                                  {"apos", "'"},
                                                                  {"nbsp", "\xC2\xA0"},
                                                                  {"copy", "\xC2\xA9"},
                                                                  {"reg", "\xC2\xAE"},
                                                                  {"hellip", "\xE2\x80\xA6"},
                                                                  {"mdash", "\xE2\x80\x94"},
                                                                  {"ndash", "\xE2\x80\x93"},
                                                                  {"euro", "\xE2\x82\xAC"}};
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out.push_back(s[i]);
      continue;
    }
    size_t semi = s.find(';', i);
    if (semi != std::string::npos && semi - i <= 10) {
      std::string name = s.substr(i + 1, semi - i - 1);
      if (!name.empty() && name[0] == '#') {
        bool hex = name.size() > 1 && (name[1] == 'x' || name[1] == 'X');
        std::optional<uint64_t> cp = ParseUint64(std::string_view(name).substr(hex ? 2 : 1), hex ? 16 : 10);
        if (cp && *cp > 0 && *cp < 0x110000) {
          AppendCp(static_cast<char32_t>(*cp), &out);
          i = semi;
          continue;
        }
      }
      bool done = false;
      for (const auto& e : kEntities) {
        if (name == e.first) {
          out += e.second;
          i = semi;
          done = true;
          break;
        }
      }
      if (done) continue;
    }
    out.push_back('&');
  }
  return out;
}

Result<Val> FStriptags(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "striptags", 0, {}));
  std::string v = StrOf(s);
  for (const char* open : {"<!--", "<"}) {
    const char* close = open[1] == '!' ? "-->" : ">";
    while (true) {
      size_t st = v.find(open);
      if (st == std::string::npos) break;
      size_t en = v.find(close, st);
      if (en == std::string::npos) break;
      v.erase(st, en + std::string_view(close).size() - st);
    }
  }
  MMIRAGE_ASSIGN_OR_RETURN(Val parts, CallStrMethod(v, "split", {}));
  std::string joined;
  for (const Value& p : parts.v().as_array()) {
    if (!joined.empty()) joined.push_back(' ');
    joined += p.as_string();
  }
  return Str(HtmlUnescape(joined));
}

std::string UrlQuote(std::string_view s, bool for_qs) {
  std::string r;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~' || (!for_qs && c == '/')) {
      r.push_back(static_cast<char>(c));
    } else if (for_qs && c == ' ') {
      r.push_back('+');
    } else {
      r.push_back('%');
      AppendHexDigits(c, 2, &r, HexCase::kUpper);
    }
  }
  return r;
}

Result<Val> FUrlencode(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "urlencode", 0, {}));
  const Value& v = s.v();
  if (s.kind == Kind::kValue && (v.is_object() || v.is_array())) {
    std::string out;
    auto add = [&](const Val& k, const Val& val) {
      if (!out.empty()) out.push_back('&');
      out += UrlQuote(StrOf(k), true) + "=" + UrlQuote(StrOf(val), true);
    };
    if (v.is_object()) {
      for (const auto& m : v.as_object()) add(Val(Value(m.first)), Val::Borrow(m.second));
      return Str(out);
    }
    for (const Value& item : v.as_array()) {
      if (!item.is_array() || item.as_array().size() != 2) return Err("urlencode expects pairs");
      add(Val::Borrow(item.as_array()[0]), Val::Borrow(item.as_array()[1]));
    }
    return Str(out);
  }
  return Str(UrlQuote(StrOf(s), false));
}

Result<Val> FTojson(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "tojson", 1, {"indent"}));
  const Val* ind = Arg(a, 0, "indent");
  MMIRAGE_ASSIGN_OR_RETURN(int64_t indent, IntArg(IsNone(ind) ? nullptr : ind, 0, "indent"));
  if (indent > kMaxWidth) return WidthTooLarge();
  MMIRAGE_ASSIGN_OR_RETURN(std::string j, HtmlSafeJson(s, static_cast<int>(std::min<int64_t>(indent, 64))));
  Val r = Str(j);
  r.shape = Shape::kMarkup;
  return r;
}

}  // namespace

// Python int(str, base) / float(str); false when the text is not a valid literal.
bool ParsePyInt(std::string_view text, int base, int64_t* out, bool* overflow);
bool ParsePyFloat(std::string_view text, double* out);

namespace {

Result<Val> FInt(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "int", 2, {"default", "base"}));
  const Val* d = Arg(a, 0, "default");
  Val dflt = d ? d->Owned() : Val(Value(int64_t{0}));
  MMIRAGE_ASSIGN_OR_RETURN(int64_t base, IntArg(Arg(a, 1, "base"), 10, "base"));
  if (s.is_undefined()) return UndefinedErr(s);
  const Value& v = s.v();
  if (s.kind != Kind::kValue) return dflt;
  if (IsIntLike(v)) return Val(Value(IntOf(v)));
  double f;
  if (v.is_string()) {
    int64_t i;
    bool overflow = false;
    if (ParsePyInt(v.as_string(), static_cast<int>(base), &i, &overflow)) return Val(Value(i));
    if (overflow) return Err("integer overflow (Python would produce a big integer)");
    if (!ParsePyFloat(v.as_string(), &f)) return dflt;
  } else if (v.is_double()) {
    f = v.as_double();
  } else {
    return dflt;
  }
  if (std::isnan(f)) return dflt;
  if (std::isinf(f)) return Err("cannot convert float infinity to integer");
  if (std::fabs(f) >= 9.223372036854775e18) return Err("integer overflow (Python would produce a big integer)");
  return Val(Value(static_cast<int64_t>(f)));
}

Result<Val> FFloat(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "float", 1, {"default"}));
  const Val* d = Arg(a, 0, "default");
  Val dflt = d ? d->Owned() : Val(Value(0.0));
  if (s.is_undefined()) return UndefinedErr(s);
  const Value& v = s.v();
  if (s.kind != Kind::kValue) return dflt;
  if (IsNumLike(v)) return Val(Value(NumOf(v)));
  double f;
  if (v.is_string() && ParsePyFloat(v.as_string(), &f)) return Val(Value(f));
  return dflt;
}

Result<Val> FAbs(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "abs", 0, {}));
  if (s.is_undefined()) return UndefinedErr(s);
  const Value& v = s.v();
  if (s.kind == Kind::kValue && IsIntLike(v)) {
    int64_t i = IntOf(v);
    if (i == INT64_MIN) return Err("integer overflow (Python would produce a big integer)");
    return Val(Value(i < 0 ? -i : i));
  }
  if (s.kind == Kind::kValue && v.is_double()) return Val(Value(std::fabs(v.as_double())));
  return Err("bad operand type for abs(): '" + PyTypeName(s) + "'");
}

double RoundHalfEven(double x, int64_t ndigits) {
  if (!std::isfinite(x)) return x;
  if (ndigits >= 0 && ndigits <= 300) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(ndigits), x);
    return std::strtod(buf, nullptr);
  }
  if (ndigits > 300) return x;
  double p = std::pow(10.0, static_cast<double>(-ndigits));
  if (!std::isfinite(p)) return std::copysign(0.0, x);
  double y = x / p;
  double r = std::nearbyint(y);
  return r * p;
}

Result<Val> FRound(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "round", 2, {"precision", "method"}));
  MMIRAGE_ASSIGN_OR_RETURN(int64_t precision, IntArg(Arg(a, 0, "precision"), 0, "precision"));
  MMIRAGE_ASSIGN_OR_RETURN(std::string method, StrParam(Arg(a, 1, "method"), "common"));
  if (method != "common" && method != "ceil" && method != "floor") {
    return Err("method must be common, ceil or floor");
  }
  if (s.is_undefined()) return UndefinedErr(s);
  const Value& v = s.v();
  if (s.kind != Kind::kValue || !IsNumLike(v)) {
    return Err("type " + PyTypeName(s) + " doesn't define __round__ method");
  }
  if (method == "common") {
    if (IsIntLike(v)) {
      int64_t i = IntOf(v);
      if (precision >= 0) return Val(Value(i));
      if (precision < -18) return Val(Value(int64_t{0}));
      int64_t p = 1;
      for (int64_t k = 0; k < -precision; ++k) p *= 10;
      int64_t q = i / p, r = i % p;
      if (r < 0) {
        r += p;
        q -= 1;
      }
      if (2 * r > p || (2 * r == p && (q % 2 != 0))) q += 1;
      int64_t out;
      if (__builtin_mul_overflow(q, p, &out)) return Err("integer overflow");
      return Val(Value(out));
    }
    return Val(Value(RoundHalfEven(v.as_double(), precision)));
  }
  double p = std::pow(10.0, static_cast<double>(precision));
  double x = NumOf(v) * p;
  if (!std::isfinite(x)) return Err("cannot convert float infinity to integer");
  double r = method == "ceil" ? std::ceil(x) : std::floor(x);
  return Val(Value(r / p));
}

Result<Val> FDefault(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "default", 2, {"default_value", "boolean"}));
  const Val* d = Arg(a, 0, "default_value");
  const Val* b = Arg(a, 1, "boolean");
  if (s.is_undefined() || (b != nullptr && Truthy(*b) && !Truthy(s))) { return d ? d->Owned() : Val(Value("")); }
  return s;
}

// ---- tests ----

Result<bool> TDefined(const Val& v, CallArgs&) { return !v.is_undefined(); }
Result<bool> TUndefined(const Val& v, CallArgs&) { return v.is_undefined(); }
bool IsVal(const Val& v) { return v.kind == Kind::kValue; }
Result<bool> TNone(const Val& v, CallArgs&) { return IsVal(v) && v.v().is_null(); }
Result<bool> TNumber(const Val& v, CallArgs&) { return IsVal(v) && IsNumLike(v.v()); }
Result<bool> TInteger(const Val& v, CallArgs&) { return IsVal(v) && v.v().is_int(); }
Result<bool> TFloat(const Val& v, CallArgs&) { return IsVal(v) && v.v().is_double(); }
Result<bool> TString(const Val& v, CallArgs&) { return IsVal(v) && v.v().is_string(); }
Result<bool> TMapping(const Val& v, CallArgs&) { return IsVal(v) && v.v().is_object() && v.shape != Shape::kNamespace; }
Result<bool> TIterable(const Val& v, CallArgs&) {
  return v.is_undefined() ||
         (IsVal(v) && (v.v().is_string() || v.v().is_array() || (v.v().is_object() && v.shape != Shape::kNamespace)));
}
Result<bool> TSequence(const Val& v, CallArgs&) {
  if (v.is_undefined()) return true;  // Undefined defines __len__ and __getitem__
  return IsVal(v) && (v.v().is_string() || v.v().is_array() || (v.v().is_object() && v.shape != Shape::kNamespace)) &&
         v.shape != Shape::kDictItems && v.shape != Shape::kDictKeys && v.shape != Shape::kDictValues;
}
Result<bool> TBoolean(const Val& v, CallArgs&) { return IsVal(v) && v.v().is_bool(); }
Result<bool> TTrue(const Val& v, CallArgs&) { return IsVal(v) && v.v().is_bool() && v.v().as_bool(); }
Result<bool> TFalse(const Val& v, CallArgs&) { return IsVal(v) && v.v().is_bool() && !v.v().as_bool(); }
Result<bool> TCallable(const Val& v, CallArgs&) {
  return v.kind == Kind::kMacro || v.kind == Kind::kMethod || v.kind == Kind::kGlobal || v.is_undefined();
}
Result<bool> TEscaped(const Val& v, CallArgs&) { return v.shape == Shape::kMarkup; }

Result<bool> ModTest(const Val& v, const Val& m) {
  MMIRAGE_ASSIGN_OR_RETURN(Val r, BinaryOp(static_cast<int>(BinOp::kMod), v, m));
  return PyEq(r.v(), Value(int64_t{0}));
}
Result<bool> TEven(const Val& v, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "even", 0, {}));
  return ModTest(v, Val(Value(int64_t{2})));
}
Result<bool> TOdd(const Val& v, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "odd", 0, {}));
  MMIRAGE_ASSIGN_OR_RETURN(Val r, BinaryOp(static_cast<int>(BinOp::kMod), v, Val(Value(int64_t{2}))));
  return PyEq(r.v(), Value(int64_t{1}));
}
Result<bool> TDivisibleby(const Val& v, CallArgs& a) {
  const Val* n = Arg(a, 0, "num");
  if (n == nullptr) return Err("divisibleby() missing required argument 'num'");
  return ModTest(v, *n);
}

template <CmpOp kOp>
Result<bool> TCompare(const Val& v, CallArgs& a) {
  const Val* o = Arg(a, 0, "other");
  if (o == nullptr) return Err("test missing required argument 'other'");
  return CompareOp(static_cast<int>(kOp), v, *o);
}

Result<bool> TIn(const Val& v, CallArgs& a) {
  const Val* seq = Arg(a, 0, "seq");
  if (seq == nullptr) return Err("in() missing required argument 'seq'");
  return Contains(*seq, v);
}

Result<bool> TUpper(const Val& v, CallArgs&) {
  bool found;
  MMIRAGE_ASSIGN_OR_RETURN(Val r, CallMethod(Val(Value(StrOf(v))), "isupper", {}, {}, &found));
  return r.v().as_bool();
}
Result<bool> TLower(const Val& v, CallArgs&) {
  bool found;
  MMIRAGE_ASSIGN_OR_RETURN(Val r, CallMethod(Val(Value(StrOf(v))), "islower", {}, {}, &found));
  return r.v().as_bool();
}

Result<bool> TSameas(const Val& v, CallArgs& a) {
  const Val* o = Arg(a, 0, "other");
  if (o == nullptr) return Err("sameas() missing required argument 'other'");
  if (v.is_undefined() || o->is_undefined()) return false;
  const Value& x = v.v();
  const Value& y = o->v();
  if (x.is_null() || y.is_null()) return x.is_null() && y.is_null();
  if (x.is_bool() || y.is_bool()) return x.is_bool() && y.is_bool() && x.as_bool() == y.as_bool();
  if (x.is_int() && y.is_int()) return x.as_int() == y.as_int() && x.as_int() >= -5 && x.as_int() <= 256;
  if (v.ref != nullptr && v.ref == o->ref) return true;
  return false;
}

Result<bool> TFilter(const Val& v, CallArgs&) { return v.v().is_string() && FindFilter(v.v().as_string()) != nullptr; }
Result<bool> TTest(const Val& v, CallArgs&) { return v.v().is_string() && FindTest(v.v().as_string()) != nullptr; }

const std::vector<TestDef>& Tests() {
  static const std::vector<TestDef> kTests = {{"defined", TDefined},
                                              {"undefined", TUndefined},
                                              {"none", TNone},
                                              {"number", TNumber},
                                              {"integer", TInteger},
                                              {"float", TFloat},
                                              {"string", TString},
                                              {"mapping", TMapping},
                                              {"iterable", TIterable},
                                              {"sequence", TSequence},
                                              {"boolean", TBoolean},
                                              {"true", TTrue},
                                              {"false", TFalse},
                                              {"callable", TCallable},
                                              {"escaped", TEscaped},
                                              {"even", TEven},
                                              {"odd", TOdd},
                                              {"divisibleby", TDivisibleby},
                                              {"eq", TCompare<CmpOp::kEq>},
                                              {"equalto", TCompare<CmpOp::kEq>},
                                              {"==", TCompare<CmpOp::kEq>},
                                              {"ne", TCompare<CmpOp::kNe>},
                                              {"!=", TCompare<CmpOp::kNe>},
                                              {"lt", TCompare<CmpOp::kLt>},
                                              {"lessthan", TCompare<CmpOp::kLt>},
                                              {"<", TCompare<CmpOp::kLt>},
                                              {"gt", TCompare<CmpOp::kGt>},
                                              {"greaterthan", TCompare<CmpOp::kGt>},
                                              {">", TCompare<CmpOp::kGt>},
                                              {"le", TCompare<CmpOp::kLe>},
                                              {"<=", TCompare<CmpOp::kLe>},
                                              {"ge", TCompare<CmpOp::kGe>},
                                              {">=", TCompare<CmpOp::kGe>},
                                              {"in", TIn},
                                              {"upper", TUpper},
                                              {"lower", TLower},
                                              {"sameas", TSameas},
                                              {"filter", TFilter},
                                              {"test", TTest}};
  return kTests;
}

}  // namespace

const std::vector<FilterDef>& StringFilters() {
  static const std::vector<FilterDef> kFilters = {{"upper", FUpper},
                                                  {"lower", FLower},
                                                  {"title", FTitle},
                                                  {"capitalize", FCapitalize},
                                                  {"trim", FTrim},
                                                  {"replace", FReplace},
                                                  {"center", FCenter},
                                                  {"wordcount", FWordcount},
                                                  {"truncate", FTruncate},
                                                  {"indent", FIndent},
                                                  {"wordwrap", FWordwrap},
                                                  {"format", FFormat},
                                                  {"string", FString},
                                                  {"e", FEscape},
                                                  {"escape", FEscape},
                                                  {"forceescape", FForceEscape},
                                                  {"safe", FSafe},
                                                  {"striptags", FStriptags},
                                                  {"urlencode", FUrlencode},
                                                  {"tojson", FTojson},
                                                  {"int", FInt},
                                                  {"float", FFloat},
                                                  {"abs", FAbs},
                                                  {"round", FRound},
                                                  {"default", FDefault},
                                                  {"d", FDefault}};
  return kFilters;
}

const FilterDef* FindFilter(std::string_view name) {
  for (const auto* table : {&StringFilters(), &SequenceFilters()}) {
    for (const FilterDef& f : *table) {
      if (name == f.name) return &f;
    }
  }
  return nullptr;
}

const TestDef* FindTest(std::string_view name) {
  for (const TestDef& t : Tests()) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

}  // namespace mmirage::tmpl::internal
