// Python methods callable from templates on plain values: str (split, strip, replace, format, ...),
// dict (items, keys, values, get) and list (index, count).
#include <algorithm>
#include <string>

#include "template/internal/runtime.h"
#include "template/internal/unicode.h"

namespace mmirage::tmpl::internal {
namespace {

constexpr std::string_view kDictMethods[] = {"items",  "keys",       "values", "get",     "copy",    "pop",
                                             "update", "setdefault", "clear",  "popitem", "fromkeys"};
constexpr std::string_view kListMethods[] = {"index",  "count",  "copy",    "append", "extend", "pop",
                                             "insert", "remove", "reverse", "sort",   "clear"};

template <size_t N>
bool In(const std::string_view (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

Status ArgCount(std::string_view name, size_t n, size_t lo, size_t hi) {
  if (n < lo || n > hi) {
    return Err(std::string(name) + "() takes " + (lo == hi ? "exactly " : "at most ") + std::to_string(hi) +
               " argument(s) (" + std::to_string(n) + " given)");
  }
  return Status::OK();
}

Result<std::string> StrArg(const Val& v, std::string_view what) {
  if (v.kind != Kind::kValue || !v.v().is_string()) {
    return Err(std::string(what) + " must be str, not " + PyTypeName(v));
  }
  return v.v().as_string();
}

Val StrVal(std::string s) { return Val(Value(std::move(s))); }

Val ListOfStrings(const std::vector<std::string>& parts) {
  Value::Array a;
  a.reserve(parts.size());
  for (const auto& p : parts) a.emplace_back(p);
  return Val(Value(std::move(a)));
}

std::u32string Strip(const std::u32string& s, const std::u32string* chars, bool left, bool right) {
  auto strip = [&](char32_t c) { return chars ? chars->find(c) != std::u32string::npos : IsSpaceCp(c); };
  size_t b = 0, e = s.size();
  if (left) {
    while (b < e && strip(s[b])) ++b;
  }
  if (right) {
    while (e > b && strip(s[e - 1])) --e;
  }
  return s.substr(b, e - b);
}

std::vector<std::string> SplitWs(const std::u32string& s, int64_t maxsplit, bool reverse) {
  std::vector<std::u32string> parts;
  if (!reverse) {
    size_t i = 0, n = s.size();
    while (true) {
      while (i < n && IsSpaceCp(s[i])) ++i;
      if (i >= n) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
        parts.push_back(s.substr(i));
        break;
      }
      size_t j = i;
      while (j < n && !IsSpaceCp(s[j])) ++j;
      parts.push_back(s.substr(i, j - i));
      i = j;
    }
  } else {
    int64_t i = static_cast<int64_t>(s.size()) - 1;
    while (true) {
      while (i >= 0 && IsSpaceCp(s[i])) --i;
      if (i < 0) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
        parts.push_back(s.substr(0, i + 1));
        break;
      }
      int64_t j = i;
      while (j >= 0 && !IsSpaceCp(s[j])) --j;
      parts.push_back(s.substr(j + 1, i - j));
      i = j;
    }
    std::reverse(parts.begin(), parts.end());
  }
  std::vector<std::string> out;
  for (auto& p : parts) out.push_back(FromU32(p));
  return out;
}

std::vector<std::string> SplitSep(const std::string& s, const std::string& sep, int64_t maxsplit, bool reverse) {
  std::vector<std::string> out;
  if (!reverse) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t p = s.find(sep, start);
      if (p == std::string::npos) break;
      out.push_back(s.substr(start, p - start));
      start = p + sep.size();
    }
    out.push_back(s.substr(start));
  } else {
    size_t end = s.size();
    int64_t splits = 0;
    while (maxsplit < 0 || splits < maxsplit) {
      if (end < sep.size()) break;
      size_t p = s.rfind(sep, end - sep.size());
      if (p == std::string::npos) break;
      out.push_back(s.substr(p + sep.size(), end - p - sep.size()));
      end = p;
      ++splits;
    }
    out.push_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
  }
  return out;
}

