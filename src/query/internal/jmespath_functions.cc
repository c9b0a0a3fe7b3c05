#include "query/internal/jmespath_functions.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "data/json.h"
#include "data/utf8.h"

namespace mmirage::query::internal {
namespace {

using Args = std::span<const FunctionArg>;

Status TypeError(std::string_view function, std::string_view detail) {
  std::string msg = "invalid-type: function '";
  msg.append(function);
  msg += "()' ";
  msg.append(detail);
  return Status::InvalidArgument(std::move(msg));
}

// A number as an int when it is integral and fits, else as a double (Python's int/float results).
Value IntegralNumber(double d) {
  if (d >= -9.2e18 && d <= 9.2e18) return Value(static_cast<int64_t>(d));
  return Value(d);
}

bool NumberLess(const Value& a, const Value& b) {
  if (a.is_int() && b.is_int()) return a.as_int() < b.as_int();
  return a.as_number() < b.as_number();
}

// Ordering of two values of the same sortable type: numbers numerically, strings by code point (UTF-8 byte
// order is code point order).
bool SortLess(const Value& a, const Value& b) {
  if (a.is_string()) return a.as_string() < b.as_string();
  return NumberLess(a, b);
}

// Sum of numbers: an int while all are ints and no overflow happens, else a double.
Value Sum(const Value::Array& a) {
  int64_t int_sum = 0;
  bool all_int = true;
  double double_sum = 0;
  for (const Value& v : a) {
    double_sum += v.as_number();
    if (all_int && (!v.is_int() || __builtin_add_overflow(int_sum, v.as_int(), &int_sum))) all_int = false;
  }
  return all_int ? Value(int_sum) : Value(double_sum);
}

// Evaluates the expref of `args[expref_index]` on every element of the array `args[array_index]`, checking
// that all keys are numbers, or all strings.
Result<std::vector<Ref>> SortKeys(std::string_view function, Args args, size_t array_index, size_t expref_index) {
  const Value::Array& a = args[array_index].value->as_array();
  std::vector<Ref> keys;
  keys.reserve(a.size());
  for (const Value& element : a) {
    MMIRAGE_ASSIGN_OR_RETURN(Ref key, EvalNode(*args[expref_index].expref, element));
    const bool ok = keys.empty()
                        ? (key->is_number() || key->is_string())
                        : (key->is_number() == keys[0]->is_number() && key->is_string() == keys[0]->is_string());
    if (!ok) {
      std::string want = keys.empty() ? "number or string" : keys[0]->TypeName();
      return TypeError(function, "expected the expression to return " + want + ", got " + key->TypeName());
    }
    keys.push_back(std::move(key));
  }
  return keys;
}

Result<Value> Abs(Args a) {
  const Value& v = *a[0].value;
  if (v.is_int()) {
    if (v.as_int() == std::numeric_limits<int64_t>::min()) return Value(-static_cast<double>(v.as_int()));
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  return Value(std::fabs(v.as_double()));
}

Result<Value> Avg(Args a) {
  const Value::Array& arr = a[0].value->as_array();
  if (arr.empty()) return Value();
  double sum = 0;
  for (const Value& v : arr) sum += v.as_number();
  return Value(sum / static_cast<double>(arr.size()));
}

Result<Value> Ceil(Args a) {
  const Value& v = *a[0].value;
  return v.is_int() ? v : IntegralNumber(std::ceil(v.as_double()));
}

Result<Value> Floor(Args a) {
  const Value& v = *a[0].value;
  return v.is_int() ? v : IntegralNumber(std::floor(v.as_double()));
}

Result<Value> Contains(Args a) {
  const Value& subject = *a[0].value;
  const Value& search = *a[1].value;
  if (subject.is_string()) {
    return Value(search.is_string() && subject.as_string().find(search.as_string()) != std::string::npos);
  }
  for (const Value& v : subject.as_array()) {
    if (v == search) return Value(true);
  }
  return Value(false);
}

Result<Value> EndsWith(Args a) {
  const std::string& s = a[0].value->as_string();
  const std::string& suffix = a[1].value->as_string();
  return Value(s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0);
}

Result<Value> StartsWith(Args a) {
  const std::string& s = a[0].value->as_string();
  const std::string& prefix = a[1].value->as_string();
  return Value(s.compare(0, prefix.size(), prefix) == 0);
}

Result<Value> Join(Args a) {
  const std::string& glue = a[0].value->as_string();
  std::string out;
  bool first = true;
  for (const Value& v : a[1].value->as_array()) {
    if (!first) out += glue;
    first = false;
    out += v.as_string();
  }
  return Value(std::move(out));
}

Result<Value> Keys(Args a) {
  Value::Array out;
  for (const auto& m : a[0].value->as_object()) out.emplace_back(m.first);
  return Value(std::move(out));
}

Result<Value> Values(Args a) {
  Value::Array out;
  for (const auto& m : a[0].value->as_object()) out.push_back(m.second);
  return Value(std::move(out));
}

Result<Value> Length(Args a) {
  const Value& v = *a[0].value;
  if (!v.is_string()) return Value(static_cast<int64_t>(v.size()));
  return Value(static_cast<int64_t>(CountCodePoints(v.as_string())));
}

Result<Value> Map(Args a) {
  Value::Array out;
  out.reserve(a[1].value->as_array().size());
  for (const Value& element : a[1].value->as_array()) {
    MMIRAGE_ASSIGN_OR_RETURN(Ref r, EvalNode(*a[0].expref, element));
    out.push_back(std::move(r).Take());
  }
  return Value(std::move(out));
}

// max / min over numbers or strings; the first of equal extremes wins.
Result<Value> Extreme(Args a, bool want_max) {
  const Value::Array& arr = a[0].value->as_array();
  if (arr.empty()) return Value();
  const Value* best = &arr[0];
  for (const Value& v : arr) {
    if (want_max ? SortLess(*best, v) : SortLess(v, *best)) best = &v;
  }
  return *best;
}
Result<Value> Max(Args a) { return Extreme(a, true); }
Result<Value> Min(Args a) { return Extreme(a, false); }

Result<Value> ExtremeBy(Args a, bool want_max) {
  const Value::Array& arr = a[0].value->as_array();
  if (arr.empty()) return Value();
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Ref> keys, SortKeys(want_max ? "max_by" : "min_by", a, 0, 1));
  size_t best = 0;
  for (size_t i = 1; i < keys.size(); ++i) {
    if (want_max ? SortLess(*keys[best], *keys[i]) : SortLess(*keys[i], *keys[best])) best = i;
  }
  return arr[best];
}
Result<Value> MaxBy(Args a) { return ExtremeBy(a, true); }
Result<Value> MinBy(Args a) { return ExtremeBy(a, false); }

Result<Value> Merge(Args a) {
  if (a.size() == 1) return *a[0].value;
  Value::Object members;
  for (const FunctionArg& arg : a) {
    for (const auto& m : arg.value->as_object()) members.push_back(m);
  }
  return Value::ObjectFromMembers(std::move(members));  // linear, also for wide objects
}

Result<Value> NotNull(Args a) {
  for (const FunctionArg& arg : a) {
    if (!arg.value->is_null()) return *arg.value;
  }
  return Value();
}

Result<Value> Reverse(Args a) {
  const Value& v = *a[0].value;
  if (v.is_array()) {
    Value::Array out(v.as_array().rbegin(), v.as_array().rend());
    return Value(std::move(out));
  }
  // Reverse code points, keeping each UTF-8 sequence intact.
  const std::string& s = v.as_string();
  std::string out;
  out.reserve(s.size());
  size_t end = s.size();
  while (end > 0) {
    size_t begin = Utf8CharStart(s, end - 1);
    out.append(s, begin, end - begin);
    end = begin;
  }
  return Value(std::move(out));
}

Result<Value> Sort(Args a) {
  Value::Array out = a[0].value->as_array();
  std::stable_sort(out.begin(), out.end(), SortLess);
  return Value(std::move(out));
}

Result<Value> SortBy(Args a) {
  const Value::Array& arr = a[0].value->as_array();
  MMIRAGE_ASSIGN_OR_RETURN(std::vector<Ref> keys, SortKeys("sort_by", a, 0, 1));
  std::vector<size_t> order(arr.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t l, size_t r) { return SortLess(*keys[l], *keys[r]); });
  Value::Array out;
  out.reserve(arr.size());
  for (size_t i : order) out.push_back(arr[i]);
  return Value(std::move(out));
}

Result<Value> SumFn(Args a) { return Sum(a[0].value->as_array()); }

Result<Value> ToArray(Args a) {
  const Value& v = *a[0].value;
  if (v.is_array()) return v;
  return Value(Value::Array{v});
}

// A string in JSON number syntax (surrounding whitespace allowed) as a number; null otherwise.
Value ParseNumber(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t\n\r");
  if (first == std::string_view::npos) return Value();
  s = s.substr(first, s.find_last_not_of(" \t\n\r") - first + 1);
  size_t i = s[0] == '-' ? 1 : 0;
  const size_t int_begin = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == int_begin) return Value();
  bool integral = true;
  if (i < s.size() && s[i] == '.') {
    integral = false;
    const size_t frac = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == frac) return Value();
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    integral = false;
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const size_t exp = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == exp) return Value();
  }
  if (i != s.size()) return Value();
  if (integral) {
    int64_t n = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    (void)ptr;
    if (ec == std::errc()) return Value(n);
  }
  double d = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  (void)ptr;
  if (ec != std::errc() || !std::isfinite(d)) return Value();
  return Value(d);
}

