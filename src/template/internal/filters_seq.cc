// Sequence filters (list, join, first, last, length, sort, unique, reverse, map, select, reject, selectattr,
// rejectattr, sum, min, max, batch, slice, dictsort, items, attr) and Python's int()/float() text parsing.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "template/internal/ast.h"
#include "template/internal/filters.h"
#include "template/internal/unicode.h"
#include "util/parse_int.h"

namespace mmirage::tmpl::internal {

bool ParsePyInt(std::string_view text, int base, int64_t* out, bool* overflow) {
  std::u32string u = ToU32(text);
  size_t b = 0, e = u.size();
  while (b < e && IsSpaceCp(u[b])) ++b;
  while (e > b && IsSpaceCp(u[e - 1])) --e;
  std::string s = FromU32(u.substr(b, e - b));
  if (base != 0 && (base < 2 || base > 36)) return false;
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  bool prefixed = false;
  if (i + 1 < s.size() && s[i] == '0') {
    char p = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i + 1])));
    int pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (pb != 0 && (base == 0 || base == pb)) {
      base = pb;
      i += 2;
      prefixed = true;
    }
  }
  if (base == 0) {
    base = 10;
    size_t k = i;
    while (k < s.size() && (s[k] == '0' || s[k] == '_')) ++k;
    if (k > i && s[i] == '0' && k < s.size()) return false;  // leading zeros in base 0
  }
  if (i >= s.size()) return false;
  uint64_t mag = 0;
  bool any = false, last_us = prefixed;
  if (s[i] == '_' && !prefixed) return false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '_') {
      if (last_us && any) return false;
      if (!any && !prefixed) return false;
      last_us = true;
      continue;
    }
    int d = std::isdigit(static_cast<unsigned char>(c))   ? c - '0'
            : std::isalpha(static_cast<unsigned char>(c)) ? std::tolower(static_cast<unsigned char>(c)) - 'a' + 10
                                                          : 99;
    if (d >= base) return false;
    if (mag > (UINT64_MAX - d) / base) {
      *overflow = true;
      return false;
    }
    mag = mag * base + d;
    any = true;
    last_us = false;
  }
  if (!any || last_us) return false;
  if (mag > (neg ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1)) {
    *overflow = true;
    return false;
  }
  *out = neg ? static_cast<int64_t>(0 - mag) : static_cast<int64_t>(mag);
  return true;
}

bool ParsePyFloat(std::string_view text, double* out) {
  std::u32string u = ToU32(text);
  size_t b = 0, e = u.size();
  while (b < e && IsSpaceCp(u[b])) ++b;
  while (e > b && IsSpaceCp(u[e - 1])) --e;
  std::string s = FromU32(u.substr(b, e - b));
  std::string lower = s;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string body = lower;
  bool neg = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    neg = body[0] == '-';
    body = body.substr(1);
  }
  if (body == "inf" || body == "infinity") {
    *out = neg ? -HUGE_VAL : HUGE_VAL;
    return true;
  }
  if (body == "nan") {
    *out = std::nan("");
    return true;
  }
  // [digits][.digits][e[+-]digits], underscores only between digits.
  std::string clean;
  size_t i = 0;
  auto digits = [&]() {
    size_t start = i;
    while (i < body.size()) {
      if (std::isdigit(static_cast<unsigned char>(body[i]))) {
        clean.push_back(body[i++]);
      } else if (body[i] == '_' && i > start && i + 1 < body.size() &&
                 std::isdigit(static_cast<unsigned char>(body[i + 1])) &&
                 std::isdigit(static_cast<unsigned char>(body[i - 1]))) {
        ++i;
      } else {
        break;
      }
    }
    return i > start;
  };
  bool mant = digits();
  if (i < body.size() && body[i] == '.') {
    clean.push_back('.');
    ++i;
    mant = digits() || mant;
  }
  if (!mant) return false;
  if (i < body.size() && body[i] == 'e') {
    clean.push_back('e');
    ++i;
    if (i < body.size() && (body[i] == '+' || body[i] == '-')) clean.push_back(body[i++]);
    if (!digits()) return false;
  }
  if (i != body.size()) return false;
  double v = std::strtod(clean.c_str(), nullptr);
  *out = neg ? -v : v;
  return true;
}