std::vector<std::string> SplitLines(const std::u32string& s, bool keepends) {
  std::vector<std::string> out;
  size_t i = 0, start = 0;
  while (i < s.size()) {
    if (IsLineBreak(s[i])) {
      size_t eol = i + 1;
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') eol = i + 2;
      out.push_back(FromU32(s.substr(start, (keepends ? eol : i) - start)));
      start = i = eol;
    } else {
      ++i;
    }
  }
  if (start < s.size()) out.push_back(FromU32(s.substr(start)));
  return out;
}

std::string Justify(const std::u32string& s, int64_t width, char32_t fill, char how) {
  int64_t n = static_cast<int64_t>(s.size());
  if (width <= n) return FromU32(s);
  int64_t marg = width - n;
  int64_t left = how == 'l' ? 0 : how == 'r' ? marg : marg / 2 + (marg & width & 1);
  std::u32string r(left, fill);
  r += s;
  r.append(marg - left, fill);
  return FromU32(r);
}

int64_t CpIndex(const std::string& s, size_t byte_pos) {
  return static_cast<int64_t>(CpCount(std::string_view(s).substr(0, byte_pos)));
}

// One call of a str method: the string, the method's name and its arguments.
struct StrCall {
  const std::string& s;
  std::string_view name;
  const std::vector<Val>& args;
  const std::vector<std::pair<std::string, Val>>& kwargs;

  // Positional argument i, else keyword argument k; nullptr when neither was given.
  const Val* Arg(size_t i, std::string_view k) const {
    if (i < args.size()) return &args[i];
    for (const auto& p : kwargs) {
      if (p.first == k) return &p.second;
    }
    return nullptr;
  }
};

bool IsNone(const Val* v) { return v == nullptr || (v->kind == Kind::kValue && v->v().is_null()); }

Status IntArgError(const Val& v) { return Err("'" + PyTypeName(v) + "' object cannot be interpreted as an integer"); }

// format: Python's str.format.
Result<Val> StrFormatMethod(const StrCall& c) {
  MMIRAGE_ASSIGN_OR_RETURN(std::string r, StrFormat(c.s, c.args, c.kwargs));
  return StrVal(std::move(r));
}

// upper, lower, casefold, title, capitalize, swapcase: case mappings (arguments ignored).
Result<Val> StrCaseMethod(const StrCall& c) {
  const std::string& s = c.s;
  if (c.name == "upper") return StrVal(Upper(s));
  if (c.name == "lower") return StrVal(Lower(s));
  if (c.name == "casefold") return StrVal(CaseFold(s));
  if (c.name == "title") return StrVal(PyTitle(s));
  if (c.name == "capitalize") return StrVal(PyCapitalize(s));
  std::string r;  // swapcase
  size_t i = 0;
  while (i < s.size()) {
    char32_t ch = NextCp(s, &i);
    if (IsUpperCp(ch)) AppendLower(ch, &r);
    else if (IsLowerCp(ch)) AppendUpper(ch, &r);
    else AppendCp(ch, &r);
  }
  return StrVal(r);
}

// strip, lstrip, rstrip([chars]): whitespace, or the given characters, removed from the ends.
Result<Val> StrStripMethod(const StrCall& c) {
  MMIRAGE_TRY(ArgCount(c.name, c.args.size(), 0, 1));
  const Val* chars_arg = c.Arg(0, "chars");
  std::u32string chars;
  if (!IsNone(chars_arg)) {
    MMIRAGE_ASSIGN_OR_RETURN(std::string cs, StrArg(*chars_arg, "strip arg"));
    chars = ToU32(cs);
  }
  return StrVal(
      FromU32(Strip(ToU32(c.s), IsNone(chars_arg) ? nullptr : &chars, c.name != "rstrip", c.name != "lstrip")));
}