Result<Value> ToNumber(Args a) {
  const Value& v = *a[0].value;
  if (v.is_number()) return v;
  if (v.is_string()) return ParseNumber(v.as_string());
  return Value();
}

Result<Value> ToString(Args a) {
  const Value& v = *a[0].value;
  if (v.is_string()) return v;
  // jmespath.py's to_string is json.dumps(separators=(',', ':')): compact, and ensure_ascii by default.
  JsonWriteOptions o;
  o.ensure_ascii = true;
  std::string out;
  (void)AppendJson(v, o, &out);  // cannot fail: no limits
  return Value(std::move(out));
}

Result<Value> Type(Args a) { return Value(a[0].value->TypeName()); }

constexpr uint16_t kNum = kTypeNumber;
constexpr uint16_t kStr = kTypeString;
constexpr uint16_t kArr = kTypeArray;
constexpr uint16_t kObj = kTypeObject;
constexpr uint16_t kAny = kTypeAny;
constexpr uint16_t kExp = kTypeExpref;
constexpr uint16_t kNumArr = kTypeArrayNumber;
constexpr uint16_t kSortable = kTypeArrayNumber | kTypeArrayString;

// Sorted by name for binary search.
constexpr FunctionSpec kFunctions[] = {
    {"abs", 1, false, {kNum, 0}, Abs},
    {"avg", 1, false, {kNumArr, 0}, Avg},
    {"ceil", 1, false, {kNum, 0}, Ceil},
    {"contains", 2, false, {kArr | kStr, kAny}, Contains},
    {"ends_with", 2, false, {kStr, kStr}, EndsWith},
    {"floor", 1, false, {kNum, 0}, Floor},
    {"join", 2, false, {kStr, kTypeArrayString}, Join},
    {"keys", 1, false, {kObj, 0}, Keys},
    {"length", 1, false, {kStr | kArr | kObj, 0}, Length},
    {"map", 2, false, {kExp, kArr}, Map},
    {"max", 1, false, {kSortable, 0}, Max},
    {"max_by", 2, false, {kArr, kExp}, MaxBy},
    {"merge", 1, true, {kObj, kObj}, Merge},
    {"min", 1, false, {kSortable, 0}, Min},
    {"min_by", 2, false, {kArr, kExp}, MinBy},
    {"not_null", 1, true, {kAny, kAny}, NotNull},
    {"reverse", 1, false, {kStr | kArr, 0}, Reverse},
    {"sort", 1, false, {kSortable, 0}, Sort},
    {"sort_by", 2, false, {kArr, kExp}, SortBy},
    {"starts_with", 2, false, {kStr, kStr}, StartsWith},
    {"sum", 1, false, {kNumArr, 0}, SumFn},
    {"to_array", 1, false, {kAny, 0}, ToArray},
    {"to_number", 1, false, {kAny, 0}, ToNumber},
    {"to_string", 1, false, {kAny, 0}, ToString},
    {"type", 1, false, {kAny, 0}, Type},
    {"values", 1, false, {kObj, 0}, Values},
};