namespace {

bool IsNone(const Val* v) { return v == nullptr || (v->kind == Kind::kValue && v->v().is_null()); }

// Jinja's make_attrgetter: "a.b.0" walks getitem per part (digit parts become ints).
Result<Val> GetPath(const Val& item, const Val& attribute, const Val* dflt) {
  Val cur = item.Alias();
  if (attribute.kind == Kind::kValue && attribute.v().is_string()) {
    const std::string& path = attribute.v().as_string();
    size_t start = 0;
    while (true) {
      size_t dot = path.find('.', start);
      std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      Val key;
      bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
      // A run of digits beyond int64 saturates (no list is that long, so the lookup misses as in Jinja).
      key = digits ? Val(Value(ParseNonNegativeInt64(part).value_or(INT64_MAX))) : Val(Value(part));
      MMIRAGE_ASSIGN_OR_RETURN(Val next, GetItem(cur, key));
      cur = next.ref ? std::move(next) : next.Owned();
      if (dflt != nullptr && cur.is_undefined()) cur = dflt->Owned();
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
  } else {
    MMIRAGE_ASSIGN_OR_RETURN(Val next, GetItem(cur, attribute));
    cur = next;
    if (dflt != nullptr && cur.is_undefined()) cur = dflt->Owned();
  }
  return cur.ref ? cur : cur.Owned();
}

Val IgnoreCase(Val v) {
  if (v.kind == Kind::kValue && v.v().is_string()) return Val(Value(Lower(v.v().as_string())));
  return v;
}

Result<Val> FList(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "list", 0, {}));
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> items, Iterate(s));
  return MakeList(items);
}

Result<Val> FLength(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "length", 0, {}));
  if (s.is_undefined()) return Val(Value(int64_t{0}));
  const Value& v = s.v();
  if (s.kind == Kind::kValue && v.is_string()) return Val(Value(static_cast<int64_t>(CpCount(v.as_string()))));
  if (s.kind == Kind::kValue && (v.is_array() || v.is_bytes() || (v.is_object() && s.shape != Shape::kNamespace))) {
    return Val(Value(static_cast<int64_t>(v.size())));
  }
  return Err("object of type '" + PyTypeName(s) + "' has no len()");
}

Result<Val> FJoin(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "join", 2, {"d", "attribute"}));
  const Val* d = Arg(a, 0, "d");
  const Val* attr = Arg(a, 1, "attribute");
  std::string sep = d ? StrOf(*d) : "";
  if (IsNone(attr) && s.kind == Kind::kValue && s.v().is_array() && s.shape == Shape::kPlain) {
    std::string out;  // hot path: a plain list of values
    bool first = true;
    for (const Value& e : s.v().as_array()) {
      if (!first) out += sep;
      first = false;
      AppendStrValue(e, &out);
      if (out.size() > kMaxStringBytes) return StringTooLarge();
    }
    return Val(Value(std::move(out)));
  }
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> items, Iterate(s));
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    if (!IsNone(attr)) {
      MMIRAGE_ASSIGN_OR_RETURN(Val v, GetPath(items[i], *attr, nullptr));
      AppendStr(v, &out);
    } else {
      AppendStr(items[i], &out);
    }
    if (out.size() > kMaxStringBytes) return StringTooLarge();
  }
  return Val(Value(std::move(out)));
}

Result<Val> FFirst(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "first", 0, {}));
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> items, Iterate(s));
  if (items.empty()) return Val::Undefined("No first item, sequence was empty.");
  return items.front().Owned();
}