// split, rsplit([sep[, maxsplit]]): a list of the parts.
Result<Val> StrSplitMethod(const StrCall& c) {
  MMIRAGE_TRY(ArgCount(c.name, c.args.size(), 0, 2));
  const Val* sep = c.Arg(0, "sep");
  const Val* mx = c.Arg(1, "maxsplit");
  int64_t maxsplit = -1;
  if (mx != nullptr) {
    if (!IsIntLike(mx->v())) return IntArgError(*mx);
    maxsplit = IntOf(mx->v());
  }
  if (IsNone(sep)) return ListOfStrings(SplitWs(ToU32(c.s), maxsplit, c.name == "rsplit"));
  MMIRAGE_ASSIGN_OR_RETURN(std::string sp, StrArg(*sep, "must be str or None,"));
  if (sp.empty()) return Err("empty separator");
  return ListOfStrings(SplitSep(c.s, sp, maxsplit, c.name == "rsplit"));
}

// splitlines([keepends]): a list of the lines, at Python's line boundaries.
Result<Val> StrSplitLinesMethod(const StrCall& c) {
  const Val* k = c.Arg(0, "keepends");
  return ListOfStrings(SplitLines(ToU32(c.s), k != nullptr && Truthy(*k)));
}

// replace(old, new[, count]): at most `count` (all when absent or negative) occurrences replaced, left to right.
Result<Val> StrReplaceMethod(const StrCall& c) {
  const std::string& s = c.s;
  MMIRAGE_TRY(ArgCount(c.name, c.args.size(), 2, 3));
  MMIRAGE_ASSIGN_OR_RETURN(std::string old, StrArg(c.args[0], "replace() argument 1"));
  MMIRAGE_ASSIGN_OR_RETURN(std::string rep, StrArg(c.args[1], "replace() argument 2"));
  int64_t count = -1;
  if (c.args.size() == 3) {
    if (!IsIntLike(c.args[2].v())) return IntArgError(c.args[2]);
    count = IntOf(c.args[2].v());
  }
  std::string r;
  if (old.empty()) {  // `new` between code points (and at both ends)
    int64_t done = 0;
    size_t i = 0;
    while (i < s.size()) {
      if (count < 0 || done < count) {
        r += rep;
        ++done;
        if (r.size() > kMaxStringBytes) return StringTooLarge();
      }
      size_t st = i;
      NextCp(s, &i);
      r.append(s, st, i - st);
    }
    if (count < 0 || done < count) r += rep;
    return StrVal(r);
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t p = s.find(old, start);
    if (p == std::string::npos) break;
    r.append(s, start, p - start);
    r += rep;
    if (r.size() > kMaxStringBytes) return StringTooLarge();
    start = p + old.size();
    ++done;
  }
  r.append(s, start, std::string::npos);
  return StrVal(r);
}

// startswith, endswith (a str or a tuple of str), removeprefix, removesuffix.
Result<Val> StrAffixMethod(const StrCall& c) {
  const std::string& s = c.s;
  const std::string_view name = c.name;
  MMIRAGE_TRY(ArgCount(name, c.args.size(), 1, 1));
  std::vector<std::string> cands;
  if (c.args[0].v().is_array() && c.args[0].shape == Shape::kTuple) {
    for (const Value& e : c.args[0].v().as_array()) {
      if (!e.is_string()) return Err("tuple for " + std::string(name) + " must only contain str");
      cands.push_back(e.as_string());
    }
  } else {
    MMIRAGE_ASSIGN_OR_RETURN(std::string cand, StrArg(c.args[0], std::string(name) + " first arg"));
    cands.push_back(cand);
  }
  bool start = name == "startswith" || name == "removeprefix";
  for (const auto& cand : cands) {
    bool hit = cand.size() <= s.size() && (start ? s.compare(0, cand.size(), cand) == 0
                                                 : s.compare(s.size() - cand.size(), cand.size(), cand) == 0);
    if (hit) {
      if (name == "removeprefix") return StrVal(s.substr(cand.size()));
      if (name == "removesuffix") return StrVal(cand.empty() ? s : s.substr(0, s.size() - cand.size()));
      return Val(Value(true));
    }
  }
  if (name == "removeprefix" || name == "removesuffix") return StrVal(s);
  return Val(Value(false));
}