std::string DescribeMask(uint16_t mask) {
  static constexpr std::pair<uint16_t, const char*> kNames[] = {
      {kTypeNull, "null"},
      {kTypeBool, "boolean"},
      {kTypeNumber, "number"},
      {kTypeString, "string"},
      {kTypeArray, "array"},
      {kTypeObject, "object"},
      {kTypeExpref, "expression"},
      {kTypeArrayNumber, "array of numbers"},
      {kTypeArrayString, "array of strings"},
  };
  if ((mask & kTypeAny) == kTypeAny) return "any value";
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if ((mask & bit) == 0) continue;
    if (!out.empty()) out += " or ";
    out += name;
  }
  return out;
}

bool AllOf(const Value::Array& a, bool (Value::*pred)() const) {
  return std::all_of(a.begin(), a.end(), [&](const Value& v) { return (v.*pred)(); });
}

bool Matches(uint16_t mask, const FunctionArg& arg) {
  if (arg.expref != nullptr) return (mask & kTypeExpref) != 0;
  const Value& v = *arg.value;
  static constexpr uint16_t kBits[] = {kTypeNull,   kTypeBool,  kTypeNumber, kTypeNumber,
                                       kTypeString, kTypeArray, kTypeObject};
  if ((mask & kBits[static_cast<int>(v.type())]) != 0) return true;
  if (!v.is_array()) return false;
  if ((mask & kTypeArrayNumber) != 0 && AllOf(v.as_array(), &Value::is_number)) return true;
  if ((mask & kTypeArrayString) != 0 && AllOf(v.as_array(), &Value::is_string)) return true;
  return false;
}

}  // namespace

