// Python methods callable from templates on plain values: str (split, strip, replace, format, ...),
// dict (items, keys, values, get) and list (index, count).
#include <algorithm>
#include <string>

#include "template/internal/runtime.h"
#include "template/internal/unicode.h"

namespace mmirage::tmpl::internal {
namespace {

constexpr std::string_view kStrMethods[] = {
    "upper", "lower", "title", "capitalize", "swapcase", "casefold", "strip", "lstrip", "rstrip", "split",
    "rsplit", "splitlines", "replace", "startswith", "endswith", "join", "format", "count", "find", "rfind",
    "index", "rindex", "zfill", "center", "ljust", "rjust", "isdigit", "isdecimal", "isnumeric", "isalpha",
    "isalnum", "isspace", "isupper", "islower", "istitle", "partition", "rpartition", "removeprefix",
    "removesuffix"};
constexpr std::string_view kDictMethods[] = {"items", "keys", "values", "get", "copy", "pop", "update",
                                             "setdefault", "clear", "popitem", "fromkeys"};
constexpr std::string_view kListMethods[] = {"index", "count", "copy", "append", "extend", "pop", "insert",
                                             "remove", "reverse", "sort", "clear"};

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
  auto strip = [&](char32_t c) {
    return chars ? chars->find(c) != std::u32string::npos : IsSpaceCp(c);
  };
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

int64_t CpIndex(const std::string& s, size_t byte_pos) { return static_cast<int64_t>(CpCount(std::string_view(s).substr(0, byte_pos))); }

Result<Val> StrMethod(const std::string& s, std::string_view name, const std::vector<Val>& args,
                      const std::vector<std::pair<std::string, Val>>& kwargs) {
  auto kw = [&](std::string_view k) -> const Val* {
    for (const auto& p : kwargs) {
      if (p.first == k) return &p.second;
    }
    return nullptr;
  };
  auto arg = [&](size_t i, std::string_view k) -> const Val* { return i < args.size() ? &args[i] : kw(k); };
  auto is_none = [](const Val* v) { return v == nullptr || (v->kind == Kind::kValue && v->v().is_null()); };
  if (name == "format") {
    MMIRAGE_ASSIGN_OR_RETURN(std::string r, StrFormat(s, args, kwargs));
    return StrVal(std::move(r));
  }
  if (name == "upper") return StrVal(Upper(s));
  if (name == "lower") return StrVal(Lower(s));
  if (name == "casefold") return StrVal(CaseFold(s));
  if (name == "title") return StrVal(PyTitle(s));
  if (name == "capitalize") return StrVal(PyCapitalize(s));
  if (name == "swapcase") {
    std::string r;
    size_t i = 0;
    while (i < s.size()) {
      char32_t c = NextCp(s, &i);
      if (IsUpperCp(c)) AppendLower(c, &r);
      else if (IsLowerCp(c)) AppendUpper(c, &r);
      else AppendCp(c, &r);
    }
    return StrVal(r);
  }
  std::u32string u = ToU32(s);
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    MMIRAGE_TRY(ArgCount(name, args.size(), 0, 1));
    const Val* c = arg(0, "chars");
    std::u32string chars;
    if (!is_none(c)) {
      MMIRAGE_ASSIGN_OR_RETURN(std::string cs, StrArg(*c, "strip arg"));
      chars = ToU32(cs);
    }
    return StrVal(FromU32(Strip(u, is_none(c) ? nullptr : &chars, name != "rstrip", name != "lstrip")));
  }
  if (name == "split" || name == "rsplit") {
    MMIRAGE_TRY(ArgCount(name, args.size(), 0, 2));
    const Val* sep = arg(0, "sep");
    const Val* mx = arg(1, "maxsplit");
    int64_t maxsplit = -1;
    if (mx != nullptr) {
      if (!IsIntLike(mx->v())) return Err("'" + PyTypeName(*mx) + "' object cannot be interpreted as an integer");
      maxsplit = IntOf(mx->v());
    }
    if (is_none(sep)) return ListOfStrings(SplitWs(u, maxsplit, name == "rsplit"));
    MMIRAGE_ASSIGN_OR_RETURN(std::string sp, StrArg(*sep, "must be str or None,"));
    if (sp.empty()) return Err("empty separator");
    return ListOfStrings(SplitSep(s, sp, maxsplit, name == "rsplit"));
  }
  if (name == "splitlines") {
    const Val* k = arg(0, "keepends");
    return ListOfStrings(SplitLines(u, k != nullptr && Truthy(*k)));
  }
  if (name == "replace") {
    MMIRAGE_TRY(ArgCount(name, args.size(), 2, 3));
    MMIRAGE_ASSIGN_OR_RETURN(std::string old, StrArg(args[0], "replace() argument 1"));
    MMIRAGE_ASSIGN_OR_RETURN(std::string rep, StrArg(args[1], "replace() argument 2"));
    int64_t count = -1;
    if (args.size() == 3) {
      if (!IsIntLike(args[2].v())) return Err("'" + PyTypeName(args[2]) + "' object cannot be interpreted as an integer");
      count = IntOf(args[2].v());
    }
    std::string r;
    if (old.empty()) {
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
  if (name == "startswith" || name == "endswith" || name == "removeprefix" || name == "removesuffix") {
    MMIRAGE_TRY(ArgCount(name, args.size(), 1, 1));
    std::vector<std::string> cands;
    if (args[0].v().is_array() && args[0].shape == Shape::kTuple) {
      for (const Value& e : args[0].v().as_array()) {
        if (!e.is_string()) return Err("tuple for " + std::string(name) + " must only contain str");
        cands.push_back(e.as_string());
      }
    } else {
      MMIRAGE_ASSIGN_OR_RETURN(std::string c, StrArg(args[0], std::string(name) + " first arg"));
      cands.push_back(c);
    }
    bool start = name == "startswith" || name == "removeprefix";
    for (const auto& c : cands) {
      bool hit = c.size() <= s.size() && (start ? s.compare(0, c.size(), c) == 0
                                                : s.compare(s.size() - c.size(), c.size(), c) == 0);
      if (hit) {
        if (name == "removeprefix") return StrVal(s.substr(c.size()));
        if (name == "removesuffix") return StrVal(c.empty() ? s : s.substr(0, s.size() - c.size()));
        return Val(Value(true));
      }
    }
    if (name == "removeprefix" || name == "removesuffix") return StrVal(s);
    return Val(Value(false));
  }
  if (name == "join") {
    MMIRAGE_TRY(ArgCount(name, args.size(), 1, 1));
    MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> items, Iterate(args[0]));
    std::string r;
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].kind != Kind::kValue || !items[i].v().is_string()) {
        return Err("sequence item " + std::to_string(i) + ": expected str instance, " + PyTypeName(items[i]) + " found");
      }
      if (i) r += s;
      r += items[i].v().as_string();
      if (r.size() > kMaxStringBytes) return StringTooLarge();
    }
    return StrVal(r);
  }
  if (name == "count" || name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    MMIRAGE_TRY(ArgCount(name, args.size(), 1, 1));
    MMIRAGE_ASSIGN_OR_RETURN(std::string sub, StrArg(args[0], "must be str,"));
    if (name == "count") {
      if (sub.empty()) return Val(Value(static_cast<int64_t>(u.size() + 1)));
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
  if (name == "zfill" || name == "center" || name == "ljust" || name == "rjust") {
    MMIRAGE_TRY(ArgCount(name, args.size(), 1, name == "zfill" ? 1 : 2));
    if (!IsIntLike(args[0].v())) return Err("'" + PyTypeName(args[0]) + "' object cannot be interpreted as an integer");
    int64_t width = IntOf(args[0].v());
    if (width > kMaxWidth) return WidthTooLarge();
    if (name == "zfill") {
      int64_t n = static_cast<int64_t>(u.size());
      if (width <= n) return StrVal(s);
      std::u32string r = u;
      size_t at = (!u.empty() && (u[0] == '+' || u[0] == '-')) ? 1 : 0;
      r.insert(at, std::u32string(width - n, U'0'));
      return StrVal(FromU32(r));
    }
    char32_t fill = ' ';
    if (args.size() == 2) {
      MMIRAGE_ASSIGN_OR_RETURN(std::string f, StrArg(args[1], "fill character"));
      if (CpCount(f) != 1) return Err("The fill character must be exactly one character long");
      fill = ToU32(f)[0];
    }
    return StrVal(Justify(u, width, fill, name == "center" ? 'c' : name == "ljust" ? 'l' : 'r'));
  }
  if (name == "partition" || name == "rpartition") {
    MMIRAGE_TRY(ArgCount(name, args.size(), 1, 1));
    MMIRAGE_ASSIGN_OR_RETURN(std::string sep, StrArg(args[0], "must be str,"));
    if (sep.empty()) return Err("empty separator");
    size_t p = name == "partition" ? s.find(sep) : s.rfind(sep);
    Value::Array a;
    if (p == std::string::npos) {
      if (name == "partition") a = {Value(s), Value(""), Value("")};
      else a = {Value(""), Value(""), Value(s)};
    } else {
      a = {Value(s.substr(0, p)), Value(sep), Value(s.substr(p + sep.size()))};
    }
    Val r{Value(std::move(a))};
    r.shape = Shape::kTuple;
    return r;
  }
  // Predicates.
  bool any_cased = false, ok = !u.empty();
  if (name == "isupper" || name == "islower") {
    for (char32_t c : u) {
      if (IsCased(c)) {
        any_cased = true;
        if (name == "isupper" ? IsLowerCp(c) : IsUpperCp(c)) ok = false;
      }
    }
    return Val(Value(ok && any_cased));
  }
  if (name == "istitle") {
    bool prev_cased = false, cased = false;
    for (char32_t c : u) {
      if (IsUpperCp(c)) {
        if (prev_cased) ok = false;
        prev_cased = cased = true;
      } else if (IsLowerCp(c)) {
        if (!prev_cased) ok = false;
        prev_cased = cased = true;
      } else {
        prev_cased = false;
      }
    }
    return Val(Value(ok && cased));
  }
  for (char32_t c : u) {
    if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") ok = ok && IsDigitCp(c);
    else if (name == "isalpha") ok = ok && IsAlphaCp(c);
    else if (name == "isalnum") ok = ok && (IsAlphaCp(c) || IsDigitCp(c) || IsWordCp(c)) && c != '_';
    else if (name == "isspace") ok = ok && IsSpaceCp(c);
  }
  return Val(Value(ok));
}

}  // namespace

bool HasMethod(const Value& self, std::string_view name) {
  if (self.is_string()) return In(kStrMethods, name);
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
  if (v.is_string() && In(kStrMethods, name)) return StrMethod(v.as_string(), name, args, kwargs);
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