Result<Val> FLast(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "last", 0, {}));
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> items, Iterate(s));
  if (items.empty()) return Val::Undefined("No last item, sequence was empty.");
  return items.back().Owned();
}

Result<Val> FReverse(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "reverse", 0, {}));
  if (s.kind == Kind::kValue && s.v().is_string()) {
    std::u32string u = ToU32(s.v().as_string());
    std::reverse(u.begin(), u.end());
    return Val(Value(FromU32(u)));
  }
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> items, Iterate(s));
  std::reverse(items.begin(), items.end());
  return MakeList(items);
}

// Sorts `items` by `keys` (Python semantics: stable; reverse keeps equal items in order).
Status SortByKeys(std::vector<Val>* items, std::vector<Val>* keys, bool reverse) {
  std::vector<size_t> idx(items->size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  Status err;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) {
    if (!err.ok()) return false;
    const Val& kx = (*keys)[reverse ? y : x];
    const Val& ky = (*keys)[reverse ? x : y];
    if (kx.is_undefined() || ky.is_undefined() || kx.kind != Kind::kValue || ky.kind != Kind::kValue) {
      err = Err("'<' not supported between instances of '" + PyTypeName(kx) + "' and '" + PyTypeName(ky) + "'");
      return false;
    }
    auto c = CompareOp(static_cast<int>(CmpOp::kLt), kx, ky);
    if (!c.ok()) {
      err = c.status();
      return false;
    }
    return *c;
  });
  MMIRAGE_TRY(err);
  std::vector<Val> sorted;
  sorted.reserve(idx.size());
  for (size_t i : idx) sorted.push_back(std::move((*items)[i]));
  *items = std::move(sorted);
  return Status::OK();
}

Result<Val> SortKey(const Val& item, const Val* attr, bool case_sensitive) {
  if (IsNone(attr)) return case_sensitive ? item.Alias() : IgnoreCase(item.Alias());
  // Comma-separated attributes sort by a tuple of keys.
  if (attr->v().is_string() && attr->v().as_string().find(',') != std::string::npos) {
    std::vector<Val> parts;
    bool found;
    MMIRAGE_ASSIGN_OR_RETURN(Val split, CallMethod(attr->Alias(), "split", {Val(Value(","))}, {}, &found));
    for (const Value& p : split.v().as_array()) {
      MMIRAGE_ASSIGN_OR_RETURN(Val k, GetPath(item, Val(p), nullptr));
      parts.push_back(case_sensitive ? k : IgnoreCase(k));
    }
    return MakeList(parts);
  }
  MMIRAGE_ASSIGN_OR_RETURN(Val k, GetPath(item, *attr, nullptr));
  return case_sensitive ? k : IgnoreCase(k);
}

Result<Val> FSort(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "sort", 3, {"reverse", "case_sensitive", "attribute"}));
  const Val* rev = Arg(a, 0, "reverse");
  const Val* cs = Arg(a, 1, "case_sensitive");
  const Val* attr = Arg(a, 2, "attribute");
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> items, Iterate(s));
  std::vector<Val> keys;
  for (const Val& it : items) {
    MMIRAGE_ASSIGN_OR_RETURN(Val k, SortKey(it, attr, cs != nullptr && Truthy(*cs)));
    keys.push_back(std::move(k));
  }
  MMIRAGE_TRY(SortByKeys(&items, &keys, rev != nullptr && Truthy(*rev)));
  return MakeList(items);
}

Result<Val> FUnique(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "unique", 2, {"case_sensitive", "attribute"}));
  const Val* cs = Arg(a, 0, "case_sensitive");
  const Val* attr = Arg(a, 1, "attribute");
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> items, Iterate(s));
  std::vector<Val> out, seen;
  for (const Val& it : items) {
    MMIRAGE_ASSIGN_OR_RETURN(Val k, SortKey(it, attr, cs != nullptr && Truthy(*cs)));
    if (k.kind == Kind::kValue && (k.v().is_array() || k.v().is_object()) && k.shape != Shape::kTuple) {
      return Err("unhashable type: '" + PyTypeName(k) + "'");
    }
    bool dup = false;
    for (const Val& x : seen) dup = dup || PyEqVal(x, k);
    if (!dup) {
      seen.push_back(k.Owned());
      out.push_back(it.Alias());
    }
  }
  return MakeList(out);
}