const FunctionSpec* FindFunction(std::string_view name) {
  auto it = std::lower_bound(std::begin(kFunctions), std::end(kFunctions), name,
                             [](const FunctionSpec& f, std::string_view n) { return f.name < n; });
  if (it == std::end(kFunctions) || it->name != name) return nullptr;
  return it;
}

Status CheckArity(const FunctionSpec& spec, size_t n_args) {
  const size_t want = static_cast<size_t>(spec.min_args);
  if (spec.variadic ? n_args >= want : n_args == want) return Status::OK();
  std::string msg = "function '" + std::string(spec.name) + "()' takes ";
  if (spec.variadic) msg += "at least ";
  msg += std::to_string(want) + (want == 1 ? " argument" : " arguments") + ", got " + std::to_string(n_args);
  return Status::InvalidArgument(std::move(msg));
}

Status CheckArgTypes(const FunctionSpec& spec, std::span<const FunctionArg> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const uint16_t mask = spec.arg_types[std::min<size_t>(i, 1)];  // variadic: the last type repeats
    if (Matches(mask, args[i])) continue;
    const char* got = args[i].expref != nullptr ? "expression" : args[i].value->TypeName();
    std::string detail = "expected " + DescribeMask(mask);
    if (args.size() > 1) detail += " as argument " + std::to_string(i + 1);
    return TypeError(spec.name, detail + ", got " + got);
  }
  return Status::OK();
}

}  // namespace mmirage::query::internal