// join(iterable): the items (each a str) with the string between them.
Result<Val> StrJoinMethod(const StrCall& c) {
  MMIRAGE_TRY(ArgCount(c.name, c.args.size(), 1, 1));
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> items, Iterate(c.args[0]));
  std::string r;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].kind != Kind::kValue || !items[i].v().is_string()) {
      return Err("sequence item " + std::to_string(i) + ": expected str instance, " + PyTypeName(items[i]) + " found");
    }
    if (i) r += c.s;
    r += items[i].v().as_string();
    if (r.size() > kMaxStringBytes) return StringTooLarge();
  }
  return StrVal(r);
}

// count, find, rfind, index, rindex(sub): occurrences, or a code-point position (-1 / an error when absent).
Result<Val> StrSearchMethod(const StrCall& c) {
  const std::string& s = c.s;
  const std::string_view name = c.name;
  MMIRAGE_TRY(ArgCount(name, c.args.size(), 1, 1));
  MMIRAGE_ASSIGN_OR_RETURN(std::string sub, StrArg(c.args[0], "must be str,"));
  if (name == "count") {
    if (sub.empty()) return Val(Value(static_cast<int64_t>(ToU32(s).size() + 1)));
    int64_t n = 0;
    for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
    return Val(Value(n));
  }
  size_t p = (name == "find" || name == "index") ? s.find(sub) : s.rfind(sub);
  if (p == std::string::npos) {
    if (name == "index" || name == "rindex") return Err("substring not found");
    return Val(Value(int64_t{-1}));
  }
  return Val(Value(CpIndex(s, p)));
}

// zfill(width), center, ljust, rjust(width[, fillchar]): padded to `width` code points.
Result<Val> StrPadMethod(const StrCall& c) {
  const std::string_view name = c.name;
  MMIRAGE_TRY(ArgCount(name, c.args.size(), 1, name == "zfill" ? 1 : 2));
  if (!IsIntLike(c.args[0].v())) return IntArgError(c.args[0]);
  int64_t width = IntOf(c.args[0].v());
  if (width > kMaxWidth) return WidthTooLarge();
  std::u32string u = ToU32(c.s);
  if (name == "zfill") {
    int64_t n = static_cast<int64_t>(u.size());
    if (width <= n) return StrVal(c.s);
    std::u32string r = u;
    size_t at = (!u.empty() && (u[0] == '+' || u[0] == '-')) ? 1 : 0;
    r.insert(at, std::u32string(width - n, U'0'));
    return StrVal(FromU32(r));
  }
  char32_t fill = ' ';
  if (c.args.size() == 2) {
    MMIRAGE_ASSIGN_OR_RETURN(std::string f, StrArg(c.args[1], "fill character"));
    if (CpCount(f) != 1) return Err("The fill character must be exactly one character long");
    fill = ToU32(f)[0];
  }
  return StrVal(Justify(u, width, fill, name == "center" ? 'c' : name == "ljust" ? 'l' : 'r'));
}

// partition, rpartition(sep): the tuple (before, sep, after), split at the first / last sep.
Result<Val> StrPartitionMethod(const StrCall& c) {
  const std::string& s = c.s;
  MMIRAGE_TRY(ArgCount(c.name, c.args.size(), 1, 1));
  MMIRAGE_ASSIGN_OR_RETURN(std::string sep, StrArg(c.args[0], "must be str,"));
  if (sep.empty()) return Err("empty separator");
  size_t p = c.name == "partition" ? s.find(sep) : s.rfind(sep);
  Value::Array a;
  if (p == std::string::npos) {
    if (c.name == "partition") a = {Value(s), Value(""), Value("")};
    else a = {Value(""), Value(""), Value(s)};
  } else {
    a = {Value(s.substr(0, p)), Value(sep), Value(s.substr(p + sep.size()))};
  }
  Val r{Value(std::move(a))};
  r.shape = Shape::kTuple;
  return r;
}