Result<Val> MinMax(Val s, CallArgs& a, bool is_max) {
  MMIRAGE_TRY(CheckArgs(a, is_max ? "max" : "min", 2, {"case_sensitive", "attribute"}));
  const Val* cs = Arg(a, 0, "case_sensitive");
  const Val* attr = Arg(a, 1, "attribute");
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> items, Iterate(s));
  if (items.empty()) return Val::Undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  MMIRAGE_ASSIGN_OR_RETURN(Val best_key, SortKey(items[0], attr, cs != nullptr && Truthy(*cs)));
  for (size_t i = 1; i < items.size(); ++i) {
    MMIRAGE_ASSIGN_OR_RETURN(Val k, SortKey(items[i], attr, cs != nullptr && Truthy(*cs)));
    MMIRAGE_ASSIGN_OR_RETURN(bool better, CompareOp(static_cast<int>(is_max ? CmpOp::kGt : CmpOp::kLt), k, best_key));
    if (better) {
      best = i;
      best_key = std::move(k);
    }
  }
  return items[best].Owned();
}
Result<Val> FMin(Val s, CallArgs& a) { return MinMax(std::move(s), a, false); }
Result<Val> FMax(Val s, CallArgs& a) { return MinMax(std::move(s), a, true); }

Result<Val> FSum(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "sum", 2, {"attribute", "start"}));
  const Val* attr = Arg(a, 0, "attribute");
  const Val* start = Arg(a, 1, "start");
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> items, Iterate(s));
  Val acc = start ? start->Owned() : Val(Value(int64_t{0}));
  for (const Val& it : items) {
    Val v;
    if (!IsNone(attr)) {
      MMIRAGE_ASSIGN_OR_RETURN(v, GetPath(it, *attr, nullptr));
    } else {
      v = it.Alias();
    }
    MMIRAGE_ASSIGN_OR_RETURN(acc, BinaryOp(static_cast<int>(BinOp::kAdd), acc, v));
  }
  return acc;
}

// map/select/reject/selectattr/rejectattr share the "filter or test name + extra args" calling form.
CallArgs RestArgs(const CallArgs& a, size_t from, bool drop_default_kw) {
  CallArgs r;
  for (size_t i = from; i < a.pos.size(); ++i) r.pos.push_back(a.pos[i].Alias());
  for (const auto& kv : a.kw) {
    if (drop_default_kw && (kv.first == "attribute" || kv.first == "default")) continue;
    r.kw.emplace_back(kv.first, kv.second.Alias());
  }
  return r;
}

Result<Val> FMap(Val s, CallArgs& a) {
  if (!Truthy(s)) return MakeList({});  // Jinja: `if value: for item in value`
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> items, Iterate(s));
  std::vector<Val> out;
  const Val* attr = nullptr;
  const Val* dflt = nullptr;
  if (a.pos.empty()) {
    for (const auto& kv : a.kw) {
      if (kv.first == "attribute") attr = &kv.second;
      else if (kv.first == "default") dflt = &kv.second;
      else return Err("map() got an unexpected keyword argument '" + kv.first + "'");
    }
    if (attr == nullptr) return Err("map requires a filter argument");
    for (const Val& it : items) {
      MMIRAGE_ASSIGN_OR_RETURN(Val v, GetPath(it, *attr, dflt));
      out.push_back(v.Owned());
    }
    return MakeList(out);
  }
  if (!a.pos[0].v().is_string()) return Err("map filter name must be a string");
  const FilterDef* f = FindFilter(a.pos[0].v().as_string());
  if (f == nullptr) return Err("No filter named '" + a.pos[0].v().as_string() + "'");
  for (const Val& it : items) {
    CallArgs rest = RestArgs(a, 1, false);
    MMIRAGE_ASSIGN_OR_RETURN(Val v, f->fn(it.Alias(), rest));
    out.push_back(v.Owned());
  }
  return MakeList(out);
}

Result<Val> SelectImpl(Val s, CallArgs& a, bool by_attr, bool want) {
  if (!Truthy(s)) return MakeList({});  // Jinja: `if value: for item in value`
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> items, Iterate(s));
  size_t next = 0;
  const Val* attr = nullptr;
  if (by_attr) {
    if (a.pos.empty()) return Err("missing parameter for attribute name");
    attr = &a.pos[0];
    next = 1;
  }
  const TestDef* test = nullptr;
  if (a.pos.size() > next) {
    if (!a.pos[next].v().is_string()) return Err("test name must be a string");
    test = FindTest(a.pos[next].v().as_string());
    if (test == nullptr) return Err("No test named '" + a.pos[next].v().as_string() + "'");
    ++next;
  }
  std::vector<Val> out;
  for (const Val& it : items) {
    Val subject;
    if (attr) {
      MMIRAGE_ASSIGN_OR_RETURN(subject, GetPath(it, *attr, nullptr));
    } else {
      subject = it.Alias();
    }
    bool r;
    if (test) {
      CallArgs rest = RestArgs(a, next, false);
      MMIRAGE_ASSIGN_OR_RETURN(r, test->fn(subject, rest));
    } else {
      r = Truthy(subject);
    }
    if (r == want) out.push_back(it.Alias());
  }
  return MakeList(out);
}
Result<Val> FSelect(Val s, CallArgs& a) { return SelectImpl(std::move(s), a, false, true); }
Result<Val> FReject(Val s, CallArgs& a) { return SelectImpl(std::move(s), a, false, false); }
Result<Val> FSelectattr(Val s, CallArgs& a) { return SelectImpl(std::move(s), a, true, true); }
Result<Val> FRejectattr(Val s, CallArgs& a) { return SelectImpl(std::move(s), a, true, false); }

Result<Val> FBatch(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "batch", 2, {"linecount", "fill_with"}));
  const Val* lc = Arg(a, 0, "linecount");
  if (lc == nullptr || !IsIntLike(lc->v())) return Err("batch() requires an integer linecount");
  int64_t n = IntOf(lc->v());
  if (n <= 0) return Err("batch() linecount must be positive");
  const Val* fill = Arg(a, 1, "fill_with");
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> items, Iterate(s));
  Value::Array out;
  Value::Array tmp;
  for (const Val& it : items) {
    if (static_cast<int64_t>(tmp.size()) == n) {
      out.push_back(Value(std::move(tmp)));
      tmp.clear();
    }
    tmp.push_back(it.v());
  }
  if (!tmp.empty()) {
    if (!IsNone(fill)) {
      if (!ListFits(static_cast<uint64_t>(n))) return ListTooLarge();
      while (static_cast<int64_t>(tmp.size()) < n) tmp.push_back(fill->v());
    }
    out.push_back(Value(std::move(tmp)));
  }
  return Val(Value(std::move(out)));
}

Result<Val> FSlice(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "slice", 2, {"slices", "fill_with"}));
  const Val* sl = Arg(a, 0, "slices");
  if (sl == nullptr || !IsIntLike(sl->v())) return Err("slice() requires an integer slice count");
  int64_t slices = IntOf(sl->v());
  if (slices <= 0) return Err("integer division or modulo by zero");
  if (!ListFits(static_cast<uint64_t>(slices))) return ListTooLarge();
  const Val* fill = Arg(a, 1, "fill_with");
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Val> seq, Iterate(s));
  int64_t length = static_cast<int64_t>(seq.size());
  int64_t per = length / slices, extra = length % slices, offset = 0;
  Value::Array out;
  for (int64_t k = 0; k < slices; ++k) {
    int64_t start = offset + k * per;
    if (k < extra) ++offset;
    int64_t end = offset + (k + 1) * per;
    Value::Array tmp;
    for (int64_t i = start; i < end && i < length; ++i) tmp.push_back(seq[i].v());
    if (!IsNone(fill) && k >= extra) tmp.push_back(fill->v());
    out.push_back(Value(std::move(tmp)));
  }
  return Val(Value(std::move(out)));
}