// isupper, islower, istitle: the cased characters' case (false without any cased character).
Result<Val> StrCasePredicate(const StrCall& c) {
  std::u32string u = ToU32(c.s);
  bool ok = !u.empty();
  if (c.name == "istitle") {
    bool prev_cased = false, cased = false;
    for (char32_t ch : u) {
      if (IsUpperCp(ch)) {
        if (prev_cased) ok = false;
        prev_cased = cased = true;
      } else if (IsLowerCp(ch)) {
        if (!prev_cased) ok = false;
        prev_cased = cased = true;
      } else {
        prev_cased = false;
      }
    }
    return Val(Value(ok && cased));
  }
  bool any_cased = false;
  for (char32_t ch : u) {
    if (IsCased(ch)) {
      any_cased = true;
      if (c.name == "isupper" ? IsLowerCp(ch) : IsUpperCp(ch)) ok = false;
    }
  }
  return Val(Value(ok && any_cased));
}

// isdigit, isdecimal, isnumeric, isalpha, isalnum, isspace: every character of a non-empty string in the class.
Result<Val> StrClassPredicate(const StrCall& c) {
  const std::string_view name = c.name;
  std::u32string u = ToU32(c.s);
  bool ok = !u.empty();
  for (char32_t ch : u) {
    if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") ok = ok && IsDigitCp(ch);
    else if (name == "isalpha") ok = ok && IsAlphaCp(ch);
    else if (name == "isalnum") ok = ok && (IsAlphaCp(ch) || IsDigitCp(ch) || IsWordCp(ch)) && ch != '_';
    else if (name == "isspace") ok = ok && IsSpaceCp(ch);
  }
  return Val(Value(ok));
}

using StrMethodFn = Result<Val> (*)(const StrCall&);

// Every str method templates may call, by name.
constexpr std::pair<std::string_view, StrMethodFn> kStrMethods[] = {{"upper", StrCaseMethod},
                                                                    {"lower", StrCaseMethod},
                                                                    {"title", StrCaseMethod},
                                                                    {"capitalize", StrCaseMethod},
                                                                    {"swapcase", StrCaseMethod},
                                                                    {"casefold", StrCaseMethod},
                                                                    {"strip", StrStripMethod},
                                                                    {"lstrip", StrStripMethod},
                                                                    {"rstrip", StrStripMethod},
                                                                    {"split", StrSplitMethod},
                                                                    {"rsplit", StrSplitMethod},
                                                                    {"splitlines", StrSplitLinesMethod},
                                                                    {"replace", StrReplaceMethod},
                                                                    {"startswith", StrAffixMethod},
                                                                    {"endswith", StrAffixMethod},
                                                                    {"join", StrJoinMethod},
                                                                    {"format", StrFormatMethod},
                                                                    {"count", StrSearchMethod},
                                                                    {"find", StrSearchMethod},
                                                                    {"rfind", StrSearchMethod},
                                                                    {"index", StrSearchMethod},
                                                                    {"rindex", StrSearchMethod},
                                                                    {"zfill", StrPadMethod},
                                                                    {"center", StrPadMethod},
                                                                    {"ljust", StrPadMethod},
                                                                    {"rjust", StrPadMethod},
                                                                    {"isdigit", StrClassPredicate},
                                                                    {"isdecimal", StrClassPredicate},
                                                                    {"isnumeric", StrClassPredicate},
                                                                    {"isalpha", StrClassPredicate},
                                                                    {"isalnum", StrClassPredicate},
                                                                    {"isspace", StrClassPredicate},
                                                                    {"isupper", StrCasePredicate},
                                                                    {"islower", StrCasePredicate},
                                                                    {"istitle", StrCasePredicate},
                                                                    {"partition", StrPartitionMethod},
                                                                    {"rpartition", StrPartitionMethod},
                                                                    {"removeprefix", StrAffixMethod},
                                                                    {"removesuffix", StrAffixMethod}};

// The str method called `name`, or nullptr.
StrMethodFn FindStrMethod(std::string_view name) {
  for (const auto& [n, fn] : kStrMethods) {
    if (n == name) return fn;
  }
  return nullptr;
}

}  // namespace

bool HasMethod(const Value& self, std::string_view name) {
  if (self.is_string()) return FindStrMethod(name) != nullptr;
  if (self.is_object()) {
    // Attribute access on dicts is hot: reject by length/first letter before the table scan.
    if (name.size() < 3 || name.size() > 10) return false;
    char c = name[0];
    if (c != 'i' && c != 'k' && c != 'v' && c != 'g' && c != 'c' && c != 'p' && c != 'u' && c != 's' && c != 'f') {
      return false;
    }
    return In(kDictMethods, name);
  }
  if (self.is_array()) return In(kListMethods, name);
  return false;
}

Result<Val> CallMethod(const Val& self, std::string_view name, const std::vector<Val>& args,
                       const std::vector<std::pair<std::string, Val>>& kwargs, bool* found) {
  *found = true;
  const Value& v = self.v();
  if (v.is_string()) {
    if (StrMethodFn fn = FindStrMethod(name)) return fn(StrCall{v.as_string(), name, args, kwargs});
  }
  if (v.is_object() && self.shape != Shape::kNamespace) {
    if (name == "items" || name == "keys" || name == "values") {
      MMIRAGE_TRY(ArgCount(name, args.size(), 0, 0));
      Value::Array a;
      a.reserve(v.as_object().size());
      for (const auto& m : v.as_object()) {
        if (name == "items") a.push_back(Value(Value::Array{Value(m.first), m.second}));
        else if (name == "keys") a.emplace_back(m.first);
        else a.push_back(m.second);
      }
      Val r{Value(std::move(a))};
      r.shape = name == "items" ? Shape::kDictItems : name == "keys" ? Shape::kDictKeys : Shape::kDictValues;
      return r;
    }
    if (name == "get") {
      MMIRAGE_TRY(ArgCount(name, args.size(), 1, 2));
      if (args[0].kind == Kind::kValue && args[0].v().is_string()) {
        const Value* m = v.Find(args[0].v().as_string());
        if (m != nullptr) return Child(self, *m);
      } else if (args[0].kind == Kind::kValue && (args[0].v().is_array() || args[0].v().is_object()) &&
                 args[0].shape != Shape::kTuple) {
        return Err("unhashable type: '" + PyTypeName(args[0]) + "'");
      }
      if (args.size() == 2) return args[1].Owned();
      return Val(Value());
    }
    if (name == "copy") return self.Owned();
  }
  if (v.is_array()) {
    if (name == "index" || name == "count") {
      MMIRAGE_TRY(ArgCount(name, args.size(), 1, 1));
      int64_t n = 0;
      const auto& a = v.as_array();
      for (size_t i = 0; i < a.size(); ++i) {
        if (args[0].kind == Kind::kValue && PyEq(a[i], args[0].v())) {
          if (name == "index") return Val(Value(static_cast<int64_t>(i)));
          ++n;
        }
      }
      if (name == "index") return Err(StrOf(args[0]) + " is not in list");
      return Val(Value(n));
    }
    if (name == "copy") {
      Val r = self.Owned();
      return r;
    }
  }
  if (HasMethod(v, name)) return Err("method '" + std::string(name) + "' (which mutates) is not supported");
  *found = false;
  return Err("'" + PyTypeName(self) + "' object has no attribute '" + std::string(name) + "'");
}

}  // namespace mmirage::tmpl::internal