Result<Val> FDictsort(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "dictsort", 3, {"case_sensitive", "by", "reverse"}));
  const Val* cs = Arg(a, 0, "case_sensitive");
  const Val* by = Arg(a, 1, "by");
  const Val* rev = Arg(a, 2, "reverse");
  int pos = 0;
  if (by != nullptr) {
    std::string b = StrOf(*by);
    if (b == "value") pos = 1;
    else if (b != "key") return Err("You can only sort by either \"key\" or \"value\"");
  }
  if (s.kind != Kind::kValue || !s.v().is_object()) {
    return Err("'" + PyTypeName(s) + "' object has no attribute 'items'");
  }
  std::vector<Val> items, keys;
  for (const auto& m : s.v().as_object()) {
    Val pair{Value(Value::Array{Value(m.first), m.second})};
    pair.shape = Shape::kTuple;
    Val k = pos == 0 ? Val(Value(m.first)) : Val(m.second);
    keys.push_back(cs != nullptr && Truthy(*cs) ? k : IgnoreCase(k));
    items.push_back(std::move(pair));
  }
  MMIRAGE_TRY(SortByKeys(&items, &keys, rev != nullptr && Truthy(*rev)));
  return MakeList(items, Shape::kPairs);
}

Result<Val> FItems(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "items", 0, {}));
  if (s.is_undefined()) return MakeList({});
  if (s.kind != Kind::kValue || !s.v().is_object()) return Err("Can only get item pairs from a mapping.");
  Value::Array out;
  for (const auto& m : s.v().as_object()) out.push_back(Value(Value::Array{Value(m.first), m.second}));
  Val r{Value(std::move(out))};
  r.shape = Shape::kPairs;
  return r;
}

Result<Val> FAttr(Val s, CallArgs& a) {
  MMIRAGE_TRY(CheckArgs(a, "attr", 1, {"name"}));
  const Val* n = Arg(a, 0, "name");
  if (n == nullptr) return Err("attr() missing required argument 'name'");
  if (s.is_undefined()) return UndefinedErr(s);
  std::string name = StrOf(*n);
  if (s.kind == Kind::kValue && HasMethod(s.v(), name)) {
    MMIRAGE_ASSIGN_OR_RETURN(Val m, GetAttr(s, name));
    return m.Owned();
  }
  return Val::Undefined("'" + PyTypeName(s) + " object' has no attribute '" + name + "'");
}

}  // namespace

const std::vector<FilterDef>& SequenceFilters() {
  static const std::vector<FilterDef> kFilters = {{"list", FList},
                                                  {"length", FLength},
                                                  {"count", FLength},
                                                  {"join", FJoin},
                                                  {"first", FFirst},
                                                  {"last", FLast},
                                                  {"reverse", FReverse},
                                                  {"sort", FSort},
                                                  {"unique", FUnique},
                                                  {"min", FMin},
                                                  {"max", FMax},
                                                  {"sum", FSum},
                                                  {"map", FMap},
                                                  {"select", FSelect},
                                                  {"reject", FReject},
                                                  {"selectattr", FSelectattr},
                                                  {"rejectattr", FRejectattr},
                                                  {"batch", FBatch},
                                                  {"slice", FSlice},
                                                  {"dictsort", FDictsort},
                                                  {"items", FItems},
                                                  {"attr", FAttr}};
  return kFilters;
}

}  // namespace mmirage::tmpl::internal
